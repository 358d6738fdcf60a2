/**
 * pcc-agent: makes a host a member of the cloud. It registers with a one-time token, keeps the host credential
 * in agent.json (0600), heartbeats with facts, capacity and its guests, converges roles, and executes the
 * conductor's driver operations from the command channel with its local driver. It only dials out.
 *
 * Exactly once: a command's id is remembered with its outcome (in var/lib/pcc/agent-state.json) before the
 * outcome is posted, so a command delivered again (after a control-plane restart, or after this agent restarted
 * and asked for its undelivered work) is answered from memory, never executed twice; unposted outcomes are
 * posted again until the control plane takes them.
 */
import { learnCephAccess, type CephAccess } from './ceph-access.js'
import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { dirname, join } from 'node:path'
import type { Readable } from 'node:stream'
import { DriverError, type ComputeDriver, type GuestInfo, type HostCapacity } from '../../contracts/host/compute-driver.js'
import { COMMAND_TIMEOUT_MS, HOST_PROTOCOL_VERSION, isCommandName, LONG_COMMAND_FACTOR, type CommandHandlers, type ComputeCommandName } from '../../contracts/host/commands.js'
import { QemuDriver } from '../compute/qemu/qemu-driver.js'
import { createComputeDriver, type DriverSettings } from './compute-driver.js'
import { gatherFacts, type HeartbeatFacts, type HostFacts } from './facts.js'
import { HttpError, JsonClient } from './http.js'
import { ConsoleStreams } from '../remote-consoles/console-streams.js'
import { NetworkAgent, type NetworkConfig } from '../network/network-agent.js'
import { isStorageCommand, StorageRole, type StorageConfig } from '../storage/storage-role.js'
import { withVolumeKeys } from './volume-keys.js'
import { sampleHost } from './host-metrics.js'
import { SAMPLE_INTERVAL_MS, type HeartbeatSamples } from '../../contracts/host/metrics.js'

export interface AgentConfig extends DriverSettings {
  controller: string
  host_id?: string
  registration_token?: string
  credential?: string
  ca_file?: string
  insecure?: boolean
  heartbeat_seconds?: number
  /** Where the host's facts are read (default: the root). pcc-server's own host keeps state under its data dir but is the machine at `/`. */
  facts_root?: string
  /** Guest networking (src/host/network/network-agent.ts). */
  network?: NetworkConfig
  /** The storage role (src/host/storage/storage-role.ts). */
  storage?: StorageConfig
  /**
   * Tests only: the host protocol this agent announces instead of HOST_PROTOCOL_VERSION, to play an agent that has
   * not been upgraded (the control plane then sends it none of the newer commands).
   */
  protocol_version?: number
}

export interface PccAgentOptions {
  /** Tests only: like agent.json `protocol_version`, and before it. */
  protocolVersion?: number
}

type Outcome = { result: unknown } | { error: { message: string; code?: number } }

interface AgentState {
  guests: GuestInfo[]
  /** Outcomes of executed commands, by id; `posted` once the control plane acknowledged. */
  done: Record<string, { outcome: Outcome; posted: boolean; at: number }>
}

const DONE_KEPT = 5000

export class PccAgent {
  readonly configFile: string
  private config: AgentConfig
  private client: JsonClient
  private driver!: ComputeDriver
  private facts!: HostFacts
  private hostId = ''
  private state: AgentState = { guests: [], done: {} }
  private readonly running = new Set<string>()
  private hypervisor = false
  private network?: NetworkAgent
  private stopped = false
  private factsSentAt = 0
  private factsReadAt = 0
  /** When the last metrics sample went with a heartbeat (docs/metrics.md): one every SAMPLE_INTERVAL_MS. */
  private sampledAt = 0
  private readonly wake: (() => void)[] = []
  private readonly consoles: ConsoleStreams
  private storage!: StorageRole
  /** The host's own access to Ceph, when the cloud keeps data there (ceph-access.ts). */
  ceph?: CephAccess

  /** The host protocol this agent announces (src/contracts/host/commands.ts). */
  readonly protocolVersion: number

