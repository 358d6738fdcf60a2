/**
 * GET /servers and /servers/detail: query parameters → one SQL query with Nova's semantics (docs/compute.md, "Listing").
 * Scope, state, exact and tag filters run in SQL; regular-expression filters (name, hostname…) and flavor
 * run in JS over rows streamed from SQL in sort order, so paging stays exact. `ip`/`ip6` are resolved to
 * server ids by the network service (Nova's regex over fixed addresses) before the query runs. Paging is keyset on the sort
 * expressions (created_at and id always appended), so a page costs the same at any depth.
 */
import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely'
import { badRequest, forbidden } from '../../contracts/errors.js'
import {
  FALSE_WORDS, FORBIDDEN_FILTERS, LEGACY_SORT_KEYS, SERVER_LIST_PARAMS, SERVER_PAGING_PARAMS, SERVER_SORT_KEYS, TRUE_WORDS, type ListParam,
} from '../../contracts/compute/server.params.js'
import { inRange, type ApiVersion } from '../../contracts/compute/versions.js'
import { parseIsoTime } from '../../contracts/compute/time.js'
import type { Database, HostTable, ServerTable } from '../storage/schema.js'
import type { Db } from '../storage/store.js'
import { preparedShapes } from '../storage/prepared.js'
import { SERVER_STATUSES, vmStatesForStatus, type ServerStatus } from './server-states.js'

export type Query = Record<string, string | string[] | undefined>

export interface ListCaller {
  projectId: string
  /** What the caller may do, decided by the route from policy rules (this module reads no roles). */
  may: ListPermissions
}

/** The list's permissions, each a policy-table rule checked in the route. */
export interface ListPermissions {
  /** all_tenants (servers:index|detail:get_all_tenants); refused with 403. */
  allTenants: boolean
  /** Every filter whatever the microversion, and the forbidden-filter check (servers:allow_all_filters). */
  allFilters: boolean
  /** deleted=, soft_deleted=, status=DELETED (servers:index:deleted). */
  deleted: boolean
  /** The admin-only sort keys (servers:index:admin_sort_keys). */
  adminSortKeys: boolean
}

/** A row's host record as `hostLiveness` reads it, each null when the server's host has no record. */
export interface HostLivenessColumns {
  host_service_status: HostTable['service_status'] | null
  host_forced_down: number | null
  host_last_heartbeat_at: number | null
}

export interface ListResult {
  /** With `view_rev` (0 when none) and the host's liveness (null when no host record) when the caller asked for them. */
  rows: (ServerTable & { view_rev?: number } & Partial<HostLivenessColumns>)[]
  /** Query for the next page link (marker set), or undefined when there is none. */
  next?: [string, string][]
}

type Eb = ExpressionBuilder<Database, 'servers'>
/**
 * A condition of the list's statement: its shape (what it writes in SQL, values left out) and its values. The
 * statement is compiled once per shape of the whole plan (storage/prepared.ts preparedShapes); `build` gets markers
 * in place of the values, in the same order.
 */
interface Cond {
  shape: string
  values: unknown[]
  build: (eb: Eb, values: unknown[]) => Expression<SqlBool>
}

function cond<V extends unknown[]>(shape: string, values: V, build: (eb: Eb, values: V) => Expression<SqlBool>): Cond {
  // The markers stand in for values of the very types V names.
  return { shape, values, build: build as unknown as Cond['build'] }
}

const BATCH = 500

const LIVE = cond('live', [], (eb) => eb('deleted', '=', 0))
const NOT_SOFT_DELETED = cond('not-soft-deleted', [], (eb) => eb('vm_state', '!=', 'soft-delete'))

// The page statement, compiled once per shape of plan: lists are polled all day (issue 30).
const pageStatement = preparedShapes<Db, ServerTable>({ keepWhileUnchanged: true })

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[v.length - 1] : v
}
function many(v: string | string[] | undefined): string[] {
  return v === undefined ? [] : Array.isArray(v) ? v : [v]
}

function strictBool(name: string, raw: string): boolean {
  const v = raw.toLowerCase()
  if (TRUE_WORDS.includes(v)) return true
  if (FALSE_WORDS.includes(v)) return false
  throw badRequest(`Invalid input for query parameters ${name}. Value: ${raw}. '${raw}' is not a boolean word.`)
}

