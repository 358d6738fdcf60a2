/**
 * Images made from a server (createImage, shelve), as Nova's compute API makes them before the answer:
 *
 * - an image-backed server gets a `queued` image whose properties Nova sets (`image_type: snapshot`,
 *   `instance_uuid`, `user_id`, `base_image_ref`, the base image's inheritable properties, then the request's
 *   metadata on top), min_disk at least the flavor's root disk; the conductor streams the driver's snapshot into
 *   it (conductor/snapshots.ts);
 * - a volume-backed server gets, at once, a snapshot of each of its volumes and an `active` image with no data
 *   whose `block_device_mapping` property lists them (`bdm_v2`), as `snapshot_volume_backed` does, a running
 *   guest quiesced around the snapshots.
 */
import { Readable } from 'node:stream'
import { AppError, badRequest, forbidden } from '../../contracts/errors.js'
import { BOOLEANS } from '../../contracts/compute/image-hardware.js'
import { DriverError } from '../../contracts/host/compute-driver.js'
import type { ImageRecord } from '../image/model.js'
import type { SnapshotImageRequest } from '../image/service.js'
import type { BlockDeviceMappingTable } from '../storage/tables/compute-volumes.js'
import type { ServerTable } from '../storage/tables/compute.js'
import type { FlavorSnapshot } from '../../contracts/host/compute-driver.js'
import type { Db } from '../storage/store.js'
import { recordFinishedAction } from './instance-actions.js'
import type { ComputeStorage } from './storage.js'
import type { Visibility } from '../policy/rules.js'

/** Properties a snapshot does not inherit from its base image (Nova's NON_INHERITABLE_IMAGE_PROPERTIES and config default). */
const NON_INHERITABLE = new Set([
  'cinder_encryption_key_id',
  'cinder_encryption_key_deletion_policy',
  'img_signature',
  'img_signature_hash_method',
  'img_signature_key_type',
  'img_signature_certificate_uuid',
  'cache_in_nova',
  'bittorrent',
  // Set again below for the new image.
  'block_device_mapping',
  'bdm_v2',
  'root_device_name',
])

export interface SnapshotCaller {
  projectId: string
  userId: string
  /** Whose volumes the snapshot may be taken of (other_projects:use, decided by the route). */
  visibility: Visibility
}

export interface SnapshotRequest {
  name: string
  metadata: Record<string, string>
}

/** What the snapshot image of `server` is created with (Nova's _initialize_instance_snapshot_metadata + _create_image). */
export async function snapshotImageRequest(db: Db, storage: ComputeStorage, server: ServerTable, caller: SnapshotCaller, request: SnapshotRequest): Promise<SnapshotImageRequest> {
  const base: ImageRecord | undefined = server.image_id ? await storage.images.getById(server.image_id, db) : undefined
  const inherited = Object.fromEntries(Object.entries(base?.properties ?? {}).filter(([k]) => !NON_INHERITABLE.has(k)))
  const flavor = JSON.parse(server.flavor) as FlavorSnapshot
  return {
    // The caller's project owns the image. Formats are left to the driver (Nova drops the base image's).
    projectId: caller.projectId || server.project_id,
    name: request.name,
    properties: {
      ...inherited,
      base_image_ref: server.image_id ?? '',
      instance_uuid: server.id,
      user_id: caller.userId,
      image_type: 'snapshot',
      ...request.metadata,
    },
    minDisk: Math.max(base?.minDisk ?? 0, flavor.disk),
    minRam: base?.minRam ?? 0,
    visibility: 'private',
  }
}

/** The queued image of createImage or shelve, inside the transaction that accepts the action. */
export async function reserveSnapshotImage(tx: Db, storage: ComputeStorage, server: ServerTable, caller: SnapshotCaller, request: SnapshotRequest): Promise<string> {
  const image = await storage.images.createSnapshotImage(await snapshotImageRequest(tx, storage, server, caller, request), tx)
  return image.id
}

/** Nova's shelve image name. */
export function shelvedImageName(server: Pick<ServerTable, 'name'>): string {
  return `${server.name}-shelved`
}

/** One entry of the image's block_device_mapping property (BlockDeviceMapping.get_image_mapping). */
function imageMapping(bdm: BlockDeviceMappingTable, snapshotId: string | null): Record<string, unknown> {
  return {
    boot_index: bdm.boot_index,
    delete_on_termination: bdm.delete_on_termination === 1,
    destination_type: bdm.destination_type,
    device_name: bdm.device_name,
    device_type: bdm.device_type,
    disk_bus: bdm.disk_bus,
    guest_format: bdm.guest_format,
    image_id: snapshotId ? null : bdm.image_id,
    no_device: null,
    snapshot_id: snapshotId ?? bdm.snapshot_id,
    source_type: snapshotId ? 'snapshot' : bdm.source_type,
    tag: bdm.tag,
    volume_id: null,
    volume_size: bdm.volume_size,
    volume_type: bdm.volume_type,
  }
}

/** The server's guest on its host, frozen around the volume snapshots (the conductor asks the host). */
export interface GuestQuiescing {
  /** Freezes the guest's file systems; a DriverError when the host or the guest cannot (quiesceGuest, protocol 6). */
  quiesce(serverId: string): Promise<void>
  /** Thaws them; never throws (a thaw that fails is logged: the snapshots are taken, the answer stands). */
  unquiesce(serverId: string): Promise<void>
}

/** The vm_states whose guest is quiesced for the volume snapshots: a running one's (Nova's snapshot_volume_backed). */
const QUIESCED_VM_STATES = new Set(['active'])
/** How long the thaw waits for the volume snapshots to be taken (Nova's compute waits likewise before it thaws). */
const SNAPSHOTS_TAKEN_MS = 60_000
const SNAPSHOT_POLL_MS = 100

