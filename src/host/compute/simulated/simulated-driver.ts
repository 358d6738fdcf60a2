/**
 * A hypervisor simulated in memory: guests with a power state that moves as a real one does (booting takes
 * time, a paused guest cannot be rebooted softly…), a console log that grows on each boot, a serial console to
 * type into (simulated-terminal.ts), operations that take a configurable time and fail at an injectable rate, and
 * a capacity reported like a real host's.
 */
import { Readable, type Duplex } from 'node:stream'
import { POWER } from '../../../contracts/host/compute-driver.js'
import { qcow2Image } from '../../../lib/qcow2.js'
import type { FlavorSnapshot } from '../../../contracts/host/compute-driver.js'
import { SimulatedTerminal } from './simulated-terminal.js'
import { SimulatedMeter } from './simulated-metrics.js'
import type { GuestSample } from '../../../contracts/host/metrics.js'
import { DriverError, liveMigrationCancelled, type ComputeDriver, type ConsoleProtocol, type DriverCapabilities, type GuestImageRef, type GuestInfo, type GuestNic, type GuestSpec, type HostCapacity, type LiveMigrationHandle, type LiveMigrationHandover, type SnapshotData, type VolumeConnection, type VolumeThrottle } from '../../../contracts/host/compute-driver.js'

export interface SimulatedOptions {
  hostname: string
  vcpus: number
  memoryMb: number
  diskGb: number
  /** Base duration of an operation in ms; spawn and migrations take a few times longer. */
  delayMs: number
  /** Probability 0–1 that an operation fails. */
  failureRate: number
  /** Operations that always fail (tests): e.g. {spawn: 'disk full'}. */
  failOps?: Record<string, string>
  random?: () => number
  /**
   * Where a guest this driver has not seen is looked up: the simulated hypervisor's disk is the store, so a
   * restarted process, or another process serving the same simulated host, finds the guests already running.
   */
  resolve?: (serverId: string) => Promise<GuestInfo | undefined>
}

interface Guest {
  spec: GuestSpec
  powerState: number
  rescued: boolean
  boots: number
  /** Boots of the guest's own disk, as a real guest counts them (a rescue boots another disk; a rebuild starts anew). */
  diskBoots?: number
  console: string[]
  /** Connected volumes: id → device. */
  volumes?: Map<string, string | null>
  /** Open serial console sessions: they see new console lines, and end when the guest stops. */
  terminals?: Set<SimulatedTerminal>
  /** File systems frozen by `quiesce` until `unquiesce`. */
  frozen?: boolean
}

/** A simulated guest's record as a live migration hands it over (JSON). */
interface SimulatedHandover extends LiveMigrationHandover {
  consoleLog: string
  boots: number
  diskBoots: number | null
  powerState: number
  rescued: boolean
  volumes: [string, string | null][]
}

/** Adds lines to the guest's console log, and shows them on its open serial consoles. */
function print(guest: Guest, ...lines: string[]): void {
  guest.console.push(...lines)
  for (const t of guest.terminals ?? []) t.print(lines)
}

/** Whether the guest's devices are live (running or paused): a NIC change is a hot-plug the guest sees. */
function hasDevices(guest: Guest): boolean {
  return guest.powerState === POWER.RUNNING || guest.powerState === POWER.PAUSED
}

/** The guest's QEMU is gone (powered off, suspended, destroyed, moved): its serial consoles end, as a socket would. */
function hangUp(guest: Guest | undefined): void {
  for (const t of guest?.terminals ?? []) t.hangUp()
  guest?.terminals?.clear()
}

const GIB = 1024 ** 3

function connect(guest: Guest, volume: VolumeConnection): void {
  guest.volumes ??= new Map()
  if (!guest.volumes.has(volume.volumeId)) {
    print(guest, `[ pcc ] virtio_blk: ${volume.device ?? 'disk'} attached (volume ${volume.volumeId})`)
    // The limits a QEMU host would set on the disk (its QoS), where a test or an operator can read them.
    if (volume.throttle) print(guest, `[ pcc ] virtio_blk: volume ${volume.volumeId} throttled: ${throttleText(volume.throttle)}`)
  }
  guest.volumes.set(volume.volumeId, volume.device)
}

function throttleText(throttle: VolumeThrottle): string {
  return Object.entries(throttle)
    .map(([key, value]) => `${key}=${value}`)
    .join(' ')
}

