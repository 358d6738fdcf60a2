/** Networks: create, show, list, update, delete, with Neutron's visibility (own, shared, external). */
import type { NetworkTable } from '../storage/schema.js'
import type { Db } from '../storage/store.js'
import { prepared } from '../storage/prepared.js'
import type { ViewCache } from '../http/view-cache.js'
import type { NetworkPolicyTarget } from '../policy/network.policy.js'
import { can, flag, listsAllProjects, must, newUuid, type Actor, type NetCtx } from './context.js'
import { neutron } from './errors.js'
import { checkQuota } from './quotas.js'
import { lockNetwork, subnetIdsByNetwork, touched } from './queries.js'
import { networkView, type View } from './views.js'
import { removeDhcpPorts } from './dhcp-ports.js'
import { removePort } from './ports.js'
import { checkSegmentUnchanged, hasProviderAttributes, maxMtu, resolveSegment, type ProviderBody } from './segments.js'

export interface NetworkBody extends ProviderBody {
  name?: string
  description?: string
  admin_state_up?: boolean
  shared?: boolean
  'router:external'?: boolean
  is_default?: boolean
  mtu?: number
  port_security_enabled?: boolean
  project_id?: string
  tenant_id?: string
  tags?: string[]
}

export const networkTarget = (n: Pick<NetworkTable, 'project_id' | 'shared' | 'external'>): NetworkPolicyTarget => ({
  projectId: n.project_id,
  networkProjectId: n.project_id,
  shared: n.shared === 1,
  external: n.external === 1,
})

/** The project a new resource belongs to: the caller's, or another one named in the body (admins only). */
export function owningProject(ctx: Actor, body: { project_id?: string; tenant_id?: string }): string {
  const requested = body.project_id ?? body.tenant_id
  if (body.project_id !== undefined && body.tenant_id !== undefined && body.project_id !== body.tenant_id) {
    throw neutron.invalidInput('project_id and tenant_id do not match')
  }
  if (requested === undefined || requested === ctx.projectId) {
    if (ctx.projectId === '') throw neutron.invalidInput("'project_id' is required for a token not scoped to a project")
    return ctx.projectId
  }
  must(ctx, 'create:other_project', { projectId: requested })
  return requested
}

function checkMtu(mtu: number | undefined, type: string): void {
  if (mtu === undefined) return
  if (mtu < 68) throw neutron.invalidInput(`Requested MTU ${mtu} is outside the range 68 to 9000.`)
  if (mtu > maxMtu(type)) throw neutron.invalidInput(`Requested MTU is too big, maximum is ${maxMtu(type)}`)
}

/** A network the actor may see, or NetworkNotFound (404) — also for another project's private network. */
export async function visibleNetwork(ctx: NetCtx, actor: Actor, id: string): Promise<NetworkTable> {
  const [row] = await networkById(ctx.db, id)
  if (!row || !can(actor, 'get_network', networkTarget(row))) throw neutron.networkNotFound(id)
  return row
}

// Compiled once: every show of a network reads it (storage/prepared.ts).
const networkById = prepared((db: Db, id: string) => db.selectFrom('networks').selectAll().where('id', '=', id))

export async function renderNetworks(ctx: NetCtx, actor: Actor, rows: NetworkTable[]): Promise<View[]> {
  const subnets = await subnetIdsByNetwork(ctx.db, rows.map((r) => r.id))
  const provider = can(actor, 'get_network:provider')
  return rows.map((r) => networkView(r, subnets.get(r.id) ?? [], provider))
}

export async function listNetworks(ctx: NetCtx, actor: Actor): Promise<View[]> {
  let q = ctx.db.selectFrom('networks').selectAll()
  if (!listsAllProjects(actor)) q = q.where((eb) => eb.or([eb('project_id', '=', actor.projectId), eb('shared', '=', 1), eb('external', '=', 1)]))
  const rows = (await q.execute()).filter((r) => can(actor, 'get_network', networkTarget(r)))
  return renderNetworks(ctx, actor, rows)
}

