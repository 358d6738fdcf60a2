/**
 * The block storage service: Cinder's rules for volumes, their status machine and attachments. The bytes live in
 * a backend at a storage place (docs/block-storage.md); work Cinder does in its volume manager goes through the
 * durable task queue to the volume worker (worker.ts), so a process dying in between does not strand a volume.
 *
 * Status machine (volume `status`):
 *   creating → available | error                       (task volume.create)
 *   available → attaching → in-use                      (reserveForAttach, attach — called by compute)
 *   available | attaching → in-use → available          (Cinder's os-attach / os-detach records: cinder-attachments.ts)
 *   available → awaiting-transfer → available           (a transfer offered, then accepted or withdrawn: transfers.ts)
 *   in-use → detaching → available | in-use            (beginDetach, detach; in-use while others stay attached)
 *                                                      (a multiattach volume too is detaching during each detach, as
 *                                                      Cinder's begin_detaching makes it)
 *   available | error → deleting → gone                 (task volume.delete)
 *   available | in-use → extending → the same | error_extending   (task volume.extend; in-use from 3.42)
 *   available | in-use → retyping → the same             (task volume.retype; bytes move between backends)
 *   available | in-use → uploading → the same            (task volume.upload_image)
 *   available | in-use → backing-up → the same           (task backup.create: backups.ts)
 *   (new) | available → restoring-backup → available | error_restoring   (task backup.restore: backups.ts)
 *   A volume in a generic volume group (`group_id`) is deleted with its group, not alone (group-status.ts).
 *
 * Compute calls the methods under "for compute" inside its own transactions (pass `tx`), so a server and its
 * volumes change together.
 */
import { randomUUID } from 'node:crypto'
import { AppError, badRequest, conflict, notFound } from '../../contracts/errors.js'
import type { Principal } from '../auth/principal.js'
import type { ImageService } from '../image/service.js'
import { allows, authorize, visibilityOf, type Visibility } from '../policy/rules.js'
import { volumePolicy } from '../policy/volume.policy.js'
import type { Db, Store } from '../storage/store.js'
import { lockRowFirst } from '../storage/row-locks.js'
import type { TaskQueue } from '../tasks/queue.js'
import type { ImageRecord } from '../image/model.js'
import { AVAILABILITY_ZONES, describedChanges, rowToAttachment, type DescribedChanges, type VolumeAttachment, type VolumeRecord } from './model.js'
import type { VolumeConnections } from './connections.js'
import type { VolumeConnectionInfo } from '../../contracts/host/compute-driver.js'
import { fitsLayout, typeLayout } from './placement.js'
import { checkQuota, typedDelta, typeResource } from './quotas.js'
import { isFrozen } from './volume-services.js'
import { hydrate, loadVolume, volumeStamp, resolveType, resolveUsableType, type TypeAccess } from './repo.js'
import type { Stamp } from '../http/view-cache.js'
import { projectDefaultTypeId } from './default-types.js'
import { page, type SortKeys } from './listing.js'
import { VOLUME_TASKS, type VolumeWorker } from './worker.js'
import { findGroupRow, GROUP_MAY, requireStatus } from './group-status.js'
import { encryptionKeyOf, keyForNewVolume, refuseEncryptionChange, type VolumeOrigin } from './encryption.js'
import type { SecretBox } from '../crypto/secret-box.js'

export { VOLUME_TASKS }

/** Image formats whose bytes go into a volume as they are (raw, iso) or converted (qcow2). */
const VOLUME_IMAGE_FORMATS = ['raw', 'qcow2', 'iso']

export interface VolumeServiceOptions {
  /** Delay before backend work starts, in ms (tests slow it to observe transitional states). */
  workDelayMs?: number
  now?: () => number
  /** Called after a commit that enqueued work, so this process's runner claims it at once. */
  wake?: () => void
  /** The type of a volume created without one (Cinder's default_volume_type): `ceph` when Ceph is configured. */
  defaultVolumeType?: string
}

export interface Caller {
  projectId: string
  userId: string
  /** Whose volumes and snapshots the caller may find (volume:other_projects:see, or compute's decision). */
  visibility: Visibility
  /** Private volume types the project was not granted may be used (type:private:see); compute's callers may not. */
  seesPrivateTypes?: boolean
}

export function callerOf(principal: Principal): Caller {
  if (principal.scope.type !== 'project') throw new AppError('forbidden', 'The block storage API needs a project-scoped token.')
  return {
    projectId: principal.scope.projectId,
    userId: principal.userId,
    visibility: visibilityOf(allows(volumePolicy, 'volume:other_projects:see', principal)),
    seesPrivateTypes: allows(volumePolicy, 'type:private:see', principal),
  }
}

/** Whether the caller sees a volume of this project (else it does not exist for them: 404). */
const sees = (caller: Caller, projectId: string): boolean => caller.visibility === 'all_projects' || projectId === caller.projectId

/** Cinder's freeze: a frozen backend's volumes keep serving I/O but are not managed until it is thawed. */
async function refuseFrozen(db: Db, volume: VolumeRecord, what: string): Promise<void> {
  if (volume.locationName === null) return
  const service = `${volume.locationName}@${volume.backend}`
  if (await isFrozen(db, service)) throw badRequest(`Invalid volume: Volume ${volume.id} is on the frozen volume service ${service}; it cannot be ${what} until the service is thawed.`)
}

/** The caller as a private volume type's access check sees it. */
function typeAccessOf(caller: Caller): TypeAccess {
  return { projectId: caller.projectId, seesPrivate: caller.seesPrivateTypes === true }
}

/** The caller of a compute-facing method: compute's route decided its visibility from compute's policy (default: project). */
export function computeCaller(request: { projectId: string; userId?: string; visibility?: Visibility }): Caller {
  return { projectId: request.projectId, userId: request.userId ?? '', visibility: request.visibility ?? 'project' }
}

export interface CreateVolumeInput {
  size?: number
  name?: string | null
  description?: string | null
  volume_type?: string | null
  availability_zone?: string | null
  snapshot_id?: string | null
  source_volid?: string | null
  imageRef?: string | null
  metadata?: Record<string, string>
  /** The deprecated `multiattach` flag of the create body: the volume is multiattach whatever its type says. */
  multiattach?: boolean
  /** The generic volume group the volume joins (3.13+): its type must be one of the group's. */
  group_id?: string | null
}

