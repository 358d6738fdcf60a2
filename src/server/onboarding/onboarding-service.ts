/**
 * Host onboarding: registration tokens, host registration and credentials, the agents' heartbeats and role
 * convergence, and the AgentDriver of every agent host in this process's driver registry. Agent hosts are the
 * same `hosts` rows simulated hosts are (host-protocol.ts), so the scheduler, os-hypervisors and the host-status
 * rules treat them alike.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import { AppError, conflict, forbidden, notFound, unauthorized } from '../../contracts/errors.js'
import { COMMAND_TIMEOUT_MS } from '../../contracts/host/commands.js'
import type { HostFacts, StoredHostFacts } from '../../contracts/host/facts.js'
import type { Config } from '../config/settings.js'
import { AgentDriver, type HostConsoleStreams } from '../hosts/agent-driver.js'
import type { DriverRegistry } from '../hosts/driver-registry.js'
import { registerHost, setHostRole } from '../hosts/host-protocol.js'
import type { Store } from '../storage/store.js'
import type { HostTable } from '../storage/tables/compute.js'
import { CommandChannel } from './command-channel.js'
import { hostView, type HostView } from './host-view.js'
import { CONVERGING, ROLES } from './roles.js'
import { storageHostGone, volumesOnHost } from '../volume/storage-hosts.js'
import { deleteHistory, recordSamples } from '../metrics/metric-history.js'
import type { HeartbeatSamples } from '../../contracts/host/metrics.js'

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')
const secret = (prefix: string) => `${prefix}${randomBytes(32).toString('base64url')}`

/** The agent's registration: its host's facts (src/contracts/host/facts.ts), its one-time token and version. */
export interface RegistrationRequest extends HostFacts {
  registration_token: string
  host_id: string
  agent_version: string
  /** The host protocol the agent speaks (src/contracts/host/commands.ts); agents from before it send none (1). */
  protocol_version?: number
  /** The compute driver the agent runs (agent.json `driver`); simulated by default. */
  driver?: string
}

export interface HeartbeatRequest {
  /** HeartbeatFacts when the agent is of this version; checked as an object only, so read like stored facts. */
  facts?: StoredHostFacts
  capacity?: { vcpus: number; memory_mb: number; disk_gb: number }
  guests?: unknown[]
  /** Metrics samples, every SAMPLE_INTERVAL_MS (protocol 3; validated by the route's schema). */
  samples?: HeartbeatSamples
}

/** How long a credential lookup is remembered in this process; a removed host is refused by its missing row anyway. */
const CREDENTIAL_CACHE_MS = 30_000
const BEAT_FLUSH_MS = 1000

export class OnboardingService {
  readonly channel: CommandChannel
  private readonly credentialCache = new Map<string, { hostId: string; at: number }>()
  private timer: NodeJS.Timeout | undefined
  /**
   * Heartbeats not yet written: one UPDATE per 500 hosts a second instead of a write per heartbeat (on SQLite a
   * write is a sync to disk). A host looks alive at most a second later than it is; the DOWN timeout is far longer.
   */
  private beats = new Map<string, number>()
  private beatTimer: NodeJS.Timeout | undefined
  private flushing: Promise<void> = Promise.resolve()

  constructor(
    private readonly store: Store,
    private readonly drivers: DriverRegistry,
    private readonly config: Config,
    private readonly logger: Logger,
    /** Where agents' console websockets arrive (remote consoles). */
    private readonly consoles?: HostConsoleStreams,
    /** How long a driver call waits for the agent. */
    private readonly commandTimeoutMs = COMMAND_TIMEOUT_MS,
  ) {
    this.channel = new CommandChannel(store, { pollMs: 100 })
  }

  get downAfterMs(): number {
    return this.config.hostDownAfterSeconds * 1000
  }

  /** Registers the AgentDriver of every agent host now and keeps doing so for hosts other processes register. */
  async start(): Promise<void> {
    this.drivers.refreshWith(() => this.syncDrivers())
    await this.syncDrivers()
    this.timer = setInterval(() => {
      this.syncDrivers().catch((err: unknown) => this.logger.warn({ err }, 'agent driver sync failed'))
      this.channel.purge(3600_000).catch(() => {})
    }, 2000)
    this.timer.unref()
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    this.channel.stop()
    await this.flushBeats().catch(() => {})
  }

  private recordBeat(hostId: string, now: number): void {
    if (!this.beats.has(hostId)) this.beats.set(hostId, now)
    if (this.beats.size >= 5000) void this.flushBeats()
    else if (!this.beatTimer) {
      this.beatTimer = setTimeout(() => void this.flushBeats(), BEAT_FLUSH_MS)
      this.beatTimer.unref()
    }
  }

