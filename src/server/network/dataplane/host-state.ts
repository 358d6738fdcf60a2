/**
 * Builds what one host's data plane must be (contracts/network/dataplane.ts) from the network service's tables:
 *
 * - the guest ports bound to the host (binding:host_id = its hostname, a compute device), with their addresses,
 *   allowed address pairs and security groups;
 * - the routers the host runs (router-placement.ts) with their interfaces, gateway and floating IPs;
 * - every network either of them sits on, with its subnets, its DHCP port (when guests of this host need DHCP)
 *   and its peers: the other hosts with guests or routers on it, their tunnel addresses and MAC addresses;
 * - the rules of the ports' security groups and the member addresses of the groups those rules name.
 *
 * A fixed number of queries whatever the size (batched IN lists), and a deterministic order, so the document's
 * hash changes exactly when the host has something to change.
 */
import { isIP } from 'node:net'
import type {
  DataplaneFixedIp,
  DataplaneGroupMembers,
  DataplaneNetwork,
  DataplanePeer,
  DataplanePort,
  DataplaneRouter,
  DataplaneRouterPort,
  DataplaneSecurityGroup,
  HostNetworkFacts,
  HostNetworkState,
  Ipv6Mode,
} from '../../../contracts/network/dataplane.js'
import type { PortTable, RouterTable, SubnetTable } from '../../storage/schema.js'
import type { Db } from '../../storage/store.js'
import { chunks, parseJson } from '../context.js'
import { DHCP_OWNER } from '../dhcp-ports.js'
import { DHCP_AGENT, hostsWithAgentDown } from '../agents.js'
import { networkOfCidr, parseCidr } from '../../../lib/ip.js'
import { fixedIpsByPort, rulesByGroup, securityGroupIdsByPort } from '../queries.js'
import { ROUTER_GATEWAY, ROUTER_INTERFACE } from '../routers.js'
import type { FixedIp } from '../views.js'
import { placeRouter, routerHosts } from './router-placement.js'

const ROUTER_OWNERS = [ROUTER_INTERFACE, ROUTER_GATEWAY]
const byId = <T extends { id: string }>(a: T, b: T) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
const sorted = (items: Iterable<string>) => [...new Set(items)].sort()

/** What the builder found besides the state: networks whose DHCP port is missing or lacks an address. */
export interface BuiltState {
  state: HostNetworkState
  dhcpIncomplete: string[]
}

/**
 * The VXLAN endpoint a host's agent reported (`facts.network.tunnel_ip`), or null. Facts are the host's own word
 * and stored as sent: anything but an IP address is ignored, for it reaches every other host of its networks as an
 * argument of `bridge fdb`, where a bogus one would fail their apply.
 */
export function tunnelAddress(factsJson: string): string | null {
  const tunnel = parseJson<{ network?: Partial<HostNetworkFacts> | null } | null>(factsJson)?.network?.tunnel_ip
  return typeof tunnel === 'string' && isIP(tunnel) !== 0 ? tunnel : null
}

async function selectIn<T>(ids: string[], query: (part: string[]) => Promise<T[]>): Promise<T[]> {
  const out: T[] = []
  for (const part of chunks([...new Set(ids)])) if (part.length > 0) out.push(...(await query(part)))
  return out
}

