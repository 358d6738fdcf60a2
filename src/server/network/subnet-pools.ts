/**
 * Subnet pools (extensions subnet_allocation, default-subnetpools; docs/network.md, "Subnet pools"): prefixes a
 * subnet's CIDR is allocated from. A subnet created with `subnetpool_id` (or `use_default_subnetpool`) and a
 * `prefixlen` or no `cidr` gets the first free block of that length in the pool's prefixes; one created with a
 * `cidr` must fit in them and overlap no other subnet of the pool. What is allocated is derived from the subnets
 * themselves (`subnets.subnetpool_id`), so deleting a subnet frees its block; allocations serialise on the
 * pool's row lock. `default_quota` bounds the prefix space one project holds in a pool (/32s for IPv4, /64s for
 * IPv6), as Neutron counts it. A pool may belong to an address scope (address-scopes.ts).
 */
import type { SubnetPoolTable } from '../storage/schema.js'
import { bitsOf, cidrContains, cidrsOverlap, formatCidr, lastAddress, parseCidr, type Cidr, type IpVersion } from '../../lib/ip.js'
import { can, flag, listsAllProjects, must, newUuid, parseJson, type Actor, type NetCtx } from './context.js'
import { neutron } from './errors.js'
import { owningProject } from './networks.js'
import { touched } from './queries.js'
import { subnetPoolView, type View } from './views.js'
import { checkPoolScope } from './address-scopes.js'

export interface SubnetPoolBody {
  name?: string
  description?: string
  prefixes?: string[]
  default_prefixlen?: number
  min_prefixlen?: number
  max_prefixlen?: number
  default_quota?: number | null
  shared?: boolean
  is_default?: boolean
  address_scope_id?: string | null
  project_id?: string
  tenant_id?: string
  tags?: string[]
}

/** Neutron's defaults for a pool's smallest prefix length (the largest subnet it hands out). */
const DEFAULT_MIN_PREFIXLEN: Record<IpVersion, number> = { 4: 8, 6: 64 }
/** default_quota counts IPv4 space in /32s and IPv6 space in /64s. */
const QUOTA_UNIT_BITS: Record<IpVersion, number> = { 4: 32, 6: 64 }

const poolTarget = (p: SubnetPoolTable) => ({ projectId: p.project_id, shared: p.shared === 1 })
const notFound = (id: string) => neutron.notFound('SubnetPoolNotFound', `Subnet pool ${id} could not be found.`)

export async function visibleSubnetPool(ctx: NetCtx, actor: Actor, id: string, lock = false): Promise<SubnetPoolTable> {
  const row = await ctx.db
    .selectFrom('subnet_pools')
    .selectAll()
    .where('id', '=', id)
    .$if(lock && ctx.rowLocks, (q) => q.forUpdate())
    .executeTakeFirst()
  if (!row || !can(actor, 'get_subnetpool', poolTarget(row))) throw notFound(id)
  return row
}

/**
 * The prefixes as Neutron keeps them: canonical networks, merged (a prefix inside another goes; two halves of
 * one block become the block), sorted. All of one IP version.
 */
export function mergePrefixes(texts: string[]): { version: IpVersion; prefixes: Cidr[] } {
  if (texts.length === 0) throw neutron.invalidInput('A subnet pool needs at least one prefix.')
  const parsed = texts.map((t) => {
    const cidr = parseCidr(t)
    if (!cidr) throw neutron.invalidInput(`'${t}' is not a valid IP subnet.`)
    return { ...cidr, address: cidr.network }
  })
  const version = parsed[0].version
  if (parsed.some((c) => c.version !== version)) throw neutron.invalid('PrefixVersionMismatch', 'Cannot mix IPv4 and IPv6 prefixes in a subnet pool.')
  let merged = parsed
  for (let changed = true; changed; ) {
    changed = false
    const sorted = [...merged].sort((a, b) => (a.network !== b.network ? (a.network < b.network ? -1 : 1) : a.prefix - b.prefix))
    const out: Cidr[] = []
    for (const c of sorted) {
      const last = out[out.length - 1]
      if (last && cidrContains(last, { version, value: c.network })) {
        changed ||= true
        continue
      }
      const size = 1n << BigInt(bitsOf(version) - c.prefix)
      if (last && last.prefix === c.prefix && c.prefix > 0 && last.network + size === c.network && (last.network & ((size << 1n) - 1n)) === 0n) {
        out[out.length - 1] = { version, network: last.network, address: last.network, prefix: c.prefix - 1 }
        changed = true
        continue
      }
      out.push(c)
    }
    merged = out
  }
  return { version, prefixes: merged }
}