  /** Writes the pending heartbeats, oldest time of each chunk for all of it (never makes a host look fresher). */
  flushBeats(): Promise<void> {
    clearTimeout(this.beatTimer)
    this.beatTimer = undefined
    const batch = this.beats
    this.beats = new Map()
    if (batch.size === 0) return this.flushing
    this.flushing = this.flushing.then(async () => {
      const entries = [...batch.entries()]
      try {
        await this.store.db.transaction().execute(async (tx) => {
          for (let i = 0; i < entries.length; i += 500) {
            const chunk = entries.slice(i, i + 500)
            const at = Math.min(...chunk.map(([, t]) => t))
            await tx.updateTable('hosts').set({ last_heartbeat_at: at }).where('id', 'in', chunk.map(([id]) => id)).execute()
          }
        })
      } catch (err) {
        this.logger.warn({ err, hosts: entries.length }, 'writing heartbeats failed; they count again with the next ones')
        for (const [id, t] of entries) if (!this.beats.has(id)) this.beats.set(id, t)
      }
    })
    return this.flushing
  }

  async syncDrivers(): Promise<void> {
    const hosts = await this.store.db.selectFrom('hosts').select(['id', 'hostname', 'driver']).where('kind', '=', 'agent').execute()
    const live = new Set(hosts.map((h) => h.id))
    for (const h of hosts) this.ensureDriver(h.id, h.hostname, h.driver)
    for (const [id, driver] of this.drivers.entries()) if (driver instanceof AgentDriver && !live.has(id)) this.drivers.delete(id)
  }

  private ensureDriver(hostId: string, hostname: string, driver: string): void {
    const existing = this.drivers.get(hostId)
    if (existing instanceof AgentDriver && existing.options.hostname === hostname && existing.options.driver === driver) return
    this.drivers.set(
      hostId,
      new AgentDriver({ hostId, hostname, driver, store: this.store, channel: this.channel, timeoutMs: this.commandTimeoutMs, staleAfterMs: this.downAfterMs, consoles: this.consoles }),
    )
  }

  /**
   * A one-time registration token. With `hostId`, the token registers that host id only: it is the one way to
   * re-register a host that exists (a new credential for it, the old one refused at once).
   */
  async createRegistrationToken(
    userId: string,
    expiresInSeconds: number,
    note: string | undefined,
    hostId?: string,
  ): Promise<{ token: string; id: string; expires_at: string; host_id?: string }> {
    const token = secret('pccr_')
    const now = Date.now()
    const id = randomUUID()
    const expiresAt = now + expiresInSeconds * 1000
    const forHost = hostId?.toLowerCase() ?? null
    await this.store.db
      .insertInto('registration_tokens')
      .values({ id, token_hash: sha256(token), note: note ?? null, created_by: userId, created_at: now, expires_at: expiresAt, used_at: null, used_by_host: null, host_id: forHost })
      .execute()
    return { token, id, expires_at: new Date(expiresAt).toISOString(), ...(forHost && { host_id: forHost }) }
  }

