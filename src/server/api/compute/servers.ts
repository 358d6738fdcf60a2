/** /servers: list, detail, create, show, update, delete. Thin: rules live in src/server/compute/. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { conflict, notFound } from '../../../contracts/errors.js'
import { fieldsFor, projector } from '../../../contracts/compute/fields.js'
import { serverFields, type ServerModel, type ServerView } from '../../../contracts/compute/server.fields.js'
import { createBodySchema, updateBodySchema } from '../../../contracts/compute/server-create.params.js'
import type { ServerTable } from '../../storage/schema.js'
import { listServers, planServerList, type HostLivenessColumns, type ListCaller, type ListPermissions, type Plan, type Query } from '../../compute/server-list.js'
import { bookmarkBase, hostStatusOfRecord, serverModels } from '../../compute/server-model.js'
import type { HostStatus } from '../../hosts/host-status.js'
import { queryAsSent, ViewCache } from '../../http/view-cache.js'
import { createServers } from '../../compute/server-create.js'
import { serversMatchingIps } from '../../compute/server-network.js'
import { acceptServerDelete, findLiveServer, findLiveServerStamp, liveServerIds, serverRowsByIds, updateServerFields, type LiveServerStamp } from '../../compute/server-rows.js'
import type { ImageLookup } from '../../compute/images.js'
import { computeStorage } from '../../compute/storage.js'
import { bodyObject, callerOf, can, must, serverCaller, validate, visibleProject } from './context.js'
import { documented, noBody } from '../../http/openapi.js'
import { Type as T } from '@sinclair/typebox'
import { randomBytes } from 'node:crypto'
import { envelope, fieldsSchema, listOf, plain, serverListQuery, versioned } from '../../../contracts/compute/schemas.js'
import { J } from '../../../contracts/compute/json-types.js'
import { accessIpv6 } from '../../compute/access-ips.js'

export interface ServerRouteDeps extends AppDeps {
  imageLookup: ImageLookup
}

/** The live server `id` as the caller may see it, or 404. */
export async function visibleServer(deps: AppDeps, request: FastifyRequest, id: string): Promise<ServerTable> {
  const row = await findLiveServer(deps.store.db, id)
  if (!row || !visibleProject(request, row.project_id)) throw notFound(`Instance ${id} could not be found.`)
  return row
}

/** Projects rows for a view at the request's version. */
/**
 * What of a server the caller may see beyond what everyone sees, from the table's rules: the fields the tables mark
 * admin-only (with host_status among them) and 500 faults' details. The detail list's view cache keys on it.
 */
function serverViewRights(request: FastifyRequest): { adminFields: boolean; faultDetails: boolean } {
  return { adminFields: can(request, 'servers:show:admin_fields'), faultDetails: can(request, 'servers:show:fault_details') }
}

export async function renderServers(deps: AppDeps, request: FastifyRequest, rows: ServerTable[], view: ServerView, extra?: Partial<ServerModel>) {
  const { adminFields, faultDetails } = serverViewRights(request)
  const version = request.api.version
  const models = await serverModels(deps.store.db, rows, {
    faultDetails,
    computeUrl: deps.urls.compute,
    needs: { tags: view !== 'summary' && request.api.has('serverTags'), groups: view !== 'summary' && view !== 'detail', hostStatus: view !== 'summary' && adminFields },
    hostDownAfterMs: deps.config.hostDownAfterSeconds * 1000,
    network: deps.network,
  })
  const shape = projector(serverFields, { version, view, admin: adminFields })
  return models.map((m) => shape(extra ? { ...m, ...extra } : m))
}

/** What the detail list reads of each row before the view cache says which servers it must render again. */
const DETAIL_KEY_COLUMNS: (keyof ServerTable)[] = ['id', 'rev', 'host']

const COMMA = Buffer.from(',')
const CLOSE = Buffer.from('}')

