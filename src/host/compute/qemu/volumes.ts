/**
 * Volumes in a QEMU guest: each is a protocol node under a `raw` format node, shown to the guest as a virtio-blk
 * disk whose serial is the volume id (as Nova sets it). The protocol node is an NBD client (TLS-PSK, with the
 * attachment's key) for volumes their storage place exports, or QEMU's own rbd driver for Ceph volumes, opened with
 * the host's cephx user through its ceph.conf (docs/ceph.md): no export, no hop. Present at boot
 * they are command-line arguments (`volumeArgs`); later they are hot-plugged over QMP (`attachVolume`) and
 * unplugged (`detachVolume`: device_del, wait for DEVICE_DELETED, then the nodes, whose closing flushes every
 * write the guest made to the export).
 *
 * Online extend (`extendVolume`): an NBD client node never grows, so a second NBD node is opened on the export's
 * new generation (the storage side serves the grown bytes under a new export name), the format node is moved
 * onto it with `blockdev-reopen` (which drains the guest's I/O first), the old NBD node goes, and `block_resize`
 * of the format node to the new size tells the guest (virtio-blk capacity change). Measured with QEMU 7.2. An RBD volume only needs the `block_resize`: librbd reads the image's new size.
 *
 * Throttling (front-end QoS, `volume.throttle`): a `throttle` filter node above the format node, in a throttle
 * group of the volume's own that holds its limits; the device reads through it. Part of the node graph, the limits
 * are in the command line of every later start and of a live migration's destination as well as in a hot-plug.
 *
 * Encrypted volumes (`connection.data.encryption`; docs/block-storage.md, "Encrypted volumes"): the format node is
 * QEMU's `luks` driver instead of `raw`, so the guest reads plaintext while the protocol node carries the LUKS
 * container's ciphertext. Its passphrase is a `secret` object: given in QMP's `object-add` (`data`) on hot-plug, or
 * read from a 0600 file in the volume's private directory on a command line, never an argument itself. A volume
 * with no LUKS header yet (a blank one, attached for the first time) is formatted first (`blockdev-create`).
 *
 * Node names are at most 31 characters in QEMU, so they use the first 16 hex digits of the volume id.
 */
import { rm, writeFile } from 'node:fs/promises'
import { privateDirAsync } from '../../private-dir.js'
import { join } from 'node:path'
import { DriverError, type NbdConnectionInfo, type RbdConnectionInfo, type VolumeConnection, type VolumeEncryption, type VolumeThrottleKey } from '../../../contracts/host/compute-driver.js'

/** What these functions need of a QMP client (qmp.ts's QmpClient). */
export interface QmpSession {
  execute<T = unknown>(command: string, args?: Record<string, unknown>): Promise<T>
  waitEvent(name: string, timeoutMs: number, options?: { since?: number; match?: (e: { event: string; data?: Record<string, unknown> }) => boolean }): Promise<unknown>
  readonly events: unknown[]
}

/** How long a guest has to let go of an unplugged disk (Nova waits as long for a detach). */
const UNPLUG_TIMEOUT_MS = 30_000

/** The QEMU names of a volume's pieces in a guest. */
export function volumeNames(volumeId: string) {
  const short = volumeId.replaceAll('-', '').slice(0, 16)
  return {
    /** The virtio-blk device (`device_add` / `device_del` id). */
    device: `vol-${short}`,
    /** The format node the device uses. */
    format: `v${short}`,
    /** The NBD client node of an export generation. */
    protocol: (generation: number) => `v${short}-nbd${generation}`,
    /** The rbd node of a Ceph volume. */
    rbd: `v${short}-rbd`,
    /** The TLS-PSK credentials object. */
    tls: `tls-${short}`,
    /** The throttle filter node above the format node (a throttled volume). */
    throttle: `t${short}`,
    /** The throttle group object holding the volume's limits. */
    group: `tg-${short}`,
    /** The secret object holding an encrypted volume's LUKS passphrase. */
    secret: `sec-${short}`,
    /** The job formatting a blank encrypted volume. */
    format_job: `luks-${short}`,
  }
}

