/**
 * Block device mappings of a server create (block_device_mapping_v2), as Nova checks them, and the records that
 * carry them to the conductor (`block_device_mappings`). Three stages, each a function:
 *
 * - `parseBlockDevices`: the format rules of nova/block_device.py (BlockDeviceDict.from_api) — no I/O;
 * - `validateBlockDevices`: nova/compute/api.py `_validate_bdm` and the root disk checks of
 *   `_check_requested_image` — reads the volumes, snapshots, images and volume types named;
 * - `recordBlockDevices`: in the create transaction, one row per mapping and server; a source volume is reserved
 *   for the server there (available → attaching), so a create that fails leaves it untouched.
 *
 * Volumes from an image, a snapshot or blank are created by the conductor in the build's block_device_mapping
 * step (conductor/volumes.ts). Errors are Nova's 400s, word for word where Nova has words.
 */
import { randomUUID } from 'node:crypto'
import { AppError, badRequest } from '../../contracts/errors.js'
import { boolWord } from '../../contracts/compute/params.js'
import type { ImageRecord } from '../image/model.js'
import type { FlavorSnapshot } from '../../contracts/host/compute-driver.js'
import type { BlockDeviceMappingTable } from '../storage/tables/compute-volumes.js'
import type { Db } from '../storage/store.js'
import { resolveType } from '../volume/repo.js'
import type { VolumeRecord } from '../volume/model.js'
import type { ComputeStorage } from './storage.js'
import type { Visibility } from '../policy/rules.js'

/** One item of block_device_mapping_v2 as the schema let it through. */
export interface BdmRequest {
  source_type?: string
  destination_type?: string
  uuid?: string
  boot_index?: number | string | null
  volume_size?: number | string | null
  device_name?: string
  delete_on_termination?: boolean | string
  guest_format?: string
  device_type?: string
  disk_bus?: string
  no_device?: boolean | null
  tag?: string
  volume_type?: string | null
}

export interface PlannedBdm {
  sourceType: 'image' | 'volume' | 'snapshot' | 'blank'
  destinationType: 'volume' | 'local'
  bootIndex: number | null
  uuid: string | null
  volumeSize: number | null
  volumeType: string | null
  deviceName: string | null
  deviceType: string | null
  diskBus: string | null
  guestFormat: string | null
  deleteOnTermination: boolean
  tag: string | null
}

export interface BlockDevicePlan {
  bdms: PlannedBdm[]
  /** The root disk (boot index 0) is a volume: the server boots from volume. */
  volumeBacked: boolean
}

const GIB = 1024 ** 3
/** Nova's max_local_block_devices default. */
const MAX_LOCAL_DEVICES = 3
const invalid = (details: string) => badRequest(`Block Device Mapping is Invalid: ${details}`)

/** A device name as Nova stores it: with its /dev/ prefix. */
export function withDev(name: string | null | undefined): string | null {
  if (!name) return null
  return name.startsWith('/dev/') ? name : `/dev/${name}`
}

function toInt(v: number | string | null | undefined): number | null {
  return v === undefined || v === null || v === '' ? null : Number(v)
}

