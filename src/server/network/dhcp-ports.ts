/**
 * The DHCP port of a network (Neutron's `network:dhcp`): the address guests get their leases and their metadata
 * route from. Neutron's DHCP agent asks for it when it takes a network; here the first host that needs DHCP on a
 * network does, through the data-plane state (dataplane/host-state.ts), so networks nobody runs guests on — and
 * every network of a cloud of simulated hosts — hold no such port. One port per network serves every host: each
 * host answers its own guests behind the same MAC and addresses, kept off the tunnels (docs/network.md).
 *
 * The port belongs to no project (like router gateways: it counts against no quota), takes one address on every
 * subnet with DHCP (the EUI-64 one on SLAAC subnets), and goes away with its network; deleting a subnet takes its
 * address back.
 */
import type { NetworkTable, PortTable } from '../storage/schema.js'
import type { NetCtx } from './context.js'
import { insertPort, reassignIps, removePort } from './ports.js'
import { fixedIpsByPort, lockNetwork } from './queries.js'

export const DHCP_OWNER = 'network:dhcp'

const dhcpDevice = (networkId: string) => `dhcp-${networkId}`

/** The subnets of a network that have DHCP (IPv6 ones too: the DHCP port advertises and answers on them). */
async function dhcpSubnetIds(ctx: NetCtx, networkId: string): Promise<string[]> {
  const rows = await ctx.db.selectFrom('subnets').select('id').where('network_id', '=', networkId).where('enable_dhcp', '=', 1).orderBy('created_at').orderBy('id').execute()
  return rows.map((r) => r.id)
}

/**
 * The network's DHCP port with an address on each of its DHCP subnets, created or completed if needed (under
 * the network's row lock); undefined when no subnet has DHCP.
 */
export async function ensureDhcpPort(ctx: NetCtx, networkId: string): Promise<PortTable | undefined> {
  const subnets = await dhcpSubnetIds(ctx, networkId)
  if (subnets.length === 0) return undefined
  const network = (await lockNetwork(ctx, networkId)) as NetworkTable | undefined
  if (!network) return undefined
  const port = await ctx.db.selectFrom('ports').selectAll().where('network_id', '=', networkId).where('device_owner', '=', DHCP_OWNER).orderBy('created_at').executeTakeFirst()
  if (!port) {
    return insertPort(ctx, network, '', {
      device_owner: DHCP_OWNER,
      device_id: dhcpDevice(networkId),
      fixed_ips: subnets.map((subnet_id) => ({ subnet_id })),
      security_groups: [],
      port_security_enabled: false,
    })
  }
  const held = (await fixedIpsByPort(ctx.db, [port.id])).get(port.id) ?? []
  const missing = subnets.filter((id) => !held.some((ip) => ip.subnet_id === id))
  if (missing.length > 0) await reassignIps(ctx, port, [...held, ...missing.map((subnet_id) => ({ subnet_id }))])
  return port
}

/** Removes a network's DHCP ports (before the network itself: they are the service's, not the users'). */
export async function removeDhcpPorts(ctx: NetCtx, networkId: string): Promise<void> {
  const ports = await ctx.db.selectFrom('ports').selectAll().where('network_id', '=', networkId).where('device_owner', '=', DHCP_OWNER).execute()
  for (const port of ports) await removePort(ctx, port)
}

/** Takes back the DHCP ports' addresses on a subnet being deleted (they never keep a subnet in use). */
export async function releaseDhcpAddresses(ctx: NetCtx, subnetId: string): Promise<void> {
  const ports = ctx.db.selectFrom('ports').select('id').where('device_owner', '=', DHCP_OWNER)
  await ctx.db.deleteFrom('ip_allocations').where('subnet_id', '=', subnetId).where('port_id', 'in', ports).execute()
}
