/**
 * The conductor: registers the compute task handlers with the process's task runner, owns the driver
 * registry and the scheduler, brings up the embedded simulated hosts and runs reconciliation on start and
 * periodically. The compute API reaches drivers (console output) through it.
 */
import type { Logger } from 'pino'
import { COMPUTE_TASK_KINDS, type ActionTaskPayload, type BuildTaskPayload, type DeleteTaskPayload, type VolumeTaskPayload } from '../compute/tasks.js'
import type { ComputeStorage } from '../compute/storage.js'
import type { Config } from '../config/settings.js'
import { DriverRegistry } from '../hosts/driver-registry.js'
import type { CopyControl } from '../compute/migration-control.js'
import { DriverError, type ComputeDriver, type ConsoleProtocol } from '../../contracts/host/compute-driver.js'
import type { Duplex } from 'node:stream'
import { HostProtocolTooOld } from '../../contracts/host/commands.js'
import { serverNics } from '../metadata/load.js'
import { startSimulatedHost, startSimulatedHosts, type SimulatedHost, type SimulatedHostSpec } from '../all-in-one/simulated-hosts.js'
import { Scheduler } from '../scheduler/scheduler.js'
import { hostStatus, isUp, type HostStatus } from '../hosts/host-status.js'
import type { Store } from '../storage/store.js'
import type { TaskQueue, TaskRecord } from '../tasks/queue.js'
import type { TaskContext, TaskHandler } from '../tasks/runner.js'
import { runAction } from './actions.js'
import { runBuild } from './build.js'
import type { ConductorContext } from './context.js'
import { runDelete, markDeleted } from './delete.js'
import { reconcile, type ReconcileReport } from './reconciler.js'
import { recordFault } from './records.js'
import { extendAttachedVolume, runVolumeTask } from './volumes.js'
import type { AttachedVolumeHooks } from '../volume/worker.js'

/**
 * The last `lines` lines of a console log, joined by newlines without a final one, so that a client splitting the
 * answer at newlines gets `lines` pieces (Tempest counts them; Nova splits the log and keeps the last `lines` pieces,
 * one of which is empty when the log ends with a newline). Absent or negative: the whole log.
 */
export function lastLines(text: string, lines?: number): string {
  if (lines === undefined || lines < 0) return text
  if (lines === 0) return ''
  const all = (text.endsWith('\n') ? text.slice(0, -1) : text).split('\n')
  return all.slice(-lines).join('\n')
}

/** What the API's abort and force-complete ask a live migration's source (docs/compute.md, "Migrations"). */
const COPY_CONTROLS: Record<CopyControl, (driver: ComputeDriver, serverId: string) => Promise<boolean>> = {
  cancel: (driver, serverId) => driver.cancelLiveMigration(serverId),
  forceComplete: (driver, serverId) => driver.forceCompleteLiveMigration(serverId),
}

export class Conductor {
  readonly drivers = new DriverRegistry()
  readonly scheduler: Scheduler
  readonly simulatedHosts: SimulatedHost[] = []
  private readonly ctx: ConductorContext
  private timer: NodeJS.Timeout | undefined
  private reconciling: Promise<ReconcileReport> | undefined

  constructor(
    private readonly store: Store,
    private readonly queue: TaskQueue,
    private readonly config: Config,
    private readonly logger: Logger,
  ) {
    this.scheduler = new Scheduler(store, { downAfterMs: config.hostDownAfterSeconds * 1000, weigher: config.schedulerWeigher, claimRounds: 20 })
    this.ctx = { store, drivers: this.drivers, scheduler: this.scheduler, logger, config }
  }

