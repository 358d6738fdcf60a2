/**
 * Nova's network proxies, `/os-networks` and `/os-tenant-networks` (2.1–2.35; 404 from 2.36, where Nova removed
 * them): the networks the caller sees in the network service, in nova-network's shape (read only, as Nova with
 * Neutron: creating networks there is the network API's business).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { notFound } from '../../../contracts/errors.js'
import type { AppDeps } from '../../deps.js'
import { listNetworks } from '../../network/networks.js'
import { listSubnets } from '../../network/subnets.js'
import type { View } from '../../network/views.js'
import { formatIp, parseCidr } from '../../../lib/ip.js'
import { can, requireBefore } from './context.js'
import { documented } from '../../http/openapi.js'
import { A, PROXY } from '../../../contracts/compute/answers.js'
import { envelope, listOf } from '../../../contracts/compute/schemas.js'

const DOCS = {
  networks: documented({ summary: `List the networks the caller sees, in nova-network's shape${PROXY.summary}`, response: { 200: envelope('networks', listOf(A.proxyNetwork)) } }),
  network: documented({ summary: `Show a network in nova-network's shape${PROXY.summary}`, response: { 200: envelope('network', A.proxyNetwork) } }),
  tenantNetworks: documented({ summary: `List the networks the caller sees (id, label, CIDR)${PROXY.summary}`, response: { 200: envelope('networks', listOf(A.tenantNetwork)) } }),
  tenantNetwork: documented({ summary: `Show a network (id, label, CIDR)${PROXY.summary}`, response: { 200: envelope('network', A.tenantNetwork) } }),
}

interface ProxyNetwork {
  network: View
  v4?: View
  v6?: View
}

/** The dotted mask of an IPv4 prefix length, or the prefix length of an IPv6 one (as nova-network showed them). */
function netmask(subnet: View | undefined): string | null {
  const cidr = subnet && parseCidr(subnet.cidr)
  if (!cidr) return null
  if (cidr.version === 6) return String(cidr.prefix)
  return formatIp(4, cidr.prefix === 0 ? 0n : ((1n << 32n) - 1n) ^ ((1n << BigInt(32 - cidr.prefix)) - 1n))
}

/** Nova's network_dict: the fields everyone sees, and for admins the nova-network ones (null: nothing like them here). */
function networkDict({ network, v4, v6 }: ProxyNetwork, admin: boolean) {
  const dns = (v4?.dns_nameservers ?? []) as string[]
  return {
    id: network.id,
    label: network.name,
    cidr: v4?.cidr ?? null,
    netmask: netmask(v4),
    gateway: v4?.gateway_ip ?? null,
    broadcast: null,
    dns1: dns[0] ?? null,
    dns2: dns[1] ?? null,
    cidr_v6: v6?.cidr ?? null,
    gateway_v6: v6?.gateway_ip ?? null,
    netmask_v6: netmask(v6),
    ...(admin
      ? {
          created_at: network.created_at,
          updated_at: network.updated_at,
          deleted_at: null,
          deleted: false,
          injected: false,
          bridge: null,
          vlan: null,
          vpn_public_address: null,
          vpn_public_port: null,
          vpn_private_address: null,
          dhcp_start: null,
          project_id: network.project_id,
          host: null,
          bridge_interface: null,
          multi_host: false,
          priority: null,
          rxtx_base: null,
          mtu: network.mtu,
          dhcp_server: null,
          enable_dhcp: v4?.enable_dhcp ?? v6?.enable_dhcp ?? null,
          share_address: false,
        }
      : {}),
  }
}

export function networkProxyRoutes(deps: AppDeps) {
  /** The networks the caller sees, each with its first IPv4 and IPv6 subnet the caller sees. */
  const visible = (request: FastifyRequest): Promise<ProxyNetwork[]> => {
    requireBefore(request, 'noProxyApis')
    return deps.network.run(request.principal, async (ctx, actor) => {
      const [networks, subnets] = await Promise.all([listNetworks(ctx, actor), listSubnets(ctx, actor)])
      const first = (network: View, version: number) => subnets.find((s) => s.network_id === network.id && s.ip_version === version)
      return networks.map((network) => ({ network, v4: first(network, 4), v6: first(network, 6) }))
    })
  }
  const one = async (request: FastifyRequest<{ Params: { id: string } }>): Promise<ProxyNetwork> => {
    const found = (await visible(request)).find((n) => n.network.id === request.params.id)
    if (!found) throw notFound(`Network ${request.params.id} could not be found.`)
    return found
  }
  const tenantView = ({ network, v4, v6 }: ProxyNetwork) => ({ id: network.id, cidr: v4?.cidr ?? v6?.cidr ?? null, label: network.name })

  return async (scope: FastifyInstance): Promise<void> => {
    type P1 = { Params: { id: string } }
    scope.get('/v2.1/os-networks', DOCS.networks, async (request) => ({ networks: (await visible(request)).map((n) => networkDict(n, can(request, 'os-networks:admin_fields'))) }))
    scope.get<P1>('/v2.1/os-networks/:id', DOCS.network, async (request) => ({ network: networkDict(await one(request), can(request, 'os-networks:admin_fields')) }))
    scope.get('/v2.1/os-tenant-networks', DOCS.tenantNetworks, async (request) => ({ networks: (await visible(request)).map(tenantView) }))
    scope.get<P1>('/v2.1/os-tenant-networks/:id', DOCS.tenantNetwork, async (request) => ({ network: tenantView(await one(request)) }))
  }
}