/** QEMU's name of each limit (ThrottleLimits) for the QoS key the control plane sends. */
const THROTTLE_LIMITS: Record<VolumeThrottleKey, string> = {
  total_bytes_sec: 'bps-total',
  read_bytes_sec: 'bps-read',
  write_bytes_sec: 'bps-write',
  total_iops_sec: 'iops-total',
  read_iops_sec: 'iops-read',
  write_iops_sec: 'iops-write',
  total_bytes_sec_max: 'bps-total-max',
  read_bytes_sec_max: 'bps-read-max',
  write_bytes_sec_max: 'bps-write-max',
  total_iops_sec_max: 'iops-total-max',
  read_iops_sec_max: 'iops-read-max',
  write_iops_sec_max: 'iops-write-max',
  size_iops_sec: 'iops-size',
}

/** The throttle group of a volume with limits (QMP object-add's arguments), or none. */
function throttleGroup(volume: VolumeConnection) {
  const limits = Object.fromEntries(Object.entries(volume.throttle ?? {}).map(([key, value]) => [THROTTLE_LIMITS[key as VolumeThrottleKey], value]))
  if (Object.keys(limits).length === 0) return undefined
  return { 'qom-type': 'throttle-group', id: volumeNames(volume.volumeId).group, limits }
}

function throttleNode(volume: VolumeConnection) {
  const names = volumeNames(volume.volumeId)
  return { driver: 'throttle', 'node-name': names.throttle, 'throttle-group': names.group, file: names.format }
}

/** The export generation a connection names (`volume-<id>` is 0, `volume-<id>.<n>` is n). */
export function generationOf(info: NbdConnectionInfo): number {
  const match = /\.(\d+)$/.exec(info.data.export)
  return match ? Number(match[1]) : 0
}

function connectionOf(volume: VolumeConnection): NbdConnectionInfo {
  const info = volume.connection
  if (!info || info.driver_volume_type !== 'nbd') throw new DriverError(`Volume ${volume.volumeId} has no NBD connection to attach.`)
  return info
}

function rbdOf(volume: VolumeConnection): RbdConnectionInfo | undefined {
  return volume.connection?.driver_volume_type === 'rbd' ? volume.connection : undefined
}

/** QEMU's rbd node of a Ceph volume, as the host's own cephx user (its conf names its keyring). */
function rbdNode(volume: VolumeConnection, info: RbdConnectionInfo) {
  if (!info.data.conf) throw new DriverError(`Volume ${volume.volumeId} is in Ceph, and this host has no Ceph access (docs/ceph.md).`)
  const [pool, image] = info.data.name.split('/')
  return { driver: 'rbd', 'node-name': volumeNames(volume.volumeId).rbd, pool, image, conf: info.data.conf, user: info.data.auth_username }
}

/** The protocol node that reads the volume's bytes, and the TLS object it needs (NBD only). */
function protocolOf(volume: VolumeConnection, keyDir: string): { node: Record<string, unknown> & { 'node-name': string }; tls?: ReturnType<typeof tlsObject> } {
  const rbd = rbdOf(volume)
  if (rbd) return { node: rbdNode(volume, rbd) }
  return { node: nbdNode(volume), tls: tlsObject(volume, keyDir) }
}

/**
 * Writes the key file QEMU's TLS client reads (`<dir>/keys.psk`, 0600) in the guest's directory for the volume;
 * it stays while the volume is attached (a reconnect reads it again).
 */
export async function writeVolumeKey(instanceDir: string, volume: VolumeConnection): Promise<string> {
  const dir = volumeKeyDir(instanceDir, volume.volumeId)
  const encryption = encryptionOf(volume)
  if (encryption) {
    await privateDirAsync(dir)
    await writeFile(join(dir, LUKS_KEY_FILE), passphraseOf(volume.volumeId, encryption), { mode: 0o600 })
  }
  if (rbdOf(volume)) return dir
  const info = connectionOf(volume)
  if (!info.data.psk_key) throw new DriverError(`Volume ${volume.volumeId}: the host has no key for its export.`)
  await privateDirAsync(dir)
  await writeFile(join(dir, 'keys.psk'), `${info.data.psk_identity}:${info.data.psk_key}\n`, { mode: 0o600 })
  return dir
}

/** The file (in the volume's 0600 directory) a command line's secret object reads the LUKS passphrase from. */
const LUKS_KEY_FILE = 'luks.key'
/** How long formatting a blank encrypted volume may take (LUKS spends about 2 s deriving keys, more under load). */
const FORMAT_TIMEOUT_MS = 120_000
/** QEMU's cipher for cryptsetup's name and key size: XTS splits its key in two, so 512 bits is AES-256. */
const LUKS_CIPHERS: Record<string, Record<number, Record<string, string>>> = {
  'aes-xts-plain64': { 256: { 'cipher-alg': 'aes-128', 'cipher-mode': 'xts', 'ivgen-alg': 'plain64' }, 512: { 'cipher-alg': 'aes-256', 'cipher-mode': 'xts', 'ivgen-alg': 'plain64' } },
}