  /** Registers (or re-registers) a host with a one-time token; answers its view and a fresh credential. */
  async register(req: RegistrationRequest): Promise<{ host: HostView; credential: string }> {
    const now = Date.now()
    const credential = secret('pcch_')
    const refused = () => unauthorized('The registration token is unknown, already used or expired.')
    const hostId = req.host_id.toLowerCase()
    await this.store.db.transaction().execute(async (tx) => {
      const token = await tx.selectFrom('registration_tokens').selectAll().where('token_hash', '=', sha256(req.registration_token)).executeTakeFirst()
      if (!token || token.used_at !== null || token.expires_at <= now) throw refused()
      const used = await tx.updateTable('registration_tokens').set({ used_at: now, used_by_host: hostId }).where('id', '=', token.id).where('used_at', 'is', null).executeTakeFirst()
      if (used.numUpdatedRows === 0n) throw refused()
      // A token issued for a host registers that host id and no other.
      if (token.host_id !== null && token.host_id !== hostId) throw forbidden(`This registration token is for host ${token.host_id}, not ${hostId}.`)
      const byName = await tx.selectFrom('hosts').select(['id']).where('hostname', '=', req.hostname).executeTakeFirst()
      if (byName && byName.id !== hostId) throw conflict(`Another host (${byName.id}) is already registered with hostname ${req.hostname}.`)
      const byId = await tx.selectFrom('hosts').select(['hostname', 'kind']).where('id', '=', hostId).executeTakeFirst()
      if (byId && byId.kind !== 'agent') throw conflict(`Host ${hostId} is not an agent host.`)
      // Re-registering an existing host takes its credential, commands, image bytes and consoles: only with a
      // token an admin issued for that host, and never under another name (docs/agent.md, "Onboarding in four steps").
      if (byId && token.host_id !== hostId) {
        throw conflict(`Host ${hostId} is already registered; re-registering it needs a registration token issued for it (POST /resmgr/v1/registration-tokens {"host_id": "${hostId}"}).`)
      }
      if (byId && byId.hostname !== req.hostname) throw conflict(`Host ${hostId} is registered as ${byId.hostname}; a re-registration cannot rename it (${req.hostname}).`)
      const facts: StoredHostFacts = {
        os_info: req.os_info,
        arch: req.arch,
        cpu: req.cpu,
        memory_mb: req.memory_mb,
        disk_gb: req.disk_gb,
        nics: req.nics,
        agent_version: req.agent_version,
        protocol_version: req.protocol_version ?? 1,
        cpu_info: { arch: req.arch, model: req.cpu.model, topology: { sockets: 1, cores: req.cpu.count, threads: 1 } },
      }
      await registerHost(
        tx,
        {
          id: hostId,
          hostname: req.hostname,
          kind: 'agent',
          driver: req.driver ?? 'simulated',
          ipAddresses: req.nics.flatMap((n) => n.ips),
          facts: facts as Record<string, unknown>,
          vcpus: req.cpu.count,
          memoryMb: req.memory_mb,
          diskGb: req.disk_gb,
        },
        now,
      )
      await tx.deleteFrom('host_credentials').where('host_id', '=', hostId).execute()
      await tx.insertInto('host_credentials').values({ host_id: hostId, credential_hash: sha256(credential), created_at: now }).execute()
      const agent = await tx.selectFrom('agent_hosts').select('host_id').where('host_id', '=', hostId).executeTakeFirst()
      if (agent) await tx.updateTable('agent_hosts').set({ agent_version: req.agent_version }).where('host_id', '=', hostId).execute()
      else await tx.insertInto('agent_hosts').values({ host_id: hostId, agent_version: req.agent_version, guests: '[]', guests_at: now, message: null, registered_at: now }).execute()
    })
    for (const [hash, entry] of this.credentialCache) if (entry.hostId === hostId) this.credentialCache.delete(hash)
    this.ensureDriver(hostId, req.hostname, req.driver ?? 'simulated')
    this.logger.info({ hostId, hostname: req.hostname, agentVersion: req.agent_version }, 'host registered')
    return { host: await this.view(hostId), credential }
  }

  /** The host a credential belongs to, or 401. */
  async authenticateHost(credential: string | undefined): Promise<string> {
    if (!credential) throw unauthorized('A host credential is required (Authorization: Bearer <credential>).')
    const hash = sha256(credential)
    const cached = this.credentialCache.get(hash)
    if (cached && Date.now() - cached.at < CREDENTIAL_CACHE_MS) return cached.hostId
    // Joined with hosts: a host whose record was removed elsewhere (os-services delete) is refused too.
    const row = await this.store.db
      .selectFrom('host_credentials')
      .innerJoin('hosts', 'hosts.id', 'host_credentials.host_id')
      .select('host_credentials.host_id')
      .where('host_credentials.credential_hash', '=', hash)
      .executeTakeFirst()
    if (!row) {
      this.credentialCache.delete(hash)
      throw unauthorized('The host credential is not valid.')
    }
    if (this.credentialCache.size > 50_000) this.credentialCache.clear()
    this.credentialCache.set(hash, { hostId: row.host_id, at: Date.now() })
    return row.host_id
  }