/** The state of host `hostId`, or undefined when the host does not exist. */
export async function buildHostState(db: Db, hostId: string): Promise<BuiltState | undefined> {
  const host = await db.selectFrom('hosts').select(['id', 'hostname', 'facts']).where('id', '=', hostId).executeTakeFirst()
  if (!host) return undefined
  const placementHosts = await routerHosts(db)
  // A router that is administratively down runs nowhere (Neutron's L3 agent drops it too).
  const routers = placementHosts.includes(hostId)
    ? (await db.selectFrom('routers').selectAll().where('admin_state_up', '=', 1).execute()).filter((r) => placeRouter(r.id, placementHosts) === hostId)
    : []
  const localPorts = await db
    .selectFrom('ports')
    .selectAll()
    .where('binding_host_id', '=', host.hostname)
    .where('device_owner', 'like', 'compute:%')
    .where('device_id', '!=', '')
    .execute()
  const routerPorts = await selectIn(routers.map((r) => r.id), (ids) => db.selectFrom('ports').selectAll().where('device_id', 'in', ids).where('device_owner', 'in', ROUTER_OWNERS).execute())
  const networkIds = sorted([...localPorts, ...routerPorts].map((p) => p.network_id))
  const [networks, subnets, neighbours] = await Promise.all([
    selectIn(networkIds, (ids) => db.selectFrom('networks').selectAll().where('id', 'in', ids).execute()),
    selectIn(networkIds, (ids) => db.selectFrom('subnets').selectAll().where('network_id', 'in', ids).orderBy('created_at').orderBy('id').execute()),
    selectIn(networkIds, (ids) =>
      db
        .selectFrom('ports')
        .selectAll()
        .where('network_id', 'in', ids)
        .where((eb) => eb.or([eb('device_owner', 'in', [...ROUTER_OWNERS, DHCP_OWNER]), eb.and([eb('device_owner', 'like', 'compute:%'), eb('binding_host_id', '!=', '')])]))
        .execute(),
    ),
  ])
  const ips = await fixedIpsByPort(db, sorted([...localPorts, ...routerPorts, ...neighbours].map((p) => p.id)))
  const subnetById = new Map(subnets.map((s) => [s.id, s]))

  // Where each neighbour lives: a compute port on its bound host, a router port on its router's host.
  const neighbourRouters = await selectIn(
    neighbours.filter((p) => ROUTER_OWNERS.includes(p.device_owner)).map((p) => p.device_id),
    (ids) => db.selectFrom('routers').select('id').where('id', 'in', ids).where('admin_state_up', '=', 1).execute(),
  )
  const routerHostOf = new Map(neighbourRouters.map((r) => [r.id, placeRouter(r.id, placementHosts)]))
  const peerHosts = await selectIn(
    [...neighbours.filter((p) => p.device_owner.startsWith('compute:')).map((p) => p.binding_host_id)],
    (names) => db.selectFrom('hosts').select(['id', 'hostname', 'facts']).where('hostname', 'in', names).execute(),
  )
  const routerPeerHosts = await selectIn(
    [...routerHostOf.values()].filter((id): id is string => !!id && id !== hostId),
    (ids) => db.selectFrom('hosts').select(['id', 'hostname', 'facts']).where('id', 'in', ids).execute(),
  )
  const tunnelOf = new Map<string, string>()
  for (const h of [...peerHosts, ...routerPeerHosts]) {
    const tunnel = tunnelAddress(h.facts)
    if (tunnel && h.id !== hostId) tunnelOf.set(h.id, tunnel)
  }
  const hostIdByName = new Map([...peerHosts, ...routerPeerHosts].map((h) => [h.hostname, h.id]))
  const locationOf = (p: PortTable): string | undefined =>
    p.device_owner.startsWith('compute:') ? hostIdByName.get(p.binding_host_id) : routerHostOf.get(p.device_id)

  const dhcpIncomplete: string[] = []
  const dhcpDown = (await hostsWithAgentDown(db, DHCP_AGENT)).has(hostId)
  const dataplaneNetworks: DataplaneNetwork[] = networks.sort(byId).map((n) => {
    const own = subnets.filter((s) => s.network_id === n.id)
    const peers = new Map<string, Set<string>>()
    for (const p of neighbours.filter((x) => x.network_id === n.id && x.device_owner !== DHCP_OWNER)) {
      const tunnel = tunnelOf.get(locationOf(p) ?? '')
      if (!tunnel) continue
      const macs = peers.get(tunnel) ?? peers.set(tunnel, new Set()).get(tunnel)!
      macs.add(p.mac_address)
      for (const pair of parseJson<{ mac_address?: string }[]>(p.allowed_address_pairs)) if (pair.mac_address) macs.add(pair.mac_address)
    }
    const dhcpSubnets = own.filter((s) => s.enable_dhcp === 1)
    const guestsHere = localPorts.some((p) => p.network_id === n.id)
    const dhcpPort = neighbours.find((p) => p.network_id === n.id && p.device_owner === DHCP_OWNER)
    const dhcpIps = dhcpPort ? (ips.get(dhcpPort.id) ?? []) : []
    let dhcp: DataplaneNetwork['dhcp'] = null
    // A DHCP agent an admin set down serves no network (Neutron's default for agents administratively down).
    if (guestsHere && dhcpSubnets.length > 0 && !dhcpDown) {
      if (!dhcpPort || dhcpSubnets.some((s) => !dhcpIps.some((ip) => ip.subnet_id === s.id))) dhcpIncomplete.push(n.id)
      if (dhcpPort) dhcp = { portId: dhcpPort.id, mac: dhcpPort.mac_address, fixedIps: fixed(dhcpIps) }
    }
    const peerList: DataplanePeer[] = [...peers].map(([tunnelIp, macs]) => ({ tunnelIp, macs: sorted(macs) })).sort((a, b) => (a.tunnelIp < b.tunnelIp ? -1 : 1))
    return {
      id: n.id,
      type: n.network_type as DataplaneNetwork['type'],
      segmentationId: n.segmentation_id,
      physicalNetwork: n.physical_network,
      mtu: n.mtu,
      subnets: own.map((s) => ({
        id: s.id,
        ipVersion: s.ip_version as 4 | 6,
        cidr: s.cidr,
        gatewayIp: s.gateway_ip,
        dnsNameservers: parseJson<string[]>(s.dns_nameservers),
        hostRoutes: parseJson<{ destination: string; nexthop: string }[]>(s.host_routes),
        enableDhcp: s.enable_dhcp === 1,
        ipv6RaMode: s.ip_version === 6 ? ((s.ipv6_ra_mode as Ipv6Mode | null) ?? null) : null,
        ipv6AddressMode: s.ip_version === 6 ? ((s.ipv6_address_mode as Ipv6Mode | null) ?? null) : null,
      })),
      dhcp,
      peers: peerList,
    }
  })

  const groupsByPort = await securityGroupIdsByPort(db, localPorts.map((p) => p.id))
  const ports: DataplanePort[] = localPorts.sort(byId).map((p) => ({
    id: p.id,
    networkId: p.network_id,
    deviceId: p.device_id,
    mac: p.mac_address,
    fixedIps: fixed(ips.get(p.id) ?? []),
    adminStateUp: p.admin_state_up === 1,
    portSecurityEnabled: p.port_security_enabled === 1,
    allowedAddressPairs: parseJson<{ ip_address: string; mac_address?: string }[]>(p.allowed_address_pairs).map((a) => ({ ipAddress: a.ip_address, macAddress: a.mac_address ?? p.mac_address })),
    securityGroupIds: p.port_security_enabled === 1 ? sorted(groupsByPort.get(p.id) ?? []) : [],
  }))
  const { securityGroups, groupMembers } = await securityOf(db, sorted(ports.flatMap((p) => p.securityGroupIds)))

  const floating = await selectIn(routers.map((r) => r.id), (ids) =>
    db.selectFrom('floating_ips').select(['router_id', 'floating_ip_address', 'fixed_ip_address']).where('router_id', 'in', ids).where('fixed_ip_address', 'is not', null).execute(),
  )
  const dataplaneRouters = routers.sort(byId).map((r) => routerOf(r, routerPorts, ips, subnetById, floating))
  const tunnelIp = tunnelAddress(host.facts)
  return { state: { tunnelIp, networks: dataplaneNetworks, ports, securityGroups, groupMembers, routers: dataplaneRouters }, dhcpIncomplete }
}

