/**
 * The facts the metadata documents are built from, read from the store in a handful of queries: the server row,
 * its key pair's type, and its ports with their addresses, subnets, networks and floating IPs.
 */
import type { Db } from '../storage/store.js'
import type { ServerTable } from '../storage/tables/compute.js'
import type { FlavorSnapshot } from '../../contracts/host/compute-driver.js'
import type { InstanceFacts, InstanceNic } from './documents.js'

function parse<T>(text: string | null | undefined, fallback: T): T {
  if (!text) return fallback
  try {
    return JSON.parse(text) as T
  } catch {
    return fallback
  }
}

/** The ports of a server in creation order (the order the guest's NICs get), with what network_data.json needs. */
export async function serverNics(db: Db, serverId: string): Promise<InstanceNic[]> {
  const ports = await db.selectFrom('ports').select(['id', 'mac_address', 'network_id', 'created_at']).where('device_id', '=', serverId).orderBy('created_at').orderBy('id').execute()
  if (ports.length === 0) return []
  const portIds = ports.map((p) => p.id)
  const [allocations, networks, floating] = await Promise.all([
    db
      .selectFrom('ip_allocations')
      .innerJoin('subnets', 'subnets.id', 'ip_allocations.subnet_id')
      .select(['ip_allocations.port_id', 'ip_allocations.ip_address', 'subnets.ip_version', 'subnets.cidr', 'subnets.gateway_ip', 'subnets.enable_dhcp', 'subnets.dns_nameservers', 'subnets.host_routes'])
      .where('ip_allocations.port_id', 'in', portIds)
      .execute(),
    db.selectFrom('networks').select(['id', 'mtu']).where('id', 'in', [...new Set(ports.map((p) => p.network_id))]).execute(),
    db.selectFrom('floating_ips').select(['fixed_port_id', 'floating_ip_address']).where('fixed_port_id', 'in', portIds).execute(),
  ])
  const mtu = new Map(networks.map((n) => [n.id, n.mtu]))
  return ports.map((p) => ({
    portId: p.id,
    macAddress: p.mac_address,
    networkId: p.network_id,
    mtu: mtu.get(p.network_id) ?? null,
    vifType: 'bridge',
    fixedIps: allocations
      .filter((a) => a.port_id === p.id)
      .map((a) => ({
        address: a.ip_address,
        version: a.ip_version === 6 ? (6 as const) : (4 as const),
        cidr: a.cidr,
        gateway: a.gateway_ip,
        dhcp: a.enable_dhcp === 1,
        dns: parse<string[]>(a.dns_nameservers, []),
        routes: parse<{ destination: string; nexthop: string }[]>(a.host_routes, []),
      })),
    floatingIps: floating.filter((f) => f.fixed_port_id === p.id).map((f) => f.floating_ip_address),
  }))
}

/** The facts of a live server, or undefined when there is none by that id. */
export async function loadInstanceFacts(db: Db, serverId: string): Promise<InstanceFacts | undefined> {
  const server = await db.selectFrom('servers').selectAll().where('id', '=', serverId).where('deleted', '=', 0).executeTakeFirst()
  return server && instanceFacts(db, server)
}

export async function instanceFacts(db: Db, server: ServerTable): Promise<InstanceFacts> {
  const keyType = server.key_name
    ? ((await db.selectFrom('keypairs').select('type').where('user_id', '=', server.user_id).where('name', '=', server.key_name).executeTakeFirst())?.type ?? 'ssh')
    : 'ssh'
  return {
    uuid: server.id,
    name: server.name,
    hostname: server.hostname ?? server.name,
    displayId: server.display_id,
    projectId: server.project_id,
    availabilityZone: server.availability_zone,
    launchIndex: server.launch_index ?? 0,
    reservationId: server.reservation_id ?? '',
    flavorName: parse<FlavorSnapshot | null>(server.flavor, null)?.name ?? '',
    imageId: server.image_id,
    metadata: parse<Record<string, string>>(server.metadata, {}),
    key: server.key_name && server.key_data ? { name: server.key_name, type: keyType, publicKey: server.key_data } : null,
    userData: server.user_data,
    securityGroups: parse<string[]>(server.security_groups, []),
    nics: await serverNics(db, server.id),
  }
}