  /** Adds the compute task handlers to the runner's map (before the runner starts). */
  register(handlers: Map<string, TaskHandler>): void {
    const mine: [string, TaskHandler][] = [
      [COMPUTE_TASK_KINDS.build, (task, tc) => this.guard(task, tc, () => runBuild(this.ctx, task.payload as BuildTaskPayload, tc.signal))],
      [COMPUTE_TASK_KINDS.action, (task, tc) => this.guard(task, tc, () => runAction(this.ctx, task.payload as ActionTaskPayload))],
      [COMPUTE_TASK_KINDS.delete, (task, tc) => this.guard(task, tc, () => runDelete(this.ctx, task.payload as DeleteTaskPayload))],
      [COMPUTE_TASK_KINDS.volume, (task, tc) => runVolumeTask(this.ctx, task.payload as VolumeTaskPayload, !tc.signal.aborted && task.attempts >= task.maxAttempts)],
    ]
    // A handler the caller passed for the same kind wins (tests that stand in for the conductor).
    for (const [kind, handler] of mine) if (!handlers.has(kind)) handlers.set(kind, handler)
  }

  /** The image and block storage services the conductor snapshots into and attaches from. */
  useStorage(storage: ComputeStorage): void {
    this.ctx.storage = storage
  }

  /** Compute's part of an online volume extend: the server's hypervisor moves the guest onto the grown export. */
  volumeHooks(): AttachedVolumeHooks {
    return { extendAttached: (serverId, volume, sizeBytes, by) => extendAttachedVolume(this.ctx, serverId, volume, sizeBytes, by) }
  }

  /** Registers the embedded simulated hosts and reconciles once. */
  async start(): Promise<void> {
    this.simulatedHosts.push(...(await startSimulatedHosts(this.hostContext(), this.config.simulatedHosts)))
    await this.reconcile().catch((err: unknown) => this.logger.error({ err }, 'reconciliation at start failed'))
    if (this.config.reconcileSeconds > 0) {
      this.timer = setInterval(() => {
        this.reconcile().catch((err: unknown) => this.logger.error({ err }, 'reconciliation failed'))
      }, this.config.reconcileSeconds * 1000)
      this.timer.unref()
    }
  }

  /** Adds one more in-process simulated host (tests, demos). */
  async addSimulatedHost(spec: SimulatedHostSpec): Promise<SimulatedHost> {
    const host = await startSimulatedHost(this.hostContext(), spec)
    this.simulatedHosts.push(host)
    return host
  }

  reconcile(): Promise<ReconcileReport> {
    this.reconciling ??= reconcile(this.ctx, this.queue).then(
      (report) => {
        this.reconciling = undefined
        if (Object.values(report).some((n) => n > 0)) this.logger.info({ report }, 'reconciliation repaired the store')
        return report
      },
      (err: unknown) => {
        this.reconciling = undefined
        throw err
      },
    )
    return this.reconciling
  }

  stop(): void {
    clearInterval(this.timer)
    for (const h of this.simulatedHosts) h.stop()
  }

