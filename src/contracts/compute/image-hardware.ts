/**
 * The image properties (and flavor extra specs) that shape a guest's virtual hardware, in one table: the values the
 * QEMU driver honours and what each becomes. The control plane reads it at server create (a value outside it is a
 * 400, as Nova's image property schema refuses it) and the driver reads it again when it builds the command line
 * (an image changed since, or a guest spec from elsewhere, is refused there with the same words).
 */

export type DiskBus = 'virtio' | 'scsi' | 'ide' | 'sata'

/** A property value outside the table, or a CPU topology that cannot be; the message names the property. */
export class ImageHardwareError extends Error {
  override name = 'ImageHardwareError'
}

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
/** The controller disks on bus scsi sit behind; Nova's other models (lsilogic, buslogic…) are not QEMU's. */
export const SCSI_MODELS: Record<string, string> = { 'virtio-scsi': 'virtio-scsi-pci' }
/** hw_rng_model: a virtio RNG fed from the host's /dev/urandom (Nova's default rng_dev_path is /dev/urandom too). */
export const RNG_MODELS: Record<string, string> = { virtio: 'virtio-rng-pci' }
/** hw_video_model → the QEMU display device; `none` gives the guest no display (VNC then shows nothing). */
export const VIDEO_MODELS: Record<string, string | null> = { vga: 'VGA', cirrus: 'cirrus-vga', virtio: 'virtio-vga', bochs: 'bochs-display', none: null }
/** os_type: Windows keeps its clock in local time (Nova's libvirt driver gives it a localtime clock). */
export const OS_TYPES: Record<string, { rtc: 'utc' | 'localtime' }> = { linux: { rtc: 'utc' }, windows: { rtc: 'localtime' } }
/** hw_firmware_type: SeaBIOS (QEMU's default) or OVMF (Debian's ovmf package). */
export const FIRMWARE_TYPES: Record<string, 'bios' | 'uefi'> = { bios: 'bios', uefi: 'uefi' }
/** img_config_drive: mandatory forces a config drive whatever the request says. */
export const CONFIG_DRIVE_POLICIES: Record<string, boolean> = { optional: false, mandatory: true }
/**
 * Nova's flexible booleans (hw_qemu_guest_agent, os_require_quiesce), as oslo's bool_from_string reads them; the
 * table refuses anything else rather than reading a typo as "no".
 */
export const BOOLEANS: Record<string, boolean> = { yes: true, y: true, true: true, t: true, on: true, '1': true, no: false, n: false, false: false, f: false, off: false, '0': false }
const MACHINE = /^(pc|q35|pc-i440fx-[0-9.]+|pc-q35-[0-9.]+)$/

export interface CpuTopology {
  sockets: number
  cores: number
  threads: number
}

export interface ImageHardware {
  diskBus: DiskBus
  cdromBus: DiskBus | undefined
  vifModel: string
  machine: string
  scsiController: string
  rng: string | undefined
  /** The display device, or null for none. */
  video: string | null
  rtc: 'utc' | 'localtime'
  configDrive: boolean
  firmware: 'bios' | 'uefi'
  /** hw_qemu_guest_agent: a virtio-serial channel `org.qemu.guest_agent.0` for the guest agent (docs/qemu.md). */
  guestAgent: boolean
  /** os_require_quiesce: a snapshot must freeze the guest's file systems through the agent, or fail. */
  requireQuiesce: boolean
}

function pick<T>(props: Record<string, string>, name: string, table: Record<string, T>, fallback: T): T {
  const value = props[name]
  if (value === undefined || value === '') return fallback
  // Own keys only: `constructor` or `toString` are not buses or NIC models.
  if (!Object.hasOwn(table, value)) throw new ImageHardwareError(`image property ${name}=${value} is not supported by the qemu driver (one of: ${Object.keys(table).join(', ')})`)
  return table[value]
}

/** Booleans are case-insensitive ("Yes", "TRUE"), as oslo reads them. */
function lowered(props: Record<string, string>, name: string): Record<string, string> {
  return props[name] === undefined ? {} : { [name]: props[name].toLowerCase() }
}