/** BlockDeviceDict.from_api: the rules on one mapping's own fields. `imageRefGiven`: imageRef is in the body (even ""). */
export function parseBlockDevices(items: BdmRequest[], imageRefGiven: boolean): PlannedBdm[] {
  const planned: PlannedBdm[] = []
  for (const b of items) {
    if (b.no_device) continue
    const source = b.source_type
    if (source === undefined) throw invalid('Some required fields are missing')
    if (source === 'blank' && b.uuid) throw invalid('Invalid device UUID.')
    if (source !== 'blank' && !b.uuid) throw invalid('Missing device UUID.')
    const bootIndex = toInt(b.boot_index)
    if (source === 'image' && b.destination_type === 'local' && !(imageRefGiven && bootIndex === 0)) throw invalid('Mapping image to local is not supported.')
    if (b.destination_type === 'local' && b.volume_type) throw invalid('Specifying a volume_type with destination_type=local is not supported.')
    if (source === 'volume' && b.volume_type) throw invalid('Specifying volume type to existing volume is not supported.')
    planned.push({
      sourceType: source as PlannedBdm['sourceType'],
      // As openstackclient fills it in: blank and image default to a local disk, volumes and snapshots to a volume.
      destinationType: (b.destination_type ?? (source === 'blank' || source === 'image' ? 'local' : 'volume')) as PlannedBdm['destinationType'],
      bootIndex,
      uuid: b.uuid ?? null,
      volumeSize: toInt(b.volume_size),
      volumeType: b.volume_type ?? null,
      deviceName: withDev(b.device_name),
      deviceType: b.device_type ?? null,
      diskBus: b.disk_bus ?? null,
      guestFormat: b.guest_format ?? null,
      deleteOnTermination: b.delete_on_termination === undefined ? false : boolWord(b.delete_on_termination),
      tag: b.tag ?? null,
    })
  }
  return planned
}

/**
 * The legacy block_device_mapping (v1) in v2 terms, as nova/block_device.py from_legacy_mapping converts it:
 * volumes and snapshots, the one named like the root device (vda) becoming the boot disk; an image mapping
 * first when imageRef is given and no volume is the root.
 */