/**
 * The root disk of a simulated guest as an image: an empty qcow2 of the flavor's disk size (1 GiB for a zero-disk
 * flavor) whose header names the server and the image it was built from. Deterministic: the same guest gives
 * the same bytes.
 */
export function simulatedRootDisk(spec: Pick<GuestSpec, 'serverId' | 'imageId' | 'flavor'>): Buffer {
  const label = `pcc simulated root disk\nserver ${spec.serverId}\nimage ${spec.imageId ?? 'none'}\n`
  return qcow2Image({ virtualSize: Math.max(1, spec.flavor.disk) * GIB, label })
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

/** How long each operation takes, in multiples of the base delay. */
const COST: Record<string, number> = { spawn: 3, rebuild: 3, migrate: 3, finishMigration: 2, liveMigrate: 3, evacuate: 3, snapshot: 2 }

/**
 * A live migration this host is sending: the copy's wait, which a cancel or a force-complete cuts short (the
 * simulated copy takes `liveMigrate`'s cost, or `liveMigrationMs` when a test set it).
 */
class OutgoingCopy {
  cancelled = false
  /** The power state the guest had before a force-complete paused it (it runs on as before wherever it ends). */
  pausedFrom: number | undefined
  private end: (() => void) | undefined
  private timer: NodeJS.Timeout | undefined

  wait(ms: number): Promise<void> {
    if (this.cancelled || this.pausedFrom !== undefined) return Promise.resolve()
    return new Promise((resolve) => {
      this.end = resolve
      this.timer = setTimeout(resolve, ms)
    })
  }

  /** The copy is over now: cancelled, or converged at once since the guest no longer changes. */
  cut(): void {
    clearTimeout(this.timer)
    this.end?.()
  }
}

export class SimulatedDriver implements ComputeDriver {
  readonly type = 'simulated'
  readonly capabilities = CAPABILITIES
  readonly guestDetails = false
  private readonly guests = new Map<string, Guest>()
  /** Guests this driver destroyed or lost: never looked up again. */
  private readonly gone = new Set<string>()
  /** Live migrations this host prepared as their destination: the guest's spec, until its record arrives. */
  private readonly incoming = new Map<string, GuestSpec>()
  /** Live migrations this host is sending, by guest (cancelLiveMigration, forceCompleteLiveMigration). */
  private readonly outgoing = new Map<string, OutgoingCopy>()
  /** Tests: how long a live migration's copy takes here, instead of its usual cost (so it can be cancelled or forced). */
  liveMigrationMs: number | undefined
  private readonly random: () => number
  private readonly meter = new SimulatedMeter()

  constructor(readonly options: SimulatedOptions) {
    this.random = options.random ?? Math.random
  }

  /** Changes the failure injection at run time (tests, per host). */
  injectFailures(failureRate: number, failOps: Record<string, string> = {}): void {
    this.options.failureRate = failureRate
    this.options.failOps = failOps
  }

  setDelay(delayMs: number): void {
    this.options.delayMs = delayMs
  }

  async capacity(): Promise<HostCapacity> {
    return {
      vcpus: this.options.vcpus,
      memoryMb: this.options.memoryMb,
      diskGb: this.options.diskGb,
      // Nova's fake driver says `fake`: a simulated host never claims to run QEMU.
      hypervisorType: 'fake',
      hypervisorVersion: 1000,
      cpuInfo: { arch: 'x86_64', model: 'pcc-simulated', vendor: 'pcc', topology: { sockets: 1, cores: this.options.vcpus, threads: 1 } },
    }
  }

  async listGuests(): Promise<GuestInfo[]> {
    return [...this.guests.values()].map((g) => this.view(g))
  }

  async sampleGuests(): Promise<GuestSample[]> {
    const guests = [...this.guests.values()].map((g) => ({ serverId: g.spec.serverId, powerState: g.powerState, vcpus: g.spec.flavor.vcpus, memoryMb: g.spec.flavor.ram, macs: (g.spec.nics ?? []).map((n) => n.macAddress) }))
    return this.meter.sample(guests)
  }

  async info(serverId: string): Promise<GuestInfo | undefined> {
    const guest = await this.guest(serverId).catch(() => undefined)
    return guest && this.view(guest)
  }

  async beginStep(_serverId: string, taskState: string): Promise<void> {
    await this.operate(`step:${taskState}`)
  }

  async spawn(spec: GuestSpec): Promise<GuestInfo> {
    await this.operate('spawn')
    this.gone.delete(spec.serverId)
    let guest = this.guests.get(spec.serverId)
    if (!guest) {
      guest = { spec, powerState: POWER.NOSTATE, rescued: false, boots: 0, console: [] }
      this.guests.set(spec.serverId, guest)
    }
    for (const v of spec.volumes ?? []) connect(guest, v)
    if (guest.powerState !== POWER.RUNNING) this.boot(guest)
    return this.view(guest)
  }

  async destroy(serverId: string): Promise<void> {
    await this.operate('destroy')
    hangUp(this.guests.get(serverId))
    this.guests.delete(serverId)
    this.gone.add(serverId)
  }

  async reboot(serverId: string, type: 'SOFT' | 'HARD'): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate(type === 'SOFT' ? 'reboot' : 'rebootHard')
    if (type === 'SOFT' && guest.powerState !== POWER.RUNNING) throw new DriverError(`guest ${serverId} is not running; a soft reboot needs a running guest`)
    print(guest, type === 'SOFT' ? '[  OK  ] Reached target Reboot.' : '[ pcc ] hard reset')
    guest.rescued = false
    this.boot(guest)
  }

  async powerOff(serverId: string): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate('powerOff')
    if (guest.powerState !== POWER.SHUTDOWN) print(guest, '[  OK  ] Reached target Power-Off.')
    guest.powerState = POWER.SHUTDOWN
    hangUp(guest)
  }

  async powerOn(serverId: string): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate('powerOn')
    if (guest.powerState !== POWER.RUNNING) this.boot(guest)
  }

  async pause(serverId: string): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate('pause')
    if (guest.powerState === POWER.PAUSED) return
    if (guest.powerState !== POWER.RUNNING) throw new DriverError(`guest ${serverId} is not running and cannot be paused`)
    guest.powerState = POWER.PAUSED
  }

  async unpause(serverId: string): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate('unpause')
    if (guest.powerState === POWER.PAUSED) guest.powerState = POWER.RUNNING
  }

  async suspend(serverId: string): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate('suspend')
    if (guest.powerState === POWER.SUSPENDED) return
    if (guest.powerState !== POWER.RUNNING && guest.powerState !== POWER.PAUSED) throw new DriverError(`guest ${serverId} is not running and cannot be suspended`)
    guest.powerState = POWER.SUSPENDED
    hangUp(guest)
  }

  async resume(serverId: string): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate('resume')
    if (guest.powerState === POWER.SUSPENDED) guest.powerState = POWER.RUNNING
  }

  async rescue(serverId: string, image: GuestImageRef | null): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate('rescue')
    if (guest.rescued) return
    guest.rescued = true
    print(guest, `[ pcc ] booting rescue image ${image?.id ?? guest.spec.imageId ?? 'default'}`)
    this.boot(guest, 'rescue')
  }

  async unrescue(serverId: string): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate('unrescue')
    if (!guest.rescued) return
    guest.rescued = false
    this.boot(guest)
  }

  async rebuild(spec: GuestSpec): Promise<void> {
    const guest = await this.guest(spec.serverId)
    await this.operate('rebuild')
    guest.spec = spec
    print(guest, `[ pcc ] rebuilding from image ${spec.imageId ?? 'none'}`)
    guest.diskBoots = 0
    this.boot(guest)
  }

  async setAdminPassword(serverId: string): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate('setAdminPassword')
    if (guest.powerState !== POWER.RUNNING) throw new DriverError(`guest ${serverId} is not running; the password cannot be set`, 409)
    print(guest, '[ pcc ] admin password changed')
  }

  async snapshot(serverId: string): Promise<SnapshotData> {
    const guest = await this.guest(serverId)
    await this.operate('snapshot')
    return { diskFormat: 'qcow2', containerFormat: 'bare', data: Readable.from([simulatedRootDisk(guest.spec)]) }
  }

  /**
   * A simulated guest answers as one with a guest agent (as it takes a password): a running guest's file systems
   * freeze, its console says so as a real guest's freeze hook does; any other guest cannot be quiesced (409).
   */
  async quiesce(serverId: string): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate('quiesce')
    if (guest.powerState !== POWER.RUNNING) throw new DriverError(`guest ${serverId} is not running; its file systems cannot be quiesced`, 409)
    if (guest.frozen) return
    guest.frozen = true
    print(guest, '[ pcc ] fsfreeze freeze')
  }

  async unquiesce(serverId: string): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate('unquiesce')
    if (!guest.frozen) return
    guest.frozen = false
    print(guest, '[ pcc ] fsfreeze thaw')
  }

  /** The NICs the guest's record holds (tests: what attachNic and detachNic left). */
  nics(serverId: string): GuestNic[] {
    return this.guests.get(serverId)?.spec.nics ?? []
  }

  /**
   * Records the NIC in the guest's spec; a guest whose QEMU runs (running or paused) says so on its console as the
   * pcc guest image does (`nic <mac> added`). A NIC already there: nothing.
   */
  async attachNic(serverId: string, nic: GuestNic): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate('attachNic')
    if (guest.spec.nics?.some((n) => n.portId === nic.portId)) return
    guest.spec = { ...guest.spec, nics: [...(guest.spec.nics ?? []), nic] }
    if (hasDevices(guest)) print(guest, `[ pcc ] virtio_net: nic ${nic.macAddress} added`)
  }

  /** Drops the NIC from the record (a running guest's console says `nic <mac> removed`); a paused guest cannot let go of it (409). */
  async detachNic(serverId: string, portId: string): Promise<void> {
    const guest = await this.guest(serverId).catch(() => undefined)
    await this.operate('detachNic')
    const nic = guest?.spec.nics?.find((n) => n.portId === portId)
    if (!guest || !nic) return
    if (guest.powerState === POWER.PAUSED) throw new DriverError(`guest ${serverId} is paused and cannot release the NIC of port ${portId}: unpause it first`, 409)
    guest.spec = { ...guest.spec, nics: guest.spec.nics!.filter((n) => n.portId !== portId) }
    if (hasDevices(guest)) print(guest, `[ pcc ] virtio_net: nic ${nic.macAddress} removed`)
  }

  async attachVolume(serverId: string, volume: VolumeConnection): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate('attachVolume')
    connect(guest, volume)
  }

  async detachVolume(serverId: string, volumeId: string): Promise<void> {
    const guest = await this.guest(serverId).catch(() => undefined)
    await this.operate('detachVolume')
    if (guest?.volumes?.delete(volumeId)) print(guest, `[ pcc ] virtio_blk: volume ${volumeId} detached`)
  }

  async extendVolume(serverId: string, volume: VolumeConnection, sizeBytes: number): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate('extendVolume')
    guest.console.push(`[ pcc ] virtio_blk: volume ${volume.volumeId} capacity change to ${sizeBytes} bytes`)
  }

  async migrateDiskAndPowerOff(serverId: string, flavor?: FlavorSnapshot): Promise<void> {
    const guest = await this.guest(serverId)
    await this.operate('migrate')
    if (flavor && flavor.disk < guest.spec.flavor.disk) throw new DriverError(`Unable to resize disk down: the root disk is ${guest.spec.flavor.disk} GiB, flavor ${flavor.name} has ${flavor.disk} GiB.`, 400)
    guest.powerState = POWER.SHUTDOWN
    hangUp(guest)
  }

  async finishMigration(spec: GuestSpec, powerOn: boolean): Promise<void> {
    await this.operate('finishMigration')
    this.gone.delete(spec.serverId)
    const guest = this.guests.get(spec.serverId) ?? { spec, powerState: POWER.SHUTDOWN, rescued: false, boots: 0, console: [] }
    guest.spec = spec
    this.guests.set(spec.serverId, guest)
    if (powerOn && guest.powerState !== POWER.RUNNING) this.boot(guest)
  }

  /** Destination: remembers the guest's spec until its record arrives (nothing runs here before then). */
  async prepareLiveMigration(spec: GuestSpec): Promise<LiveMigrationHandle> {
    if (this.guests.has(spec.serverId)) throw new DriverError(`guest ${spec.serverId} already runs on host ${this.options.hostname}`, 409)
    this.incoming.set(spec.serverId, spec)
    return { driver: this.type, hostname: this.options.hostname }
  }

  /**
   * Source: the guest's record goes in the handover (its console, boots, power state, volumes); its QEMU would quit
   * here, so it stops and its serial consoles end. Failures injected as `liveMigrate` happen in this step.
   */
  async liveMigrateTo(serverId: string, handle: LiveMigrationHandle): Promise<LiveMigrationHandover> {
    const guest = await this.guest(serverId)
    const copy = new OutgoingCopy()
    this.outgoing.set(serverId, copy)
    try {
      await this.operate('liveMigrate', (ms) => copy.wait(this.liveMigrationMs ?? ms))
      if (copy.cancelled) throw liveMigrationCancelled(serverId, this.options.hostname)
    } catch (err) {
      // A guest paused by a force-complete runs on here, as it was.
      if (copy.pausedFrom !== undefined) guest.powerState = copy.pausedFrom
      throw copy.cancelled ? liveMigrationCancelled(serverId, this.options.hostname) : err
    } finally {
      this.outgoing.delete(serverId)
    }
    if (handle.driver !== this.type) throw new DriverError(`live migration from a simulated host goes only to another simulated host, not to a ${handle.driver} host`, 409)
    const handover: SimulatedHandover = {
      consoleLog: [...guest.console, `[ pcc ] live-migrated to ${String(handle.hostname)}`].join('\n'),
      boots: guest.boots,
      diskBoots: guest.diskBoots ?? null,
      powerState: copy.pausedFrom ?? guest.powerState,
      rescued: guest.rescued,
      volumes: [...(guest.volumes ?? new Map<string, string | null>()).entries()],
    }
    hangUp(guest)
    guest.powerState = POWER.SHUTDOWN
    return handover
  }

  /** Source: the copy under way stops and liveMigrateTo fails as cancelled; the guest runs on here. */
  async cancelLiveMigration(serverId: string): Promise<boolean> {
    const copy = this.outgoing.get(serverId)
    if (!copy) return false
    copy.cancelled = true
    copy.cut()
    return true
  }

  /** Source: the guest pauses here and the copy ends now (nothing changes any more); it runs on at the destination. */
  async forceCompleteLiveMigration(serverId: string): Promise<boolean> {
    const copy = this.outgoing.get(serverId)
    const guest = this.guests.get(serverId)
    if (!copy || !guest) return false
    if (copy.pausedFrom === undefined) {
      copy.pausedFrom = guest.powerState
      guest.powerState = POWER.PAUSED
    }
    copy.cut()
    return true
  }

  /** Destination: the guest runs on here as the source handed it over (repeated: finds it here). */
  async finishLiveMigration(serverId: string, handover: LiveMigrationHandover): Promise<void> {
    const spec = this.incoming.get(serverId)
    if (!spec) {
      if (this.guests.has(serverId)) return
      throw new DriverError(`no live migration of ${serverId} was prepared on host ${this.options.hostname}`, 409)
    }
    const h = handover as Partial<SimulatedHandover>
    this.gone.delete(serverId)
    this.guests.set(serverId, {
      spec,
      powerState: h.powerState ?? POWER.RUNNING,
      rescued: h.rescued ?? false,
      boots: h.boots ?? 0,
      ...(typeof h.diskBoots === 'number' && { diskBoots: h.diskBoots }),
      console: h.consoleLog ? h.consoleLog.split('\n') : [],
      volumes: new Map(h.volumes ?? []),
    })
    this.incoming.delete(serverId)
  }

  async abortLiveMigration(serverId: string): Promise<void> {
    this.incoming.delete(serverId)
  }

  async evacuateTo(spec: GuestSpec, powerOn: boolean): Promise<void> {
    await this.operate('evacuate')
    this.gone.delete(spec.serverId)
    const guest: Guest = this.guests.get(spec.serverId) ?? { spec, powerState: POWER.SHUTDOWN, rescued: false, boots: 0, console: [] }
    guest.spec = spec
    this.guests.set(spec.serverId, guest)
    if (powerOn && guest.powerState !== POWER.RUNNING) this.boot(guest)
  }

  async consoleOutput(serverId: string, lines?: number): Promise<string> {
    const guest = await this.guest(serverId)
    const all = guest.console
    return (lines === undefined || lines < 0 ? all : all.slice(Math.max(0, all.length - lines))).join('\n') + '\n'
  }

  /** The serial console (a simulated terminal); simulated hosts have no graphical display. */
  async openConsole(serverId: string, protocol: ConsoleProtocol): Promise<Duplex> {
    const guest = await this.guest(serverId)
    if (protocol !== 'serial') throw new DriverError('VNC is not available on simulated hosts.', 501)
    if (guest.powerState !== POWER.RUNNING && guest.powerState !== POWER.PAUSED) throw new DriverError(`Instance ${serverId} is not running: its console is available once it is started.`, 409)
    const name = guest.spec.hostname ?? guest.spec.instanceName
    const terminal = new SimulatedTerminal({ name, serverId, boots: () => guest.boots, history: () => guest.console })
    const open = (guest.terminals ??= new Set())
    open.add(terminal)
    terminal.once('close', () => open.delete(terminal))
    return terminal
  }

  async forget(serverId: string): Promise<void> {
    hangUp(this.guests.get(serverId))
    this.guests.delete(serverId)
    this.gone.add(serverId)
  }

  /** Simulates a guest vanishing from the hypervisor behind the control plane's back (tests, chaos). */
  loseGuest(serverId: string): void {
    hangUp(this.guests.get(serverId))
    this.guests.delete(serverId)
    this.gone.add(serverId)
  }

  /** Simulates the guest changing power state on its own (a shutdown from inside, a crash). */
  setGuestPower(serverId: string, powerState: number): void {
    const guest = this.guests.get(serverId)
    if (guest) guest.powerState = powerState
  }

  adopt(guests: GuestInfo[]): void {
    for (const g of guests) {
      if (this.guests.has(g.serverId)) continue
      const spec: GuestSpec = {
        serverId: g.serverId,
        instanceName: g.serverId,
        flavor: { id: '', name: '', vcpus: g.vcpus, ram: g.memoryMb, disk: g.diskGb, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs: {} },
        imageId: null,
        hostname: null,
        userData: null,
      }
      this.guests.set(g.serverId, { spec, powerState: g.powerState, rescued: g.rescued, boots: g.boots, console: [`[ pcc ] guest ${g.serverId} adopted by ${this.options.hostname}`] })
    }
  }

  private async guest(serverId: string): Promise<Guest> {
    let guest = this.guests.get(serverId)
    if (!guest && this.options.resolve && !this.gone.has(serverId)) {
      const found = await this.options.resolve(serverId)
      if (found) this.adopt([found])
      guest = this.guests.get(serverId)
    }
    if (!guest) throw new DriverError(`Instance ${serverId} could not be found on host ${this.options.hostname}.`, 404)
    return guest
  }

  private boot(guest: Guest, disk: 'own' | 'rescue' = 'own'): void {
    guest.boots += 1
    if (disk === 'own') guest.diskBoots = (guest.diskBoots ?? guest.boots - 1) + 1
    const name = guest.spec.hostname ?? guest.spec.instanceName
    const lines = [
      `[    0.000000] Linux version 6.1.0-pcc (${disk === 'own' ? `boot ${guest.diskBoots}` : 'rescue boot'})`,
      `[    0.412345] Command line: root=/dev/vda1 console=ttyS0`,
      `[    2.100000] cloud-init: instance ${guest.spec.serverId}`,
      `${name} login: `,
    ]
    guest.console.push(...lines)
    // A reboot ends the shell session: the console shows the boot and getty's prompt again.
    for (const t of guest.terminals ?? []) t.rebooted(lines)
    guest.powerState = POWER.RUNNING
    // A new boot has nothing frozen.
    guest.frozen = false
  }

  private async operate(op: string, sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms))): Promise<void> {
    const delay = this.options.delayMs * (COST[op] ?? 1)
    if (delay > 0 || op === 'liveMigrate') await sleep(delay)
    const forced = this.options.failOps?.[op]
    if (forced !== undefined) throw new DriverError(forced || `simulated failure of ${op} on ${this.options.hostname}`)
    if (this.options.failureRate > 0 && this.random() < this.options.failureRate) {
      throw new DriverError(`simulated failure of ${op} on ${this.options.hostname}`)
    }
  }

  private view(guest: Guest): GuestInfo {
    return {
      serverId: guest.spec.serverId,
      powerState: guest.powerState,
      rescued: guest.rescued,
      vcpus: guest.spec.flavor.vcpus,
      memoryMb: guest.spec.flavor.ram,
      diskGb: guest.spec.flavor.disk,
      boots: guest.boots,
      volumes: [...(guest.volumes?.keys() ?? [])],
    }
  }
}

