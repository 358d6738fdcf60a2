/**
 * The volume manager's work (Cinder's cinder-volume), as task handlers: the API moved a volume or snapshot to a
 * transitional status (creating, deleting, extending, retyping, uploading) and enqueued a task in the same
 * transaction; the handler does the work at the volume's storage place and moves the status on.
 *
 * Failures: a VolumeBackendError (a refused image, no backend with room, a failed copy) puts the volume in its
 * error status at once, with the reason logged and kept in `status_reason`; anything else (a storage host that
 * does not answer, the store) is retried by the queue and ends in the error status on the last attempt. Every
 * handler is idempotent: it checks the status it expects first and the backends tolerate repeats.
 */
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { SecretBox } from '../crypto/secret-box.js'
import type { VolumeConnection, VolumeConnectionInfo } from '../../contracts/host/compute-driver.js'
import { GIB, VolumeBackendError } from '../../contracts/host/volume.js'
import type { ImageService } from '../image/service.js'
import type { Store } from '../storage/store.js'
import { lockRowFirst } from '../storage/row-locks.js'
import type { TaskRecord } from '../tasks/queue.js'
import { PermanentTaskError, type TaskHandler } from '../tasks/runner.js'
import { addGeneration, attachmentIdentity, connectionInfo, copyIdentity, dropOldGenerations, nbdSourceOf, revokeExport, withExportedVolume, type PortRange } from './exports.js'
import { recordFailure, type MessageAction } from './messages.js'
import { dropUnusedKey } from './encryption.js'
import { choosePlace, layoutOf } from './placement.js'
import { frontEndThrottle } from './qos-specs.js'
import type { StoragePlaces } from './places/registry.js'
import { settleGroup, settleGroupSnapshot } from './group-status.js'

export const VOLUME_TASKS = {
  create: 'volume.create',
  delete: 'volume.delete',
  extend: 'volume.extend',
  retype: 'volume.retype',
  uploadImage: 'volume.upload_image',
  syncExports: 'volume.sync_exports',
  snapshotCreate: 'snapshot.create',
  snapshotDelete: 'snapshot.delete',
} as const

/** The user message a task's failure leaves (volume/messages.ts). */
const FAILURE_MESSAGES: Record<string, MessageAction> = {
  [VOLUME_TASKS.create]: 'allocate_volume',
  [VOLUME_TASKS.delete]: 'delete_volume',
  [VOLUME_TASKS.extend]: 'extend_volume',
  [VOLUME_TASKS.retype]: 'retype_volume',
  [VOLUME_TASKS.snapshotCreate]: 'create_snapshot',
  [VOLUME_TASKS.snapshotDelete]: 'delete_snapshot',
}

/** Who extended a volume: the request (its id names each server's `extend_volume` action) and the user. */
export interface ExtendRequest {
  requestId: string
  userId: string
}

/**
 * Compute's part of an online extend (Nova's `volume-extended` external event): each server records the
 * `extend_volume` action, and its hypervisor moves the guest onto the grown export.
 */
export interface AttachedVolumeHooks {
  extendAttached(serverId: string, volume: VolumeConnection, sizeBytes: number, by: ExtendRequest): Promise<void>
}

export interface VolumeWorkerDeps {
  store: Store
  box: SecretBox
  places: StoragePlaces
  images: Pick<ImageService, 'getById' | 'killImage'>
  ports: PortRange
  /** A storage host silent for longer is not chosen for new volumes. */
  downAfterMs: number
  logger?: Logger
}

type Payload = { id: string } & Record<string, unknown>

export class VolumeWorker {
  private compute: AttachedVolumeHooks | undefined

  constructor(private readonly deps: VolumeWorkerDeps) {}

  /** Compute registers itself once the conductor exists (it is built after the volume services). */
  useCompute(hooks: AttachedVolumeHooks): void {
    this.compute = hooks
  }

