/**
 * The compute driver of an onboarded host: each call becomes a command on the host's durable channel, which the
 * host's pcc-agent executes with its local driver; the call resolves with the agent's result. An agent that does
 * not answer within the timeout makes the call fail with a DriverError (the conductor records the fault).
 * Which guests the host holds comes from the agent's last heartbeat, so reconciliation sends no command and does
 * not wait on a host that is DOWN.
 */
import type { GuestSample } from '../../contracts/host/metrics.js'
import { isUp } from './host-status.js'
import { reportedProtocol } from './host-protocol.js'
import type { CommandChannel } from '../onboarding/command-channel.js'
import type { Store } from '../storage/store.js'
import type { FlavorSnapshot } from '../../contracts/host/compute-driver.js'
import { createHash, randomUUID } from 'node:crypto'
import { Readable, type Duplex } from 'node:stream'
import { commandWaitMs, HOST_COMMANDS, HostProtocolTooOld, type CommandArgs, type CommandName, type CommandResult } from '../../contracts/host/commands.js'
import { DriverError, type ComputeDriver, type ConsoleProtocol, type DriverCapabilities, type GuestImageRef, type GuestInfo, type GuestNic, type GuestSpec, type HostCapacity, type LiveMigrationHandle, type LiveMigrationHandover, type SnapshotData, type VolumeConnection } from '../../contracts/host/compute-driver.js'

export interface AgentDriverOptions {
  hostId: string
  hostname: string
  /** The driver the agent runs (its registration's `driver`): `simulated` or `qemu`. */
  driver: string
  store: Store
  channel: CommandChannel
  /** How long a call waits for the agent (spawns and migrations get three times as long). */
  timeoutMs: number
  /** Guests reported longer ago than this are not trusted (the host is DOWN). */
  staleAfterMs: number
  /** Where the agent's remote-console websockets arrive (remote-consoles/console-sessions.ts); none without it. */
  consoles?: HostConsoleStreams
}

/** A remote-console session waiting for a host's websocket: the agent dials in with the session's id. */
export interface HostConsoleStreams {
  expect(hostId: string, serverId: string): Promise<{ id: string; stream: Promise<Duplex>; cancel(reason: string): void }>
}

const CAPABILITIES: DriverCapabilities = {
  supportsPause: true,
  supportsSuspend: true,
  supportsRescue: true,
  supportsLiveMigration: true,
  supportsConsoleOutput: true,
  supportsSetAdminPassword: true,
  supportsSnapshot: true,
}

/**
 * The dedupe key of a command: its op and a digest of its arguments without the config drive, whose files hold the
 * admin password (never kept once the command is answered) and a random seed (new on every try, so a retried spawn
 * would never match the first).
 */
function commandKey(op: CommandName, args: object): string {
  const json = JSON.stringify(args, (key, value: unknown) => (key === 'configDrive' ? undefined : value))
  // The server's id in clear, so an operator (or a test) finds a server's commands in host_commands.
  const { serverId, spec } = args as { serverId?: string; spec?: GuestSpec }
  return `${op}:${serverId ?? spec?.serverId ?? ''}:${createHash('sha256').update(json).digest('hex')}`
}

export interface CallOptions {
  /** Instead of the op and a digest of the arguments (arguments holding a secret must not be stored in clear). */
  dedupeKey?: string
  /** Instead of the op's usual wait. */
  timeoutMs?: number
}

export class AgentDriver implements ComputeDriver {
  readonly type = 'agent'
  readonly capabilities = CAPABILITIES

  constructor(readonly options: AgentDriverOptions) {}

  get guestDetails(): boolean {
    return this.options.driver !== 'simulated'
  }

