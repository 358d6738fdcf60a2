/**
 * The network service: what the REST API and the compute service call. Holds the store; every operation runs
 * in a transaction (the caller's, for the compute methods, so a server and its ports commit together).
 *
 * Compute-facing methods (allocateServerPorts … removeServerSecurityGroup) raise AppErrors in Nova's terms,
 * without a Neutron `type`, so the compute family renders them as Nova faults. Nova answers the same Neutron
 * failure differently per operation (NOVA_ERRORS): on server create an unknown network, port or security group
 * is 400, a port already bound 409, a requested fixed IP in use 400, the port quota 403, an exhausted subnet
 * 409; on os-interface attach an unknown network or port is 404, a fixed IP in use 409, an exhausted subnet or
 * an ambiguous network 400; on the security-group actions an unknown group is 404. Ports the service creates
 * for a server have device_owner `compute:nova` and are deleted with the server; ports the user passed in are
 * only unbound (their floating IPs stay associated with them, as in Neutron).
 */
import { AppError } from '../../contracts/errors.js'
import type { Db, Store } from '../storage/store.js'
import type { NetworkTable, PortTable, SecurityGroupRuleTable, SecurityGroupTable } from '../storage/schema.js'
import type { Principal } from '../auth/principal.js'
import { actorOf, type Actor, type NetCtx } from './context.js'
import { neutron } from './errors.js'
import { isUniqueViolation } from './ipam.js'
import { parseIp } from '../../lib/ip.js'
import { autoAllocatedNetwork } from './auto-allocate.js'
import { insertPort, removePort } from './ports.js'
import { fixedIpsByPort, lockNetwork, rulesByGroup } from './queries.js'
import { chunks } from './context.js'
import { resolveSecurityGroups } from './security-groups.js'
import { portStatus, type FixedIp } from './views.js'
import type { Visibility } from '../policy/rules.js'

export const COMPUTE_OWNER = 'compute:nova'

export type NetworkRequest = 'auto' | 'none' | { uuid?: string; port?: string; fixed_ip?: string; tag?: string }[]

/** What compute's policy lets a server request reach in the network service (decided by compute's route). */
export type NetworkReach = Pick<AllocateRequest, 'visibility' | 'attachExternal'>

export interface AllocateRequest {
  projectId: string
  serverId: string
  request: NetworkRequest
  /** Names or ids of the project's security groups; default ['default']. */
  securityGroups?: string[]
  /** Host the server runs on (binding:host_id), if known yet. */
  hostId?: string
  /** Whose networks the request may name (compute's other_projects:use, decided by its route); default project. */
  visibility?: Visibility
  /** The caller may put a port on an external network that is not shared (compute's network:attach_external_network). */
  attachExternal?: boolean
}

export interface ServerPort {
  id: string
  networkId: string
  networkName: string
  macAddress: string
  fixedIps: FixedIp[]
  /** Neutron's port status (ACTIVE while bound and up). */
  status: string
  /** Whether the service created the port for the server (deleted with it) or the user passed it in. */
  autoDelete: boolean
}

export interface NetworkAddress {
  addr: string
  version: 4 | 6
  'OS-EXT-IPS:type': 'fixed' | 'floating'
  'OS-EXT-IPS-MAC:mac_addr': string
}

/** Errors worth one more attempt of the whole transaction: duplicate keys (IPAM's backstop), deadlocks, serialisation. */
function retryable(err: unknown): boolean {
  const code = (err as { code?: string })?.code
  return isUniqueViolation(err) || code === '40P01' || code === '40001' || code === 'SQLITE_BUSY'
}

/** The compute operations whose errors Nova words differently. */
export type ComputeOperation = 'create' | 'attach' | 'securityGroup'

type NovaCode = 'bad_request' | 'not_found' | 'conflict' | 'forbidden'