  handlers(): Map<string, TaskHandler> {
    const run = (work: (p: Payload, task: TaskRecord) => Promise<void>): TaskHandler => async (task) => {
      const payload = task.payload as Payload
      if (typeof payload?.id !== 'string') throw new PermanentTaskError('task payload has no id')
      await work(payload, task)
    }
    return new Map<string, TaskHandler>([
      [VOLUME_TASKS.create, run((p, t) => this.settlingGroup(p.id, () => this.guard(t, p.id, 'volumes', 'creating', 'error', () => this.create(p.id))))],
      [VOLUME_TASKS.delete, run((p, t) => this.settlingGroup(p.id, () => this.guard(t, p.id, 'volumes', 'deleting', 'error_deleting', () => this.delete(p.id))))],
      [VOLUME_TASKS.extend, run((p, t) => this.guard(t, p.id, 'volumes', 'extending', 'error_extending', () => this.extend(p.id, Number(p.newSize), String(p.previousStatus ?? 'available'), p)))],
      [VOLUME_TASKS.retype, run((p, t) => this.guard(t, p.id, 'volumes', 'retyping', String(p.previousStatus ?? 'available'), () => this.retype(p.id, String(p.typeId), String(p.previousStatus ?? 'available'))))],
      [VOLUME_TASKS.uploadImage, run((p, t) => this.uploadImage(t, p.id, String(p.imageId), String(p.previousStatus ?? 'available')))],
      [VOLUME_TASKS.syncExports, run(async (p) => void (await this.deps.places.get(p.id).syncExports()))],
      [VOLUME_TASKS.snapshotCreate, run((p, t) => this.settlingGroupSnapshot(p.id, () => this.guard(t, p.id, 'volume_snapshots', 'creating', 'error', () => this.createSnapshot(p.id))))],
      [VOLUME_TASKS.snapshotDelete, run((p, t) => this.settlingGroupSnapshot(p.id, () => this.guard(t, p.id, 'volume_snapshots', 'deleting', 'error_deleting', () => this.deleteSnapshot(p.id))))],
    ])
  }

  /**
   * Runs a member volume's task, then lets its group move on (group-status.ts): a group made from a source is
   * available once its last volume is, one being deleted goes once its last volume has. The group is read first:
   * a deleted volume's row is gone afterwards.
   */
  private async settlingGroup(volumeId: string, work: () => Promise<void>): Promise<void> {
    const row = await this.deps.store.db.selectFrom('volumes').select('group_id').where('id', '=', volumeId).executeTakeFirst()
    await work()
    if (row?.group_id) await settleGroup(this.deps.store.db, row.group_id)
  }

  /** The same for a member snapshot of a group snapshot. */
  private async settlingGroupSnapshot(snapshotId: string, work: () => Promise<void>): Promise<void> {
    const row = await this.deps.store.db.selectFrom('volume_snapshots').select('group_snapshot_id').where('id', '=', snapshotId).executeTakeFirst()
    await work()
    if (row?.group_snapshot_id) await settleGroupSnapshot(this.deps.store.db, row.group_snapshot_id)
  }

  /** Makes a new volume's blank bytes at a place chosen for it (a backup's restore target); nothing when it has them. */
  async createBlank(volumeId: string): Promise<void> {
    const v = await this.volume(volumeId)
    if (v.location) return
    const location = await this.place(volumeId)
    await this.deps.places.get(location).create(v.backend, volumeId, v.size)
  }

  /** Creates a volume's bytes in the caller's task (boot from volume); a backend failure leaves it in error. */
  async createNow(volumeId: string): Promise<void> {
    const task = { kind: VOLUME_TASKS.create, attempts: 1, maxAttempts: 1 } as TaskRecord
    await this.guard(task, volumeId, 'volumes', 'creating', 'error', () => this.create(volumeId))
  }