function encryptionOf(volume: VolumeConnection): VolumeEncryption | undefined {
  return volume.connection?.data.encryption
}

/**
 * The secret's data: LUKS takes the passphrase as UTF-8 text, and the passphrase is the base64 text of random
 * bytes, so the secret holds that text, itself base64-encoded for QEMU (`format: base64`).
 */
function passphraseOf(volumeId: string, encryption: VolumeEncryption): string {
  if (!encryption.passphrase) throw new DriverError(`Volume ${volumeId} is encrypted, and the host has no key for it.`)
  return Buffer.from(encryption.passphrase, 'utf8').toString('base64')
}

/** The format node over a volume's protocol node: `luks` for an encrypted volume (its secret named), else `raw`. */
function formatNode(volume: VolumeConnection, file: string) {
  const names = volumeNames(volume.volumeId)
  if (encryptionOf(volume)) return { driver: 'luks', 'node-name': names.format, file, 'key-secret': names.secret }
  return { driver: 'raw', 'node-name': names.format, file }
}

/**
 * Opens an encrypted volume's LUKS container over its protocol node; a volume that has none yet (blank, never
 * attached: the control plane refuses to make encrypted volumes from anything but blank or encrypted bytes) is
 * formatted with the volume's cipher first. A container whose passphrase does not match fails, never reformatted.
 */
async function openLuks(qmp: QmpSession, volume: VolumeConnection, file: string): Promise<void> {
  try {
    await qmp.execute('blockdev-add', formatNode(volume, file))
    return
  } catch (err) {
    if (!/not in LUKS format/i.test((err as Error).message)) throw err
  }
  await formatLuks(qmp, volume, file)
  await qmp.execute('blockdev-add', formatNode(volume, file))
}

/**
 * QEMU's PBKDF2 calibration gives up when its first batch of iterations measures no thread CPU time at all, which
 * depends on the kernel's CPU accounting and the host's load, not on the volume: formatting again is the cure.
 */
export const PBKDF_CALIBRATION_FAILURE = /Unable to get accurate CPU usage/

async function formatLuks(qmp: QmpSession, volume: VolumeConnection, file: string): Promise<void> {
  const encryption = encryptionOf(volume)!
  const cipher = LUKS_CIPHERS[encryption.cipher]?.[encryption.key_size]
  if (!cipher) throw new DriverError(`Volume ${volume.volumeId}: this host cannot make a LUKS container with ${encryption.cipher} and a ${encryption.key_size}-bit key.`)
  let error = await runFormatJob(qmp, volume, file, cipher)
  if (error && PBKDF_CALIBRATION_FAILURE.test(error)) error = await runFormatJob(qmp, volume, file, cipher)
  if (error) throw new DriverError(`Volume ${volume.volumeId}: formatting its LUKS container failed: ${error}`)
}

/** One `blockdev-create` job writing the LUKS header; answers the job's error, if it failed. */
async function runFormatJob(qmp: QmpSession, volume: VolumeConnection, file: string, cipher: Record<string, string>): Promise<string | undefined> {
  const names = volumeNames(volume.volumeId)
  // The payload's size only bounds the truncate QEMU does; opening the container later gives the guest every byte
  // after the header. An NBD node cannot grow, so asking for none keeps the export's size.
  const since = qmp.events.length
  await qmp.execute('blockdev-create', { 'job-id': names.format_job, options: { driver: 'luks', file, size: 0, 'key-secret': names.secret, ...cipher } })
  await qmp.waitEvent('JOB_STATUS_CHANGE', FORMAT_TIMEOUT_MS, { since, match: (e) => e.data?.id === names.format_job && e.data?.status === 'concluded' })
  const jobs = await qmp.execute<{ id: string; error?: string }[]>('query-jobs')
  const error = jobs.find((j) => j.id === names.format_job)?.error
  await qmp.execute('job-dismiss', { id: names.format_job })
  return error
}

export async function removeVolumeKey(instanceDir: string, volumeId: string): Promise<void> {
  await rm(volumeKeyDir(instanceDir, volumeId), { recursive: true, force: true })
}