function lenientBool(raw: string | undefined): boolean {
  return raw !== undefined && TRUE_WORDS.includes(raw.toLowerCase())
}

function regexOf(name: string, pattern: string): RegExp {
  try {
    return new RegExp(pattern)
  } catch {
    throw badRequest(`Invalid input for query parameters ${name}. Value: ${pattern}. Not a valid regular expression.`)
  }
}

/** Nova's text form of a timestamp column, as MySQL shows a DATETIME. */
function timeText(ms: number | null): string {
  return ms === null ? '' : new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, '')
}

export interface Plan {
  conds: Cond[]
  post: ((row: ServerTable) => boolean)[]
  order: { key: string; expr: Expression<unknown>; column: keyof ServerTable; nullAs?: string | number; dir: 'asc' | 'desc' }[]
  limit: number
  marker?: string
  passthrough: [string, string][]
  /** `ip` / `ip6` filters: regular expressions over the servers' fixed addresses. */
  ips: { pattern: string; version: 4 | 6 }[]
  /** The project the list is scoped to (undefined with all_tenants). */
  scopeProject?: string
}

/** Resolves `ip`/`ip6` filters to the ids of the servers they match. */
export type IpResolver = (filters: Plan['ips'], projectId?: string) => Promise<Set<string>>

/** Above this many matches the ip filter checks rows in JS instead of an IN (…) list. */
const IP_IDS_IN_SQL = 500