/**
 * GET /servers/detail's servers as JSON, in the rows' order and ready to write: each from the view cache when
 * its stamp still matches, else rendered (all misses together, as renderServers does) and kept. What is kept
 * lacks the closing brace: `host_status` changes with the hosts' heartbeats rather than with any row, so it is
 * added to each answer, after what was kept.
 */
async function detailPage(deps: AppDeps, request: FastifyRequest, rows: DetailKeyRow[], cache: ViewCache, withHostStatus: boolean): Promise<Buffer[]> {
  const db = deps.store.db
  const rights = serverViewRights(request)
  const entries = cache.variant(`${request.api.text}|${rights.adminFields ? 'admin' : 'member'}${rights.faultDetails ? '+faults' : ''}`)
  // One pass, no per-row arrays or maps: a page holds up to a thousand servers, nearly all kept.
  const kept: (Buffer | undefined)[] = new Array(rows.length)
  const missing: string[] = []
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]
    kept[i] = ViewCache.lookup(entries, r.id, { rev: r.rev, viewRev: r.view_rev ?? 0 })
    if (kept[i] === undefined) missing.push(r.id)
  }
  if (missing.length) {
    const viewRevs = new Map(rows.map((r) => [r.id, r.view_rev ?? 0]))
    const rendered = new Map<string, Buffer>()
    for (let i = 0; i < missing.length; i += 500) {
      const full = await serverRowsByIds(db, missing.slice(i, i + 500))
      const views = await renderServers(deps, request, full, 'detail')
      full.forEach((row, j) => {
        delete views[j].host_status
        const json = ViewCache.encode(JSON.stringify(views[j]).slice(0, -1))
        // The stamp of the row as rendered: newer than the list's if it changed meanwhile, never older.
        cache.set(entries, row.id, { rev: row.rev, viewRev: viewRevs.get(row.id)! }, json)
        rendered.set(row.id, json)
      })
    }
    rows.forEach((r, i) => (kept[i] ??= rendered.get(r.id)))
  }
  let close = (_row: DetailKeyRow): Buffer => CLOSE
  if (withHostStatus) {
    const downAfterMs = deps.config.hostDownAfterSeconds * 1000
    close = (row) => {
      const record = row.host_service_status == null ? undefined : { service_status: row.host_service_status, forced_down: row.host_forced_down!, last_heartbeat_at: row.host_last_heartbeat_at! }
      return HOST_STATUS_ENDS[hostStatusOfRecord(row.host, record, downAfterMs)]
    }
  }
  const pieces: Buffer[] = []
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) pieces.push(COMMA)
    pieces.push(kept[i]!, close(rows[i]))
  }
  return pieces
}

/** Plans kept; past this many, the oldest is planned again when next asked for. */
const PLANS_KEPT = 500
const plans = new Map<string, Plan>()

/**
 * The list's plan, made once per query as sent, caller's project and rights, and microversion (all a plan depends
 * on): clients poll the same list all day. A plan holds values and pure filters, so it serves any number of
 * requests; a query that fails to plan is not kept and fails again.
 */
function plannedList(request: FastifyRequest<{ Querystring: Query }>, caller: ListCaller, maxLimit: number): Plan {
  const may = caller.may
  const key = `${request.api.text}|${caller.projectId}|${+may.allTenants}${+may.allFilters}${+may.deleted}${+may.adminSortKeys}|${queryAsSent(request.url)}`
  let plan = plans.get(key)
  if (!plan) {
    plan = planServerList(request.query, caller, request.api, maxLimit)
    if (plans.size >= PLANS_KEPT) plans.delete(plans.keys().next().value!)
    plans.set(key, plan)
  }
  return plan
}

/** What the detail list's page statement reads of each row: its key columns, view revision and host's liveness. */
type DetailKeyRow = Pick<ServerTable, 'id' | 'rev' | 'host'> & { view_rev?: number } & Partial<HostLivenessColumns>

/** The ends of a detail view with host_status, one per status ('' for a server on no host). */
const HOST_STATUS_ENDS = Object.fromEntries((['', 'UP', 'DOWN', 'MAINTENANCE', 'UNKNOWN'] as const).map((s) => [s, Buffer.from(`,"host_status":${JSON.stringify(s)}}`)])) as Record<HostStatus | '', Buffer>