/** What a restored backup brings to the volume made for it: the key of its bytes, and the type they were of. */
export interface RestoredBackup {
  encryptionKeyId: string | null
  volumeTypeId: string | null
}

/** The group a new volume joins, as insertVolume checks it. */
export interface JoinedGroup {
  id: string
  volumeTypeIds: string[]
}

export interface VolumeListQuery {
  allTenants: boolean
  projectId?: string
  name?: string
  status?: string
  bootable?: boolean
  availabilityZone?: string
  metadata?: Record<string, string>
  limit?: number
  marker?: string
  offset?: number
  sort: { key: string; dir: 'asc' | 'desc' }[]
}

export interface UploadToImageInput {
  imageName: string
  diskFormat: string
  containerFormat: string
  force: boolean
  visibility?: 'private' | 'shared'
}

/** The formats a volume's bytes are uploaded in. */
const UPLOAD_FORMATS = ['raw', 'qcow2'] as const

/** Keys of a volume's image metadata that describe the source image itself, not properties an upload carries on. */
const SOURCE_IMAGE_KEYS = new Set(['image_id', 'image_name', 'checksum', 'container_format', 'disk_format', 'min_disk', 'min_ram', 'size'])

/** The properties an uploaded image inherits from the image the volume was made from (Cinder copies them). */
function inheritedImageProperties(volume: VolumeRecord): Record<string, string> {
  return Object.fromEntries(Object.entries(volume.imageMetadata ?? {}).filter(([key]) => !SOURCE_IMAGE_KEYS.has(key)))
}

const GIB = 1024 ** 3
const DELETABLE = new Set(['available', 'error', 'error_restoring', 'error_extending', 'error_managing'])
const SORT_KEYS: SortKeys<VolumeRecord> = {
  created_at: (v) => v.createdAt,
  updated_at: (v) => v.updatedAt,
  id: (v) => v.id,
  name: (v) => v.name,
  display_name: (v) => v.name,
  status: (v) => v.status,
  size: (v) => v.size,
  availability_zone: (v) => v.availabilityZone,
  bootable: (v) => Number(v.bootable),
}

export class VolumeService {
  private readonly now: () => number
  readonly workDelayMs: number

  constructor(
    private readonly store: Store,
    private readonly queue: TaskQueue,
    private readonly images: ImageService,
    private readonly options: VolumeServiceOptions = {},
  ) {
    this.now = options.now ?? Date.now
    this.workDelayMs = options.workDelayMs ?? 0
  }

  private worker: VolumeWorker | undefined
  private connections: VolumeConnections | undefined

  /** The worker and connection manager, set once by the composition root (they are built around the service). */
  useBackends(worker: VolumeWorker, connections: VolumeConnections, box: SecretBox): void {
    this.worker = worker
    this.connections = connections
    this.box = box
  }

  /** Seals encrypted volumes' keys (set with the backends). */
  private box: SecretBox | undefined

  private wake(): void {
    this.options.wake?.()
  }

  /**
   * Locks the volume's row before a transaction changes its attachments and then the row: the row first, its
   * view_revisions row after, in every writer (storage/row-locks.ts). Also keeps the next read of the row current
   * until the commit: a read-modify-write of its metadata loses no concurrent change.
   */
  lockFirst(tx: Db, id: string): Promise<void> {
    return lockRowFirst(tx, this.store.capabilities, 'volumes', id)
  }

  private async enqueue(tx: Db, kind: string, subjectId: string, payload: Record<string, unknown> = {}): Promise<void> {
    await this.queue.enqueue({ kind, subjectId, payload: { id: subjectId, ...payload }, runAfter: this.now() + this.workDelayMs }, tx)
  }

  /** A volume the caller may see (own project, or any for admins); 404 otherwise. */
  async find(caller: Caller, id: string, db: Db = this.store.db): Promise<VolumeRecord> {
    const volume = await loadVolume(db, id)
    if (!volume || !sees(caller, volume.projectId)) throw notFound(`Volume ${id} could not be found.`)
    return volume
  }

  /**
   * The stamp show's kept view is stamped with (migration 0128: the row's `rev`, raised on any change of the row,
   * and its view revision, raised on any change of its attachments, its type's name or its host's name), after the
   * checks `get` makes on the same statement's row: 404 for a volume the caller may not see, then `volume:get`.
   */
  async viewStamp(principal: Principal, id: string): Promise<Stamp> {
    const caller = callerOf(principal)
    const [row] = await volumeStamp(this.store.db, id)
    if (!row || !sees(caller, row.project_id)) throw notFound(`Volume ${id} could not be found.`)
    authorize(volumePolicy, 'volume:get', principal, { projectId: row.project_id })
    return { rev: row.rev, viewRev: row.view_rev }
  }

  async get(principal: Principal, id: string): Promise<VolumeRecord> {
    const volume = await this.find(callerOf(principal), id)
    authorize(volumePolicy, 'volume:get', principal, { projectId: volume.projectId })
    return volume
  }

  /** One page of the volumes the query matches, and how many match in all (`count`, Cinder's with_count). */
  async list(principal: Principal, query: VolumeListQuery): Promise<{ volumes: VolumeRecord[]; count: number }> {
    const caller = callerOf(principal)
    authorize(volumePolicy, 'volume:get_all', principal)
    if (query.allTenants || (query.projectId && query.projectId !== caller.projectId)) authorize(volumePolicy, 'volume:all_tenants', principal)
    let q = this.store.db.selectFrom('volumes').selectAll()
    if (query.projectId) q = q.where('project_id', '=', query.projectId)
    else if (!query.allTenants) q = q.where('project_id', '=', caller.projectId)
    if (query.name !== undefined) q = q.where('name', '=', query.name)
    if (query.status !== undefined) q = q.where('status', '=', query.status)
    if (query.bootable !== undefined) q = q.where('bootable', '=', query.bootable ? 1 : 0)
    if (query.availabilityZone !== undefined) q = q.where('availability_zone', '=', query.availabilityZone)
    let volumes = await hydrate(this.store.db, await q.execute())
    if (query.metadata) {
      const wanted = Object.entries(query.metadata)
      volumes = volumes.filter((v) => wanted.every(([k, val]) => v.metadata[k] === val))
    }
    return { volumes: page(volumes, query, SORT_KEYS, 'volume'), count: volumes.length }
  }

