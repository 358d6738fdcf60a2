/**
 * The QEMU command line of a guest: a pure function from a launch plan to argv, so every flag can be tested
 * without running QEMU, and the same plan gives the same devices on every start (suspend/resume and live migration
 * need the destination's devices to match the source's exactly).
 *
 * The shape follows Proxmox's qemu-server: daemonized with a pidfile, `-nodefaults`, QMP on a unix socket, the
 * serial port on a unix socket whose traffic is also appended to the console log, VNC on a unix socket; disks as
 * `-blockdev` nodes with explicit formats (QEMU never probes a user's image), NICs on taps named after their port.
 */
import type { GuestImageRef, GuestSpec, VolumeConnection } from '../../../contracts/host/compute-driver.js'
import { tapName } from '../../../contracts/network/names.js'
import { volumeArgs } from './volumes.js'
import type { RbdBlockdev } from '../../../lib/ceph/rbd.js'
import { DriverError } from '../../../contracts/host/compute-driver.js'
import { cpuTopologyOf, DISK_BUSES, imageHardwareOf, ImageHardwareError, VIF_MODELS, type CpuTopology, type DiskBus, type ImageHardware } from '../../../contracts/compute/image-hardware.js'

export type { DiskBus }
export type Accelerator = 'kvm' | 'tcg'

export interface PlannedDisk {
  /** Block node name (`root`, `ephemeral0`, `swap`, `config`, `rescue`); the device is `disk-<node>`. */
  node: string
  /** The disk's file, or (with `rbd`) its name for messages. */
  file: string
  /** An RBD image opened through librbd instead of a file (guest disks on Ceph, rbd-disks.ts). */
  rbd?: RbdBlockdev
  format: 'qcow2' | 'raw'
  bus: DiskBus
  cdrom?: boolean
  readOnly?: boolean
  bootIndex?: number
}

export interface PlannedNic {
  id: string
  tap: string
  mac: string
  model: string
  /** The q35 root port a hot-plug put it in, for a restore of that QEMU's saved state; else QEMU places it. */
  rootPort?: string
}

export interface LaunchPlan {
  binary: string
  name: string
  uuid: string
  accel: Accelerator
  cpu: string | undefined
  machine: string
  vcpus: number
  /** sockets × cores × threads = vcpus, when the flavor or image sets one (else QEMU's one socket per vCPU). */
  topology?: CpuTopology
  memoryMb: number
  /** The SCSI controller of bus-scsi disks (hw_scsi_model), the RNG (hw_rng_model), the display (hw_video_model). */
  scsiController?: string
  rng?: string
  /** Display device; null: none. */
  video?: string | null
  rtc?: 'utc' | 'localtime'
  /** UEFI: OVMF's code (read-only) and the guest's own copy of its variable store (hw_firmware_type=uefi). */
  uefi?: { code: string; vars: string }
  /** The guest agent's channel (hw_qemu_guest_agent=yes): the host end of its virtio-serial port, a unix socket. */
  guestAgentSocket?: string
  pidfile: string
  qmpSocket: string
  serialSocket: string
  consoleLog: string
  vncSocket: string
  disks: PlannedDisk[]
  nics: PlannedNic[]
  kernel?: { kernel: string; ramdisk?: string; cmdline: string }
  /** Start waiting for an incoming migration (`migrate-incoming` over QMP), paused. */
  incoming?: boolean
  daemonize: boolean
  /** Empty PCIe root ports for hot-plug on q35 (the root bus `pcie.0` cannot hot-plug). */
  hotplugPorts: number
  /** Block storage volumes (NBD exports), after the local disks; the boot volume has a boot index. */
  volumes?: PlannedVolume[]
}

export interface PlannedVolume {
  volume: VolumeConnection
  /** The directory of the volume's TLS-PSK key file (volumes.ts). */
  keyDir: string
  bootIndex?: number
}

/** The bus of the hot-plug slots: `pci.0` on i440FX machines (ACPI hot-plug), root ports on q35. */
export function hotplugBuses(machine: string, ports: number): string[] {
  return isQ35(machine) ? Array.from({ length: ports }, (_, i) => `hotplug${i}`) : ['pci.0']
}

export function isQ35(machine: string): boolean {
  return /q35/.test(machine)
}

export { DISK_BUSES, VIF_MODELS }

/** Reads the hardware image properties (the table in contracts); a value outside it is a DriverError 400 naming it. */
export function imageHardware(image: GuestImageRef | null | undefined): ImageHardware {
  return hardwareOf(image?.properties)
}

/**
 * The image properties that describe a guest: its image's, or for a guest booted from a volume, those of the image
 * the volume was made of (its volume_image_metadata, as Nova's image_meta of a volume-backed instance). Its
 * hardware, CPU topology and login user all come from them.
 */