/** Where a volume's key file lives in the guest's directory. */
export function volumeKeyDir(instanceDir: string, volumeId: string): string {
  return join(instanceDir, 'volumes', volumeId)
}

function tlsObject(volume: VolumeConnection, keyDir: string) {
  const info = connectionOf(volume)
  return { 'qom-type': 'tls-creds-psk', id: volumeNames(volume.volumeId).tls, dir: keyDir, endpoint: 'client', username: info.data.psk_identity }
}

function nbdNode(volume: VolumeConnection) {
  const info = connectionOf(volume)
  const names = volumeNames(volume.volumeId)
  return {
    driver: 'nbd',
    'node-name': names.protocol(generationOf(info)),
    server: { type: 'inet', host: info.data.host, port: String(info.data.port) },
    export: info.data.export,
    'tls-creds': names.tls,
    // A storage daemon restarting (or a control plane restarting its own) holds the guest's I/O, not fails it.
    'reconnect-delay': 30,
  }
}

/**
 * Where a volume's device sits, fixed by its device name so that a guest started again, or arriving on another
 * host by live migration, has it at the same PCI address (QEMU's migration stream names devices by address): on
 * i440FX (`pc`), slot 0x0f + the letter of `/dev/vdX` on `pci.0` (vda 0x0f … vdq 0x1f; later letters: QEMU picks);
 * on q35, the letter's hot-plug root port (`hotplug<n>` for vdb = 0 …, as many as the guest was given).
 */
export function volumePlacement(machine: string, device: string | null): Record<string, string> {
  const letter = device ? /^\/dev\/[a-z]*d([a-z])$/.exec(device)?.[1] : undefined
  if (!letter) return {}
  const index = letter.charCodeAt(0) - 'a'.charCodeAt(0)
  if (/q35/.test(machine)) return index >= 1 ? { bus: `hotplug${index - 1}` } : {}
  const slot = 0x0f + index
  return slot <= 0x1f ? { bus: 'pci.0', addr: `0x${slot.toString(16)}` } : {}
}

function deviceArgs(volume: VolumeConnection, machine: string, bootIndex?: number) {
  const names = volumeNames(volume.volumeId)
  return {
    driver: 'virtio-blk-pci',
    id: names.device,
    drive: throttleGroup(volume) ? names.throttle : names.format,
    serial: volume.volumeId.slice(0, 20),
    ...volumePlacement(machine, volume.device),
    ...(bootIndex !== undefined ? { bootindex: bootIndex } : {}),
  }
}

/** Command-line arguments that give the guest a volume from its start (boot from volume: a `bootIndex`). */
export function volumeArgs(volume: VolumeConnection, keyDir: string, machine: string, bootIndex?: number): string[] {
  const { node, tls } = protocolOf(volume, keyDir)
  const names = volumeNames(volume.volumeId)
  const device = deviceArgs(volume, machine, bootIndex)
  const group = throttleGroup(volume)
  return [
    ...(tls ? ['-object', `tls-creds-psk,id=${tls.id},dir=${tls.dir},endpoint=client,username=${tls.username}`] : []),
    ...(encryptionOf(volume) ? ['-object', `secret,id=${names.secret},file=${join(keyDir, LUKS_KEY_FILE)},format=base64`] : []),
    '-blockdev', JSON.stringify(node),
    '-blockdev', JSON.stringify(formatNode(volume, node['node-name'])),
    ...(group ? ['-object', JSON.stringify(group), '-blockdev', JSON.stringify(throttleNode(volume))] : []),
    '-device', Object.entries(device).map(([k, v]) => (k === 'driver' ? String(v) : `${k}=${v}`)).join(','),
  ]
}

interface NamedNode {
  'node-name': string
}

async function nodeNames(qmp: QmpSession): Promise<Set<string>> {
  return new Set((await qmp.execute<NamedNode[]>('query-named-block-nodes', { flat: true })).map((n) => n['node-name']))
}