  async create(principal: Principal, input: CreateVolumeInput): Promise<VolumeRecord> {
    const caller = callerOf(principal)
    authorize(volumePolicy, 'volume:create', principal, { projectId: caller.projectId })
    const id = await this.store.db.transaction().execute(async (tx) => {
      let group: JoinedGroup | undefined
      if (input.group_id) {
        const row = await findGroupRow(tx, caller, input.group_id)
        requireStatus('Group', row.id, row.status, GROUP_MAY['take a new volume'], 'take a new volume')
        group = { id: row.id, volumeTypeIds: JSON.parse(row.volume_type_ids) as string[] }
      }
      const record = await this.insertVolume(tx, caller, input, 'creating', group)
      await this.enqueue(tx, VOLUME_TASKS.create, record.id)
      return record.id
    })
    this.wake()
    return (await loadVolume(this.store.db, id))!
  }

  /**
   * A new volume a backup is restored into (backups.ts), inserted `restoring-backup` in the caller's transaction
   * with the API's checks and quotas; the backup's task makes its bytes.
   */
  async createForRestore(tx: Db, caller: Caller, input: CreateVolumeInput, backup: RestoredBackup): Promise<VolumeRecord> {
    return this.insertVolume(tx, caller, input, 'restoring-backup', undefined, backup)
  }

  /**
   * A volume of a group made with the group (create-from-src: a clone of a source group's volume, or a volume from
   * a group snapshot's member snapshot), inserted `creating` in the caller's transaction with the API's checks and
   * quotas; the worker makes its bytes from the source as for any volume.
   */
  async createInGroup(tx: Db, caller: Caller, input: CreateVolumeInput, group: JoinedGroup): Promise<VolumeRecord> {
    const record = await this.insertVolume(tx, caller, input, 'creating', group)
    await this.enqueue(tx, VOLUME_TASKS.create, record.id)
    return record
  }

  /** Validates a create request against its sources, its group and quotas and inserts the row. */
  private async insertVolume(tx: Db, caller: Caller, input: CreateVolumeInput, status: string, group?: JoinedGroup, backup?: RestoredBackup): Promise<VolumeRecord> {
    const sources = (['snapshot_id', 'source_volid', 'imageRef'] as const).filter((k) => input[k])
    if (sources.length > 1) throw badRequest(`Only one of snapshot_id, source_volid and imageRef may be given, not ${sources.join(' and ')}.`)
    const az = input.availability_zone ?? AVAILABILITY_ZONES[0]
    if (!(AVAILABILITY_ZONES as readonly string[]).includes(az)) throw badRequest(`Availability zone '${az}' is invalid.`)
    let size = input.size
    if (size !== undefined && (!Number.isInteger(size) || size < 1)) throw badRequest(`Invalid input received: Volume size '${size}' must be an integer and greater than 0.`)
    let typeRef = input.volume_type
    // A volume from a snapshot is made where the snapshot is, by the snapshot's backend.
    let location: string | null = null
    let fromSnapshotBackend: string | undefined
    let bootable = false
    let imageId: string | null = null
    let imageMetadata: Record<string, string> | null = null
    let origin: VolumeOrigin = { kind: 'blank' }
    if (input.snapshot_id) {
      const snap = await tx.selectFrom('volume_snapshots').selectAll().where('id', '=', input.snapshot_id).executeTakeFirst()
      if (!snap || (caller.visibility !== 'all_projects' && snap.project_id !== caller.projectId)) throw notFound(`Snapshot ${input.snapshot_id} could not be found.`)
      if (snap.status !== 'available') throw badRequest(`Invalid snapshot: Originating snapshot status must be one of 'available' values.`)
      size ??= snap.size
      if (size < snap.size) throw badRequest(`Invalid input received: Volume size '${size}'GB cannot be smaller than the snapshot size ${snap.size}GB. They must be >= original snapshot size.`)
      const source = await loadVolume(tx, snap.volume_id)
      if (source) {
        location = source.location
        fromSnapshotBackend = source.backend
        typeRef ??= source.volumeTypeId
        bootable = source.bootable
        imageId = source.imageId
        imageMetadata = source.imageMetadata
      }
      origin = { kind: 'copy', encryptionKeyId: await encryptionKeyOf(tx, snap.volume_id) }
    } else if (input.source_volid) {
      const source = await this.find(caller, input.source_volid, tx).catch(() => {
        throw notFound(`Volume ${input.source_volid} could not be found.`)
      })
      if (!['available', 'in-use'].includes(source.status)) throw badRequest(`Invalid volume: Source volume status must be available or in-use, not ${source.status}.`)
      size ??= source.size
      if (size < source.size) throw badRequest(`Invalid input received: Volume size '${size}'GB cannot be smaller than the source volume size ${source.size}GB. They must be >= original volume size.`)
      typeRef ??= source.volumeTypeId
      bootable = source.bootable
      imageId = source.imageId
      imageMetadata = source.imageMetadata
      origin = { kind: 'copy', encryptionKeyId: await encryptionKeyOf(tx, source.id) }
    } else if (input.imageRef) {
      const image = await this.images.getVisibleImage(caller.projectId, caller.visibility, input.imageRef, tx).catch((err: unknown) => {
        if (err instanceof AppError) throw badRequest(`Invalid image identifier or unable to access requested image: ${err.message}`)
        throw err
      })
      if (size === undefined) throw badRequest("Invalid input received: 'size' is required when creating a volume from an image.")
      if (!VOLUME_IMAGE_FORMATS.includes(image.diskFormat ?? '')) {
        throw badRequest(`Invalid image: disk_format ${image.diskFormat} cannot be written to a volume (expected one of ${VOLUME_IMAGE_FORMATS.join(', ')}).`)
      }
      const imageGib = Math.ceil((image.size ?? 0) / GIB)
      if (size < imageGib) throw badRequest(`Invalid input received: Size of specified image ${imageGib}GB is larger than volume size ${size}GB.`)
      if (size < image.minDisk) throw badRequest(`Invalid input received: Volume size ${size}GB cannot be smaller than the image minDisk size ${image.minDisk}GB.`)
      bootable = true
      imageId = image.id
      origin = { kind: 'image' }
      imageMetadata = {
        image_id: image.id,
        image_name: image.name ?? '',
        checksum: image.checksum ?? '',
        container_format: image.containerFormat ?? '',
        disk_format: image.diskFormat ?? '',
        min_disk: String(image.minDisk),
        min_ram: String(image.minRam),
        size: String(image.size ?? 0),
        ...image.properties,
      }
    }
    if (backup) {
      origin = { kind: 'backup', encryptionKeyId: backup.encryptionKeyId }
      // Cinder gives a volume an encrypted backup is restored into the type the backup was made of (its key fits it).
      if (backup.encryptionKeyId) typeRef ??= backup.volumeTypeId
    }
    if (size === undefined) throw badRequest("Invalid input received: 'size' is required.")
    // A type asked for must be usable by the caller; one inherited from the source volume or snapshot was usable once.
    const type = input.volume_type ? await resolveUsableType(tx, input.volume_type, typeAccessOf(caller)) : await resolveType(tx, typeRef ?? (await projectDefaultTypeId(tx, caller.projectId)) ?? this.options.defaultVolumeType)
    const layout = typeLayout(type)
    if (fromSnapshotBackend !== undefined && fromSnapshotBackend !== layout.backend) {
      throw badRequest(`Invalid input received: a volume from a snapshot is made by the snapshot's backend (${fromSnapshotBackend}); volume type ${type.name} uses ${layout.backend}.`)
    }
    if (group && !group.volumeTypeIds.includes(type.id)) throw badRequest(`Invalid input received: Invalid volume_type provided: ${type.id} (requested type must be supported by this group).`)
    await checkQuota(tx, this.store.capabilities, caller.projectId, typedDelta(type.name, { volumes: 1, gigabytes: size }))
    if (!this.box) throw new Error('the volume service has no secret box (useBackends was not called)')
    const encryptionKeyId = await keyForNewVolume(tx, this.box, type.id, origin)
    const id = randomUUID()
    const now = this.now()
    await tx
      .insertInto('volumes')
      .values({
        id,
        rev: 0,
        project_id: caller.projectId,
        user_id: caller.userId,
        name: input.name ?? null,
        description: input.description ?? null,
        status,
        size,
        volume_type_id: type.id,
        availability_zone: az,
        bootable: bootable ? 1 : 0,
        snapshot_id: input.snapshot_id ?? null,
        source_volid: input.source_volid ?? null,
        image_id: imageId,
        image_metadata: imageMetadata ? JSON.stringify(imageMetadata) : null,
        metadata: JSON.stringify(input.metadata ?? {}),
        created_at: now,
        updated_at: now,
        backend: layout.backend,
        location,
        status_reason: null,
        // Cinder: the type's extra spec or the create body's deprecated flag (which it still honours).
        multiattach: layout.multiattach || input.multiattach ? 1 : 0,
        group_id: group?.id ?? null,
        encryption_key_id: encryptionKeyId,
      })
      .execute()
    return (await loadVolume(tx, id))!
  }

