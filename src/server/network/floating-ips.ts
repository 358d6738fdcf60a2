/**
 * Floating IPs: an IPv4 address of an external network, held by a port owned by no project, associated with
 * one fixed IPv4 address of a project port reachable through a router (gateway on the floating network,
 * interface on the fixed address's subnet).
 */
import { AppError } from '../../contracts/errors.js'
import type { FloatingIpTable, PortTable } from '../storage/schema.js'
import { can, listsAllProjects, must, newUuid, type Actor, type NetCtx } from './context.js'
import { neutron } from './errors.js'
import { parseIp } from '../../lib/ip.js'
import { owningProject, visibleNetwork } from './networks.js'
import { insertPort, removePort, visiblePort } from './ports.js'
import { checkQuota } from './quotas.js'
import { fixedIpsByPort, lockNetwork, touched } from './queries.js'
import { ROUTER_INTERFACE } from './routers.js'
import { floatingIpView, type View } from './views.js'

export interface FloatingIpBody {
  floating_network_id?: string
  floating_ip_address?: string
  subnet_id?: string
  port_id?: string | null
  fixed_ip_address?: string | null
  description?: string
  project_id?: string
  tenant_id?: string
  tags?: string[]
}

const fipTarget = (f: FloatingIpTable) => ({ projectId: f.project_id })

export async function visibleFloatingIp(ctx: NetCtx, actor: Actor, id: string): Promise<FloatingIpTable> {
  const row = await ctx.db.selectFrom('floating_ips').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row || !can(actor, 'get_floatingip', fipTarget(row))) throw neutron.floatingIpNotFound(id)
  return row
}

export async function listFloatingIps(ctx: NetCtx, actor: Actor): Promise<View[]> {
  const rows = await ctx.db
    .selectFrom('floating_ips')
    .selectAll()
    .$if(!listsAllProjects(actor), (q) => q.where('project_id', '=', actor.projectId))
    .execute()
  return rows.map(floatingIpView)
}

/** Where a floating IP on `fip` would point for `port`: the fixed address and the router that connects them. */
async function resolveAssociation(ctx: NetCtx, fip: FloatingIpTable, port: PortTable, fixedIp: string | null | undefined) {
  const v4 = ((await fixedIpsByPort(ctx.db, [port.id])).get(port.id) ?? []).filter((ip) => parseIp(ip.ip_address)?.version === 4)
  let chosen = v4[0]
  if (fixedIp != null) {
    const wanted = parseIp(fixedIp)
    chosen = v4.find((ip) => wanted && parseIp(ip.ip_address)!.value === wanted.value)!
    if (!chosen) throw neutron.badRequest('floatingip', `Port ${port.id} does not have fixed ip ${fixedIp}`)
  } else if (v4.length === 0) {
    throw neutron.badRequest('floatingip', `Port ${port.id} does not have any IPv4 address`)
  } else if (v4.length > 1) {
    throw neutron.badRequest('floatingip', `Port ${port.id} has multiple fixed IPv4 addresses. Must provide a specific IPv4 address when assigning a floating IP`)
  }
  const routers = await ctx.db.selectFrom('routers').select('id').where('gw_network_id', '=', fip.floating_network_id).execute()
  let routerId: string | undefined
  if (routers.length > 0) {
    const iface = await ctx.db
      .selectFrom('ports')
      .innerJoin('ip_allocations', 'ip_allocations.port_id', 'ports.id')
      .select('ports.device_id')
      .where('ports.device_owner', '=', ROUTER_INTERFACE)
      .where('ports.device_id', 'in', routers.map((r) => r.id))
      .where('ip_allocations.subnet_id', '=', chosen.subnet_id)
      .orderBy('ports.device_id')
      .executeTakeFirst()
    routerId = iface?.device_id
  }
  if (!routerId) throw neutron.externalGatewayForFloatingIpNotFound(fip.floating_network_id, chosen.subnet_id, port.id)
  const taken = await ctx.db
    .selectFrom('floating_ips')
    .select(['id', 'floating_ip_address'])
    .where('floating_network_id', '=', fip.floating_network_id)
    .where('fixed_port_id', '=', port.id)
    .where('fixed_ip_address', '=', chosen.ip_address)
    .where('id', '!=', fip.id)
    .executeTakeFirst()
  if (taken) throw neutron.floatingIpPortAlreadyAssociated(taken.id, taken.floating_ip_address, port.id, chosen.ip_address, fip.floating_network_id)
  return { fixed_port_id: port.id, fixed_ip_address: chosen.ip_address, router_id: routerId }
}