  /**
   * The console log of a server's guest for os-getConsoleOutput (`lines` < 0 or absent: all of it).
   * Undefined when the host cannot be reached or has no such guest (the API answers 404).
   */
  async consoleOutput(serverId: string, lines?: number): Promise<string | undefined> {
    const row = await this.store.db.selectFrom('servers').select('host_id').where('id', '=', serverId).where('deleted', '=', 0).executeTakeFirst()
    const driver = row?.host_id ? await this.drivers.find(row.host_id) : undefined
    if (!driver) return undefined
    // Nova strips control characters other than newlines and tabs.
    return driver.consoleOutput(serverId, lines).then(
      // eslint-disable-next-line no-control-regex
      (text) => lastLines(text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, ''), lines),
      () => undefined,
    )
  }

  /**
   * The console stream of a server's guest from its host's driver (remote consoles). A DriverError when the
   * server has no host this process knows, or when the host refuses (not running, no such console).
   */
  async openConsole(serverId: string, protocol: ConsoleProtocol): Promise<Duplex> {
    const row = await this.store.db.selectFrom('servers').select(['host_id', 'host']).where('id', '=', serverId).where('deleted', '=', 0).executeTakeFirst()
    const driver = row?.host_id ? await this.drivers.find(row.host_id) : undefined
    if (!driver) throw new DriverError(`Instance ${serverId} has no host that can give its console${row?.host ? ` (host ${row.host} is unknown here)` : ''}.`, 404)
    return driver.openConsole(serverId, protocol)
  }

  /**
   * Asks the source host of a server's live migration to cancel or force-complete the copy it is sending: false
   * when that host sends none of the guest (not yet, or no longer). A DriverError when the host cannot be asked
   * (unknown here, DOWN, an agent too old for the command).
   */
  async controlLiveMigration(serverId: string, control: CopyControl): Promise<boolean> {
    const row = await this.store.db.selectFrom('servers').select(['host_id', 'host']).where('id', '=', serverId).where('deleted', '=', 0).executeTakeFirst()
    const driver = row?.host_id ? await this.drivers.find(row.host_id) : undefined
    if (!driver) throw new DriverError(`Instance ${serverId} has no source host that can be reached${row?.host ? ` (host ${row.host} is unknown here)` : ''}.`, 409)
    return COPY_CONTROLS[control](driver, serverId)
  }

  /**
   * Freezes a server's guest on its host for the volume snapshots of a volume-backed createImage. A DriverError when
   * the host cannot be asked (unknown here, DOWN, an agent older than protocol 6) or the guest cannot be quiesced.
   */
  async quiesceGuest(serverId: string): Promise<void> {
    await (await this.hostDriverOf(serverId)).quiesce(serverId)
  }

  /**
   * Thaws what quiesceGuest froze. A thaw that fails is logged, not thrown: the snapshots are taken and the image
   * made, so the createImage stands; the guest stays frozen until an operator thaws it (or it reboots).
   */
  async unquiesceGuest(serverId: string): Promise<void> {
    try {
      await (await this.hostDriverOf(serverId)).unquiesce(serverId)
    } catch (err) {
      this.logger.error({ err, serverId }, 'the guest could not be thawed after the volume snapshots')
    }
  }

  /**
   * os-interface attach on the server's host (Nova's attach_interface, a call to the compute host): the guest gets the
   * NIC of its port `portId` (hot-plugged when it runs). A host whose agent is older than protocol 7 cannot: the port
   * stays bound with no NIC plugged until the guest's next start, with a warning. A DriverError when the host cannot
   * be asked (unknown here, DOWN) or could not plug it.
   */
  async attachNic(serverId: string, portId: string): Promise<void> {
    const driver = await this.hostDriverOf(serverId)
    const nic = (await serverNics(this.store.db, serverId)).find((n) => n.portId === portId)
    if (!nic) throw new DriverError(`Port ${portId} is not attached to instance ${serverId}.`, 409)
    await this.unlessTooOld(serverId, () => driver.attachNic(serverId, { portId, macAddress: nic.macAddress, networkId: nic.networkId, mtu: nic.mtu }))
  }

  /** os-interface detach on the server's host: the guest lets go of the port's NIC. Errors as attachNic's. */
  async detachNic(serverId: string, portId: string): Promise<void> {
    const driver = await this.hostDriverOf(serverId)
    await this.unlessTooOld(serverId, () => driver.detachNic(serverId, portId))
  }

  /** Runs a command a host older than its protocol cannot take; such a host's refusal is a warning, the rest thrown. */
  private async unlessTooOld(serverId: string, command: () => Promise<void>): Promise<void> {
    try {
      await command()
    } catch (err) {
      if (!(err instanceof HostProtocolTooOld)) throw err
      this.logger.warn({ serverId, reason: err.message }, "the server's host cannot plug or unplug NICs: the guest has its ports' NICs from its next start")
    }
  }

  /** The driver of the host a server is on; a DriverError (409) when it has none this process knows. */
  private async hostDriverOf(serverId: string): Promise<ComputeDriver> {
    const row = await this.store.db.selectFrom('servers').select(['host_id', 'host']).where('id', '=', serverId).where('deleted', '=', 0).executeTakeFirst()
    const driver = row?.host_id ? await this.drivers.find(row.host_id) : undefined
    if (!driver) throw new DriverError(`Instance ${serverId} has no host that can be reached${row?.host ? ` (host ${row.host} is unknown here)` : ''}.`, 409)
    return driver
  }

  /** Whether a host's compute service is up (heartbeat within the timeout, not forced down). */
  async hostUp(hostname: string): Promise<boolean> {
    const host = await this.store.db.selectFrom('hosts').select(['forced_down', 'last_heartbeat_at', 'service_status']).where('hostname', '=', hostname).executeTakeFirst()
    return !!host && isUp(host, Date.now(), this.config.hostDownAfterSeconds * 1000)
  }

  /** Nova's `host_status` of a server's host for the server view (2.16+): UP, DOWN, MAINTENANCE, UNKNOWN, or '' without a host. */
  async hostStatus(hostname: string | null): Promise<HostStatus | ''> {
    if (!hostname) return ''
    const host = await this.store.db.selectFrom('hosts').select(['forced_down', 'last_heartbeat_at', 'service_status']).where('hostname', '=', hostname).executeTakeFirst()
    return host ? hostStatus(host, Date.now(), this.config.hostDownAfterSeconds * 1000) : 'UNKNOWN'
  }

  /** Marks a server deleted without a task (used when the API deletes a server that never reached a host). */
  markDeleted(serverId: string): Promise<void> {
    return markDeleted(this.ctx, serverId)
  }

  private hostContext() {
    return { store: this.store, config: this.config, drivers: this.drivers, logger: this.logger }
  }

  /**
   * Drops the admin password from a task that has ended (a build's, for the config drive; a rebuild's, evacuation's,
   * rescue's or password change's, in its params): it was needed only by the work, and the row stays until the purge
   * (days). A run that is retried keeps it; so does one whose lease another process took over.
   */
  private async forgetPassword(task: TaskRecord): Promise<void> {
    const payload = task.payload as Partial<BuildTaskPayload & ActionTaskPayload>
    if (payload.adminPass === undefined && payload.params?.adminPass === undefined) return
    const { adminPass: _build, ...rest } = payload
    const { adminPass: _action, ...params } = payload.params ?? {}
    await this.store.db.updateTable('tasks').set({ payload: JSON.stringify({ ...rest, ...(payload.params && { params }) }) }).where('id', '=', task.id).execute()
  }

  /**
   * Runs a handler; on its last attempt an unexpected error (the store failing, a bug) still leaves the
   * servers in ERROR with a fault instead of in a task state forever.
   */
  private async guard(task: TaskRecord, tc: TaskContext, run: () => Promise<void>): Promise<void> {
    try {
      await run()
      if (!tc.signal.aborted) await this.forgetPassword(task)
    } catch (err) {
      if (tc.signal.aborted || task.attempts < task.maxAttempts) throw err
      await this.forgetPassword(task).catch(() => {})
      this.logger.error({ err, task: task.id }, 'compute task failed for good')
      const payload = task.payload as Partial<BuildTaskPayload & ActionTaskPayload>
      const ids = payload.serverIds ?? (payload.serverId ? [payload.serverId] : [])
      for (const id of ids) {
        await this.store.db.transaction().execute(async (tx) => {
          // A delete accepted meanwhile keeps its task state: its own task finishes the server.
          const moved = await tx
            .updateTable('servers')
            .set({ vm_state: 'error', task_state: null, updated_at: Date.now() })
            .where('id', '=', id)
            .where('deleted', '=', 0)
            .where((eb) => eb.or([eb('task_state', 'is', null), eb('task_state', '!=', 'deleting')]))
            .executeTakeFirst()
          if (moved.numUpdatedRows > 0n) await recordFault(tx, id, { code: 500, message: `${task.kind} failed: ${(err as Error).message}`, details: (err as Error).stack ?? '' })
        }).catch(() => {})
      }
      throw err
    }
  }
}