  /**
   * Records the agent's heartbeat and report; answers the roles the host should converge to. Steady state costs
   * two indexed reads: what the agent reports is compared with the row and written only when it changed.
   */
  async heartbeat(hostId: string, hb: HeartbeatRequest): Promise<{ roles: Record<string, string> }> {
    const db = this.store.db
    const now = Date.now()
    // One query: the host, its agent report and its roles (a row per role).
    const rows = await db
      .selectFrom('hosts')
      .leftJoin('agent_hosts', 'agent_hosts.host_id', 'hosts.id')
      .leftJoin('host_roles', 'host_roles.host_id', 'hosts.id')
      .select(['hosts.vcpus', 'hosts.memory_mb', 'hosts.disk_gb', 'agent_hosts.guests', 'host_roles.role', 'host_roles.state'])
      .$if(hb.facts !== undefined, (q) => q.select('hosts.facts'))
      .where('hosts.id', '=', hostId)
      .execute()
    const current = rows[0]
    if (!current) throw notFound(`Host ${hostId} is not registered.`)
    this.recordBeat(hostId, now)
    const set: Partial<HostTable> = {}
    const cap = hb.capacity
    if (cap && (cap.vcpus !== current.vcpus || cap.memory_mb !== current.memory_mb || cap.disk_gb !== current.disk_gb)) {
      Object.assign(set, { vcpus: cap.vcpus, memory_mb: cap.memory_mb, disk_gb: cap.disk_gb })
    }
    if (hb.facts) {
      const before = (current as { facts?: string }).facts ?? '{}'
      // An agent reporting its version without a protocol is from before protocol versions (a downgrade): it speaks 1.
      const downgraded = hb.facts.agent_version !== undefined && hb.facts.protocol_version === undefined
      const merged: StoredHostFacts = { ...(JSON.parse(before) as StoredHostFacts), ...hb.facts, ...(downgraded && { protocol_version: 1 }) }
      const text = JSON.stringify(merged)
      if (text !== before) {
        set.facts = text
        const nics = merged.nics
        if (Array.isArray(nics)) set.ip_addresses = JSON.stringify(nics.flatMap((n) => n.ips ?? []))
      }
    }
    if (Object.keys(set).length > 0) await db.updateTable('hosts').set({ ...set, updated_at: now }).where('id', '=', hostId).execute()
    if (hb.guests) {
      const text = JSON.stringify(hb.guests)
      if (text !== current.guests) await db.updateTable('agent_hosts').set({ guests: text, guests_at: now }).where('host_id', '=', hostId).execute()
    }
    if (hb.samples) await recordSamples(db, hostId, hb.samples)
    const roles: Record<string, string> = {}
    for (const r of rows) if (r.role !== null && r.state !== null) roles[r.role] = r.state
    return { roles }
  }

  /** The agent's report on a role: ok or failed after applying, removed after removing. */
  async roleStatus(hostId: string, role: string, state: 'ok' | 'failed' | 'removed', message?: string): Promise<{ role: string; state: string }> {
    const db = this.store.db
    const current = await db.selectFrom('host_roles').select('state').where('host_id', '=', hostId).where('role', '=', role).executeTakeFirst()
    if (!current) throw notFound(`Role ${role} is not assigned to host ${hostId}.`)
    if (state === 'removed') {
      if (current.state !== 'removing') throw conflict(`Role ${role} of host ${hostId} is ${current.state}, not removing.`)
      await db.transaction().execute(async (tx) => {
        await tx.deleteFrom('host_roles').where('host_id', '=', hostId).where('role', '=', role).where('state', '=', 'removing').execute()
        if (role === 'storage') await storageHostGone(tx, hostId)
      })
    } else {
      if (current.state === 'removing') throw conflict(`Role ${role} of host ${hostId} is being removed.`)
      await setHostRole(db, hostId, role, state)
    }
    await db.updateTable('agent_hosts').set({ message: state === 'failed' ? (message ?? `role ${role} failed`) : null }).where('host_id', '=', hostId).execute()
    return { role, state }
  }

  async assignRole(hostId: string, role: string): Promise<HostView> {
    const host = await this.requireHost(hostId)
    if (!ROLES.some((r) => r.name === role)) throw notFound(`Role ${role} does not exist.`)
    const roles = await this.store.db.selectFrom('host_roles').select(['role', 'state']).where('host_id', '=', host.id).execute()
    const moving = roles.find((r) => CONVERGING.includes(r.state))
    if (moving) throw conflict(`Host ${host.id} is converging (role ${moving.role} is ${moving.state}); try again when it is done.`)
    if (roles.find((r) => r.role === role)?.state !== 'ok') await setHostRole(this.store.db, host.id, role, 'applying')
    this.logger.info({ hostId, role }, 'role assigned')
    return this.view(host.id)
  }