  /**
   * Sends one command of the host protocol (src/contracts/host/commands.ts) to the agent and waits for its result.
   * A command newer than the host's agent fails at once, never enqueued: an old agent would refuse it or, worse,
   * take it for the older command of the same name.
   */
  async call<C extends CommandName>(op: C, args: CommandArgs<C>, options: CallOptions = {}): Promise<CommandResult<C>> {
    const { channel, hostId, hostname } = this.options
    // A DOWN host answers nothing: fail at once rather than after the timeout (evacuation steps go on without it).
    const host = await this.options.store.db.selectFrom('hosts').select(['last_heartbeat_at', 'forced_down', 'service_status', 'facts']).where('id', '=', hostId).executeTakeFirst()
    if (!host) throw new DriverError(`Compute host ${hostname} is not registered.`)
    // Every agent speaks protocol 1: the facts (a few KB of JSON) are read only for a command newer than that.
    const since = HOST_COMMANDS[op].since
    if (since > 1) {
      const spoken = reportedProtocol(JSON.parse(host.facts) as Record<string, unknown>)
      if (since > spoken) throw new HostProtocolTooOld(hostname, spoken, op)
    }
    if (!isUp(host, Date.now(), this.options.staleAfterMs) && !unheardSinceStart(host.last_heartbeat_at, this.options.staleAfterMs)) {
      if (op === 'beginStep') return undefined as CommandResult<C>
      throw new DriverError(`Compute host ${hostname} is DOWN: its agent has not reported for ${Math.round(this.options.staleAfterMs / 1000)} s.`)
    }
    const id = await channel.enqueue(hostId, op, args, options.dedupeKey ?? commandKey(op, args))
    const outcome = await channel.waitResult(id, options.timeoutMs ?? commandWaitMs(HOST_COMMANDS[op], this.options.timeoutMs))
    if (!outcome.ok) throw new DriverError(`${outcome.error.message} (host ${hostname}, ${op})`, outcome.error.code && outcome.error.code < 500 ? outcome.error.code : 500)
    return outcome.result as CommandResult<C>
  }

  async capacity(): Promise<HostCapacity> {
    const host = await this.options.store.db.selectFrom('hosts').select(['vcpus', 'memory_mb', 'disk_gb', 'facts']).where('id', '=', this.options.hostId).executeTakeFirst()
    if (!host) throw new DriverError(`Compute host ${this.options.hostname} is not registered.`)
    const facts = JSON.parse(host.facts) as Record<string, unknown>
    return {
      vcpus: host.vcpus,
      memoryMb: host.memory_mb,
      diskGb: host.disk_gb,
      hypervisorType: (facts.hypervisor_type as string | undefined) ?? 'QEMU',
      hypervisorVersion: (facts.hypervisor_version as number | undefined) ?? 8002000,
      cpuInfo: (facts.cpu_info as Record<string, unknown> | undefined) ?? {},
    }
  }

  /**
   * The guests the host holds now, as its agent answers; a host that does not answer right now is taken at its
   * last report (seconds old: a guest just spawned or destroyed may be missing or still there), and one whose report
   * is stale (DOWN) holds none, so reconciliation never waits on a dead host.
   */
  /**
   * The guests of the agent's last heartbeat (none when that report is stale): reconciliation asks every host each
   * interval, and a command per host would make its cost grow with the cloud; a heartbeat is at most a few
   * seconds old, which the interface allows.
   */
  async listGuests(): Promise<GuestInfo[]> {
    return (await this.reportedGuests()) ?? []
  }

  /** The guests of the agent's last heartbeat; undefined when that report is stale. */
  private async reportedGuests(): Promise<GuestInfo[] | undefined> {
    const row = await this.options.store.db
      .selectFrom('agent_hosts')
      .innerJoin('hosts', 'hosts.id', 'agent_hosts.host_id')
      .select(['agent_hosts.guests', 'hosts.last_heartbeat_at'])
      .where('agent_hosts.host_id', '=', this.options.hostId)
      .executeTakeFirst()
    if (!row || row.last_heartbeat_at === null || Date.now() - row.last_heartbeat_at > this.options.staleAfterMs) return undefined
    return JSON.parse(row.guests) as GuestInfo[]
  }

  /** Asked of the agent (protocol 3): its heartbeats carry the same samples every SAMPLE_INTERVAL_MS. */
  sampleGuests(): Promise<GuestSample[]> {
    return this.call('sampleGuests', {})
  }