/** Hot-plugs a volume into a running guest; nothing changes when it is there already. */
export async function attachVolume(qmp: QmpSession, volume: VolumeConnection, keyDir: string, machine: string): Promise<void> {
  const names = volumeNames(volume.volumeId)
  if ((await nodeNames(qmp)).has(names.format)) return
  const added: (() => Promise<unknown>)[] = []
  try {
    const { node, tls } = protocolOf(volume, keyDir)
    if (tls) {
      await qmp.execute('object-add', tls)
      added.push(() => qmp.execute('object-del', { id: names.tls }))
    }
    await qmp.execute('blockdev-add', node)
    added.push(() => qmp.execute('blockdev-del', { 'node-name': node['node-name'] }))
    const encryption = encryptionOf(volume)
    if (encryption) {
      await qmp.execute('object-add', { 'qom-type': 'secret', id: names.secret, data: passphraseOf(volume.volumeId, encryption), format: 'base64' })
      added.push(() => qmp.execute('object-del', { id: names.secret }))
      await openLuks(qmp, volume, node['node-name'])
    } else {
      await qmp.execute('blockdev-add', formatNode(volume, node['node-name']))
    }
    added.push(() => qmp.execute('blockdev-del', { 'node-name': names.format }))
    const group = throttleGroup(volume)
    if (group) {
      await qmp.execute('object-add', group)
      added.push(() => qmp.execute('object-del', { id: names.group }))
      await qmp.execute('blockdev-add', throttleNode(volume))
      added.push(() => qmp.execute('blockdev-del', { 'node-name': names.throttle }))
    }
    await qmp.execute('device_add', deviceArgs(volume, machine))
  } catch (err) {
    for (const undo of added.reverse()) await undo().catch(() => {})
    throw new DriverError(`Volume ${volume.volumeId} could not be attached: ${(err as Error).message}`)
  }
}

/** Unplugs a volume (the guest lets go of it), then closes its nodes, which flushes its writes to the export. */
export async function detachVolume(qmp: QmpSession, volumeId: string): Promise<void> {
  const names = volumeNames(volumeId)
  const since = qmp.events.length
  const devices = await qmp.execute<{ name: string }[]>('qom-list', { path: '/machine/peripheral' })
  if (devices.some((d) => d.name === names.device)) {
    await qmp.execute('device_del', { id: names.device })
    await qmp.waitEvent('DEVICE_DELETED', UNPLUG_TIMEOUT_MS, { since, match: (e) => e.data?.device === names.device }).catch(() => {
      throw new DriverError(`Volume ${volumeId}: the guest did not release the disk within ${UNPLUG_TIMEOUT_MS / 1000} s.`)
    })
  }
  const nodes = await nodeNames(qmp)
  // From the top down: the throttle filter, the format node, the protocol nodes, then the objects they used.
  if (nodes.has(names.throttle)) await qmp.execute('blockdev-del', { 'node-name': names.throttle })
  if (nodes.has(names.format)) await qmp.execute('blockdev-del', { 'node-name': names.format })
  for (const node of nodes) if (node.startsWith(`${names.format}-nbd`) || node === names.rbd) await qmp.execute('blockdev-del', { 'node-name': node })
  await qmp.execute('object-del', { id: names.group }).catch(() => {})
  await qmp.execute('object-del', { id: names.tls }).catch(() => {})
  await qmp.execute('object-del', { id: names.secret }).catch(() => {})
}

/**
 * Moves an attached volume onto its export's new generation and grows it to `sizeBytes`: the guest sees the
 * new capacity; its I/O is drained, not lost, while the format node changes its child.
 */
export async function extendVolume(qmp: QmpSession, volume: VolumeConnection, sizeBytes: number): Promise<void> {
  const names = volumeNames(volume.volumeId)
  const nodes = await nodeNames(qmp)
  if (!nodes.has(names.format)) throw new DriverError(`Volume ${volume.volumeId} is not attached to this guest.`)
  // The luks node would have to grow by its header too; the control plane extends encrypted volumes detached only.
  if (encryptionOf(volume)) throw new DriverError(`Volume ${volume.volumeId} is encrypted: extend it while it is detached.`)
  if (rbdOf(volume)) return void (await qmp.execute('block_resize', { 'node-name': names.format, size: sizeBytes }))
  const nbd = nbdNode(volume)
  if (!nodes.has(nbd['node-name'])) await qmp.execute('blockdev-add', nbd)
  await qmp.execute('blockdev-reopen', { options: [{ driver: 'raw', 'node-name': names.format, file: nbd['node-name'] }] })
  for (const node of nodes) if (node.startsWith(`${names.format}-nbd`) && node !== nbd['node-name']) await qmp.execute('blockdev-del', { 'node-name': node })
  await qmp.execute('block_resize', { 'node-name': names.format, size: sizeBytes })
}