  async removeRole(hostId: string, role: string, force: boolean): Promise<HostView> {
    const host = await this.requireHost(hostId)
    const roles = await this.store.db.selectFrom('host_roles').select(['role', 'state']).where('host_id', '=', host.id).execute()
    if (!roles.some((r) => r.role === role)) throw notFound(`Role ${role} is not assigned to host ${hostId}.`)
    const moving = roles.find((r) => CONVERGING.includes(r.state))
    if (moving) throw conflict(`Host ${host.id} is converging (role ${moving.role} is ${moving.state}); try again when it is done.`)
    if (role === 'hypervisor' && !force) await this.refuseWhileServers(host)
    if (role === 'storage' && !force) await this.refuseWhileVolumes(host)
    await setHostRole(this.store.db, host.id, role, 'removing')
    this.logger.info({ hostId, role, force }, 'role removal started')
    return this.view(host.id)
  }

  async deleteHost(hostId: string, force: boolean): Promise<void> {
    const host = await this.requireHost(hostId)
    if (!force) {
      const roles = await this.store.db.selectFrom('host_roles').select(['role', 'state']).where('host_id', '=', host.id).execute()
      const moving = roles.find((r) => CONVERGING.includes(r.state))
      if (moving) throw conflict(`Host ${host.id} is converging (role ${moving.role} is ${moving.state}); try again when it is done, or force.`)
      await this.refuseWhileServers(host)
      await this.refuseWhileVolumes(host)
    }
    await this.store.db.transaction().execute(async (tx) => {
      await storageHostGone(tx, host.id)
      await tx.deleteFrom('allocations').where('host_id', '=', host.id).execute()
      await tx.deleteFrom('host_roles').where('host_id', '=', host.id).execute()
      await tx.deleteFrom('network_agents').where('host_id', '=', host.id).execute()
      await tx.deleteFrom('host_credentials').where('host_id', '=', host.id).execute()
      await tx.deleteFrom('agent_hosts').where('host_id', '=', host.id).execute()
      await tx.deleteFrom('host_commands').where('host_id', '=', host.id).execute()
      await deleteHistory(tx, host.id)
      await tx.deleteFrom('hosts').where('id', '=', host.id).execute()
    })
    for (const [hash, entry] of this.credentialCache) if (entry.hostId === host.id) this.credentialCache.delete(hash)
    this.drivers.delete(host.id)
    for (const hook of this.hostDeletedHooks) await hook(host.id)
    this.logger.info({ hostId, force }, 'host removed')
  }

  private readonly hostDeletedHooks: ((hostId: string) => Promise<void>)[] = []

  /** Work that goes with a removed host outside the store (its cephx user), run after the removal commits. */
  whenHostDeleted(hook: (hostId: string) => Promise<void>): void {
    this.hostDeletedHooks.push(hook)
  }

  async list(): Promise<HostView[]> {
    const db = this.store.db
    const [hosts, roles, agents] = await Promise.all([
      db.selectFrom('hosts').selectAll().orderBy('created_at').orderBy('hostname').execute(),
      db.selectFrom('host_roles').select(['host_id', 'role', 'state']).execute(),
      db.selectFrom('agent_hosts').select(['host_id', 'message']).execute(),
    ])
    const now = Date.now()
    const agentBy = new Map(agents.map((a) => [a.host_id, a]))
    return hosts.map((h) =>
      hostView(
        h,
        roles.filter((r) => r.host_id === h.id),
        agentBy.get(h.id),
        now,
        this.downAfterMs,
      ),
    )
  }

  async view(hostId: string): Promise<HostView> {
    const db = this.store.db
    const host = await this.requireHost(hostId)
    const roles = await db.selectFrom('host_roles').select(['role', 'state']).where('host_id', '=', host.id).execute()
    const agent = await db.selectFrom('agent_hosts').select(['message']).where('host_id', '=', host.id).executeTakeFirst()
    return hostView(host, roles, agent, Date.now(), this.downAfterMs)
  }

  private async requireHost(hostId: string): Promise<HostTable> {
    const host = await this.store.db.selectFrom('hosts').selectAll().where('id', '=', hostId).executeTakeFirst()
    if (!host) throw notFound(`Host ${hostId} does not exist.`)
    return host
  }

  private async refuseWhileServers(host: HostTable): Promise<void> {
    const busy = await this.store.db.selectFrom('servers').select('id').where('host_id', '=', host.id).where('deleted', '=', 0).executeTakeFirst()
    if (busy) throw new AppError('conflict', `Servers still run on host ${host.hostname}: migrate or delete them first, or force.`)
  }

  private async refuseWhileVolumes(host: HostTable): Promise<void> {
    const held = await volumesOnHost(this.store.db, host.id)
    if (held > 0) throw new AppError('conflict', `Host ${host.hostname} holds ${held} volume(s): retype them to another backend or delete them first, or force (they go to error).`)
  }
}