  async update(principal: Principal, id: string, changes: DescribedChanges): Promise<VolumeRecord> {
    const caller = callerOf(principal)
    return this.store.db.transaction().execute(async (tx) => {
      const volume = await this.find(caller, id, tx)
      authorize(volumePolicy, 'volume:update', principal, { projectId: volume.projectId })
      await tx
        .updateTable('volumes')
        .set(describedChanges(changes, this.now()))
        .where('id', '=', id)
        .execute()
      return (await loadVolume(tx, id))!
    })
  }

  /** Sets metadata: `replace` drops keys not given (PUT), otherwise merges (POST). Returns the result. */
  async setMetadata(principal: Principal, id: string, metadata: Record<string, string>, replace: boolean): Promise<Record<string, string>> {
    const caller = callerOf(principal)
    return this.store.db.transaction().execute(async (tx) => {
      await this.lockFirst(tx, id)
      const volume = await this.find(caller, id, tx)
      authorize(volumePolicy, 'volume:update', principal, { projectId: volume.projectId })
      const next = replace ? { ...metadata } : { ...volume.metadata, ...metadata }
      await tx.updateTable('volumes').set({ metadata: JSON.stringify(next), updated_at: this.now() }).where('id', '=', id).execute()
      return next
    })
  }

  async deleteMetadataKey(principal: Principal, id: string, key: string): Promise<void> {
    const caller = callerOf(principal)
    await this.store.db.transaction().execute(async (tx) => {
      await this.lockFirst(tx, id)
      const volume = await this.find(caller, id, tx)
      authorize(volumePolicy, 'volume:update', principal, { projectId: volume.projectId })
      if (!(key in volume.metadata)) throw notFound(`Metadata item was not found: ${key}`)
      const next = { ...volume.metadata }
      delete next[key]
      await tx.updateTable('volumes').set({ metadata: JSON.stringify(next), updated_at: this.now() }).where('id', '=', id).execute()
    })
  }

