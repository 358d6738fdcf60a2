/**
 * Routers: an external gateway (a port on an external network, owned by no project) and interfaces (ports on
 * project subnets holding the subnet's gateway IP). A floating IP reaches a fixed address only through a
 * router that has both a gateway on the floating network and an interface on the fixed address's subnet.
 */
import type { PortTable, RouterTable } from '../storage/schema.js'
import { can, flag, listsAllProjects, must, newUuid, type Actor, type NetCtx } from './context.js'
import { neutron } from './errors.js'
import { cidrsOverlap, formatCidr, parseCidr, parseIp } from '../../lib/ip.js'
import type { FixedIpRequest } from './ipam.js'
import { owningProject, visibleNetwork } from './networks.js'
import { insertPort, reassignIps, removePort, visiblePort } from './ports.js'
import { checkQuota } from './quotas.js'
import { fixedIpsByPort, lockNetwork, touched } from './queries.js'
import { visibleSubnet } from './subnets.js'
import { routerView, type View } from './views.js'

export interface GatewayInfo {
  network_id?: string
  enable_snat?: boolean
  external_fixed_ips?: FixedIpRequest[]
}

export interface RouterBody {
  name?: string
  description?: string
  admin_state_up?: boolean
  external_gateway_info?: GatewayInfo | null
  routes?: { destination: string; nexthop: string }[] | null
  project_id?: string
  tenant_id?: string
  tags?: string[]
}

export interface InterfaceBody {
  subnet_id?: string
  port_id?: string
}

export const ROUTER_INTERFACE = 'network:router_interface'
export const ROUTER_GATEWAY = 'network:router_gateway'

const routerTarget = (r: RouterTable) => ({ projectId: r.project_id })

export async function visibleRouter(ctx: NetCtx, actor: Actor, id: string): Promise<RouterTable> {
  const row = await ctx.db.selectFrom('routers').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row || !can(actor, 'get_router', routerTarget(row))) throw neutron.routerNotFound(id)
  return row
}

export async function renderRouters(ctx: NetCtx, actor: Actor | undefined, rows: RouterTable[]): Promise<View[]> {
  const gwPorts = rows.map((r) => r.gw_port_id).filter((id): id is string => id !== null)
  const ips = await fixedIpsByPort(ctx.db, gwPorts)
  const showDistributed = actor !== undefined && can(actor, 'get_router:distributed') && can(actor, 'get_router:ha')
  return rows.map((r) => routerView(r, r.gw_port_id ? (ips.get(r.gw_port_id) ?? []) : [], showDistributed))
}

export async function listRouters(ctx: NetCtx, actor: Actor): Promise<View[]> {
  const rows = await ctx.db
    .selectFrom('routers')
    .selectAll()
    .$if(!listsAllProjects(actor), (q) => q.where('project_id', '=', actor.projectId))
    .execute()
  return renderRouters(ctx, actor, rows)
}

async function interfacePorts(ctx: NetCtx, routerId: string): Promise<PortTable[]> {
  return ctx.db.selectFrom('ports').selectAll().where('device_id', '=', routerId).where('device_owner', '=', ROUTER_INTERFACE).execute()
}

async function clearGateway(ctx: NetCtx, router: RouterTable): Promise<void> {
  if (!router.gw_network_id) return
  const fip = await ctx.db.selectFrom('floating_ips').select('id').where('router_id', '=', router.id).executeTakeFirst()
  if (fip) throw neutron.gatewayInUseByFloatingIp(router.id, router.gw_network_id)
  if (router.gw_port_id) {
    const port = await ctx.db.selectFrom('ports').selectAll().where('id', '=', router.gw_port_id).executeTakeFirst()
    if (port) await removePort(ctx, port)
  }
  await ctx.db.updateTable('routers').set({ gw_network_id: null, gw_port_id: null, enable_snat: 1 }).where('id', '=', router.id).execute()
  router.gw_network_id = null
  router.gw_port_id = null
}

/** Sets, changes or clears (null, {} or no network_id) a router's external gateway. */
export async function setGateway(ctx: NetCtx, actor: Actor, router: RouterTable, info: GatewayInfo | null | undefined): Promise<void> {
  if (!info || info.network_id === undefined) {
    await clearGateway(ctx, router)
    return
  }
  const network = await visibleNetwork(ctx, actor, info.network_id)
  if (network.external !== 1) throw neutron.badRequest('router', `Network ${network.id} is not a valid external network`)
  if (info.enable_snat !== undefined) must(actor, 'create_router:external_gateway_info:enable_snat', routerTarget(router))
  if (info.external_fixed_ips !== undefined) must(actor, 'create_router:external_gateway_info:external_fixed_ips', routerTarget(router))
  if (router.gw_network_id === network.id && info.external_fixed_ips === undefined) {
    await ctx.db.updateTable('routers').set({ enable_snat: flag(info.enable_snat, router.enable_snat === 1) }).where('id', '=', router.id).execute()
    return
  }
  if (router.gw_network_id === network.id && router.gw_port_id) {
    const port = await ctx.db.selectFrom('ports').selectAll().where('id', '=', router.gw_port_id).executeTakeFirstOrThrow()
    await reassignIps(ctx, port, info.external_fixed_ips!)
    return
  }
  await clearGateway(ctx, router)
  const locked = (await lockNetwork(ctx, network.id))!
  const port = await insertPort(ctx, locked, '', { device_owner: ROUTER_GATEWAY, device_id: router.id, fixed_ips: info.external_fixed_ips, security_groups: [] })
  await ctx.db
    .updateTable('routers')
    .set({ gw_network_id: network.id, gw_port_id: port.id, enable_snat: flag(info.enable_snat, true) })
    .where('id', '=', router.id)
    .execute()
}