/** Validates the query and builds the plan; throws 400/403 as Nova does. */
export function planServerList(query: Query, caller: ListCaller, api: ApiVersion, maxLimit: number): Plan {
  const conds: Cond[] = []
  const post: Plan['post'] = []
  const strict = api.has('strictQuery')
  const usable = (name: string, spec: ListParam) => caller.may.allFilters || (spec.since !== undefined && inRange(api.version, spec.since))

  for (const name of Object.keys(query)) {
    if ((SERVER_PAGING_PARAMS as readonly string[]).includes(name) || name in SERVER_LIST_PARAMS) continue
    if (caller.may.allFilters && (FORBIDDEN_FILTERS.includes(name) || name.startsWith('_'))) throw badRequest(`Invalid filter field: ${name}.`)
    if (strict) throw badRequest(`Invalid input for query parameters ${name}. Additional properties are not allowed ('${name}' was unexpected)`)
  }

  // Scope.
  const allTenantsRaw = query.all_tenants
  let allTenants = false
  if (allTenantsRaw !== undefined) {
    const v = single(allTenantsRaw)!
    allTenants = v === '' ? true : strictBool('all_tenants', v)
    if (allTenants && !caller.may.allTenants) throw forbidden("Policy doesn't allow os_compute_api:servers:index:get_all_tenants to be performed.")
  }
  if (!allTenants) conds.push(cond('project', [caller.projectId], (eb, [p]) => eb('project_id', '=', p)))
  else {
    const projects = [...many(query.project_id), ...many(query.tenant_id)]
    if (projects.length) conds.push(cond(`projects:${projects.length}`, projects, (eb, ps) => eb('project_id', 'in', ps)))
  }

  // Deleted rows.
  const changesSince = single(query['changes-since'])
  const changesBefore = usable('changes-before', SERVER_LIST_PARAMS['changes-before']) ? single(query['changes-before']) : undefined
  let since: number | undefined
  let before: number | undefined
  if (changesSince !== undefined) {
    since = parseIsoTime(changesSince)
    if (since === undefined) throw badRequest(`Invalid input for query parameters changes-since. Value: ${changesSince}. '${changesSince}' is not a 'date-time'`)
    conds.push(cond('since', [since], (eb, [t]) => eb('updated_at', '>=', t)))
  }
  if (changesBefore !== undefined) {
    before = parseIsoTime(changesBefore)
    if (before === undefined) throw badRequest(`Invalid input for query parameters changes-before. Value: ${changesBefore}. '${changesBefore}' is not a 'date-time'`)
    if (since !== undefined && before < since) throw badRequest('The value of changes-since must be less than or equal to changes-before.')
    conds.push(cond('before', [before], (eb, [t]) => eb('updated_at', '<=', t)))
  }
  const deletedParam = caller.may.deleted ? single(query.deleted) : undefined
  const statuses = many(query.status).map((s) => s.toUpperCase())
  if (statuses.includes('DELETED') && !caller.may.deleted) throw forbidden('Only administrators may list deleted instances')
  if (deletedParam !== undefined) {
    if (lenientBool(deletedParam)) conds.push(cond('deleted', [], (eb) => eb.or([eb('deleted', '=', 1), eb('vm_state', '=', 'soft-delete')])))
    else conds.push(LIVE, NOT_SOFT_DELETED)
  } else if (since === undefined && before === undefined && !statuses.includes('DELETED') && !statuses.includes('SOFT_DELETED')) {
    conds.push(LIVE)
    if (!(caller.may.deleted && query.soft_deleted)) conds.push(NOT_SOFT_DELETED)
  }

  // Status.
  if (statuses.length) {
    const unknown = statuses.filter((s) => !(SERVER_STATUSES as readonly string[]).includes(s))
    if (unknown.length && api.has('invalidStatusIs400')) throw badRequest(`Invalid status value: ${unknown[0]}`)
    const known = statuses.filter((s) => !unknown.includes(s)) as ServerStatus[]
    conds.push(cond(`status:${known.join(',')}`, [], (eb) => {
      const alts: Expression<SqlBool>[] = []
      for (const status of known) {
        if (status === 'DELETED') alts.push(eb('deleted', '=', 1))
        for (const { vmState, taskStates } of vmStatesForStatus(status)) {
          const live = eb('deleted', '=', 0)
          if (!taskStates) alts.push(eb.and([live, eb('vm_state', '=', vmState)]))
          else alts.push(eb.and([live, eb('vm_state', '=', vmState), eb('task_state', 'in', taskStates)]))
        }
      }
      // No known status: nothing matches (an id is never null).
      return alts.length ? eb.or(alts) : eb('id', 'is', null)
    }))
  }

  // Column filters.
  for (const [name, spec] of Object.entries(SERVER_LIST_PARAMS)) {
    const raw = query[name]
    if (raw === undefined || spec.match === 'special' || !usable(name, spec)) continue
    const column = spec.column as keyof ServerTable & string
    if (spec.match === 'exact') {
      const values = many(raw).flatMap((v) => v.split(','))
      conds.push(cond(`${column}:${values.length}`, values, (eb, vs) => eb(column as 'id', 'in', vs)))
    } else if (spec.match === 'bool') {
      const value = strictBool(name, single(raw)!) ? 1 : 0
      conds.push(cond(`${column}=`, [value], (eb, [v]) => eb(column as 'locked', '=', v)))
    } else {
      const re = regexOf(name, single(raw)!)
      post.push((row) => {
        const value = row[column] as unknown
        const text = spec.time ? timeText(value as number | null) : value === null || value === undefined ? '' : String(value)
        return re.test(text)
      })
    }
  }

  // Flavor: the snapshot's id (the row keeps the flavor as JSON).
  const flavor = single(query.flavor)
  if (flavor !== undefined) {
    conds.push(cond('flavor', [`%"id":${JSON.stringify(flavor)}%`], (eb, [pattern]) => eb('flavor', 'like', pattern)))
    post.push((row) => (JSON.parse(row.flavor) as { id: string }).id === flavor)
  }

  // Addresses belong to the network service: listServers resolves these through it.
  const ips: Plan['ips'] = []
  for (const [name, version] of [['ip', 4], ['ip6', 6]] as const) {
    const raw = single(query[name])
    if (raw !== undefined && usable(name, SERVER_LIST_PARAMS[name])) {
      regexOf(name, raw)
      ips.push({ pattern: raw, version })
    }
  }

  // Tags.
  if (usable('tags', SERVER_LIST_PARAMS.tags)) {
    // Distinct tags; "has all of them" is one count over the server's tags, so a list of any length is one
    // subquery (a condition per tag made SQLite refuse a thousand of them as too deep an expression).
    const list = (name: string) => [...new Set(many(query[name]).flatMap((v) => v.split(',')).filter((t) => t !== ''))]
    const tagsOf = (eb: Eb, tags: string[]) => eb.selectFrom('server_tags').whereRef('server_tags.server_id', '=', 'servers.id').where('server_tags.tag', 'in', tags)
    const hasAll = (eb: Eb, tags: string[]) => eb(tagsOf(eb, tags).select((e) => e.fn.countAll<number>().as('n')), '=', tags.length)
    const hasAny = (eb: Eb, tags: string[]) => eb.exists(tagsOf(eb, tags).select('server_tags.tag'))
    const all = list('tags')
    const any = list('tags-any')
    const notAll = list('not-tags')
    const notAny = list('not-tags-any')
    if (all.length) conds.push(cond(`tags:${all.length}`, all, (eb, tags) => hasAll(eb, tags)))
    if (any.length) conds.push(cond(`tags-any:${any.length}`, any, (eb, tags) => hasAny(eb, tags)))
    if (notAll.length) conds.push(cond(`not-tags:${notAll.length}`, notAll, (eb, tags) => eb.not(hasAll(eb, tags))))
    if (notAny.length) conds.push(cond(`not-tags-any:${notAny.length}`, notAny, (eb, tags) => eb.not(hasAny(eb, tags))))
  }

  // Sorting.
  const keys = many(query.sort_key)
  const dirs = many(query.sort_dir)
  for (const d of dirs) if (d !== 'asc' && d !== 'desc') throw badRequest(`Invalid input for query parameters sort_dir. Value: ${d}. '${d}' is not one of ['asc', 'desc']`)
  if (dirs.length > keys.length && keys.length > 0) throw badRequest('The number of sort_keys and sort_dirs must be same')
  const order: Plan['order'] = []
  const firstDir = (dirs[0] ?? 'desc') as 'asc' | 'desc'
  keys.forEach((key, i) => {
    const spec = SERVER_SORT_KEYS[key]
    if (!spec || (spec.since && !inRange(api.version, spec.since))) {
      if (LEGACY_SORT_KEYS.includes(key) && !strict) return
      throw badRequest(`Invalid input for query parameters sort_key. Value: ${key}.`)
    }
    if (spec.adminOnly && !caller.may.adminSortKeys) throw forbidden(`Only administrators can sort servers by ${key}`)
    order.push({ key, column: spec.column as keyof ServerTable, nullAs: spec.nullAs, dir: (dirs[i] ?? firstDir) as 'asc' | 'desc', expr: sortExpr(spec.column, spec.nullAs) })
  })
  for (const column of ['created_at', 'id'] as const) {
    if (!order.some((o) => o.column === column)) order.push({ key: column, column, dir: firstDir, expr: sql.ref(column) })
  }

  // Limit and marker.
  let limit = maxLimit
  const rawLimit = single(query.limit)
  if (rawLimit !== undefined) {
    if (!/^\d+$/.test(rawLimit)) throw badRequest(`Invalid input for query parameters limit. Value: ${rawLimit}. '${rawLimit}' does not match '^[0-9]*$'`)
    limit = Math.min(Number(rawLimit), maxLimit)
  }
  const marker = single(query.marker)

  const passthrough: [string, string][] = Object.keys(query)
    .filter((k) => k !== 'marker')
    .sort()
    .map((k) => [k, single(query[k]) ?? ''])
  return { conds, post, order, limit, marker, passthrough, ips, scopeProject: allTenants ? undefined : caller.projectId }
}