export function fromLegacy(items: Record<string, unknown>[], imageRef: string | undefined): BdmRequest[] {
  const out: BdmRequest[] = []
  let volumeBacked = false
  for (const item of items) {
    const volumeId = item.volume_id as string | undefined
    const snapshotId = item.snapshot_id as string | undefined
    if (item.no_device || (!volumeId && !snapshotId)) continue
    const device = typeof item.device_name === 'string' ? item.device_name.replace(/^\/dev\//, '') : ''
    const root = device === 'vda'
    volumeBacked ||= root
    out.push({
      source_type: volumeId ? 'volume' : 'snapshot',
      destination_type: 'volume',
      uuid: volumeId ?? snapshotId,
      boot_index: root ? 0 : -1,
      ...(typeof item.device_name === 'string' ? { device_name: item.device_name } : {}),
      ...(item.volume_size !== undefined && item.volume_size !== null ? { volume_size: item.volume_size as number } : {}),
      ...(item.delete_on_termination !== undefined ? { delete_on_termination: boolWord(item.delete_on_termination) } : {}),
    })
  }
  if (!volumeBacked && imageRef) out.unshift({ source_type: 'image', destination_type: 'local', uuid: imageRef, boot_index: 0, delete_on_termination: true })
  return out
}

/** Boot indexes that are set and non-negative must be 0, 1, 2… and there must be a boot device. */
export function checkBootSequence(bdms: PlannedBdm[]): void {
  const indexes = bdms.map((b) => b.bootIndex).filter((i): i is number => i !== null && i >= 0).sort((a, b) => a - b)
  if (indexes.length === 0 || indexes.some((n, i) => n !== i)) {
    throw invalid('Boot sequence for the instance and image/block device mapping combination is not valid.')
  }
}

/** The acting project, and whose images, volumes and snapshots its request may name (other_projects:use). */
export interface ResourceCaller {
  projectId: string
  visibility: Visibility
}

export interface ValidationContext {
  db: Db
  storage: ComputeStorage
  caller: ResourceCaller
  flavor: FlavorSnapshot
  /** The server's imageRef when it boots from an image (already checked visible and active). */
  imageId: string | undefined
  maxCount: number
}

/** Where each source type of a mapping stored in an image keeps its uuid. */
const STORED_UUID: Record<string, string> = { snapshot: 'snapshot_id', volume: 'volume_id', image: 'image_id' }

/**
 * The block devices an image defines (Nova's image-defined BDMs): a snapshot of a volume-backed server is an image
 * with no bytes whose `block_device_mapping` property (with `bdm_v2`) lists the snapshots of its volumes, and a
 * server booted from it gets volumes made from them. Mappings in the legacy format, or a property that is not a JSON
 * list, define none.
 */
export function imageDefinedBlockDevices(properties: Record<string, string>): PlannedBdm[] {
  if (!/^(true|1|yes|on)$/i.test(properties.bdm_v2 ?? '') || !properties.block_device_mapping) return []
  let stored: unknown
  try {
    stored = JSON.parse(properties.block_device_mapping)
  } catch {
    return []
  }
  if (!Array.isArray(stored)) return []
  const items = (stored as Record<string, unknown>[]).map((m) => {
    // A stored null is a field the request would not have named.
    const fields = Object.fromEntries(Object.entries(m).filter(([, v]) => v !== null))
    const uuid = m[STORED_UUID[String(m.source_type)] ?? '']
    return { ...fields, uuid: typeof uuid === 'string' ? uuid : undefined } as BdmRequest
  })
  return parseBlockDevices(items, true)
}

/**
 * The request's mappings over those its image defines (Nova's `_merge_bdms_lists`): a requested mapping replaces the
 * image's of the same device name, and when the image defines the root, the image-to-root mapping a client adds
 * for an image boot goes.
 */
export function withImageDefined(requested: PlannedBdm[], defined: PlannedBdm[]): PlannedBdm[] {
  if (defined.length === 0) return requested
  const rest = defined.some((b) => b.bootIndex === 0) ? requested.filter((b) => !(b.bootIndex === 0 && b.sourceType === 'image')) : requested
  const named = new Set(rest.map((b) => b.deviceName).filter((n) => n !== null))
  return [...defined.filter((b) => b.deviceName === null || !named.has(b.deviceName)), ...rest]
}

/** What a mapping's source turned out to be, for the root disk checks. */
interface Resolved {
  bdm: PlannedBdm
  image?: ImageRecord
  volume?: VolumeRecord
}

/** `_validate_bdm`, then the root disk's checks against the image it carries (min_disk, min_ram, bootable). */
export async function validateBlockDevices(bdms: PlannedBdm[], ctx: ValidationContext): Promise<BlockDevicePlan> {
  if (ctx.maxCount > 1 && bdms.some((b) => b.sourceType === 'volume')) throw badRequest('Cannot attach one or more volumes to multiple instances')
  checkBootSequence(bdms)
  const resolved: Resolved[] = []
  for (const bdm of bdms) resolved.push(await resolveSource(bdm, ctx))
  checkLocalDisks(bdms, ctx.flavor)
  const root = resolved.find((r) => r.bdm.bootIndex === 0)!
  const volumeBacked = root.bdm.destinationType === 'volume'
  if (volumeBacked) checkRootVolume(root, ctx.flavor)
  return { bdms, volumeBacked }
}

async function resolveSource(bdm: PlannedBdm, ctx: ValidationContext): Promise<Resolved> {
  const { db, storage, caller } = ctx
  if (bdm.volumeType) {
    await resolveType(db, bdm.volumeType).catch((err: unknown) => {
      if (err instanceof AppError && err.status === 404) throw badRequest(`Volume type ${bdm.volumeType} could not be found.`)
      throw err
    })
  }
  switch (bdm.sourceType) {
    case 'image': {
      const image = await storage.images.getVisibleImage(caller.projectId, caller.visibility, bdm.uuid!, db).catch((err: unknown) => {
        if (err instanceof AppError && /not active/.test(err.message)) throw err
        throw invalid(`failed to get image ${bdm.uuid}.`)
      })
      if (bdm.destinationType === 'volume' && !bdm.volumeSize) {
        throw badRequest("Images with destination_type 'volume' need to have a non-zero size specified")
      }
      return { bdm, image }
    }
    case 'volume': {
      const volume = await storage.volumes.getForProject(db, { volumeId: bdm.uuid!, projectId: caller.projectId, visibility: caller.visibility }).catch(() => {
        throw invalid(`failed to get volume ${bdm.uuid}.`)
      })
      if (volume.status !== 'available') throw badRequest(`Invalid volume: volume '${volume.id}' status must be 'available'. Currently in '${volume.status}'`)
      bdm.volumeSize = volume.size
      return { bdm, volume }
    }
    case 'snapshot': {
      const snap = await db.selectFrom('volume_snapshots').select(['id', 'project_id', 'size']).where('id', '=', bdm.uuid!).executeTakeFirst()
      if (!snap || (caller.visibility !== 'all_projects' && snap.project_id !== caller.projectId)) throw invalid(`failed to get snapshot ${bdm.uuid}.`)
      bdm.volumeSize ??= snap.size
      return { bdm }
    }
    case 'blank':
      if (bdm.destinationType === 'volume' && !bdm.volumeSize) throw badRequest("Blank volumes (source: 'blank', dest: 'volume') need to have non-zero size")
      return { bdm }
  }
}

/** Ephemeral and swap disks against the flavor, and the number of local disks. */
function checkLocalDisks(bdms: PlannedBdm[], flavor: FlavorSnapshot): void {
  const blankLocal = bdms.filter((b) => b.sourceType === 'blank' && b.destinationType === 'local')
  const swaps = blankLocal.filter((b) => b.guestFormat === 'swap')
  const ephemerals = blankLocal.filter((b) => b.guestFormat !== 'swap')
  const ephemeralSize = ephemerals.reduce((n, b) => n + (b.volumeSize ?? flavor.ephemeral), 0)
  if (ephemeralSize > flavor.ephemeral) {
    throw badRequest('Ephemeral disks requested are larger than the instance type allows. If no size is given in one block device mapping, flavor ephemeral size will be used.')
  }
  if (swaps.length > 1) throw invalid('More than one swap drive requested.')
  if (swaps.length === 1 && (swaps[0].volumeSize ?? 0) > flavor.swap) throw badRequest('Swap drive requested is larger than instance type allows.')
  if (bdms.filter((b) => b.destinationType === 'local').length > MAX_LOCAL_DEVICES) throw invalid('You specified more local devices than the limit allows')
}

/** The boot volume: an existing one must be bootable; one made from an image must hold the image's min_disk. */
function checkRootVolume(root: Resolved, flavor: FlavorSnapshot): void {
  if (root.volume && !root.volume.bootable) throw badRequest(`Block Device ${root.volume.id} is not bootable.`)
  const minDisk = root.image?.minDisk ?? Number(root.volume?.imageMetadata?.min_disk ?? 0)
  const minRam = root.image?.minRam ?? Number(root.volume?.imageMetadata?.min_ram ?? 0)
  if (root.image && root.bdm.volumeSize !== null && minDisk * GIB > root.bdm.volumeSize * GIB) {
    throw badRequest(
      `Volume is smaller than the minimum size specified in image metadata. Volume size is ${root.bdm.volumeSize * GIB} bytes, minimum size is ${minDisk * GIB} bytes.`,
    )
  }
  if (minRam > flavor.ram) throw badRequest("Flavor's memory is too small for requested image.")
}

/**
 * Device names as the hypervisor will see them: the root is /dev/vda (or its requested name), then vdb, vdc… for
 * the others in request order, skipping names already taken.
 */
export function assignDeviceNames(bdms: PlannedBdm[]): (string | null)[] {
  const taken = new Set<string>(['/dev/vda', ...bdms.map((b) => b.deviceName).filter((n): n is string => !!n)])
  return bdms.map((b) => {
    if (b.deviceName) return b.deviceName
    if (b.bootIndex === 0) return '/dev/vda'
    if (b.destinationType !== 'volume' && b.sourceType !== 'blank') return null
    const next = nextDeviceName(taken) ?? null
    if (next) taken.add(next)
    return next
  })
}

/** The first free /dev/vdX after vda; undefined when all 26 are taken. */
export function nextDeviceName(taken: Set<string>): string | undefined {
  for (let c = 'b'.charCodeAt(0); c <= 'z'.charCodeAt(0); c++) {
    const name = `/dev/vd${String.fromCharCode(c)}`
    if (!taken.has(name)) return name
  }
  return undefined
}

/** In the create transaction: the mapping rows of every server, a source volume reserved for its (only) server. */
export async function recordBlockDevices(tx: Db, storage: ComputeStorage, serverIds: string[], plan: BlockDevicePlan, caller: ResourceCaller): Promise<void> {
  const devices = assignDeviceNames(plan.bdms)
  const now = Date.now()
  for (const serverId of serverIds) {
    for (const [i, bdm] of plan.bdms.entries()) {
      let attachmentId: string | null = null
      if (bdm.sourceType === 'volume') {
        attachmentId = (await storage.volumes.reserveForAttach(tx, { volumeId: bdm.uuid!, projectId: caller.projectId, serverId, visibility: caller.visibility })).attachmentId
      }
      await tx
        .insertInto('block_device_mappings')
        .values({
          id: randomUUID(),
          server_id: serverId,
          boot_index: bdm.bootIndex,
          source_type: bdm.sourceType,
          destination_type: bdm.destinationType,
          volume_id: bdm.sourceType === 'volume' ? bdm.uuid : null,
          image_id: bdm.sourceType === 'image' ? bdm.uuid : null,
          snapshot_id: bdm.sourceType === 'snapshot' ? bdm.uuid : null,
          volume_size: bdm.volumeSize,
          volume_type: bdm.volumeType,
          device_name: devices[i],
          device_type: bdm.deviceType,
          disk_bus: bdm.diskBus,
          guest_format: bdm.guestFormat,
          delete_on_termination: bdm.deleteOnTermination ? 1 : 0,
          tag: bdm.tag,
          attachment_id: attachmentId,
          created_at: now + i,
        })
        .execute()
    }
  }
}

// ---- reading a server's mappings (API views and the conductor) ----

/** The mappings of a server that are volumes, oldest first. */
export async function volumeMappings(db: Db, serverId: string): Promise<BlockDeviceMappingTable[]> {
  return db
    .selectFrom('block_device_mappings')
    .selectAll()
    .where('server_id', '=', serverId)
    .where('destination_type', '=', 'volume')
    .orderBy('created_at')
    .orderBy('id')
    .execute()
}

/** Whether the server boots from a volume (its boot index 0 mapping is a volume). */
export async function isVolumeBacked(db: Db, serverId: string): Promise<boolean> {
  const root = await db
    .selectFrom('block_device_mappings')
    .select('destination_type')
    .where('server_id', '=', serverId)
    .where('boot_index', '=', 0)
    .executeTakeFirst()
  return root?.destination_type === 'volume'
}

/** `os-extended-volumes:volumes_attached` of many servers in one query per 500: the volumes their mappings name. */
export async function volumesAttachedOf(db: Db, serverIds: string[]): Promise<Map<string, { id: string; deleteOnTermination: boolean }[]>> {
  const out = new Map<string, { id: string; deleteOnTermination: boolean }[]>()
  for (let i = 0; i < serverIds.length; i += 500) {
    const rows = await db
      .selectFrom('block_device_mappings')
      .select(['server_id', 'volume_id', 'delete_on_termination'])
      .where('server_id', 'in', serverIds.slice(i, i + 500))
      .where('destination_type', '=', 'volume')
      .where('volume_id', 'is not', null)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    for (const r of rows) {
      const list = out.get(r.server_id) ?? []
      list.push({ id: r.volume_id!, deleteOnTermination: r.delete_on_termination === 1 })
      out.set(r.server_id, list)
    }
  }
  return out
}