  constructor(
    readonly root: string,
    readonly version: string,
    options: PccAgentOptions = {},
  ) {
    this.configFile = join(root, 'etc/pcc/agent.json')
    this.config = JSON.parse(readFileSync(this.configFile, 'utf8')) as AgentConfig
    if (!this.config.controller) throw new Error(`${this.configFile}: "controller" (the control plane's URL) is required`)
    this.protocolVersion = options.protocolVersion ?? this.config.protocol_version ?? HOST_PROTOCOL_VERSION
    if (!Number.isInteger(this.protocolVersion) || this.protocolVersion < 1 || this.protocolVersion > HOST_PROTOCOL_VERSION) {
      throw new Error(`${this.configFile}: "protocol_version" must be an integer from 1 to ${HOST_PROTOCOL_VERSION}`)
    }
    this.client = new JsonClient({ baseUrl: this.config.controller, caFile: this.config.ca_file ? this.path(this.config.ca_file) : undefined, insecure: this.config.insecure })
    this.consoles = new ConsoleStreams({
      controller: this.config.controller, caFile: this.config.ca_file ? this.path(this.config.ca_file) : undefined, insecure: this.config.insecure,
      credential: () => this.config.credential, hostId: () => this.hostId, log: (level, message, fields) => this.log(level, message, fields),
    })
  }

  /** The local compute driver, once `run` made it (in-process agents: the all-in-one host, tests injecting faults). */
  get computeDriver(): ComputeDriver | undefined {
    return this.driver as ComputeDriver | undefined
  }