function sortExpr(column: string, nullAs?: string | number): Expression<unknown> {
  return nullAs === undefined ? sql.ref(column) : sql`coalesce(${sql.ref(column)}, ${nullAs})`
}

/** Rows strictly after `row` in the plan's order: one value per sort expression, each used where its expression is. */
function after(plan: Plan, row: ServerTable): Cond {
  const values = plan.order.map((o) => (row[o.column] ?? o.nullAs) as string | number)
  return cond('after', values, (eb, marks) =>
    eb.or(
      plan.order.map((o, i) => {
        const parts: Expression<SqlBool>[] = plan.order.slice(0, i).map((p, j) => eb(p.expr as never, '=', marks[j] as never))
        parts.push(eb(o.expr as never, o.dir === 'asc' ? '>' : '<', marks[i] as never))
        return eb.and(parts)
      }),
    ),
  )
}

export interface ListOptions {
  /** What is read (the summary view needs only id and name); rows then carry only those columns plus the sort columns. Post-filters always read whole rows. */
  columns?: (keyof ServerTable)[]
  resolveIps?: IpResolver
  /** Each row also carries its view revision (server_view_revisions), read in the same statement. */
  viewRevisions?: boolean
  /** Each row also carries its host's liveness (for host_status), read in the same statement. */
  hostLiveness?: boolean
}