interface Bounds {
  min: number
  max: number
  default: number
}

function checkBounds(version: IpVersion, b: Bounds): void {
  const bits = bitsOf(version)
  for (const [name, v] of [['min_prefixlen', b.min], ['max_prefixlen', b.max], ['default_prefixlen', b.default]] as const) {
    if (v < 0 || v > bits) throw neutron.invalid('IllegalSubnetPoolPrefixBounds', `Illegal prefix bounds: ${name}=${v}, it must be 0 to ${bits}.`)
  }
  if (b.min > b.max) throw neutron.invalid('IllegalSubnetPoolPrefixBounds', `Illegal prefix bounds: min_prefixlen=${b.min}, max_prefixlen=${b.max}.`)
  if (b.default < b.min || b.default > b.max) {
    throw neutron.invalid('IllegalSubnetPoolPrefixBounds', `Illegal prefix bounds: default_prefixlen=${b.default}, it must be between min_prefixlen=${b.min} and max_prefixlen=${b.max}.`)
  }
}

/** Only one default pool per IP version (Neutron's DefaultSubnetPoolExists). */
async function checkOneDefault(ctx: NetCtx, version: number, exceptId?: string): Promise<void> {
  const other = await ctx.db.selectFrom('subnet_pools').select('id').where('ip_version', '=', version).where('is_default', '=', 1).$if(exceptId !== undefined, (q) => q.where('id', '!=', exceptId!)).executeTakeFirst()
  if (other) throw neutron.conflict('DefaultSubnetPoolExists', `A default subnetpool for this IP family has already been set: ${other.id}. Only one default may exist per IP family.`)
}

export async function createSubnetPool(ctx: NetCtx, actor: Actor, body: SubnetPoolBody): Promise<View> {
  const projectId = owningProject(actor, body)
  must(actor, 'create_subnetpool', { projectId })
  if (body.shared) must(actor, 'create_subnetpool:shared', { projectId })
  if (body.is_default) must(actor, 'create_subnetpool:is_default', { projectId })
  if (body.prefixes === undefined) throw neutron.badRequest('subnetpool', "'prefixes' is required")
  const { version, prefixes } = mergePrefixes(body.prefixes)
  const min = body.min_prefixlen ?? DEFAULT_MIN_PREFIXLEN[version]
  const bounds = { min, max: body.max_prefixlen ?? bitsOf(version), default: body.default_prefixlen ?? min }
  checkBounds(version, bounds)
  if (body.default_quota != null && body.default_quota < 0) throw neutron.invalidInput(`Invalid default_quota ${body.default_quota}: it must be 0 or more.`)
  if (body.is_default) await checkOneDefault(ctx, version)
  if (body.address_scope_id != null) await checkPoolScope(ctx, actor, body.address_scope_id, version, prefixes)
  const row: SubnetPoolTable = {
    id: newUuid(),
    project_id: projectId,
    name: body.name ?? '',
    description: body.description ?? '',
    ip_version: version,
    prefixes: JSON.stringify(prefixes.map(formatCidr)),
    default_prefixlen: bounds.default,
    min_prefixlen: bounds.min,
    max_prefixlen: bounds.max,
    default_quota: body.default_quota ?? null,
    shared: flag(body.shared, false),
    is_default: flag(body.is_default, false),
    address_scope_id: body.address_scope_id ?? null,
    tags: JSON.stringify(body.tags ?? []),
    revision_number: 0,
    created_at: ctx.now,
    updated_at: ctx.now,
  }
  await ctx.db.insertInto('subnet_pools').values(row).execute()
  return subnetPoolView(row)
}

export async function listSubnetPools(ctx: NetCtx, actor: Actor): Promise<View[]> {
  const rows = await ctx.db
    .selectFrom('subnet_pools')
    .selectAll()
    .$if(!listsAllProjects(actor), (q) => q.where((eb) => eb.or([eb('project_id', '=', actor.projectId), eb('shared', '=', 1)])))
    .execute()
  return rows.filter((r) => can(actor, 'get_subnetpool', poolTarget(r))).map(subnetPoolView)
}

export async function showSubnetPool(ctx: NetCtx, actor: Actor, id: string): Promise<View> {
  return subnetPoolView(await visibleSubnetPool(ctx, actor, id))
}

