/**
 * A server's networking in Nova's terms, on top of the network service (src/server/network/service.ts), which
 * owns ports, addresses and security groups the way Neutron does for Nova:
 *
 * - create: the `networks` request is checked here (Nova's 400s), then every server of the request gets its
 *   ports in the create transaction, so a refused allocation leaves neither a server nor a port behind;
 * - views: addresses and security groups come from the ports, loaded for a whole page in a few queries
 *   (never one per server); addresses are hidden while the server is building, as Nova does;
 * - the conductor binds the ports to the host it scheduled the server to and releases them with the server;
 * - os-interface attach and detach, and the security-group actions, run in the API (see docs/compute.md).
 */
import { badRequest, conflict } from '../../contracts/errors.js'
import { eventId, findAction, finishAction, finishEvent, recordFinishedAction } from './instance-actions.js'
import { DriverError } from '../../contracts/host/compute-driver.js'
import type { AddressItem } from '../../contracts/compute/server.fields.js'
import { NetworkService, type NetworkAddress, type NetworkRequest, type ServerPort } from '../network/service.js'
import type { ServerTable } from '../storage/schema.js'
import type { Db, Store } from '../storage/store.js'
import type { Visibility } from '../policy/rules.js'

/** Nova's is_uuid_like, as the 2.37+ schema checks it (parameter_types uuid): hyphens optional. */
const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i

type RawEntry = { uuid?: string; port?: string | null; fixed_ip?: string; tag?: string }

/**
 * The create body's `networks` as the network service takes it. No `networks` (below 2.37) or an empty list
 * means `auto`: the project's only network, else its auto-allocated one (several candidates: 409, as Nova's
 * NetworkAmbiguous). A fixed IP or a port cannot serve several servers (Nova's 400s).
 */
export function networkRequest(raw: unknown, maxCount: number): NetworkRequest {
  if (raw === undefined || (Array.isArray(raw) && raw.length === 0)) return 'auto'
  if (raw === 'auto' || raw === 'none') return raw
  const entries = (raw as RawEntry[]).map(({ port, ...rest }): { uuid?: string; port?: string; fixed_ip?: string } => (port === null || port === undefined ? rest : { ...rest, port }))
  for (const e of entries) {
    if (e.port === undefined && e.uuid === undefined) throw badRequest("Bad network format: missing 'uuid'")
    if (e.port === undefined && !UUID.test(e.uuid!)) throw badRequest(`Bad networks format: network uuid is not in proper format (${e.uuid})`)
    if (e.port !== undefined && e.fixed_ip !== undefined) throw badRequest(`Specified Fixed IP '${e.fixed_ip}' cannot be used with port '${e.port}': the two cannot be specified together.`)
  }
  if (maxCount > 1 && entries.some((e) => e.fixed_ip !== undefined)) throw badRequest('max_count cannot be greater than 1 if an fixed_ip is specified.')
  if (maxCount > 1 && entries.some((e) => e.port !== undefined)) {
    throw badRequest('Unable to launch multiple instances with a single configured port ID. Please launch your instance one by one with different ports.')
  }
  return entries.map((e) => (e.port !== undefined ? { port: e.port } : { uuid: e.uuid, ...(e.fixed_ip !== undefined && { fixed_ip: e.fixed_ip }) }))
}

export interface AllocateFor {
  projectId: string
  request: NetworkRequest
  securityGroups: string[]
  /** Whose networks the request may name (other_projects:use), decided by the route. */
  visibility: Visibility
  /** A port on an external network that is not shared (network:attach_external_network). */
  attachExternal: boolean
}

/** Ports for every server of one create request, in the create transaction (each server gets its own). */
export async function allocateServerNetworks(network: NetworkService, tx: Db, servers: Pick<ServerTable, 'id'>[], req: AllocateFor): Promise<void> {
  if (req.request === 'none') {
    await network.validateSecurityGroups(tx, req.projectId, req.securityGroups)
    return
  }
  for (const server of servers) {
    await network.allocateServerPorts(tx, { projectId: req.projectId, serverId: server.id, request: req.request, securityGroups: req.securityGroups, visibility: req.visibility, attachExternal: req.attachExternal })
  }
}

