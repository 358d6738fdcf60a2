/**
 * What one host's guest networking must be, as the control plane sends it to the host's agent
 * (`GET {base}/resmgr/v1/hosts/{id}/network`). The control plane builds it from its truth (ports bound to the
 * host, the networks and routers they need, security groups); the agent converges the host to it, creating
 * what is missing and removing what is extra, so a restarted agent rebuilds everything from one answer.
 *
 * Every list is sorted by id (or address), so the same truth always serialises to the same bytes and the
 * document's hash tells an agent whether anything changed.
 */

export interface DataplaneFixedIp {
  subnetId: string
  ipAddress: string
}

export interface DataplaneSubnet {
  id: string
  ipVersion: 4 | 6
  /** network/prefix, canonical */
  cidr: string
  gatewayIp: string | null
  dnsNameservers: string[]
  hostRoutes: { destination: string; nexthop: string }[]
  enableDhcp: boolean
  /** IPv6 only (null otherwise): who advertises the prefix (`slaac`, `dhcpv6-stateful`, `dhcpv6-stateless`; null: no one of ours) and how guests get addresses. */
  ipv6RaMode: Ipv6Mode | null
  ipv6AddressMode: Ipv6Mode | null
}

export type Ipv6Mode = 'slaac' | 'dhcpv6-stateful' | 'dhcpv6-stateless'

/** Another host with something on a network: where to tunnel, and which MAC addresses live behind it. */
export interface DataplanePeer {
  tunnelIp: string
  macs: string[]
}

export interface DataplaneNetwork {
  id: string
  /** `vxlan`: a VXLAN device with VNI `segmentationId` to `peers`; `flat`: the host interface mapped to `physicalNetwork`. */
  type: 'vxlan' | 'flat'
  segmentationId: number | null
  physicalNetwork: string | null
  mtu: number
  subnets: DataplaneSubnet[]
  /**
   * The network's DHCP port, when a subnet has DHCP and guests of this host sit on the network. One port per
   * network (Neutron's `network:dhcp`), answered on every host by a local server that never reaches the
   * tunnels, so each host answers its own guests only.
   */
  dhcp: { portId: string; mac: string; fixedIps: DataplaneFixedIp[] } | null
  /** The other hosts of this network (VXLAN head-end replication and static FDB entries, as l2population). */
  peers: DataplanePeer[]
}

/** A guest NIC on this host: the tap, its anti-spoofing and its security groups. */
export interface DataplanePort {
  id: string
  networkId: string
  /** The server the port is bound to (device_id). */
  deviceId: string
  mac: string
  fixedIps: DataplaneFixedIp[]
  adminStateUp: boolean
  /** False: no anti-spoofing and no security groups (Neutron's port_security_enabled). */
  portSecurityEnabled: boolean
  /** Extra (IP or CIDR, MAC) pairs the guest may send from; MAC defaults to the port's own. */
  allowedAddressPairs: { ipAddress: string; macAddress: string }[]
  securityGroupIds: string[]
}

export interface DataplaneRule {
  id: string
  direction: 'ingress' | 'egress'
  ethertype: 'IPv4' | 'IPv6'
  /** Neutron's protocol: a name (tcp, udp, icmp, ipv6-icmp…), a number as text, or null for any. */
  protocol: string | null
  portRangeMin: number | null
  portRangeMax: number | null
  remoteIpPrefix: string | null
  remoteGroupId: string | null
}

export interface DataplaneSecurityGroup {
  id: string
  rules: DataplaneRule[]
}

/** The addresses of a group's members (fixed IPs and allowed address pairs of its ports, on every host). */
export interface DataplaneGroupMembers {
  groupId: string
  addresses: string[]
}

export interface DataplaneRouterPort {
  portId: string
  networkId: string
  mac: string
  /** address/prefix length on the port's subnet */
  addresses: string[]
}

export interface DataplaneRouter {
  id: string
  /** The port on the external network, with the external subnet's gateway as the default route. */
  gateway: (DataplaneRouterPort & { nexthop: string | null; enableSnat: boolean }) | null
  interfaces: DataplaneRouterPort[]
  routes: { destination: string; nexthop: string }[]
  /** Floating address → fixed address (DNAT in, SNAT out). */
  floatingIps: { floatingIpAddress: string; fixedIpAddress: string }[]
}

export interface HostNetworkState {
  /** The host's tunnel address as the control plane knows it (null until the agent reported one). */
  tunnelIp: string | null
  networks: DataplaneNetwork[]
  ports: DataplanePort[]
  securityGroups: DataplaneSecurityGroup[]
  groupMembers: DataplaneGroupMembers[]
  /** Routers this host runs (it holds the `network` role). */
  routers: DataplaneRouter[]
}

/** The answer of the state endpoint: the document and its hash (sent back as `known` to long-poll for a change). */
export interface HostNetworkAnswer {
  hash: string
  state: HostNetworkState
}

/** What an agent reports about its data plane in its heartbeat facts (`facts.network`). */
export interface HostNetworkFacts {
  /** The back end the agent runs: `none` (no data plane: simulated hosts) or `linux`. */
  backend: string
  /** The address other hosts reach this one's VXLAN endpoint at. */
  tunnel_ip: string | null
  /** Physical networks the host has an interface for. */
  physical_networks: string[]
}
