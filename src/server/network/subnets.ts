/**
 * Subnets: CIDR, gateway, allocation pools, DNS servers and host routes, validated as Neutron does before
 * anything is written. Subnets of one network never overlap (checked under the network's row lock).
 */
import type { NetworkTable, SubnetTable } from '../storage/schema.js'
import { can, flag, listsAllProjects, must, newUuid, type Actor, type NetCtx } from './context.js'
import { neutron } from './errors.js'
import { cidrContains, cidrsOverlap, formatCidr, formatIp, lastAddress, parseCidr, parseIp, type Cidr, type IpVersion } from '../../lib/ip.js'
import { releaseDhcpAddresses } from './dhcp-ports.js'
import { isAutoAddressSubnet, type Pool } from './ipam.js'
import { ROUTER_INTERFACE_OWNERS } from './ports.js'
import { networkTarget, owningProject, visibleNetwork } from './networks.js'
import { checkQuota } from './quotas.js'
import { lockNetwork, touched } from './queries.js'
import { subnetView, type View } from './views.js'
import { allocateFromPool, requestedPool } from './subnet-pools.js'

export interface HostRoute {
  destination: string
  nexthop: string
}

export interface SubnetBody {
  network_id?: string
  ip_version?: number
  cidr?: string
  name?: string
  description?: string
  gateway_ip?: string | null
  allocation_pools?: Pool[]
  dns_nameservers?: string[] | null
  host_routes?: HostRoute[] | null
  enable_dhcp?: boolean
  ipv6_ra_mode?: string | null
  ipv6_address_mode?: string | null
  project_id?: string
  tenant_id?: string
  tags?: string[]
  subnetpool_id?: string | null
  use_default_subnetpool?: boolean
  prefixlen?: number
}

const MAX_DNS_NAMESERVERS = 5
const MAX_HOST_ROUTES = 20

export const subnetTarget = (s: SubnetTable, n: NetworkTable) => ({ ...networkTarget(n), projectId: s.project_id })

/** A subnet the actor may see, with its network, or SubnetNotFound (404). */
export async function visibleSubnet(ctx: NetCtx, actor: Actor, id: string): Promise<{ subnet: SubnetTable; network: NetworkTable }> {
  const subnet = await ctx.db.selectFrom('subnets').selectAll().where('id', '=', id).executeTakeFirst()
  const network = subnet && (await ctx.db.selectFrom('networks').selectAll().where('id', '=', subnet.network_id).executeTakeFirst())
  if (!subnet || !network || !can(actor, 'get_subnet', subnetTarget(subnet, network))) throw neutron.subnetNotFound(id)
  return { subnet, network }
}

export async function listSubnets(ctx: NetCtx, actor: Actor): Promise<View[]> {
  const rows = await ctx.db
    .selectFrom('subnets')
    .innerJoin('networks', 'networks.id', 'subnets.network_id')
    .selectAll('subnets')
    .select(['networks.project_id as net_project', 'networks.shared as net_shared', 'networks.external as net_external'])
    .$if(!listsAllProjects(actor), (q) =>
      q.where((eb) =>
        eb.or([eb('subnets.project_id', '=', actor.projectId), eb('networks.project_id', '=', actor.projectId), eb('networks.shared', '=', 1)]),
      ),
    )
    .execute()
  return rows
    .filter((r) => can(actor, 'get_subnet', { projectId: r.project_id, networkProjectId: r.net_project, shared: r.net_shared === 1, external: r.net_external === 1 }))
    .map((r) => {
      const { net_project: _p, net_shared: _s, net_external: _e, ...subnet } = r
      return subnetView(subnet)
    })
}

function ipIn(cidr: Cidr, text: unknown, what: string): bigint {
  const ip = parseIp(text)
  if (!ip) throw neutron.invalidInput(`'${String(text)}' is not a valid IP address for ${what}.`)
  if (ip.version !== cidr.version) throw neutron.invalidInput(`${what} ${String(text)} does not match the subnet's IP version ${cidr.version}.`)
  return ip.value
}

/** First and last address a port may hold: IPv4 skips the network and broadcast addresses, IPv6 the subnet-router anycast one. */
function usableRange(cidr: Cidr): { first: bigint; last: bigint } | undefined {
  const last = lastAddress(cidr)
  if (cidr.version === 4) {
    if (cidr.prefix >= 31) return { first: cidr.network, last }
    return { first: cidr.network + 1n, last: last - 1n }
  }
  if (cidr.prefix === 128) return undefined
  return { first: cidr.network + 1n, last }
}