/** Writes a network with its segment (a VNI allocated unless the body names one); callers checked the policy. */
export async function insertNetwork(ctx: NetCtx, projectId: string, body: NetworkBody): Promise<NetworkTable> {
  const segment = await resolveSegment(ctx, body)
  checkMtu(body.mtu, segment.network_type)
  const row: NetworkTable = {
    id: newUuid(),
    rev: 0,
    project_id: projectId,
    name: body.name ?? '',
    description: body.description ?? '',
    admin_state_up: flag(body.admin_state_up, true),
    shared: flag(body.shared, false),
    external: flag(body['router:external'], false),
    is_default: flag(body.is_default, false),
    mtu: body.mtu ?? maxMtu(segment.network_type),
    status: 'ACTIVE',
    port_security_enabled: flag(body.port_security_enabled, true),
    ...segment,
    tags: JSON.stringify(body.tags ?? []),
    revision_number: 1,
    created_at: ctx.now,
    updated_at: ctx.now,
  }
  await ctx.db.insertInto('networks').values(row).execute()
  return row
}

export async function createNetwork(ctx: NetCtx, actor: Actor, body: NetworkBody): Promise<View> {
  const projectId = owningProject(actor, body)
  must(actor, 'create_network', { projectId })
  if (body.shared) must(actor, 'create_network:shared', { projectId })
  if (body['router:external']) must(actor, 'create_network:router:external', { projectId })
  if (body.is_default) must(actor, 'create_network:is_default', { projectId })
  if (hasProviderAttributes(body)) must(actor, 'create_network:provider', { projectId })
  if (body.is_default && !body['router:external']) throw neutron.invalidInput('is_default can only be set on an external network')
  await checkQuota(ctx.db, projectId, 'network')
  const row = await insertNetwork(ctx, projectId, body)
  return networkView(row, [], can(actor, 'get_network:provider'))
}

export async function showNetwork(ctx: NetCtx, actor: Actor, id: string): Promise<View> {
  const row = await visibleNetwork(ctx, actor, id)
  return (await renderNetworks(ctx, actor, [row]))[0]
}

/**
 * GET /networks/{id}'s answer as bytes, from `views` when the network's revisions (migration 0128: raised by the
 * database on any change of the row, `rev`, or of its subnets, the view revision; in any process) still match,
 * else rendered and kept. One statement reads what visibility needs and both revisions; visibility is checked on
 * it as visibleNetwork does. The view depends on the caller only through the provider attributes (the variant).
 */
export async function showNetworkKept(ctx: NetCtx, actor: Actor, id: string, views: ViewCache): Promise<Buffer> {
  const [stamp] = await networkStampById(ctx.db, id)
  if (!stamp || !can(actor, 'get_network', networkTarget(stamp))) throw neutron.networkNotFound(id)
  const variant = can(actor, 'get_network:provider') ? 'network|provider' : 'network'
  return views.keep(variant, id, { rev: stamp.rev, viewRev: stamp.view_rev }, async () => ({ network: await showNetwork(ctx, actor, id) }))
}

// Compiled once: every show of a network reads it.
const networkStampById = prepared((db: Db, id: string) =>
  db
    .selectFrom('networks')
    .select(['id', 'project_id', 'shared', 'external', 'rev'])
    .select((eb) =>
      eb.fn
        .coalesce(eb.selectFrom('view_revisions').select('rev').where('kind', '=', 'network').whereRef('view_revisions.id', '=', 'networks.id'), eb.lit(0))
        .as('view_rev'),
    )
    .where('networks.id', '=', id),
  { keepWhileUnchanged: true },
)

/** Of these network ids, the ones that exist (the view cache's sweep). */
export async function existingNetworkIds(db: Db, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  return new Set((await db.selectFrom('networks').select('id').where('id', 'in', ids).execute()).map((r) => r.id))
}