/** Whether the caller's detail view shows host_status (admins, from 2.16). */
function showsHostStatus(request: FastifyRequest): boolean {
  return fieldsFor(serverFields, { version: request.api.version, view: 'detail', admin: serverViewRights(request).adminFields }).some((f) => f.key === 'host_status')
}

/**
 * Stand-ins for the two show fields no revision follows: `host_status` changes with the host's heartbeats and
 * `server_groups` with group membership. A kept show view holds them in place of their values, which each answer
 * writes in, so the bytes are those of an uncached render. Random per process, so no name or metadata a user
 * writes can be taken for them.
 */
const HOLE = randomBytes(12).toString('hex')
const HOST_STATUS_STANDIN = `host_status:${HOLE}`
const GROUPS_STANDIN = [`server_groups:${HOLE}`]
/** How the stand-ins read in the rendered JSON. */
const HOST_STATUS_HOLE = JSON.stringify(HOST_STATUS_STANDIN)
const GROUPS_HOLE = JSON.stringify(GROUPS_STANDIN)

/**
 * GET /servers/{id}'s server as JSON: from the view cache when the stamp read with the row still matches (its row
 * revision and view revision, raised by the database on any change of what the view shows, in any process), else
 * rendered and kept. Variants as the detail list's, under their own names: the show view has server_groups.
 */
async function showBody(deps: AppDeps, request: FastifyRequest, key: LiveServerStamp, cache: ViewCache): Promise<Buffer> {
  const db = deps.store.db
  const rights = serverViewRights(request)
  const entries = cache.variant(`show|${request.api.text}|${rights.adminFields ? 'admin' : 'member'}${rights.faultDetails ? '+faults' : ''}`)
  const stamp = { rev: key.rev, viewRev: key.view_rev }
  let kept = ViewCache.lookup(entries, key.id, stamp)
  if (!kept) {
    const row = await findLiveServer(db, key.id)
    if (!row) throw notFound(`Instance ${key.id} could not be found.`)
    const [server] = await renderServers(deps, request, [row], 'show', { hostStatus: HOST_STATUS_STANDIN, serverGroups: GROUPS_STANDIN })
    kept = ViewCache.encode(JSON.stringify({ server }))
    // Read after the stamp, the row is as new as it or newer: an entry is never older than its stamp.
    cache.set(entries, key.id, { rev: row.rev, viewRev: key.view_rev }, kept)
  }
  return fillHoles(kept, {
    [HOST_STATUS_HOLE]: JSON.stringify(hostStatusOfRecord(key.host, key.hostRecord, deps.config.hostDownAfterSeconds * 1000)),
    [GROUPS_HOLE]: JSON.stringify(key.groupIds),
  })
}

/** Where each hole lies in a kept view, found once per kept view rather than searched on every answer. */
const holesFound = new WeakMap<Buffer, { hole: string; at: number; length: number }[]>()

/** `json` with each hole that appears in it replaced by its value (each appears at most once). */
function fillHoles(json: Buffer, values: Record<string, string>): Buffer {
  let found = holesFound.get(json)
  if (!found) {
    found = Object.keys(values)
      .map((hole) => ({ hole, at: json.indexOf(hole), length: Buffer.byteLength(hole) }))
      .filter((h) => h.at >= 0)
      .sort((a, b) => a.at - b.at)
    holesFound.set(json, found)
  }
  if (found.length === 0) return json
  const parts: Buffer[] = []
  let from = 0
  for (const h of found) {
    parts.push(json.subarray(from, h.at), Buffer.from(values[h.hole]))
    from = h.at + h.length
  }
  parts.push(json.subarray(from))
  return Buffer.concat(parts)
}