function defaultPools(cidr: Cidr, gateway: bigint | null): Pool[] {
  const range = usableRange(cidr)
  if (!range) return []
  const v = cidr.version
  const pools: Pool[] = []
  const push = (a: bigint, b: bigint) => {
    if (a <= b) pools.push({ start: formatIp(v, a), end: formatIp(v, b) })
  }
  if (gateway !== null && gateway >= range.first && gateway <= range.last) {
    push(range.first, gateway - 1n)
    push(gateway + 1n, range.last)
  } else push(range.first, range.last)
  return pools
}

function validatePools(cidr: Cidr, pools: Pool[], gateway: bigint | null): Pool[] {
  const range = usableRange(cidr)
  const parsed = pools.map((p) => {
    const start = ipIn(cidr, p.start, 'allocation pool start')
    const end = ipIn(cidr, p.end, 'allocation pool end')
    if (start > end) throw neutron.invalidInput(`The allocation pool ${p.start}-${p.end} is invalid: its start is after its end.`)
    if (!range || start < range.first || end > range.last) {
      throw neutron.invalid('OutOfBoundsAllocationPool', `The allocation pool ${p.start}-${p.end} spans beyond the subnet cidr ${formatCidr(cidr)}.`)
    }
    return { start, end, text: `${formatIp(cidr.version, start)}-${formatIp(cidr.version, end)}` }
  })
  const sorted = [...parsed].sort((a, b) => (a.start < b.start ? -1 : 1))
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].start <= sorted[i - 1].end) throw neutron.conflict('OverlappingAllocationPools', `Found overlapping allocation pools: ${sorted[i - 1].text} and ${sorted[i].text} for subnet ${formatCidr(cidr)}.`)
  }
  if (gateway !== null) {
    const hit = parsed.find((p) => gateway >= p.start && gateway <= p.end)
    if (hit) throw neutron.gatewayConflictWithAllocationPools(formatIp(cidr.version, gateway), hit.text)
  }
  return parsed.map((p) => ({ start: formatIp(cidr.version, p.start), end: formatIp(cidr.version, p.end) }))
}

function validateGateway(cidr: Cidr, gateway: string | null | undefined): bigint | null {
  if (gateway === null) return null
  if (gateway === undefined) {
    const range = usableRange(cidr)
    return range && cidr.version === 4 && cidr.prefix >= 31 ? null : (range?.first ?? null)
  }
  const ip = parseIp(gateway)
  if (!ip) throw neutron.invalidInput(`'${gateway}' is not a valid IP address.`)
  const range = usableRange(cidr)
  if (!cidrContains(cidr, ip) || !range || ip.value < range.first || ip.value > range.last) {
    throw neutron.invalidInput(`Gateway IP ${gateway} is not a valid address in subnet ${formatCidr(cidr)}.`)
  }
  return ip.value
}

function validateDns(list: string[] | null | undefined): string[] {
  const out: string[] = []
  for (const s of list ?? []) {
    const ip = parseIp(s)
    if (!ip) throw neutron.invalidInput(`'${s}' is not a valid nameserver. '${s}' is not a valid IP address.`)
    const text = formatIp(ip.version, ip.value)
    if (out.includes(text)) throw neutron.invalidInput(`Duplicate nameserver '${s}'.`)
    out.push(text)
  }
  if (out.length > MAX_DNS_NAMESERVERS) throw neutron.badRequest('subnet', `Unable to complete operation: the number of DNS nameservers exceeds the limit ${MAX_DNS_NAMESERVERS}`)
  return out
}

function validateRoutes(version: IpVersion, list: HostRoute[] | null | undefined): HostRoute[] {
  const routes = (list ?? []).map((r) => {
    const destination = parseCidr(r.destination)
    const nexthop = parseIp(r.nexthop)
    if (!destination || !nexthop) throw neutron.invalidInput(`Invalid data format for hostroute: '${JSON.stringify(r)}'.`)
    if (destination.version !== version || nexthop.version !== version) throw neutron.invalidInput(`Host route ${r.destination} via ${r.nexthop} does not match the subnet's IP version ${version}.`)
    return { destination: formatCidr(destination), nexthop: formatIp(nexthop.version, nexthop.value) }
  })
  if (routes.length > MAX_HOST_ROUTES) throw neutron.badRequest('subnet', `Unable to complete operation: the number of host routes exceeds the limit ${MAX_HOST_ROUTES}`)
  return routes
}