export function guestImageProperties(spec: Pick<GuestSpec, 'image' | 'bootVolumeImage'>): Record<string, string> | undefined {
  return spec.image?.properties ?? spec.bootVolumeImage ?? undefined
}

/** The hardware a guest runs with (guestImageProperties). */
export function guestHardware(spec: Pick<GuestSpec, 'image' | 'bootVolumeImage'>): ImageHardware {
  return hardwareOf(guestImageProperties(spec))
}

/** Whose password the admin password sets: the image's `os_admin_user`, else `Administrator` for Windows, else `root` (Nova's libvirt driver). */
export function adminUser(spec: Pick<GuestSpec, 'image' | 'bootVolumeImage'>): string {
  const props = guestImageProperties(spec) ?? {}
  return props.os_admin_user || (props.os_type === 'windows' ? 'Administrator' : 'root')
}

function hardwareOf(properties: Record<string, string> | undefined): ImageHardware {
  try {
    return imageHardwareOf(properties)
  } catch (err) {
    if (err instanceof ImageHardwareError) throw new DriverError(err.message, 400)
    throw err
  }
}

/** The guest's CPU topology from its flavor and image (contracts), as a DriverError 400 when it cannot be. */
export function cpuTopology(spec: GuestSpec): CpuTopology | undefined {
  try {
    return cpuTopologyOf(spec.flavor.vcpus, spec.flavor.extra_specs, guestImageProperties(spec))
  } catch (err) {
    if (err instanceof ImageHardwareError) throw new DriverError(err.message, 400)
    throw err
  }
}

/** QEMU's option syntax doubles commas inside a value. */
const esc = (value: string) => value.replace(/,/g, ',,')

/**
 * The QEMU names of a NIC, after its port (not its place in the list), so that a NIC keeps its names when another
 * is hot-plugged or unplugged (nics.ts), and a running guest's NIC is found by its port. The backend is `host<id>`.
 */
export function nicNames(portId: string): { device: string; netdev: string } {
  const device = `nic-${portId.replaceAll('-', '').slice(0, 16)}`
  return { device, netdev: `host${device}` }
}

export function nicsOf(spec: GuestSpec, model: string, rootPorts: Record<string, string> = {}): PlannedNic[] {
  return (spec.nics ?? []).map((n) => ({
    id: nicNames(n.portId).device,
    tap: tapName(n.portId),
    mac: n.macAddress,
    model,
    ...(rootPorts[n.portId] && { rootPort: rootPorts[n.portId] }),
  }))
}

function diskArgs(disks: PlannedDisk[], machine: string, scsiController = 'virtio-scsi-pci'): string[] {
  const args: string[] = []
  let ideSlot = 0
  let scsi = false
  for (const d of disks) {
    const readOnly = d.readOnly || d.cdrom
    const node = {
      driver: d.format,
      'node-name': d.node,
      ...(readOnly && { 'read-only': true }),
      file: { ...(d.rbd ?? { driver: 'file', filename: d.file }), ...(readOnly && { 'read-only': true }) },
    }
    args.push('-blockdev', JSON.stringify(node))
    const id = `disk-${d.node}`
    const boot = d.bootIndex !== undefined ? `,bootindex=${d.bootIndex}` : ''
    if (d.bus === 'virtio') {
      args.push('-device', `virtio-blk-pci,drive=${d.node},id=${id}${boot}`)
    } else if (d.bus === 'scsi') {
      if (!scsi) args.push('-device', `${scsiController},id=scsi0`)
      scsi = true
      args.push('-device', `${d.cdrom ? 'scsi-cd' : 'scsi-hd'},drive=${d.node},id=${id},bus=scsi0.0${boot}`)
    } else {
      // IDE on i440FX: two buses with two units each; SATA on q35: the built-in AHCI's six ports, one unit each.
      const q35 = isQ35(machine)
      if (d.bus === 'ide' && q35) throw new DriverError('q35 machines have no IDE bus: use hw_disk_bus/hw_cdrom_bus sata')
      if (d.bus === 'sata' && !q35) throw new DriverError('pc (i440FX) machines have no SATA bus: use hw_disk_bus/hw_cdrom_bus ide')
      const where = q35 ? `bus=ide.${ideSlot}` : `bus=ide.${Math.floor(ideSlot / 2)},unit=${ideSlot % 2}`
      ideSlot++
      if (ideSlot > (q35 ? 6 : 4)) throw new DriverError(`too many ${d.bus} disks for a ${machine} machine`)
      args.push('-device', `${d.cdrom ? 'ide-cd' : 'ide-hd'},drive=${d.node},id=${id},${where}${boot}`)
    }
  }
  return args
}