  /**
   * Runs `work` while the row is in `expected` status (otherwise the task is done: deleted, or finished by an
   * earlier run); a backend failure, or any failure on the last attempt, leaves the row in `failedStatus`.
   */
  private async guard(task: TaskRecord, id: string, table: 'volumes' | 'volume_snapshots', expected: string, failedStatus: string, work: () => Promise<void>): Promise<void> {
    const row = await this.deps.store.db.selectFrom(table).select('status').where('id', '=', id).executeTakeFirst()
    if (row?.status !== expected) return
    try {
      await work()
    } catch (err) {
      const lastAttempt = task.attempts >= task.maxAttempts
      if (!(err instanceof VolumeBackendError) && !lastAttempt) throw err
      this.deps.logger?.warn({ err, id, task: task.kind }, 'volume backend work failed')
      const reason = (err as Error).message
      await this.deps.store.db.transaction().execute(async (tx) => {
        const moved =
          table === 'volumes'
            ? await tx.updateTable('volumes').set({ status: failedStatus, status_reason: reason, updated_at: Date.now() }).where('id', '=', id).where('status', '=', expected).executeTakeFirst()
            : await tx.updateTable('volume_snapshots').set({ status: failedStatus, updated_at: Date.now() }).where('id', '=', id).where('status', '=', expected).executeTakeFirst()
        // The project is told why (/messages), once: only by the run that set the error status.
        const action = FAILURE_MESSAGES[task.kind]
        if (Number(moved.numUpdatedRows) === 0 || !action) return
        const { project_id: projectId } = await tx.selectFrom(table).select('project_id').where('id', '=', id).executeTakeFirstOrThrow()
        const payload = task.payload as { requestId?: unknown } | undefined
        await recordFailure(tx, { action, projectId, resourceId: id, reason, requestId: typeof payload?.requestId === 'string' ? payload.requestId : undefined })
      })
    }
  }

  private async volume(id: string) {
    return this.deps.store.db.selectFrom('volumes').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  }

  /** The volume's location, choosing one (and recording it) the first time. */
  private async place(id: string): Promise<string> {
    const db = this.deps.store.db
    const v = await this.volume(id)
    if (v.location) return v.location
    const type = await db.selectFrom('volume_types').select('extra_specs').where('id', '=', v.volume_type_id).executeTakeFirstOrThrow()
    const location = await choosePlace(db, layoutOf(JSON.parse(type.extra_specs) as Record<string, string>), v.size, this.deps.downAfterMs)
    await db.updateTable('volumes').set({ location }).where('id', '=', id).where('location', 'is', null).execute()
    return (await this.volume(id)).location!
  }

  private async create(id: string): Promise<void> {
    const location = await this.place(id)
    const v = await this.volume(id)
    const place = this.deps.places.get(location)
    if (v.snapshot_id) {
      const snap = await this.deps.store.db.selectFrom('volume_snapshots').select('volume_id').where('id', '=', v.snapshot_id).executeTakeFirstOrThrow()
      await place.createFrom(v.backend, id, v.size, { kind: 'snapshot', snapshotId: v.snapshot_id, volumeId: snap.volume_id })
    } else if (v.source_volid) {
      const source = await this.volume(v.source_volid)
      if (source.location === location && source.backend === v.backend) await place.createFrom(v.backend, id, v.size, { kind: 'volume', volumeId: source.id })
      else await this.copyAcross(source.id, { id, location, backend: v.backend, size: v.size })
    } else if (v.image_id) {
      const image = await this.deps.images.getById(v.image_id)
      if (!image) throw new VolumeBackendError(`image ${v.image_id} is gone`)
      await place.createFrom(v.backend, id, v.size, { kind: 'image', imageId: image.id, format: image.diskFormat === 'qcow2' ? 'qcow2' : 'raw' })
    } else {
      await place.create(v.backend, id, v.size)
    }
    await this.deps.store.db.updateTable('volumes').set({ status: 'available', status_reason: null, updated_at: Date.now() }).where('id', '=', id).where('status', '=', 'creating').execute()
  }

  /**
   * Copies a volume's bytes to another place or backend over NBD: the source is exported with a key of its own,
   * the destination reads it with qemu-img, the key is revoked afterwards (and the export goes if it was the last).
   */
  private async copyAcross(sourceId: string, target: { id: string; location: string; backend: string; size: number }): Promise<void> {
    const source = await this.volume(sourceId)
    if (!source.location) throw new VolumeBackendError(`source volume ${sourceId} has no bytes yet`)
    await withExportedVolume(this.deps, this.deps.places.get(source.location), { volumeId: source.id }, copyIdentity(target.id), (nbd) =>
      this.deps.places.get(target.location).createFrom(target.backend, target.id, target.size, { kind: 'nbd', source: nbd }),
    )
  }