  log(level: string, message: string, fields: Record<string, unknown> = {}): void {
    const line = JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...fields })
    try {
      mkdirSync(join(this.root, 'var/log/pcc'), { recursive: true })
      appendFileSync(join(this.root, 'var/log/pcc/agent.log'), line + '\n')
    } catch {
      process.stderr.write(line + '\n')
    }
  }

  async run(): Promise<void> {
    mkdirSync(join(this.root, 'run'), { recursive: true })
    writeFileSync(join(this.root, 'run/pcc-agent.pid'), `${process.pid}\n`)
    this.facts = gatherFacts(this.config.facts_root ?? this.root)
    this.hostId = this.loadHostId()
    this.loadState()
    this.storage = new StorageRole({
      root: this.root,
      controller: this.config.controller,
      config: this.config.storage ?? {},
      api: (method, path, body) => this.api(method, path, body),
      host: (method, path, body) => this.hostStream(method, path, body),
      log: (level, message, fields) => this.log(level, message, fields),
    })
    this.network = NetworkAgent.create(
      { root: this.root, controller: this.config.controller, api: (m, p, b, t) => this.api(m, p, b, t), stream: (m, p, b) => this.hostStream(m, p, b), log: (l, m, f) => this.log(l, m, f) },
      this.config.network,
      this.config.driver ?? 'simulated',
    )
    await this.network?.start()
    this.log('info', 'pcc-agent starting', { hostId: this.hostId, hostname: this.facts.hostname, version: this.version, protocol: this.protocolVersion, controller: this.config.controller })
    await this.ensureRegistered()
    this.ceph = await this.withBackoff('ceph access', () => learnCephAccess(this.root, (method, path) => this.api(method, path)))
    if (this.ceph) this.log('info', 'Ceph access learnt from the control plane', { user: this.ceph.client.user, pools: this.ceph.pools })
    // The driver needs Ceph's access to open guests' disks there, so it comes after the registration.
    this.driver = await createComputeDriver(this.root, this.config, this.facts, (method, path, body) => this.hostStream(method, path, body), (level, msg, fields) => this.log(level, msg, fields), this.ceph)
    this.driver.adopt(this.state.guests)
    // Roles first: a restarted agent must know it is a hypervisor before it takes commands.
    await this.withBackoff('heartbeat', () => this.heartbeat())
    await Promise.all([this.heartbeatLoop(), this.commandLoop(), this.repostLoop(), this.network?.run()])
  }

  stop(): void {
    this.stopped = true
    this.network?.stop()
    for (const w of this.wake.splice(0)) w()
    this.client.close()
    this.consoles.stop()
    try {
      this.saveState()
      rmSync(join(this.root, 'run/pcc-agent.pid'), { force: true })
    } catch {
      // best effort on the way out
    }
  }

  private path(p: string): string {
    return p.startsWith('/') && this.root !== '/' && !existsSync(p) ? join(this.root, p) : p
  }

  private loadHostId(): string {
    if (this.config.host_id) return this.config.host_id
    const file = join(this.root, 'etc/pcc/host_id')
    if (existsSync(file)) return readFileSync(file, 'utf8').trim()
    const id = randomUUID()
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, `${id}\n`)
    return id
  }

  private stateFile(): string {
    return join(this.root, 'var/lib/pcc/agent-state.json')
  }

  private loadState(): void {
    try {
      this.state = JSON.parse(readFileSync(this.stateFile(), 'utf8')) as AgentState
    } catch {
      this.state = { guests: [], done: {} }
    }
  }

  private saveState(): void {
    const ids = Object.keys(this.state.done)
    if (ids.length > DONE_KEPT) {
      const oldest = ids.sort((a, b) => this.state.done[a].at - this.state.done[b].at).slice(0, ids.length - DONE_KEPT)
      for (const id of oldest) if (this.state.done[id].posted) delete this.state.done[id]
    }
    const file = this.stateFile()
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(`${file}.tmp`, JSON.stringify(this.state), { mode: 0o600 })
    renameSync(`${file}.tmp`, file)
  }

  /**
   * Saves the command's outcome, and the guests for the next start's `adopt` after every command; QEMU guests are
   * found again on the host itself (instance directories, daemonized processes), so listing them, which asks every
   * guest's monitor, would be work for nothing.
   */
  private async persistGuests(): Promise<void> {
    if (!(this.driver instanceof QemuDriver)) this.state.guests = await this.driver.listGuests()
    this.saveState()
  }

  /** Retries with exponential backoff (0.5 s doubling to 30 s, jittered) until `attempt` succeeds or the agent stops. */
  private async withBackoff<T>(what: string, attempt: () => Promise<T>, fatal: (err: unknown) => boolean = () => false): Promise<T | undefined> {
    for (let n = 0; !this.stopped; n++) {
      try {
        return await attempt()
      } catch (err) {
        if (fatal(err)) throw err
        const delay = Math.min(30_000, 500 * 2 ** Math.min(n, 10)) * (0.5 + Math.random() / 2)
        if (n === 0 || n % 10 === 0) this.log('warn', `${what} failed; retrying`, { error: (err as Error).message, attempt: n + 1, retryInMs: Math.round(delay) })
        await this.sleep(delay)
      }
    }
    return undefined
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms)
      function done() {
        clearTimeout(t)
        resolve()
      }
      this.wake.push(done)
    })
  }

  private async ensureRegistered(): Promise<void> {
    if (this.config.credential) return
    if (!this.config.registration_token) throw new Error(`${this.configFile} has neither a credential nor a registration_token: run pcctl prep-node again`)
    const f = this.facts
    const body = {
      registration_token: this.config.registration_token,
      host_id: this.hostId,
      hostname: f.hostname,
      os_info: f.os_info,
      arch: f.arch,
      cpu: f.cpu,
      memory_mb: f.memory_mb,
      disk_gb: f.disk_gb,
      nics: f.nics,
      agent_version: this.version,
      protocol_version: this.protocolVersion,
      driver: this.config.driver ?? 'simulated',
    }
    const refused = (err: unknown) => err instanceof HttpError && err.status >= 400 && err.status < 500
    let answer: { credential: string } | undefined
    try {
      answer = await this.withBackoff('registration', () => this.client.call<{ credential: string }>('POST', '/resmgr/v1/hosts/register', body), refused)
    } catch (err) {
      this.log('error', 'registration refused', { error: (err as Error).message })
      throw err
    }
    if (!answer) return
    const { registration_token: _used, ...rest } = this.config
    this.config = { ...rest, host_id: this.hostId, credential: answer.credential }
    writeFileSync(`${this.configFile}.tmp`, JSON.stringify(this.config, null, 2) + '\n', { mode: 0o600 })
    chmodSync(`${this.configFile}.tmp`, 0o600)
    renameSync(`${this.configFile}.tmp`, this.configFile)
    this.log('info', 'registered with the control plane', { hostId: this.hostId })
  }

  private api<T>(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<T> {
    return this.client.call<T>(method, `/resmgr/v1/hosts/${this.hostId}${path}`, body, { credential: this.config.credential, timeoutMs })
  }

  /** A streamed call for this host (image downloads, snapshot and disk uploads). */
  private hostStream(method: string, path: string, body?: Readable) {
    return this.client.stream(method, `/resmgr/v1/hosts/${this.hostId}${path}`, { credential: this.config.credential, body })
  }

  private async heartbeatLoop(): Promise<void> {
    const every = (this.config.heartbeat_seconds ?? 5) * 1000
    while (!this.stopped) {
      await this.sleep(every)
      if (!this.stopped) await this.withBackoff('heartbeat', () => this.heartbeat())
    }
  }

  /** One heartbeat: liveness, capacity, guests (and facts once a minute); then converges to the answered roles. */
  async heartbeat(): Promise<void> {
    const cap = await this.driver.capacity()
    const guests = await this.driver.listGuests()
    // Facts go with the first heartbeat, then when they change (read every minute) or every half hour.
    let sendFacts = Date.now() - this.factsSentAt > 1_800_000
    if (Date.now() - this.factsReadAt > 60_000) {
      const fresh = gatherFacts(this.config.facts_root ?? this.root)
      this.factsReadAt = Date.now()
      if (JSON.stringify(fresh) !== JSON.stringify(this.facts)) sendFacts = true
      this.facts = fresh
    }
    const samples = Date.now() - this.sampledAt >= SAMPLE_INTERVAL_MS - 500 ? await this.samples(guests.length, cap) : undefined
    const answer = await this.api<{ roles: Record<string, string> }>('POST', '/heartbeat', {
      capacity: { vcpus: cap.vcpus, memory_mb: cap.memoryMb, disk_gb: cap.diskGb },
      guests,
      ...(samples && { samples }),
      ...(sendFacts && {
        facts: { nics: this.facts.nics, os_info: this.facts.os_info, agent_version: this.version, protocol_version: this.protocolVersion, hypervisor_type: cap.hypervisorType, hypervisor_version: cap.hypervisorVersion, cpu_info: cap.cpuInfo, images_type: cap.imagesType, network: this.network?.facts() } satisfies HeartbeatFacts,
      }),
    })
    if (sendFacts) this.factsSentAt = Date.now()
    await this.converge(answer.roles)
  }

  /** This host's and its guests' metrics; a failing sample leaves the heartbeat without one rather than failing it. */
  private async samples(guests: number, cap: HostCapacity): Promise<HeartbeatSamples | undefined> {
    try {
      const accelerator = typeof cap.cpuInfo.accelerator === 'string' ? cap.cpuInfo.accelerator : this.driver.type
      const samples = { host: sampleHost(this.root, guests, accelerator), guests: await this.driver.sampleGuests() }
      this.sampledAt = Date.now()
      return samples
    } catch (err) {
      this.log('warn', 'metrics sample failed', { error: (err as Error).message })
      return undefined
    }
  }

  private async converge(roles: Record<string, string>): Promise<void> {
    // The network role asks nothing of the agent itself: routers come with the network state once it is ok, and
    // go (namespaces and all) with the state applied before the removal is confirmed.
    if (roles.network === 'removing' || roles.hypervisor === 'removing') await this.network?.syncNow()
    if (roles.network === 'applying' || roles.network === 'removing') await this.api('PUT', '/roles/network/status', { state: roles.network === 'applying' ? 'ok' : 'removed' })
    const state = roles.hypervisor
    if (state === 'applying') {
      this.hypervisor = true
      this.log('info', 'hypervisor role applied: compute service started', { driver: this.driver.type })
      await this.api('PUT', '/roles/hypervisor/status', { state: 'ok' })
    } else if (state === 'removing') {
      this.hypervisor = false
      this.log('info', 'hypervisor role removed: compute service stopped')
      await this.api('PUT', '/roles/hypervisor/status', { state: 'removed' })
    } else {
      this.hypervisor = state === 'ok'
    }
    await this.storage.converge(roles.storage)
  }

  private async commandLoop(): Promise<void> {
    // After a start or any failed poll, ask for commands already marked delivered too: the answer that carried
    // them may have been lost with the connection (the control plane died after marking them).
    let redeliver = true
    while (!this.stopped) {
      const got = await this.withBackoff('command poll', async () => {
        try {
          return await this.api<{ commands: { id: string; op: string; args: Record<string, unknown> }[] }>('GET', `/commands?wait=25${redeliver ? '&redeliver=true' : ''}`, undefined, 40_000)
        } catch (err) {
          redeliver = true
          throw err
        }
      })
      if (!got) continue
      redeliver = false
      for (const c of got.commands) {
        const known = this.state.done[c.id]
        if (known) {
          void this.post(c.id)
          continue
        }
        if (this.running.has(c.id)) continue
        this.running.add(c.id)
        void this.execute(c.id, c.op, c.args)
      }
    }
  }

  private async execute(id: string, op: string, args: Record<string, unknown>): Promise<void> {
    let outcome: Outcome
    try {
      outcome = { result: (await this.perform(op, args)) ?? null }
    } catch (err) {
      outcome = { error: { message: (err as Error).message, code: err instanceof DriverError ? err.code : 500 } }
      this.log('warn', 'command failed', { id, op, error: (err as Error).message })
    }
    this.state.done[id] = { outcome, posted: false, at: Date.now() }
    this.running.delete(id)
    await this.persistGuests()
    await this.post(id)
  }

  private async post(id: string): Promise<void> {
    const entry = this.state.done[id]
    if (!entry || entry.posted) return
    try {
      await this.api('POST', `/commands/${id}`, entry.outcome)
      entry.posted = true
      this.saveState()
    } catch (err) {
      // 404: the control plane no longer knows the command (host removed, purged): nothing to deliver.
      if (err instanceof HttpError && err.status === 404) {
        entry.posted = true
        this.saveState()
      }
      // Otherwise repostLoop tries again.
    }
  }

  private async repostLoop(): Promise<void> {
    while (!this.stopped) {
      await this.sleep(1000)
      for (const [id, entry] of Object.entries(this.state.done)) if (!entry.posted) await this.post(id)
    }
  }

  private requireHypervisor(): void {
    if (!this.hypervisor) throw new DriverError(`the hypervisor role is not applied on host ${this.facts.hostname}`, 409)
  }

  /**
   * Executes one command of the host protocol (src/contracts/host/commands.ts): `volume.*` with the storage role,
   * the others with the compute handlers. The arguments are JSON from the control plane, typed by the table.
   */
  private async perform(op: string, args: unknown): Promise<unknown> {
    if (!isCommandName(op)) throw new DriverError(`unknown command ${op}`, 400)
    // The one cast, at the wire: the JSON arguments are the op's (the control plane built them against the same table).
    const handler = (isStorageCommand(op) ? this.storage.handlers[op] : this.compute[op]) as (args: unknown) => Promise<unknown>
    return handler(args)
  }

  /**
   * The compute commands, each with the local driver. Volume connections in the arguments get their keys first
   * (withVolumeKeys): commands carry none.
   */
  private readonly compute: CommandHandlers<ComputeCommandName> = {
    info: async ({ serverId }) => (await this.driver.info(serverId)) ?? null,
    listGuests: () => this.driver.listGuests(),
    sampleGuests: () => this.driver.sampleGuests(),
    beginStep: async ({ serverId, taskState }) => {
      // The build's networking step: the guest's tap in its bridge, behind its rules, before it starts.
      if (taskState === 'networking') await this.network?.syncNow()
      return this.driver.beginStep(serverId, taskState)
    },
    spawn: async (args) => {
      this.requireHypervisor()
      return this.driver.spawn((await this.withKeys(args)).spec)
    },
    destroy: ({ serverId }) => this.driver.destroy(serverId),
    reboot: ({ serverId, type }) => this.driver.reboot(serverId, type),
    powerOff: ({ serverId }) => this.driver.powerOff(serverId),
    powerOn: ({ serverId }) => this.driver.powerOn(serverId),
    pause: ({ serverId }) => this.driver.pause(serverId),
    unpause: ({ serverId }) => this.driver.unpause(serverId),
    suspend: ({ serverId }) => this.driver.suspend(serverId),
    resume: ({ serverId }) => this.driver.resume(serverId),
    rescue: ({ serverId, image }) => this.driver.rescue(serverId, image ?? null),
    unrescue: ({ serverId }) => this.driver.unrescue(serverId),
    rebuild: async (args) => this.driver.rebuild((await this.withKeys(args)).spec),
    setAdminPassword: ({ serverId, password }) => this.driver.setAdminPassword(serverId, password),
    snapshot: async ({ serverId, imageName, imageId }) => {
      // The bytes go straight into the queued image with this host's credential, never through a command result.
      const snap = await this.driver.snapshot(serverId, imageName)
      if (snap.inCeph) {
        // A disk in Ceph: the control plane copies the snapshot into the image inside Ceph; no byte crosses here.
        try {
          const body = { snapshot: snap.inCeph.snapshot, disk_format: snap.diskFormat, container_format: snap.containerFormat }
          if (imageId) await this.api('PUT', `/images/${imageId}/rbd-snapshot`, body, COMMAND_TIMEOUT_MS * LONG_COMMAND_FACTOR)
        } finally {
          await snap.inCeph.release()
        }
      } else if (!imageId) snap.data.resume()
      else {
        const query = `disk_format=${encodeURIComponent(snap.diskFormat)}&container_format=${encodeURIComponent(snap.containerFormat)}`
        ;(await this.hostStream('PUT', `/images/${imageId}/file?${query}`, snap.data)).resume()
      }
      return { diskFormat: snap.diskFormat, containerFormat: snap.containerFormat }
    },
    quiesceGuest: ({ serverId }) => this.driver.quiesce(serverId),
    unquiesceGuest: ({ serverId }) => this.driver.unquiesce(serverId),
    attachNic: async ({ serverId, nic }) => {
      // The port was just bound to this host: its tap in its bridge, behind its rules, before the guest gets the NIC
      // (as the build's networking step does before a spawn).
      await this.network?.syncNow()
      return this.driver.attachNic(serverId, nic)
    },
    detachNic: ({ serverId, portId }) => this.driver.detachNic(serverId, portId),
    attachVolume: async (args) => {
      const { serverId, volume } = await this.withKeys(args)
      return this.driver.attachVolume(serverId, volume)
    },
    detachVolume: ({ serverId, volumeId }) => this.driver.detachVolume(serverId, volumeId),
    extendVolume: async (args) => {
      const { serverId, volume, sizeBytes } = await this.withKeys(args)
      return this.driver.extendVolume(serverId, volume, sizeBytes)
    },
    migrateDiskAndPowerOff: ({ serverId, flavor, toSameHost }) => this.driver.migrateDiskAndPowerOff(serverId, flavor, toSameHost === true),
    finishMigration: async (args) => {
      this.requireHypervisor()
      const { spec, powerOn } = await this.withKeys(args)
      return this.driver.finishMigration(spec, powerOn)
    },
    evacuateTo: async (args) => {
      this.requireHypervisor()
      const { spec, powerOn } = await this.withKeys(args)
      return this.driver.evacuateTo(spec, powerOn)
    },
    consoleOutput: ({ serverId, lines }) => this.driver.consoleOutput(serverId, lines ?? undefined),
    openConsole: (args) => this.consoles.open(this.driver, args),
    forget: ({ serverId }) => this.driver.forget(serverId),
    prepareLiveMigration: async (args) => {
      this.requireHypervisor()
      return this.driver.prepareLiveMigration((await this.withKeys(args)).spec)
    },
    liveMigrateTo: ({ serverId, handle }) => this.driver.liveMigrateTo(serverId, handle),
    finishLiveMigration: ({ serverId, handover }) => this.driver.finishLiveMigration(serverId, handover ?? {}),
    abortLiveMigration: ({ serverId }) => this.driver.abortLiveMigration(serverId),
    // Both arrive while this host's liveMigrateTo of the guest still runs: commands run side by side (commandLoop).
    cancelLiveMigration: ({ serverId }) => this.driver.cancelLiveMigration(serverId),
    forceCompleteLiveMigration: ({ serverId }) => this.driver.forceCompleteLiveMigration(serverId),
  }

  private withKeys<A extends object>(args: A): Promise<A> {
    return withVolumeKeys((method, path) => this.api(method, path), args, this.ceph?.client.conf)
  }
}