const IPV6_MODES = new Set(['slaac', 'dhcpv6-stateful', 'dhcpv6-stateless'])

function validateIpv6Modes(version: number, cidr: Cidr, ra: string | null | undefined, address: string | null | undefined): void {
  if (version === 4) {
    if (ra != null || address != null) throw neutron.invalidInput('ipv6_ra_mode or ipv6_address_mode cannot be set when ip_version is 4')
    return
  }
  for (const m of [ra, address]) if (m != null && !IPV6_MODES.has(m)) throw neutron.invalidInput(`'${m}' is not in ['dhcpv6-stateful', 'dhcpv6-stateless', 'slaac']`)
  if (ra != null && address != null && ra !== address) {
    throw neutron.invalidInput(`ipv6_ra_mode set to '${ra}' with ipv6_address_mode set to '${address}' is not valid. If both attributes are set, they must be the same value`)
  }
  if ((address === 'slaac' || address === 'dhcpv6-stateless' || ra === 'slaac' || ra === 'dhcpv6-stateless') && cidr.prefix !== 64) {
    throw neutron.invalidInput(`Invalid CIDR ${formatCidr(cidr)} for IPv6 address mode. OpenStack uses the EUI-64 address format, which requires the prefix to be /64`)
  }
}

/**
 * Parses and validates everything of a new subnet, then writes it. The caller holds the network lock, and the
 * pool's when the CIDR came from subnet pool `subnetpoolId`.
 */
export async function insertSubnet(ctx: NetCtx, network: NetworkTable, projectId: string, body: SubnetBody, subnetpoolId: string | null = null): Promise<SubnetTable> {
  const version = body.ip_version
  if (version !== 4 && version !== 6) throw neutron.invalidInput(`${String(version)} is not in [4, 6]`)
  if (body.cidr === undefined) throw neutron.badRequest('subnet', 'a cidr must be specified in the absence of a subnet pool')
  const cidr = parseCidr(body.cidr)
  if (!cidr) throw neutron.invalidInput(`'${body.cidr}' is not a valid IP subnet.`)
  if (cidr.version !== version) throw neutron.invalidInput(`Cidr ${body.cidr} does not match ip_version ${version}`)
  if (cidr.network !== cidr.address) throw neutron.invalidInput(`'${body.cidr}' isn't a recommended CIDR, '${formatCidr(cidr)}' should be specified instead.`)
  if (cidr.prefix === 0) throw neutron.invalidInput(`${formatCidr(cidr)} is not allowed: the prefix length must be at least 1.`)
  validateIpv6Modes(version, cidr, body.ipv6_ra_mode, body.ipv6_address_mode)
  const gateway = validateGateway(cidr, body.gateway_ip)
  const pools = body.allocation_pools !== undefined ? validatePools(cidr, body.allocation_pools, gateway) : defaultPools(cidr, gateway)
  const dns = validateDns(body.dns_nameservers)
  const routes = validateRoutes(version, body.host_routes)

  const siblings = await ctx.db.selectFrom('subnets').select(['id', 'cidr']).where('network_id', '=', network.id).execute()
  for (const s of siblings) {
    if (cidrsOverlap(parseCidr(s.cidr)!, cidr)) {
      throw neutron.invalidInput(`Requested subnet with cidr: ${formatCidr(cidr)} for network: ${network.id} overlaps with another subnet`)
    }
  }
  await checkQuota(ctx.db, projectId, 'subnet')
  const row: SubnetTable = {
    id: newUuid(),
    network_id: network.id,
    project_id: projectId,
    name: body.name ?? '',
    description: body.description ?? '',
    ip_version: version,
    cidr: formatCidr(cidr),
    gateway_ip: gateway === null ? null : formatIp(version, gateway),
    allocation_pools: JSON.stringify(pools),
    dns_nameservers: JSON.stringify(dns),
    host_routes: JSON.stringify(routes),
    enable_dhcp: flag(body.enable_dhcp, true),
    ipv6_ra_mode: body.ipv6_ra_mode ?? null,
    ipv6_address_mode: body.ipv6_address_mode ?? null,
    subnetpool_id: subnetpoolId,
    tags: JSON.stringify(body.tags ?? []),
    revision_number: 1,
    created_at: ctx.now,
    updated_at: ctx.now,
  }
  await ctx.db.insertInto('subnets').values(row).execute()
  await ctx.db.updateTable('networks').set(touched(ctx.now, network.revision_number)).where('id', '=', network.id).execute()
  return row
}