  async delete(principal: Principal, id: string, options: { cascade: boolean }): Promise<void> {
    const caller = callerOf(principal)
    await this.store.db.transaction().execute(async (tx) => {
      const volume = await this.find(caller, id, tx)
      authorize(volumePolicy, 'volume:delete', principal, { projectId: volume.projectId })
      if (volume.status === 'deleting') return
      if (!DELETABLE.has(volume.status) || volume.attachments.length > 0 || volume.groupId !== null) {
        throw badRequest(
          `Invalid volume: Volume status must be available or error or error_restoring or error_extending or error_managing and must not be migrating, attached, belong to a group, have snapshots or be disassociated from snapshots after volume transfer (volume ${id} is ${volume.status}).`,
        )
      }
      const snapshots = await tx.selectFrom('volume_snapshots').select(['id', 'status']).where('volume_id', '=', id).execute()
      if (snapshots.length > 0 && !options.cascade) throw badRequest(`Invalid volume: Volume ${id} still has ${snapshots.length} dependent snapshot(s).`)
      await refuseFrozen(tx, volume, 'deleted')
      for (const snap of snapshots) {
        await tx.updateTable('volume_snapshots').set({ status: 'deleting', updated_at: this.now() }).where('id', '=', snap.id).execute()
      }
      // Conditional on the status read above: a concurrent attach or delete makes this a 409, not a lost update.
      const moved = await tx.updateTable('volumes').set({ status: 'deleting', updated_at: this.now() }).where('id', '=', id).where('status', '=', volume.status).executeTakeFirst()
      if (Number(moved.numUpdatedRows) === 0) throw conflict(`Volume ${id} changed status meanwhile; try again.`)
      // A transfer left behind by a status reset goes with its volume.
      await tx.deleteFrom('volume_transfers').where('volume_id', '=', id).execute()
      await this.enqueue(tx, VOLUME_TASKS.delete, id)
    })
    this.wake()
  }

  /**
   * os-extend; `online` (microversion 3.42+) also extends in-use volumes, and their guests see the new size. The
   * request id names the `extend_volume` instance action each attached server gets.
   */
  async extend(principal: Principal, id: string, newSize: number, online = false, requestId = `req-${randomUUID()}`): Promise<void> {
    const caller = callerOf(principal)
    await this.store.db.transaction().execute(async (tx) => {
      const volume = await this.find(caller, id, tx)
      authorize(volumePolicy, 'volume:extend', principal, { projectId: volume.projectId })
      const allowed = online ? ['available', 'in-use'] : ['available']
      if (!allowed.includes(volume.status)) throw badRequest(`Invalid volume: Volume status must be ${allowed.map((s) => `'${s}'`).join(' or ')} to extend, currently ${volume.status}.`)
      if (!Number.isInteger(newSize) || newSize <= volume.size) {
        throw badRequest(`Invalid input received: New size for extend must be greater than current size. (current: ${volume.size}, extended: ${newSize}).`)
      }
      await refuseFrozen(tx, volume, 'extended')
      // The hypervisor's luks node cannot follow a grown export; detached, the container grows with the bytes.
      if (volume.encrypted && volume.status !== 'available') throw badRequest(`Invalid volume: Volume ${id} is encrypted; extend it while it is detached.`)
      await checkQuota(tx, this.store.capabilities, volume.projectId, typedDelta(volume.volumeTypeName, { gigabytes: newSize - volume.size }))
      // Conditional on the status read above: a concurrent attach or delete makes this a 409, not a lost update.
      const moved = await tx.updateTable('volumes').set({ status: 'extending', updated_at: this.now() }).where('id', '=', id).where('status', '=', volume.status).executeTakeFirst()
      if (Number(moved.numUpdatedRows) === 0) throw conflict(`Volume ${id} changed status meanwhile; try again.`)
      await this.enqueue(tx, VOLUME_TASKS.extend, id, { newSize, previousStatus: volume.status, requestId, userId: caller.userId })
    })
    this.wake()
  }

  /**
   * os-retype: a type whose backend or place differs moves the bytes (Cinder's migration), which needs
   * `migration_policy: on-demand` and a volume that is not attached; otherwise only the type changes.
   */
  async retype(principal: Principal, id: string, typeRef: string, migrationPolicy: 'never' | 'on-demand' = 'never'): Promise<void> {
    const caller = callerOf(principal)
    await this.store.db.transaction().execute(async (tx) => {
      const volume = await this.find(caller, id, tx)
      authorize(volumePolicy, 'volume:update', principal, { projectId: volume.projectId })
      if (!['available', 'in-use'].includes(volume.status)) throw badRequest(`Invalid volume: Volume ${id} status must be available or in-use to retype, but it is ${volume.status}.`)
      // A group's volumes have the group's types: the volume leaves the group first (update with remove_volumes).
      if (volume.groupId !== null) throw badRequest(`Invalid volume: Volume ${id} belongs to group ${volume.groupId}; remove it from the group to retype it.`)
      await refuseFrozen(tx, volume, 'retyped')
      const type = await resolveUsableType(tx, typeRef, typeAccessOf(caller))
      if (type.id === volume.volumeTypeId) throw badRequest(`Invalid input received: Volume ${id} is already of type ${type.name}.`)
      await refuseEncryptionChange(tx, volume, type.id)
      const layout = typeLayout(type)
      if (layout.unmet.length > 0) throw badRequest(`Invalid input received: no backend of volume type ${type.name} fits: the ${layout.backend} backend does not have ${layout.unmet.join(', ')}.`)
      if (!fitsLayout(volume, layout)) {
        if (migrationPolicy !== 'on-demand') throw badRequest(`Invalid input received: retyping volume ${id} to ${type.name} moves its bytes to another backend; ask with migration_policy on-demand.`)
        if (volume.status !== 'available') throw badRequest(`Invalid volume: Volume ${id} must be detached to move its bytes to another backend.`)
        if (await tx.selectFrom('volume_snapshots').select('id').where('volume_id', '=', id).executeTakeFirst()) throw badRequest(`Invalid volume: Volume ${id} has snapshots, which stay with their backend; delete them before moving it.`)
      }
      if (volume.multiattach && !layout.multiattach && volume.attachments.length > 1) throw badRequest(`Invalid volume: Volume ${id} is attached to several servers; type ${type.name} does not allow that.`)
      // The totals stay; the new type's own quotas get the volume.
      await checkQuota(tx, this.store.capabilities, volume.projectId, { [typeResource('volumes', type.name)]: 1, [typeResource('gigabytes', type.name)]: volume.size })
      const moved = await tx.updateTable('volumes').set({ status: 'retyping', updated_at: this.now() }).where('id', '=', id).where('status', '=', volume.status).executeTakeFirst()
      if (Number(moved.numUpdatedRows) === 0) throw conflict(`Volume ${id} changed status meanwhile; try again.`)
      await this.enqueue(tx, VOLUME_TASKS.retype, id, { typeId: type.id, previousStatus: volume.status })
    })
    this.wake()
  }

