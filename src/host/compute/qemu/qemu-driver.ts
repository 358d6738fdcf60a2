/**
 * The QEMU compute driver: one QEMU process per server, driven over QMP on a unix socket (docs/qemu.md, "QMP, not
 * libvirt"). It sequences the parts that know nothing of servers — the QMP client, the command-line builder, the
 * image cache, the disk tools — into the ComputeDriver operations, each idempotent (the conductor may repeat one).
 *
 * State lives on the host, not in this object: the instance directory (disks, `guest.json`, the pidfile) and the
 * QEMU processes themselves, which are daemonized. A restarted agent builds a new driver and finds every guest as it
 * was. One operation at a time per guest (a lock per server id); QMP connections are held only for a few commands.
 *
 * Power: a guest whose OS powers off makes QEMU exit (no `-no-shutdown`), so "no process" is SHUTDOWN; a suspended
 * guest has no process either, and its memory in `suspend.state`.
 */
import { execFile } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { connect } from 'node:net'
import type { Duplex } from 'node:stream'
import { COMMAND_TIMEOUT_MS, LONG_COMMAND_FACTOR } from '../../../contracts/host/commands.js'
import { POWER } from '../../../contracts/host/compute-driver.js'
import type { FlavorSnapshot } from '../../../contracts/host/compute-driver.js'
import { DriverError, liveMigrationCancelled, type ComputeDriver, type ConsoleProtocol, type ImagesType, type DriverCapabilities, type GuestImageRef, type GuestInfo, type GuestNic, type GuestSpec, type HostCapacity, type LiveMigrationHandle, type LiveMigrationHandover, type SnapshotData, type VolumeConnection } from '../../../contracts/host/compute-driver.js'
import { probeOncePerBoot, type AcceleratorChoice } from './accelerator.js'
import { adminUser, cpuTopology, guestHardware, nicsOf, qemuArgs, type LaunchPlan, type PlannedDisk } from './command-line.js'
import { writeConfigDrive } from './config-drive.js'
import { readConsoleLog, rotateConsoleLog } from './console-log.js'
import type { DiskLayout } from './disk-layout.js'
import { bootImage, FileDisks, type DiskTransfers } from './guest-disks.js'
import { HostPaths, privateDir, type InstancePaths } from './host-paths.js'
import { listenForGuest, migrationDone, OutgoingMigration, sendGuest, startArrivedGuest, type IncomingMigration } from './live-migration.js'
import { ImageCache, type ImageSource } from './image-cache.js'
import { QmpClient, QmpError, QmpUnavailable } from './qmp.js'
import { AGENT_SYNC_TIMEOUT_MS, GuestAgentClient, GuestAgentError, GuestAgentUnavailable } from './qga.js'
import { attachVolume as attachNbdVolume, detachVolume as detachNbdVolume, extendVolume as extendNbdVolume, removeVolumeKey, volumeKeyDir, writeVolumeKey } from './volumes.js'
import { hotplugNic, hotunplugNic } from './nics.js'
import { qemuImg } from './qemu-img.js'
import { RbdDisks } from './rbd-disks.js'
import { Rbd, type CephClient } from '../../../lib/ceph/rbd.js'
import { balloonKb, diskStats, nicStats, processStats } from './guest-metrics.js'
import type { GuestSample } from '../../../contracts/host/metrics.js'
import { runningPid, signal, startDaemonized, systemdAvailable, waitGone } from './qemu-process.js'

const exec = promisify(execFile)

/** The destination's handle as a QEMU source reads it; a handle of another driver cannot be sent to. */
function incomingOf(handle: LiveMigrationHandle): IncomingMigration {
  if (handle.driver !== 'qemu') throw new DriverError(`live migration from a QEMU host goes only to another QEMU host, not to a ${handle.driver} host`, 409)
  const { driver: _driver, ...incoming } = handle
  return incoming as unknown as IncomingMigration
}

const MAX_HANDOVER_LOG = 100 * 1024

export type { DiskTransfers }

export interface QemuDriverOptions {
  hostname: string
  /** The host's root (`/` on a real host). */
  root: string
  images: ImageSource
  transfers?: DiskTransfers
  /** Ceph, when the cloud keeps data there: guests' disks are then RBD images in the `vms` pool (rbd-disks.ts). */
  ceph?: { client: CephClient; pools: { images: string; vms: string } }
  /** `rbd` (the default with Ceph) or `qcow2` (files on this host; the only choice without Ceph). */
  imagesType?: ImagesType
  vcpus: number
  memoryMb: number
  diskGb: number
  binary?: string
  /** `auto` (default) tries a guest under KVM and falls back to TCG. */
  accel?: 'auto' | 'kvm' | 'tcg'
  probeKernel?: string
  /**
   * How long a graceful stop waits for the guest to power off before a hard stop (Nova's shutdown_timeout; default
   * 30 s). Never more than cleanStopMs allows: the control plane waits only so long for the command.
   */
  shutdownTimeoutMs?: number
  /** How long a soft reboot waits for the guest to go down before it reboots hard (Nova's wait_soft_reboot_seconds; default 30 s, capped likewise). */
  softRebootTimeoutMs?: number
  consoleLogMaxBytes?: number
  /** A cached image no guest uses is removed once unused this long (default 24 h; Nova's remove_unused_original_minimum_age_seconds). */
  imageCacheMaxAgeMs?: number
  /** Empty PCIe root ports on q35 guests for hot-plug. */
  hotplugPorts?: number
  /** How long the guest agent has to answer its sync before it counts as not responding (default 10 s). */
  guestAgentSyncMs?: number
  /** Where guests' sockets go (default `<root>/run/pcc`). */
  runDir?: string
  /** The address other hosts reach this one on for live-migration traffic (default 127.0.0.1: one machine). */
  migrationAddress?: string
  /** Each QEMU in its own systemd scope (default: when systemd runs and the root is /). */
  systemdScope?: boolean
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void
}

/** What the driver keeps about a guest in `guest.json` (the config drive's files are not kept: they hold secrets). */
interface GuestRecord {
  spec: Omit<GuestSpec, 'configDrive'>
  rescued: boolean
  /** The image under the rescue disk while rescued (kept in the cache as long). */
  rescueImage?: string
  suspended: boolean
  /** Starts and resets this driver made (GuestInfo.boots). */
  boots: number
  /**
   * The q35 root ports NICs were hot-plugged into, by port id, while this QEMU (or the one whose memory is saved)
   * runs: a restore must lay them out the same. A fresh start places every NIC as the command line does, as a
   * destination host would; until then the guest cannot migrate live.
   */
  nicRootPorts?: Record<string, string>
}

/** QEMU RunState → Nova power state (docs/qemu.md, "Operations"). */
const RUN_STATE_POWER: Record<string, number> = {
  running: POWER.RUNNING,
  paused: POWER.PAUSED,
  prelaunch: POWER.PAUSED,
  inmigrate: POWER.PAUSED,
  postmigrate: POWER.PAUSED,
  'finish-migrate': POWER.PAUSED,
  'save-vm': POWER.PAUSED,
  'restore-vm': POWER.PAUSED,
  'io-error': POWER.PAUSED,
  watchdog: POWER.PAUSED,
  debug: POWER.PAUSED,
  shutdown: POWER.SHUTDOWN,
  'guest-panicked': POWER.CRASHED,
  'internal-error': POWER.CRASHED,
  suspended: POWER.SUSPENDED,
}

