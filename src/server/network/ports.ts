/**
 * Ports: a MAC address, addresses from IPAM, security groups and a device binding. `insertPort` is the one
 * place a port is written; the API, routers, floating IPs and the compute service all go through it, with the
 * network's row lock held.
 */
import type { NetworkTable, PortTable } from '../storage/schema.js'
import { can, flag, listsAllProjects, must, newUuid, type Actor, type NetCtx } from './context.js'
import { neutron } from './errors.js'
import { allocateIps, randomMac, recordIps, type FixedIpRequest } from './ipam.js'
import { canonicalIp, parseCidr } from '../../lib/ip.js'
import { networkTarget, owningProject, visibleNetwork } from './networks.js'
import { checkQuota } from './quotas.js'
import { fixedIpsByPort, lockNetwork, securityGroupIdsByPort, touched } from './queries.js'
import { ensureDefaultSecurityGroup } from './security-groups.js'
import { portView, type FixedIp, type View } from './views.js'
import { prepared } from '../storage/prepared.js'
import type { Db } from '../storage/store.js'

export interface AddressPair {
  ip_address: string
  mac_address?: string
}

export interface PortBody {
  network_id?: string
  name?: string
  description?: string
  admin_state_up?: boolean
  mac_address?: string
  fixed_ips?: FixedIpRequest[]
  device_id?: string
  device_owner?: string
  security_groups?: string[]
  port_security_enabled?: boolean
  'binding:host_id'?: string
  'binding:vnic_type'?: string
  'binding:profile'?: Record<string, unknown>
  allowed_address_pairs?: AddressPair[]
  project_id?: string
  tenant_id?: string
  tags?: string[]
}

/** What a new port gets; security group ids already resolved (undefined: the project's default group). */
export interface PortSpec {
  name?: string
  description?: string
  admin_state_up?: boolean
  mac_address?: string
  fixed_ips?: FixedIpRequest[]
  device_id?: string
  device_owner?: string
  security_groups?: string[]
  port_security_enabled?: boolean
  binding_host_id?: string
  binding_vnic_type?: string
  binding_profile?: Record<string, unknown>
  allowed_address_pairs?: AddressPair[]
  auto_delete?: boolean
  tags?: string[]
}

/** Ports Neutron's L3 service owns: deleted with their router or floating IP, never through the port API. */
export const ROUTER_INTERFACE_OWNERS = ['network:router_interface', 'network:router_interface_distributed'] as const
export const L3_OWNERS = new Set<string>([...ROUTER_INTERFACE_OWNERS, 'network:router_gateway', 'network:floatingip'])

const MAC_RE = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/

export const portTarget = (p: PortTable, n: NetworkTable) => ({ ...networkTarget(n), projectId: p.project_id })

function validateMac(mac: string): string {
  const lower = mac.toLowerCase().replaceAll('-', ':')
  if (!MAC_RE.test(lower) || (parseInt(lower.slice(0, 2), 16) & 1) === 1 || lower === '00:00:00:00:00:00') {
    throw neutron.invalidInput(`'${mac}' is not a valid MAC address`)
  }
  return lower
}

function validatePairs(pairs: AddressPair[] | undefined): AddressPair[] {
  return (pairs ?? []).map((p) => {
    const ip = canonicalIp(p.ip_address) ?? (parseCidr(p.ip_address) ? p.ip_address : undefined)
    if (!ip) throw neutron.invalidInput(`'${p.ip_address}' is not a valid IP address or CIDR for allowed_address_pairs.`)
    return { ip_address: ip, ...(p.mac_address !== undefined ? { mac_address: validateMac(p.mac_address) } : {}) }
  })
}

async function checkGroups(ctx: NetCtx, actor: Actor, projectId: string, ids: string[]): Promise<string[]> {
  const unique = [...new Set(ids)]
  for (const id of unique) {
    const g = await ctx.db.selectFrom('security_groups').select(['id', 'project_id']).where('id', '=', id).executeTakeFirst()
    if (!g || (g.project_id !== projectId && !can(actor, 'port:security_groups:other_project', { projectId }))) throw neutron.securityGroupNotFound(id)
  }
  return unique
}