  async info(serverId: string): Promise<GuestInfo | undefined> {
    return (await this.call('info', { serverId })) ?? undefined
  }

  beginStep(serverId: string, taskState: string): Promise<void> {
    return this.call('beginStep', { serverId, taskState })
  }

  spawn(spec: GuestSpec): Promise<GuestInfo> {
    return this.call('spawn', { spec })
  }

  destroy(serverId: string): Promise<void> {
    return this.call('destroy', { serverId })
  }

  reboot(serverId: string, type: 'SOFT' | 'HARD'): Promise<void> {
    return this.call('reboot', { serverId, type })
  }

  powerOff(serverId: string): Promise<void> {
    return this.call('powerOff', { serverId })
  }

  powerOn(serverId: string): Promise<void> {
    return this.call('powerOn', { serverId })
  }

  pause(serverId: string): Promise<void> {
    return this.call('pause', { serverId })
  }

  unpause(serverId: string): Promise<void> {
    return this.call('unpause', { serverId })
  }

  suspend(serverId: string): Promise<void> {
    return this.call('suspend', { serverId })
  }

  resume(serverId: string): Promise<void> {
    return this.call('resume', { serverId })
  }

  rescue(serverId: string, image: GuestImageRef | null): Promise<void> {
    return this.call('rescue', { serverId, image })
  }

  unrescue(serverId: string): Promise<void> {
    return this.call('unrescue', { serverId })
  }

  rebuild(spec: GuestSpec): Promise<void> {
    return this.call('rebuild', { spec })
  }

  setAdminPassword(serverId: string, password: string): Promise<void> {
    // The password travels to the host, never into the dedupe key (which is stored in clear).
    return this.call('setAdminPassword', { serverId, password }, { dedupeKey: `setAdminPassword:${serverId}` })
  }

  /**
   * The agent uploads the disk's bytes into the queued image itself, with its host credential
   * (`PUT /resmgr/v1/hosts/{id}/images/{image_id}/file`), and answers with their formats. Without an image to
   * store into, the agent snapshots and discards (the caller wanted only the side effects).
   */
  async snapshot(serverId: string, imageName: string, imageId?: string): Promise<SnapshotData> {
    const result = await this.call('snapshot', { serverId, imageName, imageId: imageId ?? null })
    return { diskFormat: result.diskFormat, containerFormat: result.containerFormat, data: Readable.from([]), stored: imageId !== undefined }
  }

  /** Each call is a new freeze (the command's dedupe key is unique): a createImage never answers with an earlier one's. */
  quiesce(serverId: string): Promise<void> {
    return this.call('quiesceGuest', { serverId }, { dedupeKey: `quiesceGuest:${serverId}:${randomUUID()}` })
  }

  unquiesce(serverId: string): Promise<void> {
    return this.call('unquiesceGuest', { serverId }, { dedupeKey: `unquiesceGuest:${serverId}:${randomUUID()}` })
  }

  attachNic(serverId: string, nic: GuestNic): Promise<void> {
    return this.call('attachNic', { serverId, nic })
  }

  detachNic(serverId: string, portId: string): Promise<void> {
    return this.call('detachNic', { serverId, portId })
  }

  attachVolume(serverId: string, volume: VolumeConnection): Promise<void> {
    return this.call('attachVolume', { serverId, volume })
  }

  detachVolume(serverId: string, volumeId: string): Promise<void> {
    return this.call('detachVolume', { serverId, volumeId })
  }

  extendVolume(serverId: string, volume: VolumeConnection, sizeBytes: number): Promise<void> {
    return this.call('extendVolume', { serverId, volume, sizeBytes })
  }

  migrateDiskAndPowerOff(serverId: string, flavor: FlavorSnapshot, toSameHost = false): Promise<void> {
    return this.call('migrateDiskAndPowerOff', { serverId, flavor, toSameHost })
  }

  finishMigration(spec: GuestSpec, powerOn: boolean): Promise<void> {
    return this.call('finishMigration', { spec, powerOn })
  }