/** The summary view reads only id, name and links: no model loading for GET /servers. */
function renderSummaries(deps: AppDeps, request: FastifyRequest, rows: Pick<ServerTable, 'id' | 'name'>[]) {
  const shape = projector(serverFields, { version: request.api.version, view: 'summary', admin: can(request, 'servers:show:admin_fields') })
  const base = bookmarkBase(deps.urls.compute)
  return rows.map((r) =>
    shape({
      id: r.id,
      name: r.name,
      links: [
        { rel: 'self', href: `${deps.urls.compute}/servers/${r.id}` },
        { rel: 'bookmark', href: `${base}/servers/${r.id}` },
      ],
    } as ServerModel),
  )
}

const nextLinks = { servers_links: plain(J.links) }
const created = plain(T.Object({ id: J.str, links: J.links, 'OS-DCF:diskConfig': J.str, security_groups: T.Array(T.Object({ name: J.str })), adminPass: J.str }))

const DOCS = {
  // The filters read a repeated parameter as a list (vm_state=active&vm_state=error).
  list: (view: 'summary' | 'detail') => ({
    config: {
      repeatedQuery: true,
      docs: {
        summary: view === 'summary' ? 'List servers (id, name, links)' : 'List servers with details',
        querystring: serverListQuery(),
        response: { 200: envelope('servers', listOf(fieldsSchema(serverFields, view)), nextLinks) },
      },
    },
  }),
  show: documented({ summary: 'Show a server', response: { 200: envelope('server', fieldsSchema(serverFields, 'show')) } }),
  create: documented({
    summary: 'Create one or more servers',
    body: versioned(createBodySchema),
    response: { 202: { anyOf: [envelope('server', created), { type: 'object', properties: { reservation_id: { type: 'string' } }, required: ['reservation_id'] }] } },
  }),
  update: documented({
    summary: 'Update a server',
    body: versioned(updateBodySchema),
    response: { 200: envelope('server', { anyOf: [fieldsSchema(serverFields, 'reduced', { until: '2.75' }), fieldsSchema(serverFields, 'show', { since: '2.75' })] }) },
  }),
  delete: documented({ summary: 'Delete a server', response: { 204: noBody('Deletion accepted') } }),
}