/** Runs the plan. */
export async function listServers(db: Db, plan: Plan, options: ListOptions = {}): Promise<ListResult> {
  const { columns, resolveIps, viewRevisions, hostLiveness } = options
  if (plan.limit === 0) return { rows: [] }
  if (plan.ips.length) {
    if (!resolveIps) throw new Error('ip filters need the network service')
    const ids = await resolveIps(plan.ips, plan.scopeProject)
    if (ids.size === 0) return { rows: [] }
    plan = ids.size <= IP_IDS_IN_SQL ? { ...plan, conds: [...plan.conds, cond(`ids:${ids.size}`, [...ids], (eb, vs) => eb('id', 'in', vs))] } : { ...plan, post: [...plan.post, (row) => ids.has(row.id)] }
  }
  let cursor: ServerTable | undefined
  if (plan.marker !== undefined) {
    cursor = await db.selectFrom('servers').selectAll().where('id', '=', plan.marker).executeTakeFirst()
    if (!cursor) throw badRequest(`marker [${plan.marker}] not found`)
  }
  const rows: ServerTable[] = []
  const batch = plan.post.length ? BATCH : plan.limit
  const wanted = columns && plan.post.length === 0 ? [...new Set([...columns, ...plan.order.map((o) => o.column)])] : undefined
  for (;;) {
    const conds = cursor ? [...plan.conds, after(plan, cursor)] : plan.conds
    // Everything the statement writes but its values: the columns, each condition's shape, the sort.
    const shape = [wanted?.join(',') ?? '*', viewRevisions ? 'view_rev' : '', hostLiveness ? 'host' : '', ...conds.map((c) => c.shape), plan.order.map((o) => `${o.key} ${o.dir}`).join(',')].join('|')
    const values = [...conds.flatMap((c) => c.values), batch]
    const page = (await pageStatement(db, shape, values, (marks) => {
      let q = wanted ? db.selectFrom('servers').select(wanted) : db.selectFrom('servers').selectAll()
      if (viewRevisions) q = q.select((eb) => eb.fn.coalesce(eb.selectFrom('server_view_revisions').select('rev').whereRef('server_id', '=', 'servers.id'), eb.lit(0)).as('view_rev'))
      // Subqueries, not a join: the conditions and the sort name servers' columns unqualified, and hosts has some of the same names.
      if (hostLiveness) {
        const ofHost = <C extends 'service_status' | 'forced_down' | 'last_heartbeat_at'>(column: C) => (eb: ExpressionBuilder<Database, 'servers'>) =>
          eb.selectFrom('hosts').select(column).whereRef('hosts.hostname', '=', 'servers.host').as(`host_${column}`)
        q = q.select(ofHost('service_status')).select(ofHost('forced_down')).select(ofHost('last_heartbeat_at'))
      }
      let at = 0
      for (const c of conds) {
        const mine = marks.slice(at, (at += c.values.length))
        q = q.where((eb) => c.build(eb, mine))
      }
      for (const o of plan.order) q = q.orderBy(o.expr as never, o.dir)
      return q.limit(marks[at] as number)
    }))
    for (const row of page) {
      if (plan.post.every((p) => p(row))) rows.push(row)
      if (rows.length === plan.limit) break
    }
    if (rows.length === plan.limit || page.length < batch) break
    cursor = page[page.length - 1]
  }
  const next = rows.length === plan.limit ? [...plan.passthrough, ['marker', rows[rows.length - 1].id] as [string, string]] : undefined
  return { rows, next }
}