/** Writes a new port on a network whose row lock the caller holds. */
export async function insertPort(ctx: NetCtx, network: NetworkTable, projectId: string, spec: PortSpec): Promise<PortTable> {
  if (projectId !== '') await checkQuota(ctx.db, projectId, 'port')
  let mac: string
  if (spec.mac_address !== undefined) {
    mac = validateMac(spec.mac_address)
    const clash = await ctx.db.selectFrom('ports').select('id').where('network_id', '=', network.id).where('mac_address', '=', mac).executeTakeFirst()
    if (clash) throw neutron.macAddressInUse(mac, network.id)
  } else {
    do mac = randomMac()
    while (await ctx.db.selectFrom('ports').select('id').where('network_id', '=', network.id).where('mac_address', '=', mac).executeTakeFirst())
  }
  const securityEnabled = spec.port_security_enabled ?? network.port_security_enabled === 1
  const owner = spec.device_owner ?? ''
  let groups: string[] = []
  if (spec.security_groups !== undefined) groups = spec.security_groups
  else if (securityEnabled && !owner.startsWith('network:') && projectId !== '') groups = [await ensureDefaultSecurityGroup(ctx, projectId)]
  if (!securityEnabled && groups.length > 0) {
    throw neutron.invalid('PortSecurityAndIPRequiredForSecurityGroups', 'Port security must be enabled and port must have an IP address in order to use security groups.')
  }
  const id = newUuid()
  const ips = await allocateIps(ctx, network.id, { id, mac }, spec.fixed_ips, { implicitAutoAddresses: !owner.startsWith('network:router') })
  const row: PortTable = {
    id,
    network_id: network.id,
    project_id: projectId,
    name: spec.name ?? '',
    description: spec.description ?? '',
    admin_state_up: flag(spec.admin_state_up, true),
    mac_address: mac,
    device_id: spec.device_id ?? '',
    device_owner: owner,
    port_security_enabled: securityEnabled ? 1 : 0,
    binding_host_id: spec.binding_host_id ?? '',
    binding_vnic_type: spec.binding_vnic_type ?? 'normal',
    binding_profile: JSON.stringify(spec.binding_profile ?? {}),
    allowed_address_pairs: JSON.stringify(validatePairs(spec.allowed_address_pairs)),
    auto_delete: spec.auto_delete ? 1 : 0,
    tags: JSON.stringify(spec.tags ?? []),
    revision_number: 1,
    rev: 0,
    created_at: ctx.now,
    updated_at: ctx.now,
  }
  await ctx.db.insertInto('ports').values(row).execute()
  await recordIps(ctx, network.id, id, ips)
  if (groups.length > 0) await ctx.db.insertInto('port_security_groups').values(groups.map((g) => ({ port_id: id, security_group_id: g }))).execute()
  return row
}

/** Removes a port: its addresses go back to the pool, floating IPs on it are disassociated. */
export async function removePort(ctx: NetCtx, port: PortTable): Promise<void> {
  await lockNetwork(ctx, port.network_id)
  await ctx.db.updateTable('floating_ips').set({ fixed_port_id: null, fixed_ip_address: null, router_id: null, updated_at: ctx.now }).where('fixed_port_id', '=', port.id).execute()
  await ctx.db.deleteFrom('ip_allocations').where('port_id', '=', port.id).execute()
  await ctx.db.deleteFrom('port_security_groups').where('port_id', '=', port.id).execute()
  await ctx.db.deleteFrom('ports').where('id', '=', port.id).execute()
}

export async function renderPorts(ctx: NetCtx, rows: PortTable[], showBinding: boolean): Promise<View[]> {
  const ids = rows.map((r) => r.id)
  const [ips, groups] = await Promise.all([fixedIpsByPort(ctx.db, ids), securityGroupIdsByPort(ctx.db, ids)])
  return rows.map((r) => portView(r, ips.get(r.id) ?? [], groups.get(r.id) ?? [], showBinding))
}

export async function visiblePort(ctx: NetCtx, actor: Actor, id: string): Promise<{ port: PortTable; network: NetworkTable }> {
  const port = await ctx.db.selectFrom('ports').selectAll().where('id', '=', id).executeTakeFirst()
  const network = port && (await ctx.db.selectFrom('networks').selectAll().where('id', '=', port.network_id).executeTakeFirst())
  if (!port || !network || !can(actor, 'get_port', portTarget(port, network))) throw neutron.portNotFound(id)
  return { port, network }
}

export async function listPorts(ctx: NetCtx, actor: Actor, query: { device_id?: string[]; network_id?: string[] }): Promise<View[]> {
  let q = ctx.db.selectFrom('ports').innerJoin('networks', 'networks.id', 'ports.network_id').selectAll('ports').select('networks.project_id as net_project')
  if (!listsAllProjects(actor)) q = q.where((eb) => eb.or([eb('ports.project_id', '=', actor.projectId), eb('networks.project_id', '=', actor.projectId)]))
  // The two filters clients send most (openstacksdk's server waits, routers' interfaces) run in SQL.
  if (query.device_id?.length) q = q.where('ports.device_id', 'in', query.device_id)
  if (query.network_id?.length) q = q.where('ports.network_id', 'in', query.network_id)
  const rows = (await q.execute())
    .filter((r) => can(actor, 'get_port', { projectId: r.project_id, networkProjectId: r.net_project }))
    .map(({ net_project: _n, ...port }) => port)
  return renderPorts(ctx, rows, can(actor, 'get_port:binding'))
}