/** Neutron's failure → the status Nova answers with, per operation (nova/api/openstack/compute/*.py). */
const NOVA_ERRORS: Record<ComputeOperation, { notFound: NovaCode; ipInUse: NovaCode; exhausted: NovaCode; ambiguous: NovaCode }> = {
  create: { notFound: 'bad_request', ipInUse: 'bad_request', exhausted: 'conflict', ambiguous: 'conflict' },
  attach: { notFound: 'not_found', ipInUse: 'conflict', exhausted: 'bad_request', ambiguous: 'bad_request' },
  securityGroup: { notFound: 'not_found', ipInUse: 'conflict', exhausted: 'conflict', ambiguous: 'conflict' },
}

/** Neutron errors as Nova reports them on server create, attach and security-group actions. */
function asComputeError(err: unknown, op: ComputeOperation): unknown {
  if (!(err instanceof AppError) || !err.options.type) return err
  const type = err.options.type
  const codes = NOVA_ERRORS[op]
  if (type === 'OverQuota') return new AppError('forbidden', 'Maximum number of ports exceeded.')
  if (type === 'IpAddressAlreadyAllocated' || type === 'IpAddressInUse') return new AppError(codes.ipInUse, `Fixed IP address is already in use: ${err.message}`)
  if (type === 'IpAddressGenerationFailure') return new AppError(codes.exhausted, err.message)
  if (type === 'NetworkAmbiguous') return new AppError(codes.ambiguous, err.message)
  if (err.code === 'not_found') return new AppError(codes.notFound, err.message)
  return new AppError(err.code, err.message)
}

/** Nova's answer to a security-group action on a server without ports. */
function noPorts(serverId: string): AppError {
  return new AppError('not_found', `instance_id ${serverId} could not be found as device id on any ports`)
}

export class NetworkService {
  constructor(private readonly store: Store) {}

  private ctx(db: Db): NetCtx {
    return { db, rowLocks: this.store.capabilities.rowLocks, now: Date.now() }
  }

  /**
   * Runs a read that writes nothing outside any transaction. On PostgreSQL this saves the BEGIN and COMMIT round
   * trips and reads the same: at READ COMMITTED each statement of a transaction sees its own snapshot anyway. On
   * SQLite another request's write may now land between two statements of one read, as it may on PostgreSQL.
   */
  async read<T>(principal: Principal, fn: (ctx: NetCtx, actor: Actor) => Promise<T>): Promise<T> {
    return fn(this.ctx(this.store.db), actorOf(principal))
  }