function validateRoutes(routes: RouterBody['routes']): string {
  return JSON.stringify(
    (routes ?? []).map((r) => {
      const d = parseCidr(r.destination)
      const n = parseIp(r.nexthop)
      if (!d || !n || d.version !== n.version) throw neutron.invalidInput(`Invalid route: destination ${r.destination} via nexthop ${r.nexthop}.`)
      return { destination: formatCidr(d), nexthop: r.nexthop }
    }),
  )
}

export async function createRouter(ctx: NetCtx, actor: Actor, body: RouterBody): Promise<View> {
  const projectId = owningProject(actor, body)
  must(actor, 'create_router', { projectId })
  await checkQuota(ctx.db, projectId, 'router')
  const row: RouterTable = {
    id: newUuid(),
    project_id: projectId,
    name: body.name ?? '',
    description: body.description ?? '',
    admin_state_up: flag(body.admin_state_up, true),
    status: 'ACTIVE',
    gw_network_id: null,
    gw_port_id: null,
    enable_snat: 1,
    routes: validateRoutes(body.routes),
    tags: JSON.stringify(body.tags ?? []),
    revision_number: 1,
    created_at: ctx.now,
    updated_at: ctx.now,
  }
  await ctx.db.insertInto('routers').values(row).execute()
  if (body.external_gateway_info) await setGateway(ctx, actor, row, body.external_gateway_info)
  return showRouter(ctx, actor, row.id)
}

export async function showRouter(ctx: NetCtx, actor: Actor, id: string): Promise<View> {
  return (await renderRouters(ctx, actor, [await visibleRouter(ctx, actor, id)]))[0]
}

export async function updateRouter(ctx: NetCtx, actor: Actor, id: string, body: RouterBody): Promise<View> {
  const row = await visibleRouter(ctx, actor, id)
  must(actor, 'update_router', routerTarget(row))
  if (body.project_id !== undefined || body.tenant_id !== undefined) throw neutron.invalidInput('Cannot update read-only attribute project_id')
  if (body.external_gateway_info !== undefined) await setGateway(ctx, actor, row, body.external_gateway_info)
  await ctx.db
    .updateTable('routers')
    .set({
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.admin_state_up !== undefined ? { admin_state_up: flag(body.admin_state_up, true) } : {}),
      ...(body.routes !== undefined ? { routes: validateRoutes(body.routes) } : {}),
      ...(body.tags !== undefined ? { tags: JSON.stringify(body.tags) } : {}),
      ...touched(ctx.now, row.revision_number),
    })
    .where('id', '=', id)
    .execute()
  return showRouter(ctx, actor, id)
}

export async function deleteRouter(ctx: NetCtx, actor: Actor, id: string): Promise<void> {
  const row = await visibleRouter(ctx, actor, id)
  must(actor, 'delete_router', routerTarget(row))
  if ((await interfacePorts(ctx, id)).length > 0) throw neutron.routerInUse(id)
  await clearGateway(ctx, row)
  await ctx.db.deleteFrom('routers').where('id', '=', id).execute()
}

function interfaceInfo(router: RouterTable, port: PortTable, subnetIds: string[]): View {
  return { id: router.id, tenant_id: router.project_id, project_id: router.project_id, port_id: port.id, subnet_id: subnetIds[0] ?? null, subnet_ids: subnetIds, network_id: port.network_id }
}

async function checkOverlap(ctx: NetCtx, routerId: string, subnetIds: string[]): Promise<void> {
  const ports = await interfacePorts(ctx, routerId)
  const attached = [...(await fixedIpsByPort(ctx.db, ports.map((p) => p.id))).values()].flat().map((ip) => ip.subnet_id)
  if (attached.length === 0) return
  const rows = await ctx.db.selectFrom('subnets').select(['id', 'cidr']).where('id', 'in', [...attached, ...subnetIds]).execute()
  for (const id of subnetIds) {
    if (attached.includes(id)) throw neutron.badRequest('router', `Router already has a port on subnet ${id}`)
    const mine = rows.find((r) => r.id === id)!
    for (const other of rows.filter((r) => attached.includes(r.id))) {
      if (cidrsOverlap(parseCidr(mine.cidr)!, parseCidr(other.cidr)!)) {
        throw neutron.badRequest('router', `Cidr ${mine.cidr} of subnet ${id} overlaps with cidr ${other.cidr} of subnet ${other.id}`)
      }
    }
  }
}