const CAPABILITIES: DriverCapabilities = {
  supportsPause: true,
  supportsSuspend: true,
  supportsRescue: true,
  supportsLiveMigration: true,
  supportsConsoleOutput: true,
  // Per guest: only images with hw_qemu_guest_agent=yes take a password (setAdminPassword); others answer 409.
  supportsSetAdminPassword: false,
  supportsSnapshot: true,
}

/** Nova's QemuGuestAgentNotEnabled. */
const GUEST_AGENT_NOT_ENABLED = 'QEMU guest agent is not enabled'
/**
 * Guest agent waits beside its sync's (qga.ts): a freeze (it syncs every file system first), and how long a guest
 * may take to go down after the agent took guest-shutdown before ACPI is tried too.
 */
const AGENT_FREEZE_MS = 20_000
const AGENT_SHUTDOWN_WAIT_MS = 15_000

/** A clean stop's default wait, as Nova's shutdown_timeout but inside the command's time (below). */
export const CLEAN_STOP_DEFAULT_MS = 30_000

/**
 * How long a clean stop (ACPI power button) may wait inside a command: half of what the control plane waits for
 * the command (COMMAND_TIMEOUT_MS, long commands LONG_COMMAND_FACTOR times as long), so the hard stop that follows
 * (at most 20 s) and a reboot's new start still fit. A guest that ignores ACPI is then stopped hard and the action
 * ends SHUTOFF, as Nova's stop does, rather than the control plane giving up first and the server going to ERROR
 * (docs/qemu.md, "Operations").
 */
export function cleanStopMs(configuredMs: number | undefined, long = false): number {
  const limit = (COMMAND_TIMEOUT_MS * (long ? LONG_COMMAND_FACTOR : 1)) / 2
  return Math.min(configuredMs ?? CLEAN_STOP_DEFAULT_MS, limit)
}

/** Nova's diagnostics states by power state. */
const SAMPLE_STATES: Record<number, GuestSample['state']> = { [POWER.RUNNING]: 'running', [POWER.PAUSED]: 'paused', [POWER.SHUTDOWN]: 'shutdown', [POWER.SUSPENDED]: 'suspended', [POWER.CRASHED]: 'crashed' }

export class QemuDriver implements ComputeDriver {
  readonly type = 'qemu'
  readonly capabilities = CAPABILITIES
  readonly guestDetails = true
  readonly paths: HostPaths
  readonly images: ImageCache
  /** Where this host keeps guests' root, ephemeral and swap disks. */
  readonly disks: DiskLayout
  private readonly binary: string
  private readonly agentSyncMs: number
  private accelerator: AcceleratorChoice | undefined
  private version = { text: 'unknown', number: 0 }
  private readonly locks = new Map<string, Promise<unknown>>()
  /** Live migrations this host is sending, by guest: cancelLiveMigration and forceCompleteLiveMigration act on them. */
  private readonly outgoing = new Map<string, OutgoingMigration>()
  /** Tests: caps a live migration's memory stream (bytes per second), so that it lasts long enough to cancel or force. */
  migrationMaxBandwidth: number | undefined
  private prunedAt = 0
  /** Last power state seen per guest: what listGuests reports while an operation holds the guest. */
  private readonly lastPower = new Map<string, number>()

  constructor(readonly options: QemuDriverOptions) {
    this.paths = new HostPaths(options.root, options.runDir)
    this.images = new ImageCache(this.paths, options.images)
    const ceph = options.ceph
    if (options.imagesType === 'rbd' && !ceph) throw new DriverError('images_type rbd needs Ceph, and the control plane has none configured (PCC_CEPH_CONF)')
    this.disks =
      ceph && options.imagesType !== 'qcow2'
        ? new RbdDisks({ rbd: new Rbd(ceph.client), pools: ceph.pools, images: this.images })
        : new FileDisks(this.images, options.transfers)
    this.binary = options.binary ?? 'qemu-system-x86_64'
    this.agentSyncMs = options.guestAgentSyncMs ?? AGENT_SYNC_TIMEOUT_MS
  }

  /** Finds QEMU's version and the accelerator (a KVM guest is tried, with TCG as the fallback). Call once, first. */
  async start(): Promise<AcceleratorChoice> {
    privateDir(this.paths.instances)
    privateDir(this.paths.images)
    mkdirSync(this.paths.run, { recursive: true })
    try {
      const out = (await exec(this.binary, ['--version'])).stdout
      const m = /version (\d+)\.(\d+)\.(\d+)/.exec(out)
      if (m) this.version = { text: `${m[1]}.${m[2]}.${m[3]}`, number: Number(m[1]) * 1_000_000 + Number(m[2]) * 1000 + Number(m[3]) }
    } catch (err) {
      this.log('error', 'QEMU is not usable on this host', { binary: this.binary, error: (err as Error).message })
    }
    const wanted = this.options.accel ?? 'auto'
    this.accelerator =
      wanted === 'auto'
        ? await probeOncePerBoot(this.paths.accelerator, { binary: this.binary, kernel: this.options.probeKernel }, this.version.text)
        : { accel: wanted, cpu: wanted === 'kvm' ? 'host' : undefined, reason: 'configured' }
    this.log('info', `guests run under ${this.accelerator.accel.toUpperCase()}`, { reason: this.accelerator.reason, qemu: this.version.text })
    return this.accelerator
  }

  get accel(): AcceleratorChoice {
    if (!this.accelerator) throw new DriverError('the qemu driver has not started')
    return this.accelerator
  }

  async capacity(): Promise<HostCapacity> {
    const a = this.accelerator
    return {
      vcpus: this.options.vcpus,
      memoryMb: this.options.memoryMb,
      diskGb: this.options.diskGb,
      hypervisorType: 'QEMU',
      hypervisorVersion: this.version.number,
      cpuInfo: {
        arch: 'x86_64',
        model: a?.cpu ?? 'qemu64',
        vendor: 'QEMU',
        accelerator: a?.accel ?? 'unknown',
        accelerator_reason: a?.reason ?? '',
        topology: { sockets: 1, cores: this.options.vcpus, threads: 1 },
      },
      imagesType: this.disks.type,
    }
  }

  /**
   * Every guest with its power state as last known. The agent sends this list with every heartbeat, and the control
   * plane reads from it only which guests there are (reconciliation asks `info`, which asks QEMU), so the monitors
   * are not asked each time: a guest whose QEMU is gone is SHUTDOWN (a /proc read), a running one shows what the last
   * operation or `info` saw; QMP is asked only when nothing was seen yet (a restarted agent).
   */
  async listGuests(): Promise<GuestInfo[]> {
    if (!existsSync(this.paths.instances)) return []
    const out: GuestInfo[] = []
    const images = new Set<string>()
    for (const id of readdirSync(this.paths.instances)) {
      if (id.includes('.')) continue
      const p = this.paths.instance(id)
      const rec = this.record(p)
      if (!rec) continue
      rotateConsoleLog(p.consoleLog, this.options.consoleLogMaxBytes ?? 1024 * 1024)
      out.push(this.info_(rec, await this.knownPower(id, p, rec)))
      for (const ref of [rec.spec.image, rec.spec.kernel, rec.spec.ramdisk]) if (ref) images.add(ref.id)
      if (rec.rescueImage) images.add(rec.rescueImage)
    }
    // Listing runs with every heartbeat; the image cache is pruned at most hourly.
    if (Date.now() - this.prunedAt > 3_600_000) {
      this.prunedAt = Date.now()
      const removed = this.images.prune(images, this.options.imageCacheMaxAgeMs ?? 24 * 3_600_000)
      if (removed.length) this.log('info', 'unused cached images removed', { images: removed })
    }
    return out
  }

