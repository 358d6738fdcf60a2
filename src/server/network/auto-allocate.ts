/**
 * Get-me-a-network: the network `networks: "auto"` gives a project. On first use the project gets a network
 * `auto_allocated_network` with an IPv4 subnet `auto_allocated_subnet` (10.0.0.0/24: projects' address spaces
 * are separate, like Neutron's tenant networks), and when a default external network exists (`is_default`),
 * a router `auto_allocated_router` connecting the two, so floating IPs work at once. Concurrent first uses
 * agree on one network: the claim row's primary key decides, and the loser waits for and reads the winner's.
 */
import type { NetworkTable } from '../storage/schema.js'
import type { NetCtx } from './context.js'
import { neutron } from './errors.js'
import { insertNetwork } from './networks.js'
import { insertPort } from './ports.js'
import { lockNetwork } from './queries.js'
import { insertSubnet } from './subnets.js'
import { newUuid } from './context.js'
import { ROUTER_GATEWAY, ROUTER_INTERFACE } from './routers.js'

export const AUTO_NETWORK_NAME = 'auto_allocated_network'
export const AUTO_SUBNET_NAME = 'auto_allocated_subnet'
export const AUTO_ROUTER_NAME = 'auto_allocated_router'
export const AUTO_SUBNET_CIDR = '10.0.0.0/24'

export async function autoAllocatedNetwork(ctx: NetCtx, projectId: string): Promise<NetworkTable> {
  const claim = await ctx.db
    .insertInto('auto_allocated_networks')
    .values({ project_id: projectId, network_id: null, router_id: null })
    .onConflict((oc) => oc.column('project_id').doNothing())
    .executeTakeFirst()
  if (Number(claim.numInsertedOrUpdatedRows ?? 0n) === 0) {
    const row = await ctx.db.selectFrom('auto_allocated_networks').select('network_id').where('project_id', '=', projectId).executeTakeFirst()
    const network = row?.network_id ? await ctx.db.selectFrom('networks').selectAll().where('id', '=', row.network_id).executeTakeFirst() : undefined
    if (network) return network
    throw neutron.conflict('AutoAllocationFailure', `Deployment error: the auto-allocated network of project ${projectId} is missing; delete its claim or create a network.`)
  }
  const network = await insertNetwork(ctx, projectId, { name: AUTO_NETWORK_NAME, description: 'Created for servers booted with networks=auto' })
  await lockNetwork(ctx, network.id)
  const subnet = await insertSubnet(ctx, network, projectId, { ip_version: 4, cidr: AUTO_SUBNET_CIDR, name: AUTO_SUBNET_NAME, dns_nameservers: [] })
  let routerId: string | null = null
  const external = await ctx.db.selectFrom('networks').selectAll().where('external', '=', 1).where('is_default', '=', 1).orderBy('created_at').executeTakeFirst()
  if (external) {
    routerId = newUuid()
    await ctx.db
      .insertInto('routers')
      .values({
        id: routerId, project_id: projectId, name: AUTO_ROUTER_NAME, description: '', admin_state_up: 1, status: 'ACTIVE', gw_network_id: null, gw_port_id: null,
        enable_snat: 1, routes: '[]', tags: '[]', revision_number: 1, created_at: ctx.now, updated_at: ctx.now,
      })
      .execute()
    const ext = (await lockNetwork(ctx, external.id))!
    const gw = await insertPort(ctx, ext, '', { device_owner: ROUTER_GATEWAY, device_id: routerId, security_groups: [] })
    await ctx.db.updateTable('routers').set({ gw_network_id: ext.id, gw_port_id: gw.id }).where('id', '=', routerId).execute()
    await insertPort(ctx, network, projectId, { device_owner: ROUTER_INTERFACE, device_id: routerId, fixed_ips: [{ subnet_id: subnet.id, ip_address: subnet.gateway_ip! }], security_groups: [] })
  }
  await ctx.db.updateTable('auto_allocated_networks').set({ network_id: network.id, router_id: routerId }).where('project_id', '=', projectId).execute()
  return network
}