/** Reads the hardware image properties; a value outside the tables is an ImageHardwareError naming it. */
export function imageHardwareOf(props: Record<string, string> = {}): ImageHardware {
  const machine = props.hw_machine_type || 'pc'
  if (!MACHINE.test(machine)) throw new ImageHardwareError(`image property hw_machine_type=${machine} is not supported by the qemu driver (pc, q35 or a versioned pc-i440fx-*/pc-q35-*)`)
  return {
    diskBus: pick(props, 'hw_disk_bus', DISK_BUSES, 'virtio'),
    cdromBus: props.hw_cdrom_bus ? pick(props, 'hw_cdrom_bus', DISK_BUSES, 'ide') : undefined,
    vifModel: pick(props, 'hw_vif_model', VIF_MODELS, 'virtio-net-pci'),
    machine,
    scsiController: pick(props, 'hw_scsi_model', SCSI_MODELS, 'virtio-scsi-pci'),
    rng: pick<string | undefined>(props, 'hw_rng_model', RNG_MODELS, undefined),
    video: pick<string | null>(props, 'hw_video_model', VIDEO_MODELS, 'VGA'),
    rtc: pick(props, 'os_type', OS_TYPES, OS_TYPES.linux).rtc,
    configDrive: pick(props, 'img_config_drive', CONFIG_DRIVE_POLICIES, false),
    firmware: pick(props, 'hw_firmware_type', FIRMWARE_TYPES, 'bios'),
    guestAgent: pick(lowered(props, 'hw_qemu_guest_agent'), 'hw_qemu_guest_agent', BOOLEANS, false),
    requireQuiesce: pick(lowered(props, 'os_require_quiesce'), 'os_require_quiesce', BOOLEANS, false),
  }
}

const DIMENSIONS = ['sockets', 'cores', 'threads'] as const

function count(source: string, value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined
  if (!/^[1-9][0-9]{0,3}$/.test(value)) throw new ImageHardwareError(`${source}=${value} is not a positive integer`)
  return Number(value)
}

/**
 * The guest's CPU topology, as Nova chooses it: the flavor's `hw:cpu_sockets/cores/threads` are the most an image
 * may ask for, the image's `hw_cpu_sockets/cores/threads` pick within them; what neither sets is filled so the
 * product is the flavor's vCPUs (threads 1, then cores, then sockets take the rest). Undefined when nothing is
 * set (QEMU's default: one socket per vCPU). A topology whose product is not the vCPU count is refused.
 */
export function cpuTopologyOf(vcpus: number, extraSpecs: Record<string, string> = {}, props: Record<string, string> = {}): CpuTopology | undefined {
  const chosen: Partial<CpuTopology> = {}
  for (const dim of DIMENSIONS) {
    const flavor = count(`flavor extra spec hw:cpu_${dim}`, extraSpecs[`hw:cpu_${dim}`])
    const image = count(`image property hw_cpu_${dim}`, props[`hw_cpu_${dim}`])
    if (flavor !== undefined && image !== undefined && image > flavor) {
      throw new ImageHardwareError(`Image vCPU topology ${dim} ${image} exceeds the flavor's limit hw:cpu_${dim}=${flavor}`)
    }
    const value = image ?? flavor
    if (value !== undefined) chosen[dim] = value
  }
  if (Object.keys(chosen).length === 0) return undefined
  const threads = chosen.threads ?? 1
  let { cores, sockets } = chosen
  if (cores === undefined) cores = sockets === undefined ? 1 : vcpus / (sockets * threads)
  if (sockets === undefined) sockets = vcpus / (cores * threads)
  const topology = { sockets, cores, threads }
  if (!Number.isInteger(sockets) || !Number.isInteger(cores) || sockets * cores * threads !== vcpus) {
    throw new ImageHardwareError(`Requested vCPU topology (${DIMENSIONS.map((d) => `${d} ${chosen[d] ?? '-'}`).join(', ')}) cannot give the flavor's ${vcpus} vCPUs`)
  }
  return topology
}