/**
 * A list answer that may be kept (http/view-cache.ts): the stamp of the rows it shows, read in one narrow statement,
 * to compare with what was kept; and, when it must be rendered again, its items with the stamp of the very rows
 * they were rendered from (a stamp read before another statement rendered them could be of another moment).
 */
export interface KeptListRows {
  /** What else the answer depends on: the caller's rights. */
  variant: string
  stamp: string
  render: () => Promise<{ stamp: string; items: View[] }>
}

/** What a port list shows of a port and what decides who sees it, one row per (address, group) pair. */
interface StampRow {
  id: string
  rev: number
  project_id: string
  net_project: string
  ip_subnet: string | null
  ip_address: string | null
  group_id: string | null
}
type JoinedPortRow = PortTable & StampRow & { subnet_created: number | null }

/**
 * Ports with their addresses and groups in the order the views list them: the stamp's columns only, or with every
 * column of the port (a render). Both read the same rows in the same order, so their stamps compare.
 */
function joinedPorts(db: Db, full: boolean) {
  const joined = db
    .selectFrom('ports')
    .innerJoin('networks', 'networks.id', 'ports.network_id')
    .leftJoin('ip_allocations', 'ip_allocations.port_id', 'ports.id')
    .leftJoin('subnets', 'subnets.id', 'ip_allocations.subnet_id')
    .leftJoin('port_security_groups', 'port_security_groups.port_id', 'ports.id')
    .select(['ports.id', 'ports.rev', 'ports.project_id', 'networks.project_id as net_project', 'ip_allocations.subnet_id as ip_subnet', 'ip_allocations.ip_address as ip_address'])
    .select('port_security_groups.security_group_id as group_id')
    // As fixedIpsByPort and securityGroupIdsByPort order them.
    .orderBy('ports.id')
    .orderBy('ip_allocations.created_at')
    .orderBy('subnets.created_at')
    .orderBy('subnets.id')
    .orderBy('ip_allocations.ip_address')
    .orderBy('port_security_groups.security_group_id')
  return full ? joined.selectAll('ports').select('subnets.created_at as subnet_created') : joined
}

// Compiled once: the two list shapes clients poll (a network's ports; a server's ports, openstacksdk's waits).
const PORT_LIST_STATEMENTS = {
  network: { stamp: prepared((db: Db, id: string) => joinedPorts(db, false).where('ports.network_id', '=', id), { keepWhileUnchanged: true }), full: prepared((db: Db, id: string) => joinedPorts(db, true).where('ports.network_id', '=', id)) },
  device: { stamp: prepared((db: Db, id: string) => joinedPorts(db, false).where('ports.device_id', '=', id), { keepWhileUnchanged: true }), full: prepared((db: Db, id: string) => joinedPorts(db, true).where('ports.device_id', '=', id)) },
}

/** A port list's stamp: each row's revision, address and group (an address whose subnet is gone is not shown). */
function stampOf(rows: StampRow[]): string {
  let stamp = ''
  for (const r of rows) stamp += `${r.id} ${r.rev} ${r.ip_subnet} ${r.ip_address} ${r.group_id}\n`
  return stamp
}

/** The ports of joined rows (grouped by port, in their order), as portView shows them. */
function portsOfJoinedRows(rows: JoinedPortRow[], showBinding: boolean): View[] {
  const views: View[] = []
  for (let i = 0; i < rows.length; ) {
    const port = rows[i]
    const ips: FixedIp[] = []
    const groups: string[] = []
    for (; i < rows.length && rows[i].id === port.id; i++) {
      const r = rows[i]
      // An address whose subnet is gone is not shown (fixedIpsByPort joins the subnets).
      if (r.ip_address !== null && r.subnet_created !== null && !ips.some((ip) => ip.subnet_id === r.ip_subnet && ip.ip_address === r.ip_address)) ips.push({ subnet_id: r.ip_subnet!, ip_address: r.ip_address })
      if (r.group_id !== null && !groups.includes(r.group_id)) groups.push(r.group_id)
    }
    views.push(portView(port, ips, groups, showBinding))
  }
  return views
}