async function associate(ctx: NetCtx, actor: Actor, fip: FloatingIpTable, portId: string | null, fixedIp: string | null | undefined): Promise<void> {
  if (portId === null) {
    await ctx.db.updateTable('floating_ips').set({ fixed_port_id: null, fixed_ip_address: null, router_id: null }).where('id', '=', fip.id).execute()
    return
  }
  const { port } = await visiblePort(ctx, actor, portId)
  if (port.project_id !== fip.project_id && !can(actor, 'floatingip:associate:other_project_port', { projectId: fip.project_id })) throw neutron.portNotFound(portId)
  const target = await resolveAssociation(ctx, fip, port, fixedIp)
  await ctx.db.updateTable('floating_ips').set(target).where('id', '=', fip.id).execute()
}

export async function createFloatingIp(ctx: NetCtx, actor: Actor, body: FloatingIpBody): Promise<View> {
  if (body.floating_network_id === undefined) throw neutron.badRequest('floatingip', "'floating_network_id' is required")
  const network = await visibleNetwork(ctx, actor, body.floating_network_id)
  if (network.external !== 1) throw neutron.badRequest('floatingip', `Network ${network.id} is not a valid external network`)
  const projectId = owningProject(actor, body)
  must(actor, 'create_floatingip', { projectId })
  if (body.floating_ip_address !== undefined) must(actor, 'create_floatingip:floating_ip_address', { projectId })
  await checkQuota(ctx.db, projectId, 'floatingip')
  const locked = (await lockNetwork(ctx, network.id))!
  const id = newUuid()
  let port: PortTable | undefined
  const portSpec = { device_owner: 'network:floatingip', device_id: id, security_groups: [] as string[] }
  if (body.floating_ip_address !== undefined || body.subnet_id !== undefined) {
    const request = { ...(body.subnet_id !== undefined ? { subnet_id: body.subnet_id } : {}), ...(body.floating_ip_address !== undefined ? { ip_address: body.floating_ip_address } : {}) }
    if (body.floating_ip_address !== undefined && parseIp(body.floating_ip_address)?.version !== 4) throw neutron.invalidInput(`'${body.floating_ip_address}' is not a valid IPv4 address.`)
    port = await insertPort(ctx, locked, '', { ...portSpec, fixed_ips: [request] })
  } else {
    const subnets = await ctx.db.selectFrom('subnets').select(['id']).where('network_id', '=', network.id).where('ip_version', '=', 4).orderBy('created_at').orderBy('id').execute()
    for (const subnet of subnets) {
      try {
        port = await insertPort(ctx, locked, '', { ...portSpec, fixed_ips: [{ subnet_id: subnet.id }] })
        break
      } catch (err) {
        if (!(err instanceof AppError && err.options.type === 'IpAddressGenerationFailure')) throw err
      }
    }
    if (!port) throw neutron.ipAddressGenerationFailure(network.id)
  }
  const address = ((await fixedIpsByPort(ctx.db, [port.id])).get(port.id) ?? [])[0]
  if (!address) throw neutron.badRequest('floatingip', `Network ${network.id} has no IPv4 subnet`)
  const row: FloatingIpTable = {
    id,
    project_id: projectId,
    floating_network_id: network.id,
    floating_ip_address: address.ip_address,
    floating_port_id: port.id,
    fixed_port_id: null,
    fixed_ip_address: null,
    router_id: null,
    description: body.description ?? '',
    tags: JSON.stringify(body.tags ?? []),
    revision_number: 1,
    created_at: ctx.now,
    updated_at: ctx.now,
  }
  await ctx.db.insertInto('floating_ips').values(row).execute()
  if (body.port_id != null) await associate(ctx, actor, row, body.port_id, body.fixed_ip_address)
  return showFloatingIp(ctx, actor, id)
}

export async function showFloatingIp(ctx: NetCtx, actor: Actor, id: string): Promise<View> {
  return floatingIpView(await visibleFloatingIp(ctx, actor, id))
}