  private async delete(id: string): Promise<void> {
    const db = this.deps.store.db
    const v = await this.volume(id)
    const snapshots = await db.selectFrom('volume_snapshots').select('id').where('volume_id', '=', id).execute()
    // The bytes of a volume whose storage host was removed (or lost the role) are out of reach: only the records go.
    if (v.location && (await this.placeExists(v.location))) {
      const place = this.deps.places.get(v.location)
      for (const s of snapshots) await place.deleteSnapshot(v.backend, s.id, id)
      await place.delete(v.backend, id)
    }
    const keys = await db.selectFrom('volume_export_keys').select('identity').where('volume_id', '=', id).execute()
    await db.transaction().execute(async (tx) => {
      // The row before its attachments' view revision, as every writer (storage/row-locks.ts).
      await lockRowFirst(tx, this.deps.store.capabilities, 'volumes', id)
      for (const k of keys) await revokeExport(tx, k.identity)
      await tx.deleteFrom('volume_snapshots').where('volume_id', '=', id).execute()
      await tx.deleteFrom('volume_attachments').where('volume_id', '=', id).execute()
      await tx.deleteFrom('volumes').where('id', '=', id).where('status', '=', 'deleting').execute()
      await dropUnusedKey(tx, v.encryption_key_id)
    })
    if (keys.length > 0 && v.location) await this.deps.places.get(v.location).syncExports()
  }

  /** Whether a location still holds volumes: the controller, or a host that has the storage role. */
  private async placeExists(location: string): Promise<boolean> {
    if (location === 'controller') return true
    return !!(await this.deps.store.db.selectFrom('host_roles').select('host_id').where('host_id', '=', location).where('role', '=', 'storage').executeTakeFirst())
  }

  /**
   * Grows the bytes; an exported volume gets a new generation at the new size. Every server it is attached to is
   * told (Cinder's `volume-extended` event to Nova): a hypervisor that reads the bytes moves its guest onto the new
   * generation (the guest sees the new capacity), a simulated one notes it; then the old generation goes.
   */
  private async extend(id: string, newSize: number, previousStatus: string, payload: Payload): Promise<void> {
    const { store, box, places } = this.deps
    if (!Number.isInteger(newSize)) throw new PermanentTaskError('extend task without a new size')
    const v = await this.volume(id)
    const place = places.get(await this.place(id))
    await place.extend(v.backend, id, newSize)
    const generation = await store.db.transaction().execute((tx) => addGeneration(tx, id))
    if (generation !== undefined) await place.syncExports()
    // Tasks queued before the request was recorded in the payload get a request id of their own.
    const by: ExtendRequest = { requestId: String(payload.requestId ?? `req-${randomUUID()}`), userId: String(payload.userId ?? v.user_id) }
    const attachments = await store.db.selectFrom('volume_attachments').select(['id', 'server_id', 'device', 'connection_info']).where('volume_id', '=', id).where('attach_status', '=', 'attached').execute()
    // The guests' records keep the volume's limits for their next start (the running disks keep theirs).
    const throttle = await frontEndThrottle(store.db, id)
    for (const a of attachments) {
      // Only an attachment that was given an export (a host that reads bytes) moves to the new generation; one
      // that opens RBD itself keeps its connection and only learns the size.
      const stored = a.connection_info === null ? undefined : (JSON.parse(a.connection_info) as VolumeConnectionInfo)
      const exported = generation !== undefined && stored !== undefined
      const connection = stored?.driver_volume_type === 'rbd' ? stored : exported ? connectionInfo(await nbdSourceOf(store.db, box, attachmentIdentity(a.id)), { volumeId: id, attachmentId: a.id }, false) : undefined
      await this.compute?.extendAttached(a.server_id, { volumeId: id, device: a.device, connection, ...(throttle ? { throttle } : {}) }, newSize * GIB, by)
      if (connection) await store.db.updateTable('volume_attachments').set({ connection_info: JSON.stringify(connection) }).where('id', '=', a.id).execute()
    }
    if (generation !== undefined) {
      await store.db.transaction().execute((tx) => dropOldGenerations(tx, id))
      await place.syncExports()
    }
    await store.db.updateTable('volumes').set({ size: newSize, status: previousStatus, updated_at: Date.now() }).where('id', '=', id).where('status', '=', 'extending').execute()
  }