export async function updateNetwork(ctx: NetCtx, actor: Actor, id: string, body: NetworkBody): Promise<View> {
  const row = await visibleNetwork(ctx, actor, id)
  const target = networkTarget(row)
  must(actor, 'update_network', target)
  if (body.project_id !== undefined || body.tenant_id !== undefined) throw neutron.invalidInput('Cannot update read-only attribute project_id')
  if (body.shared !== undefined && body.shared !== (row.shared === 1)) {
    must(actor, 'update_network:shared', target)
    if (!body.shared) {
      const foreign = await ctx.db.selectFrom('ports').select('id').where('network_id', '=', id).where('project_id', '!=', row.project_id).where('project_id', '!=', '').executeTakeFirst()
      if (foreign) throw neutron.conflict('InvalidSharedSetting', `Unable to reconfigure sharing settings for network ${id}. Multiple tenants are using it.`)
    }
  }
  if (body['router:external'] !== undefined && body['router:external'] !== (row.external === 1)) {
    must(actor, 'update_network:router:external', target)
    if (!body['router:external']) {
      const inUse = await ctx.db.selectFrom('floating_ips').select('id').where('floating_network_id', '=', id).executeTakeFirst()
      const gateway = await ctx.db.selectFrom('routers').select('id').where('gw_network_id', '=', id).executeTakeFirst()
      if (inUse || gateway) throw neutron.conflict('ExternalNetworkInUse', `External network ${id} cannot be updated to be internal: it is in use by routers or floating IPs.`)
    }
  }
  if (body.is_default !== undefined) must(actor, 'create_network:is_default', target)
  if (hasProviderAttributes(body)) {
    must(actor, 'create_network:provider', target)
    checkSegmentUnchanged(row, body)
  }
  checkMtu(body.mtu, row.network_type)
  const external = body['router:external'] ?? row.external === 1
  if ((body.is_default ?? row.is_default === 1) && !external) throw neutron.invalidInput('is_default can only be set on an external network')
  const changes: Partial<NetworkTable> = {
    ...(body.name !== undefined ? { name: body.name } : {}),
    ...(body.description !== undefined ? { description: body.description } : {}),
    ...(body.admin_state_up !== undefined ? { admin_state_up: flag(body.admin_state_up, true) } : {}),
    ...(body.shared !== undefined ? { shared: flag(body.shared, false) } : {}),
    ...(body['router:external'] !== undefined ? { external: flag(body['router:external'], false), is_default: external ? row.is_default : 0 } : {}),
    ...(body.is_default !== undefined ? { is_default: flag(body.is_default, false) } : {}),
    ...(body.mtu !== undefined ? { mtu: body.mtu } : {}),
    ...(body.port_security_enabled !== undefined ? { port_security_enabled: flag(body.port_security_enabled, true) } : {}),
    ...(body.tags !== undefined ? { tags: JSON.stringify(body.tags) } : {}),
  }
  await ctx.db.updateTable('networks').set({ ...changes, ...touched(ctx.now, row.revision_number) }).where('id', '=', id).execute()
  return showNetwork(ctx, actor, id)
}

/** Deletes a network, its subnets and its DHCP port; NetworkInUse (409) while any other port remains on it. */
export async function deleteNetwork(ctx: NetCtx, actor: Actor, id: string): Promise<void> {
  const row = await visibleNetwork(ctx, actor, id)
  must(actor, 'delete_network', networkTarget(row))
  await removeNetwork(ctx, row)
}

export async function removeNetwork(ctx: NetCtx, row: NetworkTable): Promise<void> {
  // The network's row before its subnets' view revision (migration 0128), as subnet writers lock it: one order.
  await lockNetwork(ctx, row.id)
  await removeDhcpPorts(ctx, row.id)
  // As Neutron's L3 plugin does: an external network's floating IPs that no port uses go with it (their holder
  // ports would otherwise keep it in use); an associated one keeps it in use.
  const unused = await ctx.db.selectFrom('floating_ips').select(['id', 'floating_port_id']).where('floating_network_id', '=', row.id).where('fixed_port_id', 'is', null).execute()
  for (const fip of unused) {
    await ctx.db.deleteFrom('floating_ips').where('id', '=', fip.id).execute()
    const holder = await ctx.db.selectFrom('ports').selectAll().where('id', '=', fip.floating_port_id).executeTakeFirst()
    if (holder) await removePort(ctx, holder)
  }
  const port = await ctx.db.selectFrom('ports').select('id').where('network_id', '=', row.id).executeTakeFirst()
  if (port) throw neutron.networkInUse(row.id)
  await ctx.db.deleteFrom('subnets').where('network_id', '=', row.id).execute()
  await ctx.db.deleteFrom('auto_allocated_networks').where('network_id', '=', row.id).execute()
  await ctx.db.deleteFrom('networks').where('id', '=', row.id).execute()
}