  /**
   * Each guest's counters: /proc and the taps for every running guest, QMP only for its disks and balloon (one short
   * connection per guest; a guest under an operation holds its monitor, and samples without disks this time).
   */
  async sampleGuests(): Promise<GuestSample[]> {
    if (!existsSync(this.paths.instances)) return []
    const out: GuestSample[] = []
    for (const id of readdirSync(this.paths.instances)) {
      if (id.includes('.')) continue
      const p = this.paths.instance(id)
      const rec = this.record(p)
      if (!rec) continue
      out.push(await this.sampleGuest(p, rec, await this.knownPower(id, p, rec)))
    }
    return out
  }

  private async sampleGuest(p: InstancePaths, rec: GuestRecord, powerState: number): Promise<GuestSample> {
    const flavor = rec.spec.flavor
    const pid = runningPid(p.pidfile)
    const proc = pid ? processStats(pid) : undefined
    const monitor = proc && !this.locks.has(rec.spec.serverId) ? await this.qmp(p, async (q) => ({ disks: await diskStats(q), balloon: await balloonKb(q) })).catch(() => undefined) : undefined
    return {
      serverId: rec.spec.serverId,
      at: Date.now(),
      state: SAMPLE_STATES[powerState] ?? 'pending',
      vcpus: flavor.vcpus,
      cpuNs: proc?.cpuNs ?? 0,
      uptimeS: proc?.uptimeS ?? 0,
      memoryMaxKb: flavor.ram * 1024,
      memoryUsedKb: Math.min(monitor?.balloon ?? proc?.rssKb ?? 0, flavor.ram * 1024),
      disks: monitor?.disks ?? [],
      nics: proc ? nicsOf(rec.spec, '').map((n) => nicStats(n.tap, n.mac)) : [],
    }
  }

  async info(serverId: string): Promise<GuestInfo | undefined> {
    const rec = this.record(this.paths.instance(serverId))
    return rec && this.view(serverId, rec)
  }

  async beginStep(serverId: string, taskState: string): Promise<void> {
    // Confirming a resize on the host that kept the guest's old disks for a revert: they go now.
    if (taskState === 'resize_confirming') await this.disks.confirmMove(this.paths.instance(serverId), serverId)
  }

  spawn(spec: GuestSpec): Promise<GuestInfo> {
    return this.exclusive(spec.serverId, async (p) => {
      const existing = this.record(p)
      if (existing && runningPid(p.pidfile)) return this.view(spec.serverId, existing)
      try {
        await this.create(spec, p)
        await this.launch(spec.serverId, p)
      } catch (err) {
        // A guest that never ran leaves nothing behind: no process, no files, no disks.
        if (!existing) await this.teardown(spec.serverId, p, 'remove disks')
        throw err
      }
      return this.view(spec.serverId, this.require(spec.serverId, p))
    })
  }

  destroy(serverId: string): Promise<void> {
    return this.exclusive(serverId, (p) => this.teardown(serverId, p, 'remove disks'))
  }