  /** Moves the bytes to the new type's backend and place when they differ, then records the new type. */
  private async retype(id: string, typeId: string, previousStatus: string): Promise<void> {
    const db = this.deps.store.db
    const v = await this.volume(id)
    const type = await db.selectFrom('volume_types').select('extra_specs').where('id', '=', typeId).executeTakeFirstOrThrow()
    const layout = layoutOf(JSON.parse(type.extra_specs) as Record<string, string>)
    let { backend, location } = v
    if (v.location && (v.backend !== layout.backend || !sameKind(v.location, layout.place))) {
      backend = layout.backend
      location = await choosePlace(db, layout, v.size, this.deps.downAfterMs)
      await this.copyAcross(id, { id, location, backend, size: v.size })
    }
    await db.transaction().execute(async (tx) => {
      await tx.updateTable('volumes').set({ volume_type_id: typeId, backend, location, multiattach: layout.multiattach ? 1 : 0, status: previousStatus, updated_at: Date.now() }).where('id', '=', id).execute()
    })
    // The old bytes go once the row names the new ones: a crash before this leaves an orphan, never a loss.
    if (v.location && (location !== v.location || backend !== v.backend)) await this.deps.places.get(v.location).delete(v.backend, id)
  }

  private async uploadImage(task: TaskRecord, id: string, imageId: string, previousStatus: string): Promise<void> {
    const db = this.deps.store.db
    const v = await db.selectFrom('volumes').selectAll().where('id', '=', id).executeTakeFirst()
    const upload = await db.selectFrom('volume_image_uploads').selectAll().where('image_id', '=', imageId).executeTakeFirst()
    if (!v || v.status !== 'uploading' || !upload) return
    const back = () => db.updateTable('volumes').set({ status: previousStatus, updated_at: Date.now() }).where('id', '=', id).where('status', '=', 'uploading').execute()
    try {
      const image = await this.deps.images.getById(imageId)
      if (image?.status === 'queued') await this.deps.places.get(v.location!).uploadToImage(v.backend, id, imageId, upload.disk_format === 'qcow2' ? 'qcow2' : 'raw')
    } catch (err) {
      if (!(err instanceof VolumeBackendError) && task.attempts < task.maxAttempts) throw err
      this.deps.logger?.warn({ err, id, imageId }, 'upload of a volume to an image failed')
      await this.deps.images.killImage(imageId)
    }
    await db.deleteFrom('volume_image_uploads').where('image_id', '=', imageId).execute()
    await back()
  }

  /** The volume a snapshot was taken of (undefined once it is gone). */
  private async snapshotVolume(snapshotId: string) {
    const db = this.deps.store.db
    const snap = await db.selectFrom('volume_snapshots').select('volume_id').where('id', '=', snapshotId).executeTakeFirstOrThrow()
    return db.selectFrom('volumes').selectAll().where('id', '=', snap.volume_id).executeTakeFirst()
  }

  private async createSnapshot(snapshotId: string): Promise<void> {
    const volume = await this.snapshotVolume(snapshotId)
    if (!volume?.location) throw new VolumeBackendError(`the volume of snapshot ${snapshotId} has no bytes`)
    await this.deps.places.get(volume.location).createSnapshot(volume.backend, snapshotId, volume.id)
    await this.deps.store.db.updateTable('volume_snapshots').set({ status: 'available', updated_at: Date.now() }).where('id', '=', snapshotId).where('status', '=', 'creating').execute()
  }

  private async deleteSnapshot(snapshotId: string): Promise<void> {
    const volume = await this.snapshotVolume(snapshotId)
    if (volume?.location && (await this.placeExists(volume.location))) await this.deps.places.get(volume.location).deleteSnapshot(volume.backend, snapshotId, volume.id)
    await this.deps.store.db.deleteFrom('volume_snapshots').where('id', '=', snapshotId).where('status', '=', 'deleting').execute()
  }
}

function sameKind(location: string, place: 'controller' | 'storage-host'): boolean {
  return (location === 'controller') === (place === 'controller')
}