export interface NetworkViews {
  addresses: Map<string, Record<string, AddressItem[]>>
  securityGroups: Map<string, string[]>
}

function addressItems(addresses: Record<string, NetworkAddress[]>): Record<string, AddressItem[]> {
  const out: Record<string, AddressItem[]> = {}
  for (const [label, items] of Object.entries(addresses)) {
    out[label] = items.map((a) => ({ version: a.version, addr: a.addr, type: a['OS-EXT-IPS:type'], mac: a['OS-EXT-IPS-MAC:mac_addr'] }))
  }
  return out
}

/** Addresses (hidden while building) and security groups of a page of servers: a few queries for the page. */
export async function loadNetworkViews(network: NetworkService, db: Db, rows: Pick<ServerTable, 'id' | 'vm_state' | 'deleted'>[]): Promise<NetworkViews> {
  const shown = rows.filter((r) => r.vm_state !== 'building' && r.deleted === 0).map((r) => r.id)
  const [addresses, groups] = await Promise.all([network.serverAddresses(shown, db), network.serverSecurityGroups(rows.map((r) => r.id), db)])
  return {
    addresses: new Map([...addresses].map(([id, a]) => [id, addressItems(a)])),
    securityGroups: new Map([...groups].map(([id, list]) => [id, list.map((g) => g.name)])),
  }
}

/** GET /servers/{id}/ips: every network of the server, items with version and addr only. */
export async function serverIps(network: NetworkService, serverId: string): Promise<Record<string, { version: 4 | 6; addr: string }[]>> {
  const addresses = (await network.serverAddresses([serverId])).get(serverId) ?? {}
  return Object.fromEntries(Object.entries(addresses).map(([label, items]) => [label, items.map((a) => ({ version: a.version, addr: a.addr }))]))
}

/**
 * Ids of the servers whose fixed addresses match every `ip`/`ip6` filter (Nova's regular expressions, anchored
 * at the start), within a project when the list is scoped to one.
 */
export async function serversMatchingIps(network: NetworkService, filters: { pattern: string; version: 4 | 6 }[], projectId?: string): Promise<Set<string>> {
  let ids: Set<string> | undefined
  for (const f of filters) {
    const found = new Set(await network.findServersByIp(f.pattern, f.version, { projectId }))
    ids = ids ? new Set([...ids].filter((id) => found.has(id))) : found
  }
  return ids ?? new Set()
}

// ---- conductor ----

/** Binds the server's ports to the host it was scheduled to (in the claim transaction). */
export function bindServerNetwork(store: Store, tx: Db, serverId: string, hostname: string): Promise<void> {
  return new NetworkService(store).bindServerPorts(tx, serverId, hostname)
}

/**
 * Gives back what the server held: its auto-created ports are deleted (their addresses return to the pool and
 * their floating IPs are disassociated), the user's ports unbound. Idempotent: a second run finds no port.
 */
export function releaseServerNetwork(store: Store, tx: Db, serverId: string): Promise<void> {
  return new NetworkService(store).releaseServerPorts(tx, serverId)
}

// ---- os-interface ----

/** Nova's check_instance_state for attach_interface and detach_interface. */
const INTERFACE_VM_STATES = ['active', 'paused', 'stopped']

export interface InterfaceCaller {
  /** Whose networks the request may name (other_projects:use), decided by the route. */
  visibility: Visibility
  /** A port on an external network that is not shared (network:attach_external_network). */
  attachExternal: boolean
  userId: string
  projectId: string
  /** May act on a locked server (servers:locked:override, checked by the route). */
  lockOverride: boolean
}

export interface AttachRequest {
  netId?: string
  portId?: string
  fixedIp?: string
}

/** An interfaceAttachment as Nova shows it (`tag` from 2.70: pcc keeps no device tags, so it is null). */
export function attachmentView(port: ServerPort, withTag: boolean): Record<string, unknown> {
  return {
    net_id: port.networkId,
    port_id: port.id,
    mac_addr: port.macAddress,
    port_state: port.status,
    fixed_ips: port.fixedIps.map((ip) => ({ subnet_id: ip.subnet_id, ip_address: ip.ip_address })),
    ...(withTag && { tag: null }),
  }
}