/** The port name the guest agent opens in the guest (`/dev/virtio-ports/<name>`), as libvirt names its channel. */
export const GUEST_AGENT_PORT = 'org.qemu.guest_agent.0'

/**
 * A virtio-serial controller with one port for the QEMU guest agent, backed by a unix socket the host connects to
 * (qga.ts); the agent inside answers on it once it runs.
 */
function guestAgentArgs(socket: string): string[] {
  return [
    '-device', 'virtio-serial-pci,id=virtio-serial0',
    '-chardev', `socket,id=qga0,path=${esc(socket)},server=on,wait=off`,
    '-device', `virtserialport,bus=virtio-serial0.0,nr=1,chardev=qga0,id=channel0,name=${GUEST_AGENT_PORT}`,
  ]
}

/** argv for QEMU (without the binary). */
export function qemuArgs(plan: LaunchPlan): string[] {
  const args = [
    '-name', `guest=${esc(plan.name)},debug-threads=on`,
    '-uuid', plan.uuid,
    '-machine', plan.machine,
    '-accel', plan.accel,
    ...(plan.cpu ? ['-cpu', plan.cpu] : []),
    '-smp', plan.topology ? `${plan.vcpus},sockets=${plan.topology.sockets},cores=${plan.topology.cores},threads=${plan.topology.threads}` : String(plan.vcpus),
    '-m', String(plan.memoryMb),
    '-nodefaults',
    '-no-user-config',
    '-msg', 'timestamp=on',
    '-rtc', `base=${plan.rtc ?? 'utc'}`,
    '-boot', 'strict=on',
    ...(plan.uefi
      ? ['-drive', `if=pflash,format=raw,readonly=on,file=${esc(plan.uefi.code)}`, '-drive', `if=pflash,format=raw,file=${esc(plan.uefi.vars)}`]
      : []),
    '-smbios', `type=1,manufacturer=OpenStack Foundation,product=OpenStack Nova,family=Virtual Machine,serial=${plan.uuid},uuid=${plan.uuid}`,
    '-pidfile', plan.pidfile,
    ...(plan.daemonize ? ['-daemonize'] : []),
    '-chardev', `socket,id=qmp,path=${esc(plan.qmpSocket)},server=on,wait=off`,
    '-mon', 'chardev=qmp,mode=control',
    '-chardev', `socket,id=serial0,path=${esc(plan.serialSocket)},server=on,wait=off,logfile=${esc(plan.consoleLog)},logappend=on`,
    '-serial', 'chardev:serial0',
    ...(plan.video === null ? [] : ['-device', `${plan.video ?? 'VGA'},id=video0`]),
    // The guest's entropy from the host's /dev/urandom (hw_rng_model=virtio), as Nova's rng_dev_path default.
    ...(plan.rng ? ['-object', 'rng-random,id=rng0,filename=/dev/urandom', '-device', `${plan.rng},rng=rng0,id=rng0-dev`] : []),
    ...(plan.guestAgentSocket ? guestAgentArgs(plan.guestAgentSocket) : []),
    '-display', 'none',
    '-vnc', `unix:${plan.vncSocket}`,
    // A guest kernel panic (through pvpanic) leaves QEMU paused in guest-panicked: the host reports CRASHED.
    '-device', 'pvpanic',
    '-action', 'panic=pause',
  ]
  for (let i = 0; i < (isQ35(plan.machine) ? plan.hotplugPorts : 0); i++) args.push('-device', `pcie-root-port,id=hotplug${i},chassis=${i + 1},bus=pcie.0`)
  args.push(...diskArgs(plan.disks, plan.machine, plan.scsiController))
  for (const v of plan.volumes ?? []) args.push(...volumeArgs(v.volume, v.keyDir, plan.machine, v.bootIndex))
  if (plan.nics.length === 0) args.push('-nic', 'none')
  for (const n of plan.nics) {
    args.push('-netdev', `tap,id=host${n.id},ifname=${n.tap},script=no,downscript=no`)
    // A root port has one slot the guest looks at (0), as nics.ts plugs it.
    args.push('-device', `${n.model},netdev=host${n.id},id=${n.id},mac=${n.mac}${n.rootPort ? `,bus=${n.rootPort},addr=0` : ''}`)
  }
  if (plan.kernel) {
    args.push('-kernel', plan.kernel.kernel)
    if (plan.kernel.ramdisk) args.push('-initrd', plan.kernel.ramdisk)
    args.push('-append', plan.kernel.cmdline)
  }
  if (plan.incoming) args.push('-S', '-incoming', 'defer')
  return args
}
