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

export type DiskBus = 'virtio' | 'scsi' | 'ide' | 'sata'
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
}

export interface LaunchPlan {
  binary: string
  name: string
  uuid: string
  accel: Accelerator
  cpu: string | undefined
  machine: string
  vcpus: number
  memoryMb: number
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

/** Image properties the driver honours, with the values QEMU (and the guest image) can take. */
export const DISK_BUSES: Record<string, DiskBus> = { virtio: 'virtio', scsi: 'scsi', ide: 'ide', sata: 'sata' }
export const VIF_MODELS: Record<string, string> = {
  virtio: 'virtio-net-pci',
  e1000: 'e1000',
  e1000e: 'e1000e',
  rtl8139: 'rtl8139',
  ne2k_pci: 'ne2k_pci',
  pcnet: 'pcnet',
  vmxnet3: 'vmxnet3',
}
const MACHINE = /^(pc|q35|pc-i440fx-[0-9.]+|pc-q35-[0-9.]+)$/

/** QEMU's option syntax doubles commas inside a value. */
const esc = (value: string) => value.replace(/,/g, ',,')

/** Reads `hw_*` image properties; unknown values are a DriverError naming the property (Nova refuses them too). */
export function imageHardware(image: GuestImageRef | null | undefined): { diskBus: DiskBus; cdromBus: DiskBus | undefined; vifModel: string; machine: string } {
  const p = image?.properties ?? {}
  const pick = <T>(name: string, table: Record<string, T>, fallback: T): T => {
    const value = p[name]
    if (value === undefined || value === '') return fallback
    // Own keys only: `constructor` or `toString` are not buses or NIC models.
    if (!Object.hasOwn(table, value)) throw new DriverError(`image property ${name}=${value} is not supported by the qemu driver (one of: ${Object.keys(table).join(', ')})`, 400)
    return table[value]
  }
  const machine = p.hw_machine_type || 'pc'
  if (!MACHINE.test(machine)) throw new DriverError(`image property hw_machine_type=${machine} is not supported by the qemu driver (pc, q35 or a versioned pc-i440fx-*/pc-q35-*)`, 400)
  return {
    diskBus: pick('hw_disk_bus', DISK_BUSES, 'virtio'),
    cdromBus: p.hw_cdrom_bus ? pick('hw_cdrom_bus', DISK_BUSES, 'ide') : undefined,
    vifModel: pick('hw_vif_model', VIF_MODELS, 'virtio-net-pci'),
    machine,
  }
}

export function nicsOf(spec: GuestSpec, model: string): PlannedNic[] {
  return (spec.nics ?? []).map((n, i) => ({ id: `net${i}`, tap: tapName(n.portId), mac: n.macAddress, model }))
}

function diskArgs(disks: PlannedDisk[], machine: string): string[] {
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
      if (!scsi) args.push('-device', 'virtio-scsi-pci,id=scsi0')
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

/** argv for QEMU (without the binary). */
export function qemuArgs(plan: LaunchPlan): string[] {
  const args = [
    '-name', `guest=${esc(plan.name)},debug-threads=on`,
    '-uuid', plan.uuid,
    '-machine', plan.machine,
    '-accel', plan.accel,
    ...(plan.cpu ? ['-cpu', plan.cpu] : []),
    '-smp', String(plan.vcpus),
    '-m', String(plan.memoryMb),
    '-nodefaults',
    '-no-user-config',
    '-msg', 'timestamp=on',
    '-rtc', 'base=utc',
    '-boot', 'strict=on',
    '-smbios', `type=1,manufacturer=OpenStack Foundation,product=OpenStack Nova,family=Virtual Machine,serial=${plan.uuid},uuid=${plan.uuid}`,
    '-pidfile', plan.pidfile,
    ...(plan.daemonize ? ['-daemonize'] : []),
    '-chardev', `socket,id=qmp,path=${esc(plan.qmpSocket)},server=on,wait=off`,
    '-mon', 'chardev=qmp,mode=control',
    '-chardev', `socket,id=serial0,path=${esc(plan.serialSocket)},server=on,wait=off,logfile=${esc(plan.consoleLog)},logappend=on`,
    '-serial', 'chardev:serial0',
    '-device', 'VGA,id=video0',
    '-display', 'none',
    '-vnc', `unix:${plan.vncSocket}`,
    // A guest kernel panic (through pvpanic) leaves QEMU paused in guest-panicked: the host reports CRASHED.
    '-device', 'pvpanic',
    '-action', 'panic=pause',
  ]
  for (let i = 0; i < (isQ35(plan.machine) ? plan.hotplugPorts : 0); i++) args.push('-device', `pcie-root-port,id=hotplug${i},chassis=${i + 1},bus=pcie.0`)
  args.push(...diskArgs(plan.disks, plan.machine))
  for (const v of plan.volumes ?? []) args.push(...volumeArgs(v.volume, v.keyDir, plan.machine, v.bootIndex))
  if (plan.nics.length === 0) args.push('-nic', 'none')
  for (const n of plan.nics) {
    args.push('-netdev', `tap,id=host${n.id},ifname=${n.tap},script=no,downscript=no`)
    args.push('-device', `${n.model},netdev=host${n.id},id=${n.id},mac=${n.mac}`)
  }
  if (plan.kernel) {
    args.push('-kernel', plan.kernel.kernel)
    if (plan.kernel.ramdisk) args.push('-initrd', plan.kernel.ramdisk)
    args.push('-append', plan.kernel.cmdline)
  }
  if (plan.incoming) args.push('-S', '-incoming', 'defer')
  return args
}