export async function addInterface(ctx: NetCtx, actor: Actor, id: string, body: InterfaceBody): Promise<View> {
  const router = await visibleRouter(ctx, actor, id)
  must(actor, 'add_router_interface', routerTarget(router))
  if (body.subnet_id !== undefined && body.port_id !== undefined) throw neutron.badRequest('router', 'Cannot specify both subnet-id and port-id')
  if (body.subnet_id !== undefined) {
    const { subnet, network } = await visibleSubnet(ctx, actor, body.subnet_id)
    if (subnet.project_id !== router.project_id && network.shared !== 1 && !can(actor, 'add_router_interface:other_project_subnet', routerTarget(router))) throw neutron.subnetNotFound(subnet.id)
    if (network.external === 1) throw neutron.badRequest('router', `Router interfaces cannot be on external network ${network.id}`)
    if (subnet.gateway_ip === null) throw neutron.badRequest('router', `Subnet for router interface must have a gateway IP`)
    await checkOverlap(ctx, router.id, [subnet.id])
    const locked = (await lockNetwork(ctx, network.id))!
    const holder = await ctx.db.selectFrom('ip_allocations').select('port_id').where('subnet_id', '=', subnet.id).where('ip_address', '=', subnet.gateway_ip).executeTakeFirst()
    if (holder) throw neutron.ipAddressInUse(subnet.gateway_ip, network.id)
    const port = await insertPort(ctx, locked, subnet.project_id, {
      device_owner: ROUTER_INTERFACE,
      device_id: router.id,
      fixed_ips: [{ subnet_id: subnet.id, ip_address: subnet.gateway_ip }],
      security_groups: [],
    })
    return interfaceInfo(router, port, [subnet.id])
  }
  if (body.port_id === undefined) throw neutron.badRequest('router', 'Either subnet_id or port_id must be specified')
  const { port, network } = await visiblePort(ctx, actor, body.port_id)
  if (port.device_id !== '' || port.device_owner !== '') throw neutron.portInUse(port.id, port.network_id, port.device_id || port.device_owner)
  if (network.external === 1) throw neutron.badRequest('router', `Router interfaces cannot be on external network ${network.id}`)
  const subnetIds = ((await fixedIpsByPort(ctx.db, [port.id])).get(port.id) ?? []).map((ip) => ip.subnet_id)
  if (subnetIds.length === 0) throw neutron.badRequest('router', 'Router port must have at least one fixed IP')
  await checkOverlap(ctx, router.id, subnetIds)
  await ctx.db.updateTable('ports').set({ device_id: router.id, device_owner: ROUTER_INTERFACE, ...touched(ctx.now, port.revision_number) }).where('id', '=', port.id).execute()
  await ctx.db.deleteFrom('port_security_groups').where('port_id', '=', port.id).execute()
  return interfaceInfo(router, port, subnetIds)
}

export async function removeInterface(ctx: NetCtx, actor: Actor, id: string, body: InterfaceBody): Promise<View> {
  const router = await visibleRouter(ctx, actor, id)
  must(actor, 'remove_router_interface', routerTarget(router))
  const ports = await interfacePorts(ctx, router.id)
  const ips = await fixedIpsByPort(ctx.db, ports.map((p) => p.id))
  let port: PortTable | undefined
  let subnetIds: string[]
  if (body.port_id !== undefined) {
    port = ports.find((p) => p.id === body.port_id)
    if (!port) throw neutron.routerInterfaceNotFound(router.id, body.port_id)
    subnetIds = (ips.get(port.id) ?? []).map((ip) => ip.subnet_id)
    if (body.subnet_id !== undefined && !subnetIds.includes(body.subnet_id)) throw neutron.invalid('SubnetMismatchForPort', `Subnet on port ${port.id} does not match the requested subnet ${body.subnet_id}.`)
  } else if (body.subnet_id !== undefined) {
    port = ports.find((p) => (ips.get(p.id) ?? []).some((ip) => ip.subnet_id === body.subnet_id))
    if (!port) throw neutron.routerInterfaceNotFoundForSubnet(router.id, body.subnet_id)
    subnetIds = [body.subnet_id]
  } else {
    throw neutron.badRequest('router', 'Either subnet_id or port_id must be specified')
  }
  if (router.gw_network_id) {
    const subnets = await ctx.db.selectFrom('subnets').select(['id', 'cidr']).where('id', 'in', subnetIds).execute()
    const fips = await ctx.db.selectFrom('floating_ips').select(['fixed_ip_address']).where('router_id', '=', router.id).execute()
    for (const s of subnets) {
      const cidr = parseCidr(s.cidr)!
      if (fips.some((f) => f.fixed_ip_address && cidrsOverlap(cidr, parseCidr(`${f.fixed_ip_address}/${cidr.version === 4 ? 32 : 128}`)!))) {
        throw neutron.routerInterfaceInUseByFloatingIp(router.id, s.id)
      }
    }
  }
  const remaining = (ips.get(port.id) ?? []).filter((ip) => !subnetIds.includes(ip.subnet_id))
  if (remaining.length === 0) await removePort(ctx, port)
  else await reassignIps(ctx, port, remaining)
  return interfaceInfo(router, port, subnetIds)
}