/**
 * The image properties the server booted with (Nova's `image_*` system metadata): its image's, or for a server
 * booted from a volume made of an image, the root volume's `volume_image_metadata`.
 */
async function bootImageProperties(db: Db, storage: ComputeStorage, server: ServerTable, caller: SnapshotCaller, bdms: BlockDeviceMappingTable[]): Promise<Record<string, string>> {
  if (server.image_id) return (await storage.images.getById(server.image_id, db))?.properties ?? {}
  const root = bdms.find((b) => b.boot_index === 0 && b.volume_id)
  if (!root?.volume_id) return {}
  const volume = await storage.volumes.getForProject(db, { volumeId: root.volume_id, projectId: server.project_id, visibility: caller.visibility })
  return volume.imageMetadata ?? {}
}

/**
 * Quiesces a running server's guest for the volume snapshots, as Nova does: whatever keeps it from quiescing (a
 * DriverError: the guest is not running or has no agent, its agent is silent or fails, the host is down or its
 * agent older than protocol 6) lets the snapshots go on crash-consistent, unless the image's os_require_quiesce
 * is set: then the request fails (400, Nova's InstanceQuiesceNotSupported) before anything is made. Answers
 * whether the guest was frozen (and so must be thawed).
 */
async function quiesceForSnapshots(guest: GuestQuiescing, server: ServerTable, properties: () => Promise<Record<string, string>>): Promise<boolean> {
  if (!QUIESCED_VM_STATES.has(server.vm_state)) return false
  try {
    await guest.quiesce(server.id)
    return true
  } catch (err) {
    if (!(err instanceof DriverError)) throw err
    if (BOOLEANS[((await properties()).os_require_quiesce ?? '').toLowerCase()] === true) {
      throw badRequest(`Quiescing is not supported in instance ${server.id}: ${err.message} (image property os_require_quiesce is set)`)
    }
    return false
  }
}

/** Resolves once none of the snapshots is still being taken (or after SNAPSHOTS_TAKEN_MS: the thaw must come). */
async function snapshotsTaken(db: Db, snapshotIds: string[]): Promise<void> {
  const deadline = Date.now() + SNAPSHOTS_TAKEN_MS
  while (snapshotIds.length > 0 && Date.now() < deadline) {
    const creating = await db.selectFrom('volume_snapshots').select('id').where('id', 'in', snapshotIds).where('status', '=', 'creating').executeTakeFirst()
    if (!creating) return
    await new Promise((resolve) => setTimeout(resolve, SNAPSHOT_POLL_MS))
  }
}

/**
 * createImage of a volume-backed server, done by the API as Nova does: a running guest quiesced, a forced snapshot
 * of every volume, the guest thawed once they are taken, an image holding their mapping, and the createImage
 * instance action, recorded finished. Returns the image id.
 */
export async function createVolumeBackedImage(
  db: Db,
  storage: ComputeStorage,
  guest: GuestQuiescing,
  server: ServerTable,
  caller: SnapshotCaller,
  request: SnapshotRequest & { requestId: string },
): Promise<string> {
  const bdms = await db.selectFrom('block_device_mappings').selectAll().where('server_id', '=', server.id).orderBy('created_at').orderBy('id').execute()
  // The image's properties are read only when the guest could not be quiesced (they decide whether that fails).
  const quiesced = await quiesceForSnapshots(guest, server, () => bootImageProperties(db, storage, server, caller, bdms))
  let imageId: string
  try {
    const made = await db.transaction().execute(async (tx) => {
      const mapping: Record<string, unknown>[] = []
      const snapshotIds: string[] = []
      for (const bdm of bdms) {
        if (bdm.destination_type !== 'volume' || !bdm.volume_id) {
          mapping.push(imageMapping(bdm, null))
          continue
        }
        const snapshotId = await storage.snapshots
          .createForCompute(tx, { projectId: server.project_id, userId: caller.userId, visibility: caller.visibility, volumeId: bdm.volume_id, name: `snapshot for ${request.name}`, force: true })
          .catch((err: unknown) => {
            // Nova checks the snapshot quota first and answers OverQuota as 403.
            if (err instanceof AppError && err.status === 413) throw forbidden(`Quota exceeded for resources: ['snapshots']`)
            throw err
          })
        snapshotIds.push(snapshotId)
        mapping.push(imageMapping(bdm, snapshotId))
      }
      const base = await snapshotImageRequest(tx, storage, server, caller, request)
      const root = bdms.find((b) => b.boot_index === 0)
      const image = await storage.images.createSnapshotImage(
        {
          ...base,
          diskFormat: 'qcow2',
          containerFormat: 'bare',
          properties: { ...base.properties, block_device_mapping: JSON.stringify(mapping), bdm_v2: 'True', root_device_name: server.root_device_name ?? root?.device_name ?? '/dev/vda' },
        },
        tx,
      )
      await recordFinishedAction(tx, server, caller, request.requestId, 'createImage', 'api_snapshot_instance')
      return { imageId: image.id, snapshotIds }
    })
    imageId = made.imageId
    if (quiesced) await snapshotsTaken(db, made.snapshotIds)
  } finally {
    // However the snapshots went: a guest left frozen stops writing.
    if (quiesced) await guest.unquiesce(server.id)
  }
  // No data: Nova uploads an empty body so the image is active with size 0.
  await storage.images.completeSnapshotImage(imageId, Readable.from([]))
  return imageId
}