function fixed(ips: FixedIp[]): DataplaneFixedIp[] {
  return ips.map((ip) => ({ subnetId: ip.subnet_id, ipAddress: ip.ip_address }))
}

/** The rules of the groups, and the members of every group a rule names as its remote group. */
async function securityOf(db: Db, groupIds: string[]): Promise<{ securityGroups: DataplaneSecurityGroup[]; groupMembers: DataplaneGroupMembers[] }> {
  const rules = await rulesByGroup(db, groupIds)
  const securityGroups = groupIds.map((id) => ({
    id,
    rules: (rules.get(id) ?? []).sort(byId).map((r) => ({
      id: r.id,
      direction: r.direction as 'ingress' | 'egress',
      ethertype: r.ethertype as 'IPv4' | 'IPv6',
      protocol: r.protocol,
      portRangeMin: r.port_range_min,
      portRangeMax: r.port_range_max,
      // Rules keep the prefix as sent (host bits too); nftables matches the network it names.
      remoteIpPrefix: r.remote_ip_prefix && (networkOfCidr(r.remote_ip_prefix) ?? r.remote_ip_prefix),
      remoteGroupId: r.remote_group_id,
    })),
  }))
  const remote = sorted(securityGroups.flatMap((g) => g.rules.map((r) => r.remoteGroupId).filter((id): id is string => id !== null)))
  const members = await selectIn(remote, (ids) =>
    db
      .selectFrom('port_security_groups')
      .innerJoin('ports', 'ports.id', 'port_security_groups.port_id')
      .select(['port_security_groups.security_group_id', 'ports.id', 'ports.allowed_address_pairs'])
      .where('port_security_groups.security_group_id', 'in', ids)
      .execute(),
  )
  const memberIps = await fixedIpsByPort(db, sorted(members.map((m) => m.id)))
  const groupMembers = remote.map((groupId) => {
    const addresses = members
      .filter((m) => m.security_group_id === groupId)
      .flatMap((m) => [...(memberIps.get(m.id) ?? []).map((ip) => ip.ip_address), ...parseJson<{ ip_address: string }[]>(m.allowed_address_pairs).map((a) => a.ip_address)])
    return { groupId, addresses: sorted(addresses) }
  })
  return { securityGroups, groupMembers }
}