export async function createSubnet(ctx: NetCtx, actor: Actor, body: SubnetBody): Promise<View> {
  if (body.network_id === undefined) throw neutron.badRequest('subnet', "'network_id' is required")
  const network = await visibleNetwork(ctx, actor, body.network_id)
  const projectId = owningProject(actor, body)
  must(actor, 'create_subnet', { ...networkTarget(network), projectId })
  const locked = (await lockNetwork(ctx, network.id))!
  const pool = await requestedPool(ctx, actor, body)
  if (!pool) return subnetView(await insertSubnet(ctx, locked, projectId, body))
  const cidr = await allocateFromPool(ctx, pool, projectId, body)
  return subnetView(await insertSubnet(ctx, locked, projectId, { ...body, cidr }, pool.id))
}

export async function showSubnet(ctx: NetCtx, actor: Actor, id: string): Promise<View> {
  return subnetView((await visibleSubnet(ctx, actor, id)).subnet)
}

export async function updateSubnet(ctx: NetCtx, actor: Actor, id: string, body: SubnetBody): Promise<View> {
  const { subnet, network } = await visibleSubnet(ctx, actor, id)
  must(actor, 'update_subnet', subnetTarget(subnet, network))
  await lockNetwork(ctx, network.id)
  const cidr = parseCidr(subnet.cidr)!
  const changes: Partial<SubnetTable> = {}
  if (body.name !== undefined) changes.name = body.name
  if (body.description !== undefined) changes.description = body.description
  if (body.enable_dhcp !== undefined) changes.enable_dhcp = flag(body.enable_dhcp, true)
  if (body.tags !== undefined) changes.tags = JSON.stringify(body.tags)
  if (body.dns_nameservers !== undefined) changes.dns_nameservers = JSON.stringify(validateDns(body.dns_nameservers))
  if (body.host_routes !== undefined) changes.host_routes = JSON.stringify(validateRoutes(subnet.ip_version as IpVersion, body.host_routes))
  const gatewayText = body.gateway_ip !== undefined ? body.gateway_ip : subnet.gateway_ip
  const gateway = gatewayText === null ? null : validateGateway(cidr, gatewayText)
  if (body.gateway_ip !== undefined) {
    const text = gateway === null ? null : formatIp(cidr.version, gateway)
    if (text !== subnet.gateway_ip && subnet.gateway_ip !== null) {
      const router = await ctx.db.selectFrom('ip_allocations').select('port_id').where('subnet_id', '=', id).where('ip_address', '=', subnet.gateway_ip).executeTakeFirst()
      if (router) throw neutron.conflict('GatewayIpInUse', `Current gateway ip ${subnet.gateway_ip} already in use by port ${router.port_id}. Unable to update.`)
    }
    changes.gateway_ip = text
  }
  const pools = body.allocation_pools ?? (JSON.parse(subnet.allocation_pools) as Pool[])
  changes.allocation_pools = JSON.stringify(validatePools(cidr, pools, gateway))
  await ctx.db.updateTable('subnets').set({ ...changes, ...touched(ctx.now, subnet.revision_number) }).where('id', '=', id).execute()
  return showSubnet(ctx, actor, id)
}

export async function deleteSubnet(ctx: NetCtx, actor: Actor, id: string): Promise<void> {
  const { subnet, network } = await visibleSubnet(ctx, actor, id)
  must(actor, 'delete_subnet', subnetTarget(subnet, network))
  await lockNetwork(ctx, network.id)
  await releaseDhcpAddresses(ctx, id)
  if (isAutoAddressSubnet(subnet)) {
    // Neutron: the addresses ports got by themselves (SLAAC, DHCPv6-stateless) go with the subnet; a router
    // interface on it still keeps it in use.
    const routerPorts = ctx.db.selectFrom('ports').select('id').where('device_owner', 'in', [...ROUTER_INTERFACE_OWNERS])
    await ctx.db.deleteFrom('ip_allocations').where('subnet_id', '=', id).where('port_id', 'not in', routerPorts).execute()
  }
  const used = await ctx.db.selectFrom('ip_allocations').select('port_id').where('subnet_id', '=', id).executeTakeFirst()
  if (used) throw neutron.subnetInUse(id)
  await ctx.db.deleteFrom('subnets').where('id', '=', id).execute()
  await ctx.db.updateTable('networks').set(touched(ctx.now, network.revision_number)).where('id', '=', network.id).execute()
}