  /** Sets (merge) or removes keys of the volume's image metadata (os-set_image_metadata / os-unset_image_metadata). */
  async changeImageMetadata(principal: Principal, id: string, change: { set?: Record<string, string>; unset?: string }): Promise<Record<string, string>> {
    const caller = callerOf(principal)
    return this.store.db.transaction().execute(async (tx) => {
      await this.lockFirst(tx, id)
      const volume = await this.find(caller, id, tx)
      authorize(volumePolicy, 'volume:update', principal, { projectId: volume.projectId })
      const next = { ...(volume.imageMetadata ?? {}), ...(change.set ?? {}) }
      if (change.unset !== undefined) {
        if (!(change.unset in next)) throw notFound(`Glance metadata not found for key ${change.unset}.`)
        delete next[change.unset]
      }
      await tx.updateTable('volumes').set({ image_metadata: JSON.stringify(next), updated_at: this.now() }).where('id', '=', id).execute()
      return next
    })
  }

  /**
   * os-volume_upload_image: a new image of the volume's bytes. The image is created queued with the request, the
   * volume is `uploading` until its storage place has copied the bytes in, converted to `diskFormat` (the worker's
   * task volume.upload_image), then back to its status. An attached volume needs `force`, as in Cinder.
   */
  async uploadToImage(principal: Principal, id: string, input: UploadToImageInput): Promise<{ volume: VolumeRecord; image: ImageRecord }> {
    const caller = callerOf(principal)
    if (!(UPLOAD_FORMATS as readonly string[]).includes(input.diskFormat)) {
      throw badRequest(`Invalid disk-format '${input.diskFormat}': volumes upload as ${UPLOAD_FORMATS.join(' or ')}.`)
    }
    if (input.containerFormat !== 'bare') throw badRequest(`Invalid container-format '${input.containerFormat}': volumes upload as bare.`)
    const result = await this.store.db.transaction().execute(async (tx) => {
      const volume = await this.find(caller, id, tx)
      authorize(volumePolicy, 'volume:upload_image', principal, { projectId: volume.projectId })
      // Its bytes are ciphertext whose key stays with the volume: an image of them would be unreadable.
      if (volume.encrypted) throw badRequest(`Invalid volume: Volume ${id} is encrypted; pcc does not upload encrypted volumes to images.`)
      if (!(volume.status === 'available' || (volume.status === 'in-use' && input.force))) {
        throw badRequest(`Invalid volume: Volume ${id} status must be available or in-use with force, but current status is: ${volume.status}.`)
      }
      const moved = await tx.updateTable('volumes').set({ status: 'uploading', updated_at: this.now() }).where('id', '=', id).where('status', '=', volume.status).executeTakeFirst()
      if (Number(moved.numUpdatedRows) === 0) throw conflict(`Volume ${id} changed status meanwhile; try again.`)
      const image = await this.images.createSnapshotImage(
        { projectId: volume.projectId, name: input.imageName, diskFormat: input.diskFormat, containerFormat: input.containerFormat, visibility: input.visibility, imageType: null, minDisk: volume.size, properties: inheritedImageProperties(volume) },
        tx,
      )
      await tx.insertInto('volume_image_uploads').values({ image_id: image.id, volume_id: id, disk_format: input.diskFormat, created_at: this.now() }).execute()
      await this.enqueue(tx, VOLUME_TASKS.uploadImage, id, { imageId: image.id, previousStatus: volume.status })
      return { volume: (await loadVolume(tx, id))!, image }
    })
    this.wake()
    return result
  }

  /**
   * os-reserve / os-unreserve: marks an available volume `attaching` (nothing attached yet), and back. Only a
   * reservation without an attachment in progress can be undone.
   */
  async reserve(principal: Principal, id: string, reserve: boolean): Promise<void> {
    const caller = callerOf(principal)
    await this.store.db.transaction().execute(async (tx) => {
      const volume = await this.find(caller, id, tx)
      authorize(volumePolicy, 'volume:update', principal, { projectId: volume.projectId })
      const [from, to] = reserve ? ['available', 'attaching'] : ['attaching', 'available']
      if (volume.status !== from || (!reserve && volume.attachments.length > 0)) {
        throw badRequest(`Invalid volume: Volume ${id} status must be ${from}${reserve ? '' : ' without attachments'} to ${reserve ? 'reserve' : 'unreserve'}, but current status is: ${volume.status}.`)
      }
      const moved = await tx.updateTable('volumes').set({ status: to, updated_at: this.now() }).where('id', '=', id).where('status', '=', from).executeTakeFirst()
      if (Number(moved.numUpdatedRows) === 0) throw conflict(`Volume ${id} changed status meanwhile; try again.`)
    })
  }

  /** Admins delete a volume whatever its status, attachments included (os-force_delete). */
  async forceDelete(principal: Principal, id: string): Promise<void> {
    authorize(volumePolicy, 'volume:reset_status', principal)
    await this.store.db.transaction().execute(async (tx) => {
      await this.lockFirst(tx, id)
      await this.find(callerOf(principal), id, tx)
      await tx.deleteFrom('volume_attachments').where('volume_id', '=', id).execute()
      await tx.deleteFrom('volume_transfers').where('volume_id', '=', id).execute()
      await tx.updateTable('volume_snapshots').set({ status: 'deleting', updated_at: this.now() }).where('volume_id', '=', id).execute()
      await tx.updateTable('volumes').set({ status: 'deleting', updated_at: this.now() }).where('id', '=', id).execute()
      await this.enqueue(tx, VOLUME_TASKS.delete, id)
    })
    this.wake()
  }

  async setBootable(principal: Principal, id: string, bootable: boolean): Promise<void> {
    const caller = callerOf(principal)
    await this.store.db.transaction().execute(async (tx) => {
      const volume = await this.find(caller, id, tx)
      authorize(volumePolicy, 'volume:update', principal, { projectId: volume.projectId })
      await tx.updateTable('volumes').set({ bootable: bootable ? 1 : 0, updated_at: this.now() }).where('id', '=', id).execute()
    })
  }