function checkInterfaceState(row: ServerTable, action: string, caller: InterfaceCaller): void {
  if (row.locked === 1 && !caller.lockOverride) throw conflict(`Instance ${row.id} is locked`)
  if (!INTERFACE_VM_STATES.includes(row.vm_state)) throw conflict(`Cannot '${action}' instance ${row.id} while it is in vm_state ${row.vm_state}`)
  if (row.task_state !== null) throw conflict(`Cannot '${action}' instance ${row.id} while it is in task_state ${row.task_state}`)
}

/**
 * Runs an interface change with the server held where it was checked (a compare-and-set on its states, so an
 * action accepted meanwhile makes this one 409) and records the instance action with its event, finished.
 */
async function interfaceChange<T>(db: Db, row: ServerTable, action: 'attach_interface' | 'detach_interface', caller: InterfaceCaller, requestId: string, work: (tx: Db) => Promise<T>): Promise<T> {
  checkInterfaceState(row, action, caller)
  return db.transaction().execute(async (tx) => {
    const now = Date.now()
    const held = await tx.updateTable('servers').set({ updated_at: now }).where('id', '=', row.id).where('deleted', '=', 0).where('vm_state', 'in', INTERFACE_VM_STATES).where('task_state', 'is', null).executeTakeFirst()
    if (Number(held.numUpdatedRows) === 0) throw conflict(`Cannot '${action}' instance ${row.id} while it is changing state`)
    const result = await work(tx)
    await recordFinishedAction(tx, row, caller, requestId, action, `compute_${action}`)
    return result
  })
}

/** The server's guest on its host, which plugs and unplugs the NICs of its ports (the conductor asks the host). */
export interface GuestNics {
  /** The guest gets the port's NIC; a DriverError when the host cannot be asked or could not plug it. */
  attachNic(serverId: string, portId: string): Promise<void>
  /** The guest lets go of the port's NIC; a DriverError when the host cannot be asked or the guest could not. */
  detachNic(serverId: string, portId: string): Promise<void>
}

/**
 * Whether an interface change involves the server's host: a guest that has devices (active or paused) on a host.
 * A stopped guest, or a server with no host, is only the ports: its next start builds the NICs from them.
 */
function guestHasNics(row: ServerTable): boolean {
  return row.host_id !== null && row.vm_state !== 'stopped'
}

/** Marks the request's finished instance action failed, its event an Error with the host's reason (as Nova records it). */
async function failRecordedAction(db: Db, serverId: string, requestId: string, event: string, details: string): Promise<void> {
  const action = await findAction(db, serverId, requestId)
  if (!action) return
  await finishAction(db, action.id, true)
  await finishEvent(db, eventId(action.id, event), 'Error', { details })
}

/**
 * os-interface attach: a new port on `netId` (or the project's network), or the user's port, bound to the server;
 * then the server's host plugs its NIC into the guest (Nova's attach_interface, a call to the compute host). A host
 * that could not: the attach is undone (the port created for it deleted, the user's port unbound, as Nova
 * deallocates it) and the answer is 409 (Nova's InterfaceAttachFailed is a 500, which pcc never answers).
 */
export async function attachInterface(network: NetworkService, db: Db, row: ServerTable, req: AttachRequest, caller: InterfaceCaller, requestId: string, guest: GuestNics): Promise<ServerPort> {
  if (req.netId !== undefined && req.portId !== undefined) throw badRequest('Must not input both network_id and port_id')
  if (req.fixedIp !== undefined && req.netId === undefined) throw badRequest('Must input network_id when request IP address')
  const port = await interfaceChange(db, row, 'attach_interface', caller, requestId, (tx) =>
    network.attachInterface(tx, { projectId: row.project_id, serverId: row.id, networkId: req.netId, portId: req.portId, fixedIp: req.fixedIp, hostId: row.host ?? undefined, visibility: caller.visibility, attachExternal: caller.attachExternal }),
  )
  if (!guestHasNics(row)) return port
  try {
    await guest.attachNic(row.id, port.id)
  } catch (err) {
    if (!(err instanceof DriverError)) throw err
    await db.transaction().execute(async (tx) => {
      await network.detachInterface(tx, { serverId: row.id, portId: port.id })
      await failRecordedAction(tx, row.id, requestId, 'compute_attach_interface', err.message)
    })
    throw conflict(`Failed to attach network adapter device to ${row.id}: ${err.message}`)
  }
  return port
}