  /** Runs an API operation in its own transaction, retrying a few times on a lost race. */
  async run<T>(principal: Principal, fn: (ctx: NetCtx, actor: Actor) => Promise<T>): Promise<T> {
    const actor = actorOf(principal)
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.store.db.transaction().execute((tx) => fn(this.ctx(tx), actor))
      } catch (err) {
        if (attempt >= 5 || !retryable(err)) throw err
        await new Promise((r) => setTimeout(r, 5 * attempt + Math.random() * 20))
      }
    }
  }

  private async compute<T>(fn: () => Promise<T>, op: ComputeOperation = 'create'): Promise<T> {
    try {
      return await fn()
    } catch (err) {
      throw asComputeError(err, op)
    }
  }

  /**
   * Creates or binds the ports of a new server, in the caller's transaction, in request order. `auto` uses the
   * project's auto-allocated network if it has one, else its only visible network, else creates the
   * auto-allocated one (see auto-allocate.ts); several candidate networks → 409, as Nova's NetworkAmbiguous.
   */
  allocateServerPorts(tx: Db, req: AllocateRequest): Promise<ServerPort[]> {
    return this.compute(async () => {
      const ctx = this.ctx(tx)
      if (req.request === 'none') return []
      const entries = req.request === 'auto' ? [{ uuid: (await this.autoNetwork(ctx, req.projectId)).id }] : req.request
      const groupIds = await resolveSecurityGroups(ctx, req.projectId, req.securityGroups ?? ['default'])
      const seenPorts = new Set<string>()
      const out: PortTable[] = []
      for (const entry of entries) {
        if (entry.port !== undefined) {
          if (entry.fixed_ip !== undefined) throw new AppError('bad_request', 'Specifying a port and a fixed IP together is not supported.')
          if (seenPorts.has(entry.port)) throw new AppError('bad_request', `Port ${entry.port} is requested twice.`)
          seenPorts.add(entry.port)
          out.push(await this.bindPort(ctx, req.projectId, req.serverId, entry.port, req.hostId))
          continue
        }
        if (entry.uuid === undefined) throw new AppError('bad_request', 'A network entry needs a uuid or a port.')
        const network = await this.usableNetwork(ctx, req.projectId, entry.uuid, req)
        const locked = (await lockNetwork(ctx, network.id))!
        out.push(
          await insertPort(ctx, locked, req.projectId, {
            device_id: req.serverId,
            device_owner: COMPUTE_OWNER,
            binding_host_id: req.hostId,
            fixed_ips: entry.fixed_ip !== undefined ? [{ ip_address: entry.fixed_ip }] : undefined,
            security_groups: locked.port_security_enabled === 1 ? groupIds : [],
            auto_delete: true,
          }),
        )
      }
      return this.describe(ctx, out)
    })
  }

  /** Deletes the ports created for the server and unbinds the ones the user passed in. */
  releaseServerPorts(tx: Db, serverId: string): Promise<void> {
    return this.compute(async () => {
      const ctx = this.ctx(tx)
      const ports = await ctx.db.selectFrom('ports').selectAll().where('device_id', '=', serverId).where('device_owner', 'like', 'compute:%').execute()
      for (const port of ports) await this.detach(ctx, port)
    })
  }

  /** Records the host a server was scheduled to on its ports (Neutron's binding:host_id); '' unbinds. */
  async bindServerPorts(tx: Db, serverId: string, hostId: string): Promise<void> {
    await tx.updateTable('ports').set({ binding_host_id: hostId, updated_at: Date.now() }).where('device_id', '=', serverId).where('device_owner', 'like', 'compute:%').execute()
  }

  /** Checks that the named security groups exist in the project (Nova does so even for a server without ports). */
  validateSecurityGroups(tx: Db, projectId: string, refs: string[]): Promise<void> {
    return this.compute(async () => {
      const named = refs.filter((r) => r !== 'default')
      if (named.length) await resolveSecurityGroups(this.ctx(tx), projectId, named)
    })
  }

  /** The server's ports, in the order they were attached. */
  async serverPorts(serverId: string, db: Db = this.store.db): Promise<ServerPort[]> {
    const ports = await db.selectFrom('ports').selectAll().where('device_id', '=', serverId).where('device_owner', 'like', 'compute:%').orderBy('created_at').orderBy('id').execute()
    return this.describe(this.ctx(db), ports)
  }

  /**
   * Nova's `addresses` of each server: network name → fixed addresses, each followed by the floating
   * addresses pointing at it. Servers without ports map to {}.
   */
  async serverAddresses(serverIds: string[], db: Db = this.store.db): Promise<Map<string, Record<string, NetworkAddress[]>>> {
    const out = new Map<string, Record<string, NetworkAddress[]>>(serverIds.map((id) => [id, {}]))
    for (const part of chunks(serverIds)) {
      if (part.length > 0) await this.addressesOf(db, part, out)
    }
    return out
  }

  private async addressesOf(db: Db, serverIds: string[], out: Map<string, Record<string, NetworkAddress[]>>): Promise<void> {
    const ports = await db
      .selectFrom('ports')
      .innerJoin('networks', 'networks.id', 'ports.network_id')
      .select(['ports.id', 'ports.device_id', 'ports.mac_address', 'networks.name as network_name'])
      .where('ports.device_id', 'in', serverIds)
      .where('ports.device_owner', 'like', 'compute:%')
      .orderBy('ports.created_at')
      .orderBy('ports.id')
      .execute()
    if (ports.length === 0) return
    const portIds = ports.map((p) => p.id)
    const floating = (ids: string[]) => db.selectFrom('floating_ips').select(['fixed_port_id', 'fixed_ip_address', 'floating_ip_address']).where('fixed_port_id', 'in', ids).orderBy('created_at').execute()
    const [ips, fipRows] = await Promise.all([fixedIpsByPort(db, portIds), Promise.all(chunks(portIds).map(floating)).then((parts) => parts.flat())])
    const fips = new Map<string, string[]>()
    for (const f of fipRows) {
      const key = `${f.fixed_port_id}|${f.fixed_ip_address}`
      fips.set(key, [...(fips.get(key) ?? []), f.floating_ip_address])
    }
    for (const port of ports) {
      const addresses = out.get(port.device_id)!
      const list = (addresses[port.network_name] ??= [])
      const mac = port.mac_address
      for (const ip of ips.get(port.id) ?? []) {
        list.push({ addr: ip.ip_address, version: parseIp(ip.ip_address)!.version, 'OS-EXT-IPS:type': 'fixed', 'OS-EXT-IPS-MAC:mac_addr': mac })
        for (const floating of fips.get(`${port.id}|${ip.ip_address}`) ?? []) list.push({ addr: floating, version: 4, 'OS-EXT-IPS:type': 'floating', 'OS-EXT-IPS-MAC:mac_addr': mac })
      }
    }
  }

  /**
   * Ids of servers with a fixed address of `version` matching `pattern`, as Nova's `ip`/`ip6` filters: a
   * regular expression matched at the start of the address (so `10.0.0.1` also finds `10.0.0.10`); a pattern
   * that is not a valid expression is matched literally.
   */
  async findServersByIp(pattern: string, version: 4 | 6, options: { projectId?: string; db?: Db } = {}): Promise<string[]> {
    let regex: RegExp
    try {
      regex = new RegExp(`^(?:${pattern})`)
    } catch {
      regex = new RegExp(`^${pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`)
    }
    const rows = await (options.db ?? this.store.db)
      .selectFrom('ip_allocations')
      .innerJoin('ports', 'ports.id', 'ip_allocations.port_id')
      .innerJoin('subnets', 'subnets.id', 'ip_allocations.subnet_id')
      .select(['ports.device_id', 'ip_allocations.ip_address'])
      .where('ports.device_owner', 'like', 'compute:%')
      .where('subnets.ip_version', '=', version)
      .$if(options.projectId !== undefined, (q) => q.where('ports.project_id', '=', options.projectId!))
      .execute()
    return [...new Set(rows.filter((r) => regex.test(r.ip_address)).map((r) => r.device_id))]
  }

  /** os-interface attach: a new port on `networkId`, or the user's port `portId`, bound to the server. */
  attachInterface(tx: Db, req: { projectId: string; serverId: string; networkId?: string; portId?: string; fixedIp?: string; hostId?: string } & NetworkReach): Promise<ServerPort> {
    return this.compute(async () => {
      const ctx = this.ctx(tx)
      if (req.portId !== undefined && (req.networkId !== undefined || req.fixedIp !== undefined)) {
        throw new AppError('bad_request', 'Specify either a port or a network (with an optional fixed IP), not both.')
      }
      if (req.portId !== undefined) return (await this.describe(ctx, [await this.bindPort(ctx, req.projectId, req.serverId, req.portId, req.hostId)]))[0]
      const network = req.networkId !== undefined ? await this.usableNetwork(ctx, req.projectId, req.networkId, req) : await this.autoNetwork(ctx, req.projectId)
      const groupIds = network.port_security_enabled === 1 ? await resolveSecurityGroups(ctx, req.projectId, ['default']) : []
      const locked = (await lockNetwork(ctx, network.id))!
      const port = await insertPort(ctx, locked, req.projectId, {
        device_id: req.serverId,
        device_owner: COMPUTE_OWNER,
        binding_host_id: req.hostId,
        fixed_ips: req.fixedIp !== undefined ? [{ ip_address: req.fixedIp }] : undefined,
        security_groups: groupIds,
        auto_delete: true,
      })
      return (await this.describe(ctx, [port]))[0]
    }, 'attach')
  }

  /** os-interface detach: 404 when the port is not attached to the server. */
  detachInterface(tx: Db, req: { serverId: string; portId: string }): Promise<void> {
    return this.compute(async () => {
      const ctx = this.ctx(tx)
      const port = await ctx.db.selectFrom('ports').selectAll().where('id', '=', req.portId).where('device_id', '=', req.serverId).executeTakeFirst()
      if (!port || !port.device_owner.startsWith('compute:')) throw new AppError('not_found', `Port ${req.portId} is not attached to server ${req.serverId}.`)
      await this.detach(ctx, port)
    }, 'attach')
  }

  /** Names of the security groups on each server's ports (Nova's `security_groups`), unique and sorted. */
  async serverSecurityGroups(serverIds: string[], db: Db = this.store.db): Promise<Map<string, { name: string }[]>> {
    const names = new Map<string, Set<string>>(serverIds.map((id) => [id, new Set()]))
    for (const part of chunks(serverIds)) {
      if (part.length === 0) continue
      const rows = await db
        .selectFrom('ports')
        .innerJoin('port_security_groups', 'port_security_groups.port_id', 'ports.id')
        .innerJoin('security_groups', 'security_groups.id', 'port_security_groups.security_group_id')
        .select(['ports.device_id', 'security_groups.name'])
        .where('ports.device_id', 'in', part)
        .where('ports.device_owner', 'like', 'compute:%')
        .execute()
      for (const r of rows) names.get(r.device_id)?.add(r.name)
    }
    return new Map([...names].map(([id, set]) => [id, [...set].sort().map((name) => ({ name }))]))
  }

  /**
   * The security groups on a server's ports with their rules and the groups those rules name, for Nova's
   * GET /servers/{id}/os-security-groups; groups in the order of the server's ports.
   */
  async serverSecurityGroupDetails(serverId: string, db: Db = this.store.db): Promise<{ groups: SecurityGroupTable[]; rules: Map<string, SecurityGroupRuleTable[]>; remotes: Map<string, SecurityGroupTable> }> {
    const rows = await db
      .selectFrom('ports')
      .innerJoin('port_security_groups', 'port_security_groups.port_id', 'ports.id')
      .innerJoin('security_groups', 'security_groups.id', 'port_security_groups.security_group_id')
      .selectAll('security_groups')
      .where('ports.device_id', '=', serverId)
      .where('ports.device_owner', 'like', 'compute:%')
      .orderBy('ports.created_at')
      .orderBy('ports.id')
      .orderBy('security_groups.name')
      .execute()
    const groups = [...new Map(rows.map((g) => [g.id, g])).values()]
    const rules = await rulesByGroup(db, groups.map((g) => g.id))
    const remoteIds = [...new Set([...rules.values()].flat().map((r) => r.remote_group_id).filter((id): id is string => !!id))]
    const remoteRows = remoteIds.length ? await db.selectFrom('security_groups').selectAll().where('id', 'in', remoteIds).execute() : []
    return { groups, rules, remotes: new Map(remoteRows.map((g) => [g.id, g])) }
  }

  /** Nova's addSecurityGroup action: the group (name or id) on every port of the server. */
  addServerSecurityGroup(tx: Db, req: { projectId: string; serverId: string; group: string }): Promise<void> {
    return this.compute(async () => {
      const ctx = this.ctx(tx)
      const [groupId] = await resolveSecurityGroups(ctx, req.projectId, [req.group])
      const ports = await this.serverPortRows(ctx, req.serverId)
      if (ports.length === 0) throw noPorts(req.serverId)
      if (ports.some((p) => p.port_security_enabled !== 1)) throw new AppError('bad_request', 'Network requires port_security_enabled and subnet associated in order to apply security groups.')
      const has = await ctx.db.selectFrom('port_security_groups').select('port_id').where('security_group_id', '=', groupId).where('port_id', 'in', ports.map((p) => p.id)).execute()
      if (has.length === ports.length) throw new AppError('bad_request', `Security group ${req.group} is already associated with the instance ${req.serverId}`)
      for (const port of ports) {
        if (has.some((h) => h.port_id === port.id)) continue
        await ctx.db.insertInto('port_security_groups').values({ port_id: port.id, security_group_id: groupId }).execute()
      }
    }, 'securityGroup')
  }

  /** Nova's removeSecurityGroup action. */
  removeServerSecurityGroup(tx: Db, req: { projectId: string; serverId: string; group: string }): Promise<void> {
    return this.compute(async () => {
      const ctx = this.ctx(tx)
      const [groupId] = await resolveSecurityGroups(ctx, req.projectId, [req.group])
      const ports = await this.serverPortRows(ctx, req.serverId)
      if (ports.length === 0) throw noPorts(req.serverId)
      const ids = ports.map((p) => p.id)
      const has = await ctx.db.selectFrom('port_security_groups').select('port_id').where('security_group_id', '=', groupId).where('port_id', 'in', ids).execute()
      if (has.length === 0) throw new AppError('bad_request', `Security group ${req.group} not associated with the instance ${req.serverId}`)
      await ctx.db.deleteFrom('port_security_groups').where('security_group_id', '=', groupId).where('port_id', 'in', ids).execute()
    }, 'securityGroup')
  }

  // ---- internals ----

  private serverPortRows(ctx: NetCtx, serverId: string): Promise<PortTable[]> {
    return ctx.db.selectFrom('ports').selectAll().where('device_id', '=', serverId).where('device_owner', 'like', 'compute:%').execute()
  }

  private async detach(ctx: NetCtx, port: PortTable): Promise<void> {
    if (port.auto_delete === 1) {
      await removePort(ctx, port)
      return
    }
    await ctx.db.updateTable('ports').set({ device_id: '', device_owner: '', binding_host_id: '', updated_at: ctx.now }).where('id', '=', port.id).execute()
  }

  private async bindPort(ctx: NetCtx, projectId: string, serverId: string, portId: string, hostId: string | undefined): Promise<PortTable> {
    const port = await ctx.db.selectFrom('ports').selectAll().where('id', '=', portId).executeTakeFirst()
    if (!port || port.project_id !== projectId) throw neutron.portNotFound(portId)
    if (port.device_id !== '') throw new AppError('conflict', `Port ${portId} is still in use.`)
    const changes = { device_id: serverId, device_owner: COMPUTE_OWNER, binding_host_id: hostId ?? port.binding_host_id, updated_at: ctx.now }
    await ctx.db.updateTable('ports').set(changes).where('id', '=', portId).execute()
    return { ...port, ...changes }
  }

  private async usableNetwork(ctx: NetCtx, projectId: string, id: string, reach: NetworkReach): Promise<NetworkTable> {
    const network = await ctx.db.selectFrom('networks').selectAll().where('id', '=', id).executeTakeFirst()
    const visible = network && (reach.visibility === 'all_projects' || network.project_id === projectId || network.shared === 1 || network.external === 1)
    if (!network || !visible) throw neutron.networkNotFound(id)
    if (network.external === 1 && !reach.attachExternal && network.shared !== 1) throw new AppError('forbidden', `It is not allowed to create an interface on external network ${id}`)
    return network
  }

  private async autoNetwork(ctx: NetCtx, projectId: string): Promise<NetworkTable> {
    const claimed = await ctx.db.selectFrom('auto_allocated_networks').select('network_id').where('project_id', '=', projectId).executeTakeFirst()
    if (claimed?.network_id) {
      const row = await ctx.db.selectFrom('networks').selectAll().where('id', '=', claimed.network_id).executeTakeFirst()
      if (row) return row
    }
    const candidates = await ctx.db
      .selectFrom('networks')
      .selectAll()
      .where('external', '=', 0)
      .where((eb) => eb.or([eb('project_id', '=', projectId), eb('shared', '=', 1)]))
      .execute()
    if (candidates.length === 1) return candidates[0]
    if (candidates.length > 1) throw neutron.conflict('NetworkAmbiguous', 'Multiple possible networks found, use a Network ID to be more specific.')
    return autoAllocatedNetwork(ctx, projectId)
  }

  private async describe(ctx: NetCtx, ports: PortTable[]): Promise<ServerPort[]> {
    if (ports.length === 0) return []
    const ips = await fixedIpsByPort(ctx.db, ports.map((p) => p.id))
    const nets = await ctx.db.selectFrom('networks').select(['id', 'name']).where('id', 'in', [...new Set(ports.map((p) => p.network_id))]).execute()
    return ports.map((p) => ({
      id: p.id,
      networkId: p.network_id,
      networkName: nets.find((n) => n.id === p.network_id)?.name ?? '',
      macAddress: p.mac_address,
      fixedIps: ips.get(p.id) ?? [],
      status: portStatus(p),
      autoDelete: p.auto_delete === 1,
    }))
  }
}