  async resetStatus(principal: Principal, id: string, status: string): Promise<void> {
    authorize(volumePolicy, 'volume:reset_status', principal)
    const allowed = ['available', 'error', 'in-use', 'error_deleting', 'error_extending', 'creating', 'deleting', 'attaching', 'detaching', 'reserved', 'maintenance']
    if (!allowed.includes(status)) throw badRequest(`Invalid status '${status}': expected one of ${allowed.join(', ')}.`)
    await this.store.db.transaction().execute(async (tx) => {
      await this.find(callerOf(principal), id, tx)
      await tx.updateTable('volumes').set({ status, updated_at: this.now() }).where('id', '=', id).execute()
    })
  }

  /** Attachments of the caller's volumes (all projects' with `allTenants` for admins), oldest first. */
  async listAttachments(principal: Principal, query: { allTenants: boolean; volumeId?: string; serverId?: string }): Promise<(VolumeAttachment & { projectId: string })[]> {
    const caller = callerOf(principal)
    authorize(volumePolicy, 'volume:get_all', principal)
    if (query.allTenants) authorize(volumePolicy, 'volume:all_tenants', principal)
    let q = this.store.db
      .selectFrom('volume_attachments')
      .innerJoin('volumes', 'volumes.id', 'volume_attachments.volume_id')
      .selectAll('volume_attachments')
      .select('volumes.project_id')
    if (!query.allTenants) q = q.where('volumes.project_id', '=', caller.projectId)
    if (query.volumeId !== undefined) q = q.where('volume_attachments.volume_id', '=', query.volumeId)
    if (query.serverId !== undefined) q = q.where('volume_attachments.server_id', '=', query.serverId)
    const rows = await q.orderBy('volume_attachments.created_at').execute()
    return rows.map((r) => ({ ...rowToAttachment(r), projectId: r.project_id }))
  }

  // ---- for compute ----

  /**
   * Reserves a volume of `projectId` for a server: available → attaching, with an attachment record in status
   * reserved; a multiattach volume may also be in use by other servers. 404 when the volume is not the project's;
   * 400 "Invalid volume" when it cannot be attached (in use, or already attached to that server, or taken by a
   * concurrent reservation): Cinder's InvalidVolume, which Nova answers with 400 (docs/compute.md, "Volume
   * attachments").
   */
  async reserveForAttach(tx: Db, request: { volumeId: string; projectId: string; serverId: string; visibility?: Visibility }): Promise<{ attachmentId: string; volume: VolumeRecord }> {
    await this.lockFirst(tx, request.volumeId)
    const volume = await this.find(computeCaller(request), request.volumeId, tx)
    const attachable = volume.multiattach ? ['available', 'in-use'] : ['available']
    if (!attachable.includes(volume.status)) {
      throw badRequest(`Invalid volume: volume ${volume.id} status must be ${attachable.join(' or ')} to attach, but it is ${volume.status}${volume.multiattach ? '' : ' (its type does not allow multiattach)'}.`)
    }
    if (volume.attachments.some((a) => a.serverId === request.serverId)) throw badRequest(`Invalid volume: volume ${volume.id} is already attached to server ${request.serverId}.`)
    const claimed = await tx
      .updateTable('volumes')
      .set({ status: 'attaching', updated_at: this.now() })
      .where('id', '=', volume.id)
      .where('status', '=', volume.status)
      .executeTakeFirst()
    if (Number(claimed.numUpdatedRows) === 0) throw badRequest(`Invalid volume: volume ${volume.id} is being attached elsewhere.`)
    const attachmentId = randomUUID()
    await tx
      .insertInto('volume_attachments')
      .values({ id: attachmentId, volume_id: volume.id, server_id: request.serverId, attach_status: 'reserved', attach_mode: 'rw', device: null, host_name: null, delete_on_termination: 0, attached_at: null, created_at: this.now(), host_id: null, connection_info: null, attached_by: 'compute' })
      .execute()
    return { attachmentId, volume: (await loadVolume(tx, volume.id))! }
  }

  /** Completes an attachment: attaching → in-use, recording the device and host. */
  async attach(tx: Db, request: { volumeId: string; serverId: string; device?: string | null; hostName?: string | null; deleteOnTermination?: boolean }): Promise<void> {
    await this.lockFirst(tx, request.volumeId)
    const attachment = await tx.selectFrom('volume_attachments').selectAll().where('volume_id', '=', request.volumeId).where('server_id', '=', request.serverId).executeTakeFirst()
    if (!attachment) throw conflict(`Volume ${request.volumeId} was not reserved for server ${request.serverId}.`)
    const now = this.now()
    await tx
      .updateTable('volume_attachments')
      .set({ attach_status: 'attached', device: request.device ?? null, host_name: request.hostName ?? null, delete_on_termination: request.deleteOnTermination ? 1 : 0, attached_at: now })
      .where('id', '=', attachment.id)
      .execute()
    await tx.updateTable('volumes').set({ status: 'in-use', updated_at: now }).where('id', '=', request.volumeId).execute()
  }

  /**
   * Starts a detach: in-use → detaching, also for a multiattach volume that other servers keep (Cinder's
   * begin_detaching; `detach` makes it in-use again then). 400 when the volume is not attached to that server.
   */
  async beginDetach(tx: Db, request: { volumeId: string; serverId: string }): Promise<void> {
    await this.lockFirst(tx, request.volumeId)
    const attachment = await tx.selectFrom('volume_attachments').select('id').where('volume_id', '=', request.volumeId).where('server_id', '=', request.serverId).executeTakeFirst()
    if (!attachment) throw badRequest(`Volume ${request.volumeId} is not attached to server ${request.serverId}.`)
    await tx.updateTable('volume_attachments').set({ attach_status: 'detaching' }).where('id', '=', attachment.id).execute()
    await tx.updateTable('volumes').set({ status: 'detaching', updated_at: this.now() }).where('id', '=', request.volumeId).execute()
  }

  /** Gives up a detach that could not be done: detaching → in-use, the attachment attached again. */
  async rollDetaching(tx: Db, request: { volumeId: string; serverId: string }): Promise<void> {
    await this.lockFirst(tx, request.volumeId)
    const moved = await tx.updateTable('volume_attachments').set({ attach_status: 'attached' }).where('volume_id', '=', request.volumeId).where('server_id', '=', request.serverId).executeTakeFirst()
    if (Number(moved.numUpdatedRows) === 0) return
    await tx.updateTable('volumes').set({ status: 'in-use', updated_at: this.now() }).where('id', '=', request.volumeId).where('status', '=', 'detaching').execute()
  }

