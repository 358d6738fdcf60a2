/**
 * Desired network states for the back-end tests: two tenant VXLAN networks (one with DHCP), a flat external
 * network, guest ports (one without port security), a router with an interface, a gateway and a floating IP.
 */
import type { HostNetworkState } from '../../../contracts/network/dataplane.js'

export const ID = {
  netA: 'a0000000-0000-4000-8000-000000000001',
  netB: 'b0000000-0000-4000-8000-000000000002',
  netExt: 'e0000000-0000-4000-8000-000000000003',
  subA: 'a1000000-0000-4000-8000-000000000001',
  subB: 'b1000000-0000-4000-8000-000000000002',
  subExt: 'e1000000-0000-4000-8000-000000000003',
  dhcpA: 'ad000000-0000-4000-8000-000000000001',
  port1: 'c1000000-0000-4000-8000-000000000001',
  port2: 'c2000000-0000-4000-8000-000000000002',
  port3: 'c3000000-0000-4000-8000-000000000003',
  router: 'f0000000-0000-4000-8000-000000000001',
  routerIf: 'f1000000-0000-4000-8000-000000000001',
  routerGw: 'f2000000-0000-4000-8000-000000000002',
  group: 'd0000000-0000-4000-8000-000000000001',
}

export function fullState(tunnelIp: string | null): HostNetworkState {
  return {
    tunnelIp,
    networks: [
      {
        id: ID.netA, type: 'vxlan', segmentationId: 101, physicalNetwork: null, mtu: 1450,
        subnets: [{ id: ID.subA, ipVersion: 4, cidr: '10.60.0.0/24', gatewayIp: '10.60.0.1', dnsNameservers: [], hostRoutes: [{ destination: '10.99.0.0/16', nexthop: '10.60.0.254' }], enableDhcp: true, ipv6RaMode: null, ipv6AddressMode: null }],
        dhcp: { portId: ID.dhcpA, mac: 'fa:16:3e:0a:00:02', fixedIps: [{ subnetId: ID.subA, ipAddress: '10.60.0.2' }] },
        peers: [{ tunnelIp: '10.255.0.7', macs: ['fa:16:3e:77:00:01', 'fa:16:3e:77:00:02'] }],
      },
      {
        id: ID.netB, type: 'vxlan', segmentationId: 102, physicalNetwork: null, mtu: 1450,
        subnets: [{ id: ID.subB, ipVersion: 4, cidr: '10.61.0.0/24', gatewayIp: '10.61.0.1', dnsNameservers: [], hostRoutes: [], enableDhcp: false, ipv6RaMode: null, ipv6AddressMode: null }],
        dhcp: null,
        peers: [],
      },
      {
        id: ID.netExt, type: 'flat', segmentationId: null, physicalNetwork: 'public', mtu: 1500,
        subnets: [{ id: ID.subExt, ipVersion: 4, cidr: '198.51.100.0/24', gatewayIp: '198.51.100.1', dnsNameservers: [], hostRoutes: [], enableDhcp: false, ipv6RaMode: null, ipv6AddressMode: null }],
        dhcp: null,
        peers: [],
      },
    ],
    ports: [
      { id: ID.port1, networkId: ID.netA, deviceId: 'vm-1', mac: 'fa:16:3e:0a:00:11', fixedIps: [{ subnetId: ID.subA, ipAddress: '10.60.0.11' }], adminStateUp: true, portSecurityEnabled: true, allowedAddressPairs: [], securityGroupIds: [ID.group] },
      { id: ID.port2, networkId: ID.netA, deviceId: 'vm-2', mac: 'fa:16:3e:0a:00:12', fixedIps: [{ subnetId: ID.subA, ipAddress: '10.60.0.12' }], adminStateUp: true, portSecurityEnabled: false, allowedAddressPairs: [], securityGroupIds: [] },
      { id: ID.port3, networkId: ID.netB, deviceId: 'vm-3', mac: 'fa:16:3e:0b:00:13', fixedIps: [{ subnetId: ID.subB, ipAddress: '10.61.0.13' }], adminStateUp: false, portSecurityEnabled: true, allowedAddressPairs: [], securityGroupIds: [ID.group] },
    ],
    securityGroups: [
      {
        id: ID.group,
        rules: [
          { id: 'r-egress', direction: 'egress', ethertype: 'IPv4', protocol: null, portRangeMin: null, portRangeMax: null, remoteIpPrefix: null, remoteGroupId: null },
          { id: 'r-members', direction: 'ingress', ethertype: 'IPv4', protocol: null, portRangeMin: null, portRangeMax: null, remoteIpPrefix: null, remoteGroupId: ID.group },
        ],
      },
    ],
    groupMembers: [{ groupId: ID.group, addresses: ['10.60.0.11', '10.61.0.13'] }],
    routers: [
      {
        id: ID.router,
        gateway: { portId: ID.routerGw, networkId: ID.netExt, mac: 'fa:16:3e:0e:00:0a', addresses: ['198.51.100.10/24'], nexthop: '198.51.100.1', enableSnat: true },
        interfaces: [{ portId: ID.routerIf, networkId: ID.netA, mac: 'fa:16:3e:0a:00:01', addresses: ['10.60.0.1/24'] }],
        routes: [],
        floatingIps: [{ floatingIpAddress: '198.51.100.20', fixedIpAddress: '10.60.0.11' }],
      },
    ],
  }
}

/** The full state after the second guest left network A, network B went and the floating IP was released. */
export function shrunkState(tunnelIp: string | null): HostNetworkState {
  const full = fullState(tunnelIp)
  return {
    ...full,
    networks: full.networks.filter((n) => n.id !== ID.netB),
    ports: full.ports.filter((p) => p.id === ID.port1),
    groupMembers: [{ groupId: ID.group, addresses: ['10.60.0.11'] }],
    routers: full.routers.map((r) => ({ ...r, floatingIps: [] })),
  }
}