function routerOf(
  r: RouterTable,
  ports: PortTable[],
  ips: Map<string, FixedIp[]>,
  subnets: Map<string, SubnetTable>,
  floating: { router_id: string | null; floating_ip_address: string; fixed_ip_address: string | null }[],
): DataplaneRouter {
  const portOf = (p: PortTable): DataplaneRouterPort => ({
    portId: p.id,
    networkId: p.network_id,
    mac: p.mac_address,
    addresses: (ips.get(p.id) ?? []).flatMap((ip) => {
      const subnet = subnets.get(ip.subnet_id)
      return subnet ? [`${ip.ip_address}/${parseCidr(subnet.cidr)!.prefix}`] : []
    }),
  })
  const gwPort = ports.find((p) => p.id === r.gw_port_id)
  const gwSubnet = gwPort && (ips.get(gwPort.id) ?? []).map((ip) => subnets.get(ip.subnet_id)).find((s) => s?.ip_version === 4)
  return {
    id: r.id,
    gateway: gwPort ? { ...portOf(gwPort), nexthop: gwSubnet?.gateway_ip ?? null, enableSnat: r.enable_snat === 1 } : null,
    interfaces: ports.filter((p) => p.device_id === r.id && p.device_owner === ROUTER_INTERFACE).sort(byId).map(portOf),
    routes: parseJson<{ destination: string; nexthop: string }[]>(r.routes),
    floatingIps: floating
      .filter((f) => f.router_id === r.id)
      .map((f) => ({ floatingIpAddress: f.floating_ip_address, fixedIpAddress: f.fixed_ip_address! }))
      .sort((a, b) => (a.floatingIpAddress < b.floatingIpAddress ? -1 : 1)),
  }
}