export async function updateSubnetPool(ctx: NetCtx, actor: Actor, id: string, body: SubnetPoolBody): Promise<View> {
  const pool = await visibleSubnetPool(ctx, actor, id, true)
  must(actor, 'update_subnetpool', poolTarget(pool))
  if (body.is_default !== undefined) must(actor, 'update_subnetpool:is_default', poolTarget(pool))
  if (body.shared !== undefined && flag(body.shared, false) !== pool.shared) throw neutron.invalidInput('Cannot update read-only attribute shared')
  const version = pool.ip_version as IpVersion
  const changes: Partial<SubnetPoolTable> = {}
  if (body.name !== undefined) changes.name = body.name
  if (body.description !== undefined) changes.description = body.description
  if (body.tags !== undefined) changes.tags = JSON.stringify(body.tags)
  if (body.prefixes !== undefined) {
    const merged = mergePrefixes(body.prefixes)
    if (merged.version !== version) throw neutron.invalid('PrefixVersionMismatch', 'Cannot mix IPv4 and IPv6 prefixes in a subnet pool.')
    // Space already handed out must stay in the pool: prefixes may grow, never shrink (Neutron).
    for (const old of parseJson<string[]>(pool.prefixes)) {
      const cidr = parseCidr(old)!
      if (!merged.prefixes.some((p) => p.prefix <= cidr.prefix && cidrContains(p, { version, value: cidr.network }))) {
        throw neutron.invalid('IllegalSubnetPoolPrefixUpdate', `Illegal update to prefixes: ${old} was removed; existing prefixes must be a subset of the new prefixes.`)
      }
    }
    changes.prefixes = JSON.stringify(merged.prefixes.map(formatCidr))
  }
  const bounds = { min: body.min_prefixlen ?? pool.min_prefixlen, max: body.max_prefixlen ?? pool.max_prefixlen, default: body.default_prefixlen ?? pool.default_prefixlen }
  checkBounds(version, bounds)
  Object.assign(changes, { min_prefixlen: bounds.min, max_prefixlen: bounds.max, default_prefixlen: bounds.default })
  if (body.default_quota !== undefined) {
    if (body.default_quota !== null && body.default_quota < 0) throw neutron.invalidInput(`Invalid default_quota ${body.default_quota}: it must be 0 or more.`)
    changes.default_quota = body.default_quota
  }
  // A pool in a scope (staying or joining) keeps its prefixes apart from the scope's other pools.
  const scopeId = body.address_scope_id !== undefined ? body.address_scope_id : pool.address_scope_id
  if (scopeId !== null && (body.address_scope_id !== undefined || changes.prefixes !== undefined)) {
    const prefixes = parseJson<string[]>(changes.prefixes ?? pool.prefixes).map((p) => parseCidr(p)!)
    await checkPoolScope(ctx, actor, scopeId, version, prefixes, id)
  }
  if (body.address_scope_id !== undefined) changes.address_scope_id = body.address_scope_id
  if (body.is_default !== undefined) {
    if (body.is_default) await checkOneDefault(ctx, version, id)
    changes.is_default = flag(body.is_default, false)
  }
  await ctx.db.updateTable('subnet_pools').set({ ...changes, ...touched(ctx.now, pool.revision_number) }).where('id', '=', id).execute()
  return showSubnetPool(ctx, actor, id)
}

export async function deleteSubnetPool(ctx: NetCtx, actor: Actor, id: string): Promise<void> {
  const pool = await visibleSubnetPool(ctx, actor, id, true)
  must(actor, 'delete_subnetpool', poolTarget(pool))
  const used = await ctx.db.selectFrom('subnets').select('id').where('subnetpool_id', '=', id).executeTakeFirst()
  if (used) throw neutron.conflict('SubnetPoolInUse', `Unable to complete operation on subnet pool ${id}. Subnets are still allocated from it.`)
  await ctx.db.deleteFrom('subnet_pools').where('id', '=', id).execute()
}

export interface PoolRequest {
  subnetpool_id?: string | null
  use_default_subnetpool?: boolean
  ip_version?: number
  cidr?: string
  prefixlen?: number
}

/** The pool a new subnet asks for (locked for its allocation), or undefined when it names none. */
export async function requestedPool(ctx: NetCtx, actor: Actor, body: PoolRequest): Promise<SubnetPoolTable | undefined> {
  if (body.subnetpool_id != null) {
    const pool = await visibleSubnetPool(ctx, actor, body.subnetpool_id, true)
    if (body.ip_version !== undefined && body.ip_version !== pool.ip_version) {
      throw neutron.invalidInput(`Cannot allocate IPv${body.ip_version} subnet from IPv${pool.ip_version} subnet pool`)
    }
    return pool
  }
  if (body.use_default_subnetpool) {
    const row = await ctx.db.selectFrom('subnet_pools').select('id').where('ip_version', '=', body.ip_version ?? 4).where('is_default', '=', 1).executeTakeFirst()
    if (!row) throw neutron.badRequest('subnet', `No default subnetpool found for IPv${body.ip_version ?? 4}`)
    return visibleSubnetPool(ctx, actor, row.id, true)
  }
  if (body.prefixlen !== undefined) throw neutron.badRequest('subnet', 'prefixlen requires a subnet pool (subnetpool_id or use_default_subnetpool)')
  return undefined
}