  /** Changes whether the volume goes with the server it is attached to (compute 2.85 attachment update). */
  async setDeleteOnTermination(tx: Db, request: { volumeId: string; serverId: string; deleteOnTermination: boolean }): Promise<void> {
    await tx
      .updateTable('volume_attachments')
      .set({ delete_on_termination: request.deleteOnTermination ? 1 : 0 })
      .where('volume_id', '=', request.volumeId)
      .where('server_id', '=', request.serverId)
      .execute()
  }

  /**
   * Removes the attachment (also a reservation that never completed) and its key on the volume's export; the
   * volume becomes available, or stays in-use while other servers keep it.
   */
  async detach(tx: Db, request: { volumeId: string; serverId: string }): Promise<void> {
    await this.lockFirst(tx, request.volumeId)
    const attachment = await tx.selectFrom('volume_attachments').select('id').where('volume_id', '=', request.volumeId).where('server_id', '=', request.serverId).executeTakeFirst()
    if (attachment) await this.connections?.disconnect(tx, attachment.id)
    await tx.deleteFrom('volume_attachments').where('volume_id', '=', request.volumeId).where('server_id', '=', request.serverId).execute()
    const left = await tx.selectFrom('volume_attachments').select('attach_status').where('volume_id', '=', request.volumeId).execute()
    const status = left.length === 0 ? 'available' : left.some((a) => a.attach_status !== 'reserved') ? 'in-use' : 'attaching'
    await tx.updateTable('volumes').set({ status, updated_at: this.now() }).where('id', '=', request.volumeId).where('status', 'in', ['reserved', 'attaching', 'in-use', 'detaching']).execute()
  }

  /** Deletes a detached volume for a server that was deleted with delete_on_termination. */
  async deleteOnTermination(tx: Db, request: { volumeId: string }): Promise<void> {
    await this.lockFirst(tx, request.volumeId)
    const row = await tx.selectFrom('volumes').select('status').where('id', '=', request.volumeId).executeTakeFirst()
    if (!row || row.status === 'deleting') return
    await tx.deleteFrom('volume_attachments').where('volume_id', '=', request.volumeId).execute()
    await tx.updateTable('volume_snapshots').set({ status: 'deleting', updated_at: this.now() }).where('volume_id', '=', request.volumeId).execute()
    await tx.updateTable('volumes').set({ status: 'deleting', updated_at: this.now() }).where('id', '=', request.volumeId).execute()
    await this.enqueue(tx, VOLUME_TASKS.delete, request.volumeId)
    this.wake()
  }

  /**
   * A volume for boot from volume (BDMv2 source image, snapshot or blank, destination volume), inserted `creating`
   * inside the caller's transaction, with the same checks as the API (image visible and active, size ≥ image size
   * and min_disk, quotas). Its bytes are made by `build`, which compute's build step awaits (as Nova waits for
   * Cinder) before it attaches the volume.
   */
  async createForBoot(
    tx: Db,
    request: { projectId: string; userId: string; visibility?: Visibility; source: 'image' | 'snapshot' | 'blank' | 'volume'; sourceId?: string; size?: number; volumeType?: string | null; availabilityZone?: string | null; name?: string },
  ): Promise<VolumeRecord> {
    const caller = computeCaller(request)
    return this.insertVolume(
      tx,
      caller,
      {
        size: request.size,
        name: request.name ?? null,
        volume_type: request.volumeType,
        availability_zone: request.availabilityZone ?? undefined,
        imageRef: request.source === 'image' ? request.sourceId : undefined,
        snapshot_id: request.source === 'snapshot' ? request.sourceId : undefined,
        source_volid: request.source === 'volume' ? request.sourceId : undefined,
      },
      'creating',
    )
  }

  /**
   * Makes a `creating` volume's bytes now, in the caller's task (boot from volume), and answers its status:
   * `available`, or `error` when the backend failed. Repeating it on an available volume changes nothing.
   */
  async build(volumeId: string): Promise<string> {
    if (!this.worker) throw new Error('the volume service runs without its worker')
    await this.worker.createNow(volumeId)
    return (await this.store.db.selectFrom('volumes').select('status').where('id', '=', volumeId).executeTakeFirstOrThrow()).status
  }

  /**
   * Connects the server's attachment of a volume for hypervisor `hostId` (its export and key) and answers the
   * connection info; a VolumeBackendError when the volume's place cannot serve it.
   */
  connect(request: { volumeId: string; serverId: string; hostId: string }): Promise<VolumeConnectionInfo> {
    if (!this.connections) throw new Error('the volume service runs without its connection manager')
    return this.connections.connect(request)
  }

  /** Connects an attachments-API attachment for its consumer (`VolumeConnections.connectConsumer`). */
  connectConsumer(attachmentId: string, connector: { host?: unknown }): Promise<VolumeConnectionInfo> {
    if (!this.connections) throw new Error('the volume service runs without its connection manager')
    return this.connections.connectConsumer(attachmentId, connector)
  }

  /** A volume by id for compute, of the project (or any, with visibility all_projects); 404 otherwise. */
  async getForProject(tx: Db, request: { volumeId: string; projectId: string; visibility?: Visibility }): Promise<VolumeRecord> {
    return this.find(computeCaller(request), request.volumeId, tx)
  }

  /** Attachments of a server (compute's os-extended-volumes:volumes_attached and os-volume_attachments). */
  async attachmentsOfServer(db: Db, serverId: string): Promise<{ volumeId: string; device: string | null; deleteOnTermination: boolean; attachStatus: string; attachmentId: string }[]> {
    const rows = await db.selectFrom('volume_attachments').selectAll().where('server_id', '=', serverId).orderBy('created_at').execute()
    return rows.map((r) => ({ volumeId: r.volume_id, device: r.device, deleteOnTermination: r.delete_on_termination === 1, attachStatus: r.attach_status, attachmentId: r.id }))
  }
}