/**
 * `GET /ports?network_id=X` or `?device_id=X` (one value, not both) as a list that may be kept; undefined for any
 * other query, which listPorts answers. The rows are those listPorts reads for the same query, cut to what the
 * caller may see; the stamp holds each one's revision (raised on any change of the row, migration 0129), its
 * address and group.
 */
export async function keptPortList(ctx: NetCtx, actor: Actor, query: { device_id?: string[]; network_id?: string[] }): Promise<KeptListRows | undefined> {
  const byNetwork = query.network_id?.length === 1 && !query.device_id?.length
  const byDevice = query.device_id?.length === 1 && !query.network_id?.length
  if (!byNetwork && !byDevice) return undefined
  const statements = byNetwork ? PORT_LIST_STATEMENTS.network : PORT_LIST_STATEMENTS.device
  const key = byNetwork ? query.network_id![0] : query.device_id![0]
  const visible = <R extends StampRow>(rows: R[]) => rows.filter((r) => can(actor, 'get_port', { projectId: r.project_id, networkProjectId: r.net_project }))
  const showBinding = can(actor, 'get_port:binding')
  return {
    variant: `ports|${showBinding ? 'binding' : ''}|${actor.projectId}|${actor.principal.roles.join(',')}`,
    stamp: stampOf(visible(await statements.stamp(ctx.db, key))),
    render: async () => {
      const rows = visible((await statements.full(ctx.db, key)) as JoinedPortRow[])
      return { stamp: stampOf(rows), items: portsOfJoinedRows(rows, showBinding) }
    },
  }
}

/** `fixed_ips=ip_address=…`, `fixed_ips=subnet_id=…`, `fixed_ips=ip_address_substr=…`: every criterion must hold. */
export function fixedIpsFilter(item: View, values: string[]): boolean {
  const ips = item.fixed_ips as { subnet_id: string; ip_address: string }[]
  return values.every((v) => {
    const eq = v.indexOf('=')
    const key = v.slice(0, eq)
    const want = v.slice(eq + 1)
    if (key === 'ip_address') return ips.some((ip) => ip.ip_address === (canonicalIp(want) ?? want))
    if (key === 'subnet_id') return ips.some((ip) => ip.subnet_id === want)
    if (key === 'ip_address_substr') return ips.some((ip) => ip.ip_address.includes(want))
    return false
  })
}

export async function createPort(ctx: NetCtx, actor: Actor, body: PortBody): Promise<View> {
  if (body.network_id === undefined) throw neutron.badRequest('port', "'network_id' is required")
  const network = await visibleNetwork(ctx, actor, body.network_id)
  const projectId = owningProject(actor, body)
  const target = { ...networkTarget(network), projectId }
  must(actor, 'create_port', target)
  if (body.fixed_ips?.some((f) => f.ip_address !== undefined)) must(actor, 'create_port:fixed_ips:ip_address', target)
  if (body.mac_address !== undefined) must(actor, 'create_port:mac_address', target)
  if (body['binding:host_id'] !== undefined || body['binding:profile'] !== undefined) must(actor, 'create_port:binding:host_id', target)
  if (body.device_owner?.startsWith('network:')) must(actor, 'create_port:device_owner:network', target)
  const locked = (await lockNetwork(ctx, network.id))!
  const groups = body.security_groups === undefined ? undefined : await checkGroups(ctx, actor, projectId, body.security_groups)
  const row = await insertPort(ctx, locked, projectId, {
    name: body.name,
    description: body.description,
    admin_state_up: body.admin_state_up,
    mac_address: body.mac_address,
    fixed_ips: body.fixed_ips,
    device_id: body.device_id,
    device_owner: body.device_owner,
    security_groups: groups,
    port_security_enabled: body.port_security_enabled,
    binding_host_id: body['binding:host_id'],
    binding_vnic_type: body['binding:vnic_type'],
    binding_profile: body['binding:profile'],
    allowed_address_pairs: body.allowed_address_pairs,
    tags: body.tags,
  })
  return (await renderPorts(ctx, [row], can(actor, 'get_port:binding')))[0]
}

export async function showPort(ctx: NetCtx, actor: Actor, id: string): Promise<View> {
  const { port } = await visiblePort(ctx, actor, id)
  return (await renderPorts(ctx, [port], can(actor, 'get_port:binding')))[0]
}

/** Changes a port's addresses: kept ones stay, new ones come from IPAM, dropped ones return to the pool. */
export async function reassignIps(ctx: NetCtx, port: PortTable, requests: FixedIpRequest[]): Promise<void> {
  await lockNetwork(ctx, port.network_id)
  const ips = await allocateIps(ctx, port.network_id, { id: port.id, mac: port.mac_address }, requests)
  await recordIps(ctx, port.network_id, port.id, ips)
}