  reboot(serverId: string, type: 'SOFT' | 'HARD'): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      if (type === 'SOFT') {
        const status = await this.status(p)
        if (status !== 'running') throw new DriverError(`guest ${serverId} is not running (${status ?? 'no process'}); a soft reboot needs a running guest`)
        // Nova's _soft_reboot: an ACPI shutdown, and a new start once the guest is down; a guest that does not go
        // down in time is rebooted hard.
        if (!(await this.powerDown(p, cleanStopMs(this.options.softRebootTimeoutMs)))) await this.stopHard(p)
      } else {
        await this.stopHard(p)
        if (rec.suspended) this.save(p, { ...rec, suspended: false })
        rmSync(p.suspendState, { force: true })
      }
      await this.launch(serverId, p)
    })
  }

  powerOff(serverId: string): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      if (rec.suspended) {
        rmSync(p.suspendState, { force: true })
        this.save(p, { ...rec, suspended: false })
        return
      }
      const status = await this.status(p)
      if (status === undefined) return
      // A paused guest cannot answer the power button.
      if (status !== 'running' || !(await this.powerDown(p, cleanStopMs(this.options.shutdownTimeoutMs)))) await this.stopHard(p)
    })
  }

  powerOn(serverId: string): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      if (runningPid(p.pidfile)) return
      if (rec.suspended) await this.restore(serverId, p, rec)
      else await this.launch(serverId, p)
    })
  }

  pause(serverId: string): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      this.require(serverId, p)
      const status = await this.status(p)
      if (status === 'paused') return
      if (status !== 'running') throw new DriverError(`guest ${serverId} is not running and cannot be paused`)
      await this.qmp(p, (q) => q.execute('stop'))
    })
  }

  unpause(serverId: string): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      this.require(serverId, p)
      if ((await this.status(p)) === 'paused') await this.qmp(p, (q) => q.execute('cont'))
    })
  }

  /** Nova's managed save: the guest's memory goes to `suspend.state` (QEMU's migration stream) and QEMU exits. */
  suspend(serverId: string): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      if (rec.suspended) return
      const status = await this.status(p)
      if (status !== 'running' && status !== 'paused') throw new DriverError(`guest ${serverId} is not running and cannot be suspended`)
      const pid = runningPid(p.pidfile)!
      rmSync(p.suspendState, { force: true })
      await this.qmp(p, async (q) => {
        if (status === 'running') await q.execute('stop')
        try {
          // QEMU 7.2 has no file: transport; exec: to a file works.
          await q.execute('migrate', { uri: `exec:cat > ${shellQuote(p.suspendState)}` })
          await migrationDone(q, 600_000)
        } catch (err) {
          // The guest goes on as it was; part of its memory is no state to keep (nor to leave on the host).
          rmSync(p.suspendState, { force: true })
          if (status === 'running') await q.execute('cont').catch(() => {})
          throw err
        }
        this.save(p, { ...rec, suspended: true })
        await q.execute('quit').catch(() => {})
      })
      if (!(await waitGone(pid, 30_000))) signal(pid, 'SIGKILL')
    })
  }

  resume(serverId: string): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      if (!rec.suspended) return
      await this.restore(serverId, p, rec)
    })
  }

  rescue(serverId: string, image: GuestImageRef | null): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      if (rec.rescued) return
      const from = image ?? rec.spec.image
      if (!from) throw new DriverError(`server ${serverId} has no image to rescue from: name a rescue image`, 400)
      const cached = await bootImage(this.images, from)
      await this.stopHard(p)
      rmSync(p.rescueDisk, { force: true })
      await qemuImg.overlay(p.rescueDisk, cached.file, cached.format)
      this.save(p, { ...rec, rescued: true, rescueImage: from.id, suspended: false })
      rmSync(p.suspendState, { force: true })
      await this.launch(serverId, p)
    })
  }

  unrescue(serverId: string): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      if (!rec.rescued) return
      await this.stopHard(p)
      rmSync(p.rescueDisk, { force: true })
      this.save(p, { ...rec, rescued: false, rescueImage: undefined })
      await this.launch(serverId, p)
    })
  }

  /** A new root disk from the (new) image and a new config drive; the guest starts again on them. */
  rebuild(spec: GuestSpec): Promise<void> {
    return this.exclusive(spec.serverId, async (p) => {
      const rec = this.require(spec.serverId, p)
      await this.stopHard(p)
      for (const f of [p.configDrive, p.rescueDisk, p.suspendState]) rmSync(f, { force: true })
      await this.disks.removeForRebuild(p, spec.serverId)
      this.save(p, { ...rec, rescued: false, rescueImage: undefined, suspended: false })
      await this.create(spec, p)
      await this.launch(spec.serverId, p)
    })
  }

  /**
   * Sets the password of the image's login user (adminUser) through the guest agent (Nova's libvirt
   * set_admin_password); sent base64, crypted by the guest. Without hw_qemu_guest_agent, or with an agent that
   * does not answer, a 409 the server keeps its state on. The password goes only to the agent: no message or log
   * line holds it.
   */
  setAdminPassword(serverId: string, password: string): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      if (!guestHardware(rec.spec).guestAgent) throw new DriverError(`${GUEST_AGENT_NOT_ENABLED}: setting the admin password needs it (image property hw_qemu_guest_agent=yes)`, 409)
      const username = adminUser(rec.spec)
      try {
        await this.guestAgent(p, (a) => a.execute('guest-set-user-password', { username, password: Buffer.from(password, 'utf8').toString('base64'), crypted: false }))
      } catch (err) {
        throw new DriverError(`Unable to set password on instance for user ${JSON.stringify(username)}: ${(err as Error).message}`, 409)
      }
      this.log('info', 'admin password set through the guest agent', { serverId, username })
    })
  }

  /**
   * The root disk as an image (disk-layout.ts): a point-in-time copy, taken live from a running or paused guest,
   * with its file systems frozen by the guest agent while the copy starts (quiesce, below).
   */
  snapshot(serverId: string): Promise<SnapshotData> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      const running = runningPid(p.pidfile) !== undefined
      const thaw = running ? once(await this.quiesceForSnapshot(serverId, p, rec)) : undefined
      try {
        return await this.disks.snapshot(p, serverId, running ? (fn) => this.qmp(p, fn) : undefined, thaw)
      } finally {
        await thaw?.()
      }
    })
  }

  /**
   * Freezes the running guest's file systems for the volume snapshots of a volume-backed createImage (Nova's
   * quiesce_instance): the freeze outlives this call (the agent keeps the guest frozen until `unquiesce`). 409 when
   * the guest cannot be quiesced: not running, no agent in the image, an agent that does not answer or fails.
   */
  quiesce(serverId: string): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      if (runningPid(p.pidfile) === undefined) throw new DriverError(`guest ${serverId} is not running; its file systems cannot be quiesced`, 409)
      ;(await this.freeze(serverId, p, rec, 'the volume snapshots')).close()
    })
  }

  /** Thaws what `quiesce` froze (a thaw of a guest with nothing frozen changes nothing); a guest without an agent or not running has nothing frozen. */
  unquiesce(serverId: string): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      if (!guestHardware(rec.spec).guestAgent || runningPid(p.pidfile) === undefined) return
      await this.thaw(serverId, p, 'the volume snapshots')
    })
  }

  /**
   * Hot-plugs a NIC into the guest whose QEMU runs (running or paused), or records it for the next start of a
   * stopped one (nics.ts). The guest record keeps it, so every later start, the stats and a migration have it.
   */
  attachNic(serverId: string, nic: GuestNic): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      if (rec.spec.nics?.some((n) => n.portId === nic.portId)) return
      const hw = guestHardware(rec.spec)
      const rootPort = runningPid(p.pidfile) ? await this.qmp(p, (q) => hotplugNic(q, nic, hw.vifModel, hw.machine, this.options.hotplugPorts ?? 4)) : undefined
      const nicRootPorts = rootPort ? { ...rec.nicRootPorts, [nic.portId]: rootPort } : rec.nicRootPorts
      this.save(p, { ...rec, spec: { ...rec.spec, nics: [...(rec.spec.nics ?? []), nic] }, ...(nicRootPorts && { nicRootPorts }) })
    })
  }

  /**
   * Unplugs a NIC from the running guest (it lets go of the device) and forgets it. A paused guest cannot let go:
   * 409, the NIC stays.
   */
  detachNic(serverId: string, portId: string): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.record(p)
      const nic = rec?.spec.nics?.find((n) => n.portId === portId)
      if (!rec || !nic) return
      if (runningPid(p.pidfile)) {
        if ((await this.status(p)) === 'paused') throw new DriverError(`guest ${serverId} is paused and cannot release the NIC of port ${portId}: unpause it first`, 409)
        await this.qmp(p, (q) => hotunplugNic(q, nic))
      }
      const { [portId]: _gone, ...left } = rec.nicRootPorts ?? {}
      const nicRootPorts = Object.keys(left).length > 0 ? left : undefined
      this.save(p, { ...rec, spec: { ...rec.spec, nics: rec.spec.nics!.filter((n) => n.portId !== portId) }, nicRootPorts })
    })
  }

  /**
   * Hot-plugs a volume (its NBD export, with the attachment's key) into the running guest, or records it for the
   * next start of a stopped one (volumes.ts). The guest record keeps it, so every later start has it too.
   */
  attachVolume(serverId: string, volume: VolumeConnection): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      const keyDir = await writeVolumeKey(p.dir, volume)
      if (runningPid(p.pidfile)) await this.qmp(p, (q) => attachNbdVolume(q, volume, keyDir, guestHardware(rec.spec).machine))
      this.saveVolumes(p, rec, [...(rec.spec.volumes ?? []).filter((v) => v.volumeId !== volume.volumeId), volume])
    })
  }

  /** Unplugs a volume from the running guest (its writes flushed to the export) and forgets it. */
  detachVolume(serverId: string, volumeId: string): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.record(p)
      if (!rec) return
      if (runningPid(p.pidfile)) await this.qmp(p, (q) => detachNbdVolume(q, volumeId))
      this.saveVolumes(p, rec, (rec.spec.volumes ?? []).filter((v) => v.volumeId !== volumeId))
      await removeVolumeKey(p.dir, volumeId)
    })
  }

  /** An attached volume grew: the running guest moves onto the export's new generation and sees the new size. */
  extendVolume(serverId: string, volume: VolumeConnection, sizeBytes: number): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      await writeVolumeKey(p.dir, volume)
      if (runningPid(p.pidfile)) await this.qmp(p, (q) => extendNbdVolume(q, volume, sizeBytes))
      this.saveVolumes(p, rec, (rec.spec.volumes ?? []).map((v) => (v.volumeId === volume.volumeId ? volume : v)))
    })
  }

  /** The guest record with these volumes, their keys left out (they live in the key files QEMU reads). */
  private saveVolumes(p: InstancePaths, rec: GuestRecord, volumes: VolumeConnection[]): void {
    this.save(p, { ...rec, spec: { ...rec.spec, volumes: volumes.map(withoutKey) } })
  }

  /**
   * Source side of a resize or cold migration: a graceful power-off, then the disks go to the control plane for the
   * destination (not for a resize on this same host: a copy of the disks stays here instead, for a revert).
   */
  migrateDiskAndPowerOff(serverId: string, flavor: FlavorSnapshot, toSameHost = false): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      const current = this.disks.hasRoot(p, rec.spec) ? await this.disks.rootSize(p, serverId) : 0
      if (flavor.disk > 0 && flavor.disk * 1024 ** 3 < current) throw new DriverError(`Unable to resize disk down: the root disk is ${current} bytes, flavor ${flavor.name} has ${flavor.disk} GiB.`, 400)
      if (rec.suspended) rmSync(p.suspendState, { force: true })
      const status = await this.status(p)
      if (status !== undefined && (status !== 'running' || !(await this.powerDown(p, cleanStopMs(this.options.shutdownTimeoutMs, true))))) await this.stopHard(p)
      this.save(p, { ...rec, suspended: false })
      await this.disks.sendForMove(p, serverId, toSameHost)
    })
  }

  /** Destination side (and a revert's way back): the disks the source sent, grown to the new flavor, started if it ran. */
  finishMigration(spec: GuestSpec, powerOn: boolean): Promise<void> {
    return this.exclusive(spec.serverId, async (p) => {
      const rec = this.record(p)
      if (!rec) {
        await this.receiveDisks(spec, p)
      } else {
        await this.stopHard(p)
        await this.disks.revertMove(p, spec.serverId, spec.flavor.disk)
      }
      try {
        await this.disks.growRoot(p, spec.serverId, spec.flavor.disk)
        await this.disks.ensureFlavorDisks(p, spec, rec?.spec.flavor.swap)
        if (!existsSync(p.configDrive) && spec.configDrive) await writeConfigDrive(p.configDrive, decodeFiles(spec.configDrive))
        this.save(p, { spec: withoutDrive(spec), rescued: false, suspended: false, boots: rec?.boots ?? 0 })
        if (powerOn) await this.launch(spec.serverId, p)
      } catch (err) {
        // A guest that arrived here and cannot run leaves nothing (its source still holds it).
        if (!rec) await this.teardown(spec.serverId, p, 'keep shared disks')
        throw err
      }
    })
  }

  /**
   * Destination of a live migration: the guest's disks made fresh on this host, exported over NBD, and a paused
   * QEMU with the same devices waiting for the memory on `migrationAddress` (live-migration.ts).
   */
  prepareLiveMigration(spec: GuestSpec): Promise<LiveMigrationHandle> {
    return this.exclusive(spec.serverId, async (p) => {
      if (this.record(p) && runningPid(p.pidfile)) throw new DriverError(`guest ${spec.serverId} already runs on host ${this.options.hostname}`, 409)
      // Whatever an earlier attempt left is stale: the mirror must write into fresh overlays.
      await this.teardown(spec.serverId, p, 'keep shared disks')
      try {
        await this.create(spec, p)
        await this.launch(spec.serverId, p, true)
        // Disks in Ceph are the source's own: only this host's files are mirrored.
        const disks = this.plan(spec.serverId, p, this.require(spec.serverId, p)).disks.filter((d) => !d.readOnly && !d.rbd).map((d) => d.node)
        const incoming = await this.qmp(p, (q) => listenForGuest(q, this.options.migrationAddress ?? '127.0.0.1', disks))
        return { driver: this.type, ...incoming }
      } catch (err) {
        await this.teardown(spec.serverId, p, 'keep shared disks')
        throw err
      }
    })
  }

  /** Source of a live migration: disks, then memory, to the prepared destination; QEMU here quits once it is there. */
  async liveMigrateTo(serverId: string, handle: LiveMigrationHandle): Promise<LiveMigrationHandover> {
    // Async, so a handle of another driver is a rejection like every other failure, not a throw.
    const target = incomingOf(handle)
    return this.exclusive(serverId, async (p) => {
      if ((await this.status(p)) !== 'running') throw new DriverError(`guest ${serverId} is not running; only a running guest migrates live`, 409)
      const rec = this.require(serverId, p)
      const plugged = Object.keys(rec.nicRootPorts ?? {})
      if (plugged.length) {
        throw new DriverError(
          `guest ${serverId} has the NIC of port ${plugged.join(', ')} hot-plugged into a PCIe root port (q35), where the destination's QEMU would not have it; stop and start the server, or migrate it cold, then migrate it live`,
          409,
        )
      }
      await this.qmp(p, async (q) => {
        const outgoing = new OutgoingMigration(q, this.migrationMaxBandwidth)
        this.outgoing.set(serverId, outgoing)
        try {
          await sendGuest(q, target, 600_000, outgoing)
        } catch (err) {
          throw outgoing.cancelled ? liveMigrationCancelled(serverId, this.options.hostname) : err
        } finally {
          this.outgoing.delete(serverId)
        }
      })
      await this.stopHard(p)
      // The console log's history goes along, so the guest's log reads on without a gap.
      return { consoleLog: readConsoleLog(p.consoleLog).slice(-MAX_HANDOVER_LOG), boots: rec.boots }
    })
  }

  /** Destination, after the memory arrived: the source's console history first, then the guest runs on. */
  finishLiveMigration(serverId: string, handover: LiveMigrationHandover): Promise<void> {
    return this.exclusive(serverId, async (p) => {
      const rec = this.require(serverId, p)
      if ((await this.status(p)) === 'running') return
      if (handover.consoleLog) writeFileSync(p.consoleLog, handover.consoleLog)
      await this.qmp(p, (q) => startArrivedGuest(q))
      this.save(p, { ...rec, boots: handover.boots ?? rec.boots })
    })
  }

  /**
   * Source, beside a running liveMigrateTo (not under the guest's lock, which that holds): cancels its copy through
   * its monitor connection; liveMigrateTo then fails as cancelled with the guest running here.
   */
  async cancelLiveMigration(serverId: string): Promise<boolean> {
    const outgoing = this.outgoing.get(serverId)
    if (!outgoing) return false
    await outgoing.cancel()
    return true
  }

  /** Source, beside a running liveMigrateTo: pauses the guest so the copy converges (finishLiveMigration continues it). */
  async forceCompleteLiveMigration(serverId: string): Promise<boolean> {
    const outgoing = this.outgoing.get(serverId)
    if (!outgoing) return false
    try {
      await outgoing.forceComplete()
    } catch (err) {
      // The copy ended meanwhile (its QEMU quit): nothing left to force.
      if (!this.outgoing.has(serverId)) return false
      throw new DriverError(`could not pause guest ${serverId} to complete its live migration: ${(err as Error).message}`)
    }
    return true
  }

  /** Destination, when the migration failed: nothing of the guest stays here (its disks in Ceph stay the source's). */
  abortLiveMigration(serverId: string): Promise<void> {
    return this.exclusive(serverId, (p) => this.teardown(serverId, p, 'keep shared disks'))
  }

  /** Starts the guest here after its host was lost: on its own disks in Ceph, else on a fresh root disk from its image. */
  evacuateTo(spec: GuestSpec, powerOn: boolean): Promise<void> {
    return this.exclusive(spec.serverId, async (p) => {
      if (!this.record(p)) {
        try {
          await this.create(spec, p)
          if (powerOn) await this.launch(spec.serverId, p)
        } catch (err) {
          await this.teardown(spec.serverId, p, 'keep shared disks')
          throw err
        }
      } else if (powerOn && !runningPid(p.pidfile)) {
        await this.launch(spec.serverId, p)
      }
    })
  }

  async consoleOutput(serverId: string, lines?: number): Promise<string> {
    const p = this.paths.instance(serverId)
    this.require(serverId, p)
    return readConsoleLog(p.consoleLog, lines)
  }

  /**
   * A remote-console session: a connection to the guest's serial socket (its bytes both ways; QEMU serves one
   * client at a time, a second waits for the first to leave) or its VNC socket (RFB from the first byte). It ends
   * when QEMU does.
   */
  async openConsole(serverId: string, protocol: ConsoleProtocol): Promise<Duplex> {
    const p = this.paths.instance(serverId)
    this.require(serverId, p)
    if (!runningPid(p.pidfile)) throw new DriverError(`guest ${serverId} is not running: its console is closed`, 409)
    const path = protocol === 'serial' ? p.serial : p.vnc
    return new Promise((resolve, reject) => {
      const socket = connect(path)
      socket.once('connect', () => resolve(socket))
      socket.once('error', (err) => reject(new DriverError(`the ${protocol} console of guest ${serverId} does not answer: ${err.message}`, 409)))
    })
  }

  /**
   * Lets go of a guest the control plane says this host must not hold (it moved, or its server is gone): on a QEMU
   * host nothing else would ever remove it, so its process and files go; disks in Ceph stay for the host that has it.
   */
  forget(serverId: string): Promise<void> {
    return this.exclusive(serverId, (p) => this.teardown(serverId, p, 'keep shared disks'))
  }

  /** Guests live on the host's disk and in their own processes: a new driver finds them without being told. */
  adopt(_guests: GuestInfo[]): void {}

  /** Runs QMP commands on a guest's monitor (for other agent modules: volume hot-plug, remote consoles), under its lock. */
  withMonitor<T>(serverId: string, fn: (qmp: QmpClient) => Promise<T>): Promise<T> {
    return this.exclusive(serverId, (p) => {
      this.require(serverId, p)
      return this.qmp(p, fn)
    })
  }

  // ---- internals ----

  private log(level: 'info' | 'warn' | 'error', message: string, fields: Record<string, unknown> = {}): void {
    this.options.log?.(level, message, { driver: 'qemu', ...fields })
  }

  /** One operation at a time per guest; later callers queue behind it. */
  private async exclusive<T>(serverId: string, fn: (p: InstancePaths) => Promise<T>): Promise<T> {
    const p = this.paths.instance(serverId)
    const previous = this.locks.get(serverId) ?? Promise.resolve()
    const run = previous.then(async () => {
      try {
        return await fn(p)
      } finally {
        // What listGuests reports while the next operation holds the guest.
        const power = await this.power(p).catch(() => undefined)
        if (power === undefined) this.lastPower.delete(serverId)
        else this.lastPower.set(serverId, power)
      }
    })
    const tail = run.then(
      () => {},
      () => {},
    )
    this.locks.set(serverId, tail)
    try {
      return await run
    } catch (err) {
      throw toDriverError(err)
    } finally {
      if (this.locks.get(serverId) === tail) this.locks.delete(serverId)
    }
  }

  private record(p: InstancePaths): GuestRecord | undefined {
    try {
      return JSON.parse(readFileSync(p.record, 'utf8')) as GuestRecord
    } catch {
      return undefined
    }
  }

  private require(serverId: string, p: InstancePaths): GuestRecord {
    const rec = this.record(p)
    if (!rec) throw new DriverError(`Instance ${serverId} could not be found on host ${this.options.hostname}.`, 404)
    return rec
  }

  private save(p: InstancePaths, rec: GuestRecord): void {
    writeFileSync(`${p.record}.tmp`, JSON.stringify(rec), { mode: 0o600 })
    renameSync(`${p.record}.tmp`, p.record)
  }

  /** The files of a new guest: root, ephemeral and swap disks, and the config drive. */
  private async create(spec: GuestSpec, p: InstancePaths): Promise<void> {
    privateDir(p.dir)
    guestHardware(spec)
    cpuTopology(spec)
    await this.disks.ensureRoot(p, spec)
    if (spec.kernel) await this.images.get(spec.kernel)
    if (spec.ramdisk) await this.images.get(spec.ramdisk)
    await this.disks.ensureFlavorDisks(p, spec)
    if (spec.configDrive && !existsSync(p.configDrive)) await writeConfigDrive(p.configDrive, decodeFiles(spec.configDrive))
    for (const v of spec.volumes ?? []) if (v.connection) await writeVolumeKey(p.dir, v)
    const before = this.record(p)
    // A spec without volumes (rebuild, …) keeps those the guest has.
    const volumes = (spec.volumes ?? before?.spec.volumes)?.map(withoutKey)
    this.save(p, { spec: { ...withoutDrive(spec), volumes }, rescued: before?.rescued ?? false, suspended: before?.suspended ?? false, boots: before?.boots ?? 0 })
  }

  /** The disks of a guest arriving from another host (cold migration), and its kernel and ramdisk. */
  private async receiveDisks(spec: GuestSpec, p: InstancePaths): Promise<void> {
    privateDir(p.dir)
    try {
      await this.disks.receiveForMove(p, spec)
      if (spec.kernel) await this.images.get(spec.kernel)
      if (spec.ramdisk) await this.images.get(spec.ramdisk)
    } catch (err) {
      rmSync(p.dir, { recursive: true, force: true })
      throw err
    }
  }

  private plan(serverId: string, p: InstancePaths, rec: GuestRecord, incoming = false): LaunchPlan {
    const spec = rec.spec
    const hw = guestHardware(spec)
    const disks: PlannedDisk[] = []
    if (rec.rescued) disks.push({ node: 'rescue', file: p.rescueDisk, format: 'qcow2', bus: hw.diskBus, bootIndex: 1 })
    for (const d of this.disks.planned(p, spec, hw.diskBus)) disks.push(d.node === 'root' && !rec.rescued ? { ...d, bootIndex: 1 } : d)
    if (existsSync(p.configDrive)) {
      const bus = hw.cdromBus ?? (/q35/.test(hw.machine) ? 'sata' : 'ide')
      disks.push({ node: 'config', file: p.configDrive, format: 'raw', bus, cdrom: bus !== 'virtio', readOnly: true })
    }
    const kernelFile = (ref: GuestImageRef | null | undefined) => {
      if (!ref) return undefined
      const cached = this.images.cached(ref.id)
      if (!cached) throw new DriverError(`image ${ref.id} is not in this host's cache`)
      return cached.file
    }
    const kernel = kernelFile(spec.kernel)
    const accel = this.accel
    return {
      binary: this.binary,
      name: spec.instanceName,
      uuid: serverId,
      accel: accel.accel,
      cpu: accel.cpu,
      machine: hw.machine,
      vcpus: spec.flavor.vcpus,
      topology: cpuTopology(spec),
      memoryMb: spec.flavor.ram,
      scsiController: hw.scsiController,
      rng: hw.rng,
      video: hw.video,
      rtc: hw.rtc,
      ...(hw.firmware === 'uefi' && { uefi: { code: OVMF.code, vars: guestNvram(p.nvram) } }),
      pidfile: p.pidfile,
      qmpSocket: p.qmp,
      serialSocket: p.serial,
      consoleLog: p.consoleLog,
      vncSocket: p.vnc,
      ...(hw.guestAgent && { guestAgentSocket: p.qga }),
      disks,
      nics: nicsOf(spec, hw.vifModel, incoming ? rec.nicRootPorts : undefined),
      ...(kernel && {
        kernel: {
          kernel,
          ramdisk: kernelFile(spec.ramdisk),
          cmdline: spec.image?.properties.os_command_line || `root=/dev/vda console=tty0 console=ttyS0${accel.accel === 'tcg' ? ' no_timer_check' : ''}`,
        },
      }),
      incoming,
      daemonize: true,
      hotplugPorts: this.options.hotplugPorts ?? 4,
      // Without a root disk the guest boots from its first volume (boot from volume).
      volumes: (spec.volumes ?? [])
        .filter((v) => v.connection)
        .map((v, i) => ({ volume: v, keyDir: volumeKeyDir(p.dir, v.volumeId), ...(i === 0 && !this.disks.hasRoot(p, spec) && !rec.rescued && { bootIndex: 1 }) })),
    }
  }

  /** Starts the guest's QEMU (already running: nothing to do) and waits until QMP says it runs. */
  private async launch(serverId: string, p: InstancePaths, incoming = false): Promise<void> {
    if (runningPid(p.pidfile)) return
    const rec = this.require(serverId, p)
    const plan = this.plan(serverId, p, rec, incoming)
    for (const f of [p.qmp, p.serial, p.vnc, p.qga, p.pidfile]) rmSync(f, { force: true })
    mkdirSync(this.paths.run, { recursive: true })
    rotateConsoleLog(p.consoleLog, this.options.consoleLogMaxBytes ?? 1024 * 1024)
    const scope = this.options.systemdScope ?? (this.options.root === '/' && systemdAvailable())
    await startDaemonized({ binary: this.binary, args: qemuArgs(plan), ...(scope && { systemdUnit: `pcc-guest-${serverId}` }) })
    const status = await this.qmp(p, async (q) => ((await q.execute<{ status: string }>('query-status')).status))
    if (!incoming && status !== 'running') throw new DriverError(`QEMU started but the guest is ${status}`)
    if (!incoming) this.save(p, { ...rec, boots: rec.boots + 1, nicRootPorts: undefined })
  }

  /** Starts QEMU waiting for the saved memory, loads it and lets the guest run on. */
  private async restore(serverId: string, p: InstancePaths, rec: GuestRecord): Promise<void> {
    if (!existsSync(p.suspendState)) throw new DriverError(`the saved state of guest ${serverId} is missing`)
    await this.launch(serverId, p, true)
    try {
      await this.qmp(p, async (q) => {
        await q.execute('migrate-incoming', { uri: `exec:cat ${shellQuote(p.suspendState)}` })
        await migrationDone(q, 600_000)
        await q.execute('cont')
      })
    } catch (err) {
      await this.stopHard(p)
      throw err
    }
    rmSync(p.suspendState, { force: true })
    this.save(p, { ...rec, suspended: false })
  }

  /** Connects to the guest's monitor, runs `fn`, disconnects. QEMU not answering is a DriverError. */
  private async qmp<T>(p: InstancePaths, fn: (q: QmpClient) => Promise<T>): Promise<T> {
    let client: QmpClient | undefined
    for (let attempt = 0; ; attempt++) {
      try {
        client = await QmpClient.connect(p.qmp)
        break
      } catch (err) {
        // The socket appears a moment after QEMU daemonizes; a QEMU that is gone never answers.
        if (attempt >= 50 || !runningPid(p.pidfile)) throw new DriverError(`the guest's monitor does not answer: ${(err as Error).message}`)
        await new Promise((r) => setTimeout(r, 100))
      }
    }
    try {
      return await fn(client)
    } finally {
      client.close()
    }
  }

  /** QEMU's run state, or undefined when no QEMU runs for the guest. */
  private async status(p: InstancePaths): Promise<string | undefined> {
    if (!runningPid(p.pidfile)) return undefined
    try {
      return await this.qmp(p, async (q) => (await q.execute<{ status: string }>('query-status')).status)
    } catch {
      return runningPid(p.pidfile) ? 'unknown' : undefined
    }
  }

  private async power(p: InstancePaths, rec = this.record(p)): Promise<number | undefined> {
    if (!rec) return undefined
    if (rec.suspended) return POWER.SUSPENDED
    const status = await this.status(p)
    if (status === undefined) return POWER.SHUTDOWN
    return RUN_STATE_POWER[status] ?? POWER.NOSTATE
  }

  /** The power state listGuests reports (see there). */
  private async knownPower(serverId: string, p: InstancePaths, rec: GuestRecord): Promise<number> {
    // A guest under an operation reports what was last seen rather than waiting for the operation.
    if (this.locks.has(serverId)) return this.lastPower.get(serverId) ?? POWER.NOSTATE
    if (rec.suspended) return POWER.SUSPENDED
    if (!runningPid(p.pidfile)) return POWER.SHUTDOWN
    return this.lastPower.get(serverId) ?? (await this.view(serverId, rec)).powerState
  }

  /** The guest as QEMU says it is now (its power state from QMP). */
  private async view(serverId: string, rec: GuestRecord): Promise<GuestInfo> {
    const power = (await this.power(this.paths.instance(serverId), rec)) ?? POWER.NOSTATE
    this.lastPower.set(serverId, power)
    return this.info_(rec, power)
  }

  private info_(rec: GuestRecord, powerState: number): GuestInfo {
    return {
      serverId: rec.spec.serverId,
      powerState,
      rescued: rec.rescued,
      vcpus: rec.spec.flavor.vcpus,
      memoryMb: rec.spec.flavor.ram,
      diskGb: rec.spec.flavor.disk,
      boots: rec.boots,
      volumes: (rec.spec.volumes ?? []).map((v) => v.volumeId),
    }
  }

  /**
   * A clean power-off within `timeoutMs`: first the guest agent's guest-shutdown when the image has the agent (as
   * libvirt's shutdown tries the agent before ACPI), then the ACPI power button, repeated every 10 s (Nova's
   * shutdown_retry_interval) until QEMU exits; false on timeout.
   */
  private async powerDown(p: InstancePaths, timeoutMs: number): Promise<boolean> {
    const pid = runningPid(p.pidfile)
    if (!pid) return true
    const deadline = Date.now() + timeoutMs
    if (await this.agentShutdown(p, timeoutMs)) {
      if (await waitGone(pid, Math.min(AGENT_SHUTDOWN_WAIT_MS, deadline - Date.now()))) return true
      this.log('warn', 'the guest did not power off after the guest agent\'s shutdown: trying ACPI', { path: p.dir })
    }
    while (Date.now() < deadline) {
      await this.qmp(p, (q) => q.execute('system_powerdown')).catch(() => {})
      if (await waitGone(pid, Math.min(10_000, deadline - Date.now()))) return true
    }
    return false
  }

  /** Asks the guest agent to power the guest off; true when it took the command (it answers nothing on success). */
  private async agentShutdown(p: InstancePaths, timeoutMs: number): Promise<boolean> {
    const rec = this.record(p)
    if (!rec || !guestHardware(rec.spec).guestAgent) return false
    try {
      await this.guestAgent(p, (a) => a.sendWithoutAnswer('guest-shutdown', { mode: 'powerdown' }), Math.min(this.agentSyncMs, timeoutMs / 3))
      return true
    } catch (err) {
      this.log('info', 'the guest agent did not take the shutdown: trying ACPI', { path: p.dir, reason: (err as Error).message })
      return false
    }
  }

  /**
   * Quiesces a guest for a snapshot of its root disk (Nova's libvirt _set_quiesced) and gives back the thaw, which the
   * caller runs however the snapshot ends. With os_require_quiesce a guest that cannot be quiesced (no agent in the
   * image, or one that does not answer) fails the snapshot with 409; with only hw_qemu_guest_agent, a failed freeze
   * is logged and the snapshot goes on crash-consistent, as Nova does.
   */
  private async quiesceForSnapshot(serverId: string, p: InstancePaths, rec: GuestRecord): Promise<(() => Promise<void>) | undefined> {
    const hw = guestHardware(rec.spec)
    if (!hw.guestAgent && !hw.requireQuiesce) return undefined
    let held: GuestAgentClient
    try {
      held = await this.freeze(serverId, p, rec, 'the snapshot')
    } catch (err) {
      const reason = (err as Error).message
      if (!hw.requireQuiesce) {
        this.log('info', 'skipping quiescing the guest for the snapshot', { serverId, reason })
        return undefined
      }
      if (!hw.guestAgent) throw new DriverError(`Quiescing requires the QEMU guest agent (image property os_require_quiesce is set): ${GUEST_AGENT_NOT_ENABLED}`, 409)
      // (The freeze's reason already says "Quiescing the guest failed: …".)
      throw new DriverError(`${reason} (image property os_require_quiesce is set)`, 409)
    }
    return () => this.thaw(serverId, p, 'the snapshot', held)
  }

  /**
   * Freezes the guest's file systems through the guest agent and answers the agent connection the freeze was made
   * on (the thaw goes on it first). A guest that cannot be quiesced is a DriverError (409): no agent in the image,
   * or one that does not answer or fails the freeze (then thawed all the same: a freeze the agent took but did not
   * answer in time may still happen in the guest).
   */
  private async freeze(serverId: string, p: InstancePaths, rec: GuestRecord, purpose: string): Promise<GuestAgentClient> {
    if (!guestHardware(rec.spec).guestAgent) throw new DriverError(`${GUEST_AGENT_NOT_ENABLED}: quiescing needs it (image property hw_qemu_guest_agent=yes)`, 409)
    let agent: GuestAgentClient | undefined
    try {
      agent = await GuestAgentClient.connect(p.qga, this.agentSyncMs)
      const frozen = await agent.execute<number>('guest-fsfreeze-freeze', undefined, AGENT_FREEZE_MS)
      this.log('info', `guest file systems frozen for ${purpose}`, { serverId, frozen })
      return agent
    } catch (err) {
      // The thaw on a fresh connection, once this one is closed: QEMU serves one at a time.
      agent?.close()
      if (agent) await this.guestAgent(p, (a) => a.execute('guest-fsfreeze-thaw')).catch(() => {})
      throw new DriverError(`Quiescing the guest failed: ${(err as Error).message}`, 409)
    }
  }

  /** Thaws the guest's file systems, on `held` (the freeze's connection) when given, else on a fresh connection. */
  private async thaw(serverId: string, p: InstancePaths, purpose: string, held?: GuestAgentClient): Promise<void> {
    try {
      const thawed = held ? await held.execute<number>('guest-fsfreeze-thaw') : await this.guestAgent(p, (a) => a.execute<number>('guest-fsfreeze-thaw'))
      this.log('info', `guest file systems thawed after ${purpose}`, { serverId, thawed })
    } catch (err) {
      // The guest stays frozen otherwise: one more try on a fresh connection before the caller hears of it.
      held?.close()
      const retry = await this.guestAgent(p, (a) => a.execute<number>('guest-fsfreeze-thaw')).catch((again: Error) => again)
      if (retry instanceof Error) throw new DriverError(`the guest's file systems could not be thawed after ${purpose}: ${(err as Error).message}`, 409)
    } finally {
      held?.close()
    }
  }

  /** Connects to the guest agent (synchronising first), runs `fn`, disconnects; a silent agent is a GuestAgentUnavailable. */
  private async guestAgent<T>(p: InstancePaths, fn: (agent: GuestAgentClient) => Promise<T>, syncMs = this.agentSyncMs): Promise<T> {
    if (!runningPid(p.pidfile)) throw new GuestAgentUnavailable('the guest is not running, so its QEMU guest agent cannot answer')
    const agent = await GuestAgentClient.connect(p.qga, syncMs)
    try {
      return await fn(agent)
    } finally {
      agent.close()
    }
  }

  /** Stops QEMU now: `quit`, then SIGTERM, then SIGKILL (Proxmox's _do_vm_stop, with shorter waits; at most 20 s). */
  private async stopHard(p: InstancePaths): Promise<void> {
    const pid = runningPid(p.pidfile)
    if (!pid) return
    await this.qmp(p, (q) => q.execute('quit')).catch(() => {})
    if (await waitGone(pid, 10_000)) return
    signal(pid, 'SIGTERM')
    if (await waitGone(pid, 5_000)) return
    signal(pid, 'SIGKILL')
    await waitGone(pid, 5_000)
  }

  /**
   * Everything of the guest on this host: process, files, sockets; and its disks wherever they are when the guest
   * itself goes (disks in Ceph outlive a host letting go of the guest: another host runs it on them).
   */
  private async teardown(serverId: string, p: InstancePaths, disks: 'remove disks' | 'keep shared disks'): Promise<void> {
    await this.stopHard(p)
    if (disks === 'remove disks') await this.disks.remove(p, serverId)
    rmSync(p.dir, { recursive: true, force: true })
    for (const f of [p.qmp, p.serial, p.vnc, p.qga]) rmSync(f, { force: true })
  }
}