/**
 * os-interface detach: the server's host unplugs the port's NIC from the guest first, then the port leaves the
 * server (deleted if it was created for it, else unbound), in Nova's order (the compute host's detach_interface,
 * then deallocate_port_for_instance). A guest that could not let go: 409, the port stays attached.
 */
export async function detachInterface(network: NetworkService, db: Db, row: ServerTable, portId: string, caller: InterfaceCaller, requestId: string, guest: GuestNics): Promise<void> {
  checkInterfaceState(row, 'detach_interface', caller)
  // A port that is not the server's is the 404 of the change below, without asking the host.
  if (guestHasNics(row) && (await network.serverPorts(row.id)).some((p) => p.id === portId)) {
    await guest.detachNic(row.id, portId).catch(async (err: unknown) => {
      if (!(err instanceof DriverError)) throw err
      await db.transaction().execute(async (tx) => {
        await recordFinishedAction(tx, row, caller, requestId, 'detach_interface', 'compute_detach_interface')
        await failRecordedAction(tx, row.id, requestId, 'compute_detach_interface', err.message)
      })
      throw conflict(`Failed to detach network adapter device from ${row.id}: ${err.message}`)
    })
  }
  return interfaceChange(db, row, 'detach_interface', caller, requestId, (tx) => network.detachInterface(tx, { serverId: row.id, portId }))
}

// ---- security groups ----

/** addSecurityGroup / removeSecurityGroup through the ports (404 unknown group, 400 already / not associated). */
export function changeServerSecurityGroup(network: NetworkService, db: Db, row: ServerTable, action: 'addSecurityGroup' | 'removeSecurityGroup', group: string): Promise<void> {
  return db.transaction().execute((tx) => {
    const req = { projectId: row.project_id, serverId: row.id, group }
    return action === 'addSecurityGroup' ? network.addServerSecurityGroup(tx, req) : network.removeServerSecurityGroup(tx, req)
  })
}

/** GET /servers/{id}/os-security-groups: Nova's view of the groups on the server's ports (ingress rules only). */
export async function serverSecurityGroupsView(network: NetworkService, serverId: string): Promise<Record<string, unknown>[]> {
  const { groups, rules, remotes } = await network.serverSecurityGroupDetails(serverId)
  return groups.map((g) => novaSecurityGroup(g, rules.get(g.id) ?? [], remotes))
}

/** The parts of a Neutron rule Nova's view reads (a rule row or the network API's view of one). */
export interface NovaRuleSource {
  id: string
  direction: string
  protocol: string | null
  port_range_min: number | null
  port_range_max: number | null
  remote_ip_prefix: string | null
  remote_group_id: string | null
}

/** A security group as Nova shows it (here and in the /os-security-groups proxy): ingress rules only. */
export function novaSecurityGroup(
  g: { id: string; name: string; description: string; project_id: string },
  rules: NovaRuleSource[],
  remotes: Map<string, { name: string; project_id: string }>,
): Record<string, unknown> {
  return {
    id: g.id,
    name: g.name,
    description: g.description,
    tenant_id: g.project_id,
    rules: rules
      .filter((r) => r.direction === 'ingress')
      .map((r) => {
        const ports = novaPortRange(r.protocol, r.port_range_min, r.port_range_max)
        const remote = r.remote_group_id ? remotes.get(r.remote_group_id) : undefined
        return {
          id: r.id,
          parent_group_id: g.id,
          ip_protocol: r.protocol,
          from_port: ports.from,
          to_port: ports.to,
          group: remote ? { name: remote.name, tenant_id: remote.project_id } : {},
          ip_range: r.remote_group_id ? {} : { cidr: r.remote_ip_prefix ?? '0.0.0.0/0' },
        }
      }),
  }
}

/** Nova's reading of a Neutron rule without ports: 1–65535 for TCP/UDP, -1 otherwise. */
function novaPortRange(protocol: string | null, min: number | null, max: number | null): { from: number | null; to: number | null } {
  if (protocol && min === null && max === null) return ['tcp', 'udp'].includes(protocol.toLowerCase()) ? { from: 1, to: 65535 } : { from: -1, to: -1 }
  return { from: min, to: max }
}