export async function updatePort(ctx: NetCtx, actor: Actor, id: string, body: PortBody): Promise<View> {
  const { port, network } = await visiblePort(ctx, actor, id)
  const target = portTarget(port, network)
  must(actor, 'update_port', target)
  if (body.network_id !== undefined && body.network_id !== port.network_id) throw neutron.invalidInput('Cannot update read-only attribute network_id')
  if (body.project_id !== undefined || body.tenant_id !== undefined) throw neutron.invalidInput('Cannot update read-only attribute project_id')
  if (body.mac_address !== undefined) must(actor, 'update_port:mac_address', target)
  if (body['binding:host_id'] !== undefined || body['binding:profile'] !== undefined) must(actor, 'update_port:binding:host_id', target)
  if (body.device_owner?.startsWith('network:') && body.device_owner !== port.device_owner) must(actor, 'create_port:device_owner:network', target)
  const changes: Partial<PortTable> = {}
  if (body.name !== undefined) changes.name = body.name
  if (body.description !== undefined) changes.description = body.description
  if (body.admin_state_up !== undefined) changes.admin_state_up = flag(body.admin_state_up, true)
  if (body.device_id !== undefined) changes.device_id = body.device_id
  if (body.device_owner !== undefined) changes.device_owner = body.device_owner
  if (body['binding:host_id'] !== undefined) changes.binding_host_id = body['binding:host_id']
  if (body['binding:vnic_type'] !== undefined) changes.binding_vnic_type = body['binding:vnic_type']
  if (body['binding:profile'] !== undefined) changes.binding_profile = JSON.stringify(body['binding:profile'])
  if (body.allowed_address_pairs !== undefined) changes.allowed_address_pairs = JSON.stringify(validatePairs(body.allowed_address_pairs))
  if (body.tags !== undefined) changes.tags = JSON.stringify(body.tags)
  if (body.mac_address !== undefined) {
    const mac = validateMac(body.mac_address)
    if (mac !== port.mac_address) {
      if (port.binding_host_id !== '') throw neutron.conflict('PortBound', `Unable to complete operation on port ${id}, port is already bound.`)
      const clash = await ctx.db.selectFrom('ports').select('id').where('network_id', '=', port.network_id).where('mac_address', '=', mac).executeTakeFirst()
      if (clash) throw neutron.macAddressInUse(mac, port.network_id)
      changes.mac_address = mac
    }
  }
  const securityEnabled = body.port_security_enabled ?? port.port_security_enabled === 1
  changes.port_security_enabled = securityEnabled ? 1 : 0
  if (body.security_groups !== undefined) {
    const groups = await checkGroups(ctx, actor, port.project_id, body.security_groups)
    if (!securityEnabled && groups.length > 0) {
      throw neutron.invalid('PortSecurityAndIPRequiredForSecurityGroups', 'Port security must be enabled and port must have an IP address in order to use security groups.')
    }
    await ctx.db.deleteFrom('port_security_groups').where('port_id', '=', id).execute()
    if (groups.length > 0) await ctx.db.insertInto('port_security_groups').values(groups.map((g) => ({ port_id: id, security_group_id: g }))).execute()
  } else if (!securityEnabled) {
    const has = await ctx.db.selectFrom('port_security_groups').select('port_id').where('port_id', '=', id).executeTakeFirst()
    if (has) throw neutron.conflict('PortSecurityPortHasSecurityGroup', 'Port has security group associated. Cannot disable port security or IP address until security group is removed.')
  }
  if (body.fixed_ips !== undefined) {
    const current = (await fixedIpsByPort(ctx.db, [id])).get(id) ?? []
    const adds = body.fixed_ips.filter((f) => f.ip_address !== undefined && !current.some((c) => c.ip_address === canonicalIp(f.ip_address)))
    if (adds.length > 0) must(actor, 'update_port:fixed_ips:ip_address', target)
    await reassignIps(ctx, port, body.fixed_ips)
  }
  await ctx.db.updateTable('ports').set({ ...changes, ...touched(ctx.now, port.revision_number) }).where('id', '=', id).execute()
  return showPort(ctx, actor, id)
}

export async function deletePort(ctx: NetCtx, actor: Actor, id: string): Promise<void> {
  const { port, network } = await visiblePort(ctx, actor, id)
  must(actor, 'delete_port', portTarget(port, network))
  if (L3_OWNERS.has(port.device_owner)) throw neutron.l3PortInUse(id, port.device_owner)
  await removePort(ctx, port)
}