export function serverRoutes(deps: ServerRouteDeps) {
  const db = deps.store.db
  const views = new ViewCache({
    budgetBytes: deps.config.viewCacheMb * 1024 * 1024,
    live: (ids) => liveServerIds(db, ids),
  })
  return async (scope: FastifyInstance): Promise<void> => {
    const list = (view: 'summary' | 'detail', path: string) => async (request: FastifyRequest<{ Querystring: Query }>, reply: FastifyReply) => {
      const caller = callerOf(request)
      must(request, 'servers:index', { projectId: caller.projectId })
      const may: ListPermissions = {
        allTenants: can(request, view === 'summary' ? 'servers:index:get_all_tenants' : 'servers:detail:get_all_tenants'),
        allFilters: can(request, 'servers:allow_all_filters'),
        deleted: can(request, 'servers:index:deleted'),
        adminSortKeys: can(request, 'servers:index:admin_sort_keys'),
      }
      const plan = plannedList(request, { projectId: caller.projectId, may }, deps.config.computeMaxLimit)
      const withHostStatus = view === 'detail' && showsHostStatus(request)
      const result = await listServers(db, plan, {
        columns: view === 'summary' ? ['id', 'name'] : DETAIL_KEY_COLUMNS,
        viewRevisions: view === 'detail',
        hostLiveness: withHostStatus,
        resolveIps: (filters, projectId) => serversMatchingIps(deps.network, filters, projectId),
      })
      const links = result.next ? { servers_links: [{ rel: 'next', href: `${deps.urls.compute}${path}?${new URLSearchParams(result.next).toString()}` }] } : {}
      if (view === 'summary') return { servers: renderSummaries(deps, request, result.rows), ...links }
      const servers = await detailPage(deps, request, result.rows, views, withHostStatus)
      const tail = `]${result.next ? `,${JSON.stringify(links).slice(1, -1)}` : ''}}`
      return reply.type('application/json').send(Buffer.concat([Buffer.from('{"servers":['), ...servers, Buffer.from(tail)]))
    }
    scope.get<{ Querystring: Query }>('/v2.1/servers', DOCS.list('summary'), list('summary', '/servers'))
    scope.get<{ Querystring: Query }>('/v2.1/servers/detail', DOCS.list('detail'), list('detail', '/servers/detail'))

    scope.get<{ Params: { id: string } }>('/v2.1/servers/:id', DOCS.show, async (request, reply) => {
      const key = await findLiveServerStamp(db, request.params.id)
      if (!key || !visibleProject(request, key.project_id)) throw notFound(`Instance ${request.params.id} could not be found.`)
      must(request, 'servers:show', { projectId: key.project_id })
      // The header Fastify gives the object this route answered before its view was kept.
      return reply.type('application/json; charset=utf-8').send(await showBody(deps, request, key, views))
    })

    scope.post('/v2.1/servers', DOCS.create, async (request, reply) => {
      const caller = callerOf(request)
      const body = bodyObject(request)
      validate('server', request, createBodySchema, body)
      must(request, 'servers:create', { projectId: caller.projectId })
      const result = await createServers(
        { db, advisoryLocks: deps.store.capabilities.advisoryLocks, network: deps.network },
        deps.queue,
        deps.imageLookup,
        request.api,
        { ...serverCaller(request), canForceHost: can(request, 'servers:create:forced_host') },
        body,
        request.id,
        computeStorage(deps),
      )
      deps.runner.wake()
      const s = body.server
      if (s.return_reservation_id === true || ['true', '1', 'yes', 'on', 't', 'y'].includes(String(s.return_reservation_id).toLowerCase())) {
        return reply.code(202).send({ reservation_id: result.reservationId })
      }
      const first = result.servers[0]
      const self = `${deps.urls.compute}/servers/${first.id}`
      return reply
        .code(202)
        .header('location', self)
        .send({
          server: {
            id: first.id,
            links: [
              { rel: 'self', href: self },
              { rel: 'bookmark', href: `${bookmarkBase(deps.urls.compute)}/servers/${first.id}` },
            ],
            'OS-DCF:diskConfig': first.disk_config,
            security_groups: result.securityGroups.map((name) => ({ name })),
            adminPass: result.adminPass,
          },
        })
    })

    scope.put<{ Params: { id: string } }>('/v2.1/servers/:id', DOCS.update, async (request) => {
      const body = bodyObject(request)
      validate('server', request, updateBodySchema, body)
      const row = await visibleServer(deps, request, request.params.id)
      must(request, 'servers:update', { projectId: row.project_id })
      const s = body.server
      const changes: Partial<ServerTable> = {}
      if (s.name !== undefined) changes.name = s.name
      if (s.description !== undefined) changes.description = s.description
      if (s.accessIPv4 !== undefined) changes.access_ip_v4 = s.accessIPv4
      if (s.accessIPv6 !== undefined) changes.access_ip_v6 = accessIpv6(s.accessIPv6)
      if (s['OS-DCF:diskConfig'] !== undefined) changes.disk_config = s['OS-DCF:diskConfig']
      if (s.hostname !== undefined) changes.hostname = s.hostname
      const updated = await updateServerFields(db, row, changes)
      const [server] = await renderServers(deps, request, [updated], request.api.has('fullUpdateBody') ? 'show' : 'reduced')
      return { server }
    })

    scope.delete<{ Params: { id: string } }>('/v2.1/servers/:id', DOCS.delete, async (request, reply) => {
      const caller = callerOf(request)
      const row = await visibleServer(deps, request, request.params.id)
      must(request, 'servers:delete', { projectId: row.project_id })
      if (row.locked === 1 && !can(request, 'servers:locked:override')) throw conflict(`Instance ${row.id} is locked`)
      if (row.task_state === 'deleting') return reply.code(204).send()
      await acceptServerDelete({ db, queue: deps.queue }, row, caller, request.id)
      deps.runner.wake()
      return reply.code(204).send()
    })
  }
}