/** `fn` run at most once (later calls wait for the first); undefined stays undefined. */
function once(fn: (() => Promise<void>) | undefined): (() => Promise<void>) | undefined {
  if (!fn) return undefined
  let run: Promise<void> | undefined
  return () => (run ??= fn())
}

function shellQuote(path: string): string {
  return `'${path.replace(/'/g, `'\\''`)}'`
}

function withoutKey(volume: VolumeConnection): VolumeConnection {
  if (volume.connection?.driver_volume_type !== 'nbd') return volume
  const { psk_key: _key, ...data } = volume.connection.data
  return { ...volume, connection: { ...volume.connection, data } }
}

function withoutDrive(spec: GuestSpec): Omit<GuestSpec, 'configDrive'> {
  const { configDrive: _drive, ...rest } = spec
  return rest
}

function decodeFiles(files: Record<string, string>): Record<string, Buffer> {
  return Object.fromEntries(Object.entries(files).map(([path, b64]) => [path, Buffer.from(b64, 'base64')]))
}

function toDriverError(err: unknown): Error {
  if (err instanceof DriverError) return err
  if (err instanceof QmpError || err instanceof QmpUnavailable) return new DriverError(err.message)
  if (err instanceof GuestAgentError || err instanceof GuestAgentUnavailable) return new DriverError(err.message, 409)
  const e = err as NodeJS.ErrnoException
  if (e.code === 'ENOSPC') return new DriverError(`the host is out of disk space: ${e.message}`)
  if (e.code) return new DriverError(`${e.code}: ${e.message}`)
  return err as Error
}

/** OVMF as Debian's ovmf package installs it (4 MiB flash: code and the variable store template). */
const OVMF = { code: '/usr/share/OVMF/OVMF_CODE_4M.fd', vars: '/usr/share/OVMF/OVMF_VARS_4M.fd' }

/**
 * The guest's UEFI variable store: its own writable copy of OVMF's template, made at its first UEFI start on this
 * host (a guest moved here starts with fresh variables: OVMF then boots the disk by its default order).
 */
function guestNvram(path: string): string {
  if (!existsSync(OVMF.code) || !existsSync(OVMF.vars)) throw new DriverError('image property hw_firmware_type=uefi needs OVMF on this host (Debian package ovmf)')
  if (!existsSync(path)) copyFileSync(OVMF.vars, path)
  return path
}