const unitsOf = (cidr: Pick<Cidr, 'prefix' | 'version'>) => 1n << BigInt(Math.max(0, QUOTA_UNIT_BITS[cidr.version] - cidr.prefix))

/** The CIDR a subnet of `projectId` gets from `pool`: the one asked for when it fits, else the first free block. */
export async function allocateFromPool(ctx: NetCtx, pool: SubnetPoolTable, projectId: string, body: PoolRequest): Promise<string> {
  const version = pool.ip_version as IpVersion
  const prefixes = parseJson<string[]>(pool.prefixes).map((p) => parseCidr(p)!)
  const taken = await ctx.db.selectFrom('subnets').select(['cidr', 'project_id']).where('subnetpool_id', '=', pool.id).execute()
  const used = taken.map((t) => parseCidr(t.cidr)!).sort((a, b) => (a.network < b.network ? -1 : a.network > b.network ? 1 : 0))
  let cidr: Cidr
  if (body.cidr !== undefined) {
    const asked = parseCidr(body.cidr)
    if (!asked) throw neutron.invalidInput(`'${body.cidr}' is not a valid IP subnet.`)
    if (asked.prefix < pool.min_prefixlen || asked.prefix > pool.max_prefixlen) throw prefixlenOutOfBounds(asked.prefix, pool)
    if (!prefixes.some((p) => p.prefix <= asked.prefix && cidrContains(p, { version, value: asked.network }))) {
      throw neutron.invalidInput(`Cidr ${body.cidr} is not within the prefixes of subnet pool ${pool.id}.`)
    }
    if (used.some((u) => cidrsOverlap(u, asked))) throw neutron.conflict('SubnetAllocationError', `Failed to allocate subnet: ${formatCidr(asked)} overlaps a subnet allocated from subnet pool ${pool.id}.`)
    cidr = asked
  } else {
    const prefixlen = body.prefixlen ?? pool.default_prefixlen
    if (prefixlen < pool.min_prefixlen || prefixlen > pool.max_prefixlen) throw prefixlenOutOfBounds(prefixlen, pool)
    const free = firstFree(prefixes, used, version, prefixlen)
    if (!free) throw neutron.conflict('SubnetAllocationError', `Failed to allocate subnet: no free /${prefixlen} is left in subnet pool ${pool.id}.`)
    cidr = free
  }
  if (pool.default_quota !== null) {
    const held = taken.filter((t) => t.project_id === projectId).reduce((sum, t) => sum + unitsOf(parseCidr(t.cidr)!), 0n)
    if (held + unitsOf(cidr) > BigInt(pool.default_quota)) throw neutron.conflict('SubnetPoolQuotaExceeded', 'Per-tenant subnet pool prefix quota exceeded.')
  }
  return formatCidr(cidr)
}

function prefixlenOutOfBounds(prefixlen: number, pool: SubnetPoolTable) {
  return neutron.invalidInput(`Unsupported prefix length ${prefixlen}: subnet pool ${pool.id} hands out /${pool.min_prefixlen} to /${pool.max_prefixlen}.`)
}

const overlapping = (used: Cidr[], at: bigint, size: bigint) => used.find((u) => u.network <= at + size - 1n && lastAddress(u) >= at)

/** The lowest aligned block of `prefixlen` in the prefixes that overlaps no used CIDR (sorted by network). */
function firstFree(prefixes: Cidr[], used: Cidr[], version: IpVersion, prefixlen: number): Cidr | undefined {
  const size = 1n << BigInt(bitsOf(version) - prefixlen)
  const alignUp = (v: bigint) => ((v + size - 1n) / size) * size
  for (const p of prefixes) {
    if (p.prefix > prefixlen) continue
    const end = lastAddress(p)
    let at = p.network
    // Skip past every used block the candidate overlaps, until one fits or the prefix ends.
    for (let hit = overlapping(used, at, size); hit && at + size - 1n <= end; hit = overlapping(used, at, size)) at = alignUp(lastAddress(hit) + 1n)
    if (at + size - 1n <= end) return { version, network: at, address: at, prefix: prefixlen }
  }
  return undefined
}