export async function updateFloatingIp(ctx: NetCtx, actor: Actor, id: string, body: FloatingIpBody): Promise<View> {
  const row = await visibleFloatingIp(ctx, actor, id)
  must(actor, 'update_floatingip', fipTarget(row))
  for (const key of ['floating_network_id', 'floating_ip_address', 'subnet_id', 'project_id', 'tenant_id'] as const) {
    if (body[key] !== undefined) throw neutron.invalidInput(`Cannot update read-only attribute ${key}`)
  }
  if (body.port_id !== undefined) await associate(ctx, actor, row, body.port_id, body.fixed_ip_address)
  else if (body.fixed_ip_address !== undefined && row.fixed_port_id) await associate(ctx, actor, row, row.fixed_port_id, body.fixed_ip_address)
  await ctx.db
    .updateTable('floating_ips')
    .set({
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.tags !== undefined ? { tags: JSON.stringify(body.tags) } : {}),
      ...touched(ctx.now, row.revision_number),
    })
    .where('id', '=', id)
    .execute()
  return showFloatingIp(ctx, actor, id)
}

export async function deleteFloatingIp(ctx: NetCtx, actor: Actor, id: string): Promise<void> {
  const row = await visibleFloatingIp(ctx, actor, id)
  must(actor, 'delete_floatingip', fipTarget(row))
  await ctx.db.deleteFrom('floating_ips').where('id', '=', id).execute()
  const port = await ctx.db.selectFrom('ports').selectAll().where('id', '=', row.floating_port_id).executeTakeFirst()
  if (port) await removePort(ctx, port)
}


// ---- for Nova's floating IP proxy and its addFloatingIp / removeFloatingIp actions (below 2.36 / 2.44) ----

/** The caller's floating IP with that address (404 otherwise). */
export async function floatingIpByAddress(ctx: NetCtx, actor: Actor, address: string): Promise<FloatingIpTable> {
  const rows = await ctx.db.selectFrom('floating_ips').selectAll().where('floating_ip_address', '=', address).execute()
  const row = rows.find((r) => can(actor, 'get_floatingip', fipTarget(r)))
  if (!row) throw new AppError('not_found', `Floating IP not found for address ${address}.`)
  return row
}

/** addFloatingIp: the address onto the server's port holding `fixedAddress` (else its first port), Neutron's rules. */
export async function associateServerFloatingIp(ctx: NetCtx, actor: Actor, serverId: string, address: string, fixedAddress?: string): Promise<void> {
  const fip = await floatingIpByAddress(ctx, actor, address)
  must(actor, 'update_floatingip', fipTarget(fip))
  const ports = await ctx.db.selectFrom('ports').selectAll().where('device_id', '=', serverId).where('device_owner', 'like', 'compute:%').orderBy('created_at').orderBy('id').execute()
  if (ports.length === 0) throw new AppError('bad_request', `Instance ${serverId} has no network port to associate a floating IP with.`)
  let port = ports[0]
  if (fixedAddress !== undefined) {
    const fixed = await fixedIpsByPort(ctx.db, ports.map((p) => p.id))
    const holder = ports.find((p) => (fixed.get(p.id) ?? []).some((ip) => ip.ip_address === fixedAddress))
    if (!holder) throw new AppError('bad_request', `Specified fixed address ${fixedAddress} is not assigned to instance ${serverId}.`)
    port = holder
  }
  try {
    await associate(ctx, actor, fip, port.id, fixedAddress)
  } catch (err) {
    // Nova answers 400 for whatever Neutron refuses here (a fixed IP that has a floating IP already, …), with its reason.
    if (err instanceof AppError && err.code === 'conflict') {
      throw new AppError('bad_request', `Unable to associate floating IP ${address} to fixed IP ${fixedAddress ?? 'of its first port'} for instance ${serverId}. Error: ${err.message}`)
    }
    throw err
  }
}

/** removeFloatingIp: 409 when the address is not on one of the server's ports (Nova's FloatingIpNotAssociated). */
export async function disassociateServerFloatingIp(ctx: NetCtx, actor: Actor, serverId: string, address: string): Promise<void> {
  const fip = await floatingIpByAddress(ctx, actor, address)
  must(actor, 'update_floatingip', fipTarget(fip))
  const port = fip.fixed_port_id ? await ctx.db.selectFrom('ports').select('device_id').where('id', '=', fip.fixed_port_id).executeTakeFirst() : undefined
  if (port?.device_id !== serverId) throw new AppError('conflict', `Floating IP ${address} is not associated with instance ${serverId}.`)
  await associate(ctx, actor, fip, null, null)
}

/** The server a floating IP's fixed port belongs to, as Nova's proxy shows it (null when the port is no server's). */
export async function floatingIpInstance(ctx: NetCtx, portId: string | null | undefined): Promise<string | null> {
  const port = portId ? await ctx.db.selectFrom('ports').select(['device_id', 'device_owner']).where('id', '=', portId).executeTakeFirst() : undefined
  return port?.device_owner.startsWith('compute:') ? port.device_id : null
}