  /** Live migration's steps, each a command to this host's agent (the conductor sequences them between hosts). */
  prepareLiveMigration(spec: GuestSpec): Promise<LiveMigrationHandle> {
    return this.call('prepareLiveMigration', { spec })
  }

  liveMigrateTo(serverId: string, handle: LiveMigrationHandle): Promise<LiveMigrationHandover> {
    return this.call('liveMigrateTo', { serverId, handle })
  }

  finishLiveMigration(serverId: string, handover: LiveMigrationHandover): Promise<void> {
    return this.call('finishLiveMigration', { serverId, handover })
  }

  abortLiveMigration(serverId: string): Promise<void> {
    return this.call('abortLiveMigration', { serverId })
  }

  // A fresh command each time (the dedupe key says when): asking again after a `false` must reach the agent again.
  cancelLiveMigration(serverId: string): Promise<boolean> {
    return this.call('cancelLiveMigration', { serverId }, { dedupeKey: `cancelLiveMigration:${serverId}:${Date.now()}` })
  }

  forceCompleteLiveMigration(serverId: string): Promise<boolean> {
    return this.call('forceCompleteLiveMigration', { serverId }, { dedupeKey: `forceCompleteLiveMigration:${serverId}:${Date.now()}` })
  }

  evacuateTo(spec: GuestSpec, powerOn: boolean): Promise<void> {
    return this.call('evacuateTo', { spec, powerOn })
  }

  consoleOutput(serverId: string, lines?: number): Promise<string> {
    return this.call('consoleOutput', { serverId, lines: lines ?? null }, { dedupeKey: `consoleOutput:${serverId}:${lines ?? ''}:${Date.now()}` })
  }

  /**
   * The host cannot be dialled, so the agent dials in: a session waits for its websocket (in this process, or
   * relayed to it by the process the agent reached), and the openConsole command tells the agent which session
   * to dial with which console. A refusal of the agent's driver ends the wait at once.
   */
  async openConsole(serverId: string, protocol: ConsoleProtocol): Promise<Duplex> {
    const consoles = this.options.consoles
    if (!consoles) throw new DriverError(`Remote consoles of host ${this.options.hostname} are not served by this process.`, 501)
    const session = await consoles.expect(this.options.hostId, serverId)
    const refused = this.call('openConsole', { sessionId: session.id, serverId, protocol }, { dedupeKey: `openConsole:${session.id}` }).then(
      () => new Promise<never>(() => {}),
      (err: unknown) => {
        session.cancel((err as Error).message)
        throw err
      },
    )
    try {
      return await Promise.race([session.stream, refused])
    } catch (err) {
      session.cancel((err as Error).message)
      throw err instanceof DriverError ? err : new DriverError(`${(err as Error).message} (host ${this.options.hostname})`)
    }
  }

  forget(serverId: string): Promise<void> {
    return this.call('forget', { serverId })
  }

  /** The agent keeps its guests across control-plane restarts itself; nothing to hand over. */
  adopt(_guests: GuestInfo[]): void {}
}

/**
 * Since when this process can hear its hosts: the heartbeats in the store may be from before an outage of the
 * control plane. Agents reach it only once it listens, so the runtime sets it then (`listeningForHosts`); a start-up
 * that takes a while (migrations, image loads) must not eat into the hosts' time to report.
 */
let hearingSince = Date.now()

/** Called once the HTTP server listens: from now on hosts can report. */
export function listeningForHosts(): void {
  hearingSince = Date.now()
}

/**
 * Whether the host's last heartbeat is from before this process could hear it, which it has not yet done for as
 * long as a host may stay silent: a control plane back from an outage (killed, restarted slowly) has not had the
 * time to hear from its hosts, so a stale heartbeat does not mean the host is DOWN yet, and its commands wait for
 * the agent instead of failing at once.
 */
function unheardSinceStart(lastHeartbeatAt: number | null, staleAfterMs: number): boolean {
  return lastHeartbeatAt !== null && lastHeartbeatAt < hearingSince && Date.now() - hearingSince < staleAfterMs
}
