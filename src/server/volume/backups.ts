/**
 * Volume backups (Cinder's backup API; docs/block-storage.md, "Backups"): a copy of a volume's bytes (or of one
 * of its snapshots') kept off the volume's backend, in the blob store, restorable to a new or an existing volume.
 * The API moves the rows to their transitional statuses and enqueues the work (backup-worker.ts) in the same
 * transaction, as for volumes. A backup of an encrypted volume holds the LUKS container as the backend has it and a
 * copy of the volume's key; what it may be restored into is a table (KEY_RULES, below).
 *
 * Status machine (backup `status`, BACKUP_MAY below):
 *   creating → available | error              (task backup.create; the volume is backing-up meanwhile, or the
 *                                              snapshot, and goes back to the status it had)
 *   available → restoring → available          (task backup.restore; the target volume is restoring-backup, then
 *                                              available, or error_restoring when the bytes could not be written)
 *   available | error → deleting → gone | error_deleting   (task backup.delete; not while incremental backups
 *                                              depend on it)
 *   anything → os-reset_status (admins: available | error), os-force_delete (admins: deleting whatever the status)
 */
import { randomUUID } from 'node:crypto'
import { badRequest, notFound } from '../../contracts/errors.js'
import { PROTOCOL_FEATURES } from '../../contracts/host/commands.js'
import { CONTROLLER } from '../../contracts/host/storage-place.js'
import { hostProtocol } from '../hosts/host-protocol.js'
import type { Principal } from '../auth/principal.js'
import { authorize } from '../policy/rules.js'
import { volumePolicy } from '../policy/volume.policy.js'
import type { Db, Store } from '../storage/store.js'
import type { VolumeBackupTable } from '../storage/tables/volume.js'
import type { TaskQueue } from '../tasks/queue.js'
import type { BlobStore } from '../blobs/blob-store.js'
import { page, type PageQuery, type SortKeys } from './listing.js'
import { checkQuota } from './quotas.js'
import { callerOf, type Caller, type CreateVolumeInput, type RestoredBackup, type VolumeService } from './service.js'
import { cloneKey, dropUnusedKey, encryptionKeyOf } from './encryption.js'
import { BACKUP_TASKS, chunkKey, isDigest } from './backup-worker.js'
import { AVAILABILITY_ZONES, describedChanges, type DescribedChanges, type VolumeRecord } from './model.js'

export interface BackupRecord {
  id: string
  projectId: string
  userId: string
  volumeId: string
  snapshotId: string | null
  parentId: string | null
  name: string | null
  description: string | null
  container: string | null
  availabilityZone: string | null
  status: string
  failReason: string | null
  size: number
  objectCount: number
  isIncremental: boolean
  hasDependentBackups: boolean
  metadata: Record<string, string>
  dataTimestamp: number | null
  /** The backup's own copy of its volume's key when the volume was encrypted (its id is shown from 3.64, as Cinder's). */
  encryptionKeyId: string | null
  createdAt: number
  updatedAt: number
}

/** What a restore gives the volume back, kept with the backup (Cinder keeps the volume's metadata in the backup). */
export interface BackedUpVolume {
  metadata: Record<string, string>
  bootable: boolean
  imageId: string | null
  imageMetadata: Record<string, string> | null
  /** The type the volume was of: an encrypted backup is restored into a volume of that type only (Cinder's rule). */
  volumeTypeId?: string | null
}

/** The statuses a backup must have for each operation (Cinder's). */
const BACKUP_MAY = {
  restore: ['available'],
  delete: ['available', 'error'],
  'be a parent': ['available'],
} as const

/** What a volume (or the snapshot a backup is made of) must be to be backed up; in-use needs `force`. */
const BACKUP_SOURCE_STATUSES = { volume: ['available', 'in-use'], snapshot: ['available'] } as const

/** The statuses os-reset_status may set (Cinder allows available and error). */
const RESET_STATUSES = ['available', 'error']

/** The name a backup record says it was made by: Tempest checks the `cinder.backup.drivers` prefix. */
export const BACKUP_SERVICE = 'cinder.backup.drivers.pcc.BlobStoreBackupDriver'

const SORT_KEYS: SortKeys<BackupRecord> = {
  id: (b) => b.id,
  name: (b) => b.name,
  display_name: (b) => b.name,
  status: (b) => b.status,
  size: (b) => b.size,
  volume_id: (b) => b.volumeId,
  created_at: (b) => b.createdAt,
  updated_at: (b) => b.updatedAt,
  data_timestamp: (b) => b.dataTimestamp,
}

function rowToBackup(row: VolumeBackupTable, dependents: number): BackupRecord {
  return {
    id: row.id,
    projectId: row.project_id,
    userId: row.user_id,
    volumeId: row.volume_id,
    snapshotId: row.snapshot_id,
    parentId: row.parent_id,
    name: row.name,
    description: row.description,
    container: row.container,
    availabilityZone: row.availability_zone,
    status: row.status,
    failReason: row.fail_reason,
    size: row.size,
    objectCount: row.object_count,
    isIncremental: row.is_incremental === 1,
    hasDependentBackups: dependents > 0,
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    dataTimestamp: row.data_timestamp === null ? null : Number(row.data_timestamp),
    encryptionKeyId: row.encryption_key_id,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  }
}

function requireStatus(backup: { id: string; status: string }, allowed: readonly string[], what: string): void {
  if (!allowed.includes(backup.status)) throw badRequest(`Invalid backup: Backup ${backup.id} status must be ${allowed.join(' or ')} to ${what}, but it is ${backup.status}.`)
}

export interface BackupInput {
  volumeId: string
  snapshotId?: string | null
  name?: string | null
  description?: string | null
  container?: string | null
  incremental?: boolean
  force?: boolean
  metadata?: Record<string, string>
  availabilityZone?: string | null
}

/** The exported record (backup_url, base64 JSON): what import needs to make the row again, bytes included by reference. */
interface ExportedBackup {
  id: string
  volume_id: string
  snapshot_id: string | null
  parent_id: string | null
  name: string | null
  description: string | null
  container: string | null
  availability_zone: string | null
  size: number
  object_count: number
  is_incremental: boolean
  metadata: Record<string, string>
  chunks: string[]
  volume_meta: BackedUpVolume
  data_timestamp: number | null
  /** The key the backup's bytes need, by id: the key itself stays in this cloud's key store (as in Cinder). */
  encryption_key_id: string | null
}

export class BackupService {
  private readonly now: () => number

  constructor(
    private readonly store: Store,
    private readonly queue: TaskQueue,
    private readonly volumes: VolumeService,
    private readonly blobs: BlobStore,
    private readonly options: { now?: () => number; wake?: () => void } = {},
  ) {
    this.now = options.now ?? Date.now
  }

  private async enqueue(tx: Db, kind: string, id: string, payload: Record<string, unknown> = {}): Promise<void> {
    await this.queue.enqueue({ kind, subjectId: id, payload: { id, ...payload }, runAfter: this.now() + this.volumes.workDelayMs }, tx)
  }

  private async dependents(db: Db, ids: string[]): Promise<Map<string, number>> {
    if (ids.length === 0) return new Map()
    const rows = await db.selectFrom('volume_backups').select((eb) => ['parent_id', eb.fn.countAll<number>().as('n')]).where('parent_id', 'in', ids).groupBy('parent_id').execute()
    return new Map(rows.map((r) => [r.parent_id!, Number(r.n)]))
  }

  async find(caller: Caller, id: string, db: Db = this.store.db): Promise<BackupRecord> {
    const row = await db.selectFrom('volume_backups').selectAll().where('id', '=', id).executeTakeFirst()
    if (!row || (caller.visibility !== 'all_projects' && row.project_id !== caller.projectId)) throw notFound(`Backup ${id} could not be found.`)
    return rowToBackup(row, (await this.dependents(db, [id])).get(id) ?? 0)
  }

  async get(principal: Principal, id: string): Promise<BackupRecord> {
    const backup = await this.find(callerOf(principal), id)
    authorize(volumePolicy, 'backup:get', principal, { projectId: backup.projectId })
    return backup
  }

  async list(principal: Principal, query: { allTenants: boolean; name?: string; status?: string; volumeId?: string } & PageQuery): Promise<{ backups: BackupRecord[]; count: number }> {
    const caller = callerOf(principal)
    authorize(volumePolicy, 'backup:get_all', principal)
    if (query.allTenants) authorize(volumePolicy, 'volume:all_tenants', principal)
    let q = this.store.db.selectFrom('volume_backups').selectAll()
    if (!query.allTenants) q = q.where('project_id', '=', caller.projectId)
    if (query.name !== undefined) q = q.where('name', '=', query.name)
    if (query.status !== undefined) q = q.where('status', '=', query.status)
    if (query.volumeId !== undefined) q = q.where('volume_id', '=', query.volumeId)
    const rows = await q.execute()
    const dependents = await this.dependents(this.store.db, rows.map((r) => r.id))
    return { backups: page(rows.map((r) => rowToBackup(r, dependents.get(r.id) ?? 0)), query, SORT_KEYS, 'backup'), count: rows.length }
  }

  /** A snapshot on a storage host is read through an export of the snapshot, which agents serve from protocol 5. */
  private async checkSnapshotExports(db: Db, volume: VolumeRecord): Promise<void> {
    if (!volume.location || volume.location === CONTROLLER) return
    const spoken = await hostProtocol(db, volume.location)
    const needed = PROTOCOL_FEATURES.snapshotExports
    if (spoken < needed) throw badRequest(`Invalid snapshot: pcc-agent on storage host ${volume.locationName} speaks protocol ${spoken}; backing up a snapshot there needs ${needed}: upgrade it, or back up the volume.`)
  }

  async create(principal: Principal, input: BackupInput): Promise<BackupRecord> {
    const caller = callerOf(principal)
    const id = await this.store.db.transaction().execute(async (tx) => {
      const volume = await this.volumes.find(caller, input.volumeId, tx)
      authorize(volumePolicy, 'backup:create', principal, { projectId: volume.projectId })
      const az = input.availabilityZone ?? volume.availabilityZone
      if (!(AVAILABILITY_ZONES as readonly string[]).includes(az)) throw badRequest(`Invalid input received: availability zone '${az}' is invalid.`)
      let dataTimestamp = this.now()
      let source: { table: 'volumes' | 'volume_snapshots'; id: string; status: string }
      if (input.snapshotId) {
        const snap = await tx.selectFrom('volume_snapshots').selectAll().where('id', '=', input.snapshotId).executeTakeFirst()
        if (!snap || snap.volume_id !== volume.id) throw notFound(`Snapshot ${input.snapshotId} could not be found.`)
        if (!(BACKUP_SOURCE_STATUSES.snapshot as readonly string[]).includes(snap.status)) throw badRequest(`Invalid snapshot: Snapshot to be backed up must be available, but the current status is "${snap.status}".`)
        await this.checkSnapshotExports(tx, volume)
        dataTimestamp = Number(snap.created_at)
        source = { table: 'volume_snapshots', id: snap.id, status: snap.status }
      } else {
        if (!(BACKUP_SOURCE_STATUSES.volume as readonly string[]).includes(volume.status)) throw badRequest(`Invalid volume: Volume to be backed up must be available or in-use, but the current status is "${volume.status}".`)
        if (volume.status === 'in-use' && !input.force) throw badRequest('Invalid volume: Backing up an in-use volume must use the force flag.')
        source = { table: 'volumes', id: volume.id, status: volume.status }
      }
      let parentId: string | null = null
      if (input.incremental) {
        // Cinder's parent: the volume's latest available backup by the time of its data.
        const parent = await tx.selectFrom('volume_backups').select('id').where('volume_id', '=', volume.id).where('status', 'in', [...BACKUP_MAY['be a parent']]).orderBy('data_timestamp', 'desc').orderBy('created_at', 'desc').executeTakeFirst()
        if (!parent) throw badRequest('Invalid backup: No backups available to do an incremental backup.')
        parentId = parent.id
      }
      await checkQuota(tx, this.store.capabilities, volume.projectId, { backups: 1, backup_gigabytes: volume.size })
      const backupId = randomUUID()
      const now = this.now()
      const meta: BackedUpVolume = { metadata: volume.metadata, bootable: volume.bootable, imageId: volume.imageId, imageMetadata: volume.imageMetadata, volumeTypeId: volume.volumeTypeId }
      // The bytes are the LUKS container as the backend holds it: the backup keeps a key of its own that opens it
      // (Cinder clones the volume's key), so a restore works after the volume and its key are gone.
      const volumeKey = await encryptionKeyOf(tx, volume.id)
      const encryptionKeyId = volumeKey ? await cloneKey(tx, volumeKey) : null
      await tx
        .insertInto('volume_backups')
        .values({
          id: backupId,
          project_id: volume.projectId,
          user_id: caller.userId,
          volume_id: volume.id,
          snapshot_id: input.snapshotId ?? null,
          parent_id: parentId,
          name: input.name ?? null,
          description: input.description ?? null,
          container: input.container ?? null,
          availability_zone: az,
          status: 'creating',
          fail_reason: null,
          size: volume.size,
          object_count: 0,
          is_incremental: parentId ? 1 : 0,
          metadata: JSON.stringify(input.metadata ?? {}),
          chunks: '[]',
          volume_meta: JSON.stringify(meta),
          data_timestamp: dataTimestamp,
          encryption_key_id: encryptionKeyId,
          created_at: now,
          updated_at: now,
        })
        .execute()
      const moved = await tx.updateTable(source.table).set({ status: 'backing-up', updated_at: now }).where('id', '=', source.id).where('status', '=', source.status).executeTakeFirst()
      if (Number(moved.numUpdatedRows) === 0) throw badRequest(`Invalid volume: Volume ${volume.id} changed status meanwhile; try again.`)
      await this.enqueue(tx, BACKUP_TASKS.create, backupId, { sourceTable: source.table, sourceId: source.id, previousStatus: source.status })
      return backupId
    })
    this.options.wake?.()
    return this.find(caller, id)
  }

  async update(principal: Principal, id: string, changes: DescribedChanges): Promise<BackupRecord> {
    const caller = callerOf(principal)
    return this.store.db.transaction().execute(async (tx) => {
      const backup = await this.find(caller, id, tx)
      authorize(volumePolicy, 'backup:update', principal, { projectId: backup.projectId })
      await tx
        .updateTable('volume_backups')
        .set(describedChanges(changes, this.now()))
        .where('id', '=', id)
        .execute()
      return this.find(caller, id, tx)
    })
  }

  /** Deletes an available or errored backup without dependents; `force` (admins, os-force_delete) whatever its status. */
  async delete(principal: Principal, id: string, force = false): Promise<void> {
    const caller = callerOf(principal)
    await this.store.db.transaction().execute(async (tx) => {
      const backup = await this.find(caller, id, tx)
      authorize(volumePolicy, force ? 'backup:force_delete' : 'backup:delete', principal, { projectId: backup.projectId })
      if (backup.status === 'deleting') return
      if (!force) requireStatus(backup, BACKUP_MAY.delete, 'be deleted')
      if (backup.hasDependentBackups) throw badRequest(`Invalid backup: Incremental backups exist for backup ${id}; delete them first.`)
      await tx.updateTable('volume_backups').set({ status: 'deleting', updated_at: this.now() }).where('id', '=', id).execute()
      await this.enqueue(tx, BACKUP_TASKS.delete, id)
    })
    this.options.wake?.()
  }

  /**
   * Restores the backup into `volumeId` (available, at least as large) or into a new volume of its size (quota
   * counted as for any volume); answers the volume's id and name.
   */
  async restore(principal: Principal, id: string, target: { volumeId?: string | null; name?: string | null }): Promise<{ volumeId: string; volumeName: string }> {
    const caller = callerOf(principal)
    const answer = await this.store.db.transaction().execute(async (tx) => {
      const backup = await this.find(caller, id, tx)
      authorize(volumePolicy, 'backup:restore', principal, { projectId: backup.projectId })
      requireStatus(backup, BACKUP_MAY.restore, 'be restored')
      let volumeId: string
      let volumeName: string
      if (target.volumeId) {
        const volume = await this.volumes.find(caller, target.volumeId, tx)
        if (volume.status !== 'available') throw badRequest(`Invalid volume: Volume to be restored to must be available, but the current status is "${volume.status}".`)
        if (volume.size < backup.size) throw badRequest(`Invalid volume: volume size ${volume.size}GB is smaller than the backup's size ${backup.size}GB.`)
        const keyChanges = await refuseKeyMismatch(tx, backup, volume, await backedUpType(tx, backup.id))
        const moved = await tx.updateTable('volumes').set({ status: 'restoring-backup', updated_at: this.now() }).where('id', '=', volume.id).where('status', '=', 'available').executeTakeFirst()
        if (Number(moved.numUpdatedRows) === 0) throw badRequest(`Invalid volume: Volume ${volume.id} changed status meanwhile; try again.`)
        if (keyChanges) await replaceKey(tx, volume.id, backup.encryptionKeyId!)
        volumeId = volume.id
        volumeName = volume.name ?? ''
      } else {
        volumeName = target.name ?? `restore_backup_${id}`
        const volume = await this.volumes.createForRestore(tx, caller, { size: backup.size, name: volumeName, availability_zone: backup.availabilityZone }, await restoredFrom(tx, backup))
        volumeId = volume.id
      }
      await tx.updateTable('volume_backups').set({ status: 'restoring', updated_at: this.now() }).where('id', '=', id).where('status', '=', 'available').execute()
      await this.enqueue(tx, BACKUP_TASKS.restore, id, { volumeId })
      return { volumeId, volumeName }
    })
    this.options.wake?.()
    return answer
  }

  /**
   * A volume created from a backup (volume create with `backup_id`, 3.47+): the volume the create body describes,
   * at least the backup's size (its size by default), restored as a restore to a new volume is.
   */
  async createVolume(principal: Principal, backupId: string, input: CreateVolumeInput): Promise<VolumeRecord> {
    const caller = callerOf(principal)
    authorize(volumePolicy, 'volume:create', principal, { projectId: caller.projectId })
    const others = (['snapshot_id', 'source_volid', 'imageRef', 'group_id'] as const).filter((k) => input[k])
    if (others.length > 0) throw badRequest(`Invalid input received: backup_id cannot be combined with ${others.join(' and ')}.`)
    const volumeId = await this.store.db.transaction().execute(async (tx) => {
      const backup = await this.find(caller, backupId, tx)
      authorize(volumePolicy, 'backup:restore', principal, { projectId: backup.projectId })
      requireStatus(backup, BACKUP_MAY.restore, 'be restored')
      const size = input.size ?? backup.size
      if (size < backup.size) throw badRequest(`Invalid input received: Volume size ${size}GB cannot be smaller than the backup's size ${backup.size}GB.`)
      const restored = await restoredFrom(tx, backup)
      const volume = await this.volumes.createForRestore(tx, caller, { ...input, size }, restored)
      await refuseKeyMismatch(tx, backup, volume, restored.volumeTypeId)
      await tx.updateTable('volume_backups').set({ status: 'restoring', updated_at: this.now() }).where('id', '=', backupId).where('status', '=', 'available').execute()
      await this.enqueue(tx, BACKUP_TASKS.restore, backupId, { volumeId: volume.id })
      return volume.id
    })
    this.options.wake?.()
    return this.volumes.find(caller, volumeId)
  }

  /** os-reset_status for admins: sets the status the record shows, nothing else (Cinder's rule). */
  async resetStatus(principal: Principal, id: string, status: string): Promise<void> {
    authorize(volumePolicy, 'backup:reset_status', principal)
    if (!RESET_STATUSES.includes(status)) throw badRequest(`Invalid status '${status}': expected one of ${RESET_STATUSES.join(', ')}.`)
    await this.store.db.transaction().execute(async (tx) => {
      await this.find(callerOf(principal), id, tx)
      await tx.updateTable('volume_backups').set({ status, updated_at: this.now() }).where('id', '=', id).execute()
    })
  }

  /** The record import_record takes back: the backup's row as JSON, base64 (Cinder's backup_url). */
  async exportRecord(principal: Principal, id: string): Promise<{ backupService: string; backupUrl: string }> {
    authorize(volumePolicy, 'backup:export', principal)
    const backup = await this.find(callerOf(principal), id)
    if (backup.status !== 'available') throw badRequest(`Invalid backup: Backup status must be available, but it is ${backup.status}.`)
    const row = await this.store.db.selectFrom('volume_backups').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
    const record: ExportedBackup = {
      id: row.id,
      volume_id: row.volume_id,
      snapshot_id: row.snapshot_id,
      parent_id: row.parent_id,
      name: row.name,
      description: row.description,
      container: row.container,
      availability_zone: row.availability_zone,
      size: row.size,
      object_count: row.object_count,
      is_incremental: row.is_incremental === 1,
      metadata: JSON.parse(row.metadata) as Record<string, string>,
      chunks: JSON.parse(row.chunks) as string[],
      volume_meta: JSON.parse(row.volume_meta) as BackedUpVolume,
      data_timestamp: row.data_timestamp === null ? null : Number(row.data_timestamp),
      encryption_key_id: row.encryption_key_id,
    }
    return { backupService: BACKUP_SERVICE, backupUrl: Buffer.from(JSON.stringify(record)).toString('base64') }
  }

  /**
   * Makes a backup again from an exported record, in the caller's project, with the record's id (Cinder keeps it:
   * incremental backups name their parent). Every chunk it names must still be in the blob store.
   */
  async importRecord(principal: Principal, backupService: string, backupUrl: string): Promise<BackupRecord> {
    authorize(volumePolicy, 'backup:import', principal)
    const caller = callerOf(principal)
    if (backupService !== BACKUP_SERVICE) throw badRequest(`Invalid backup: unsupported backup service '${backupService}'; pcc's is ${BACKUP_SERVICE}.`)
    const record = parseRecord(backupUrl)
    for (const digest of new Set(record.chunks.filter((c) => c !== ''))) {
      if (!(await this.blobs.exists(chunkKey(digest)))) throw badRequest(`Invalid backup: the backup's data is gone from the backup store (chunk ${digest}).`)
    }
    await this.store.db.transaction().execute(async (tx) => {
      const existing = await tx.selectFrom('volume_backups').select('id').where('id', '=', record.id).executeTakeFirst()
      if (existing) throw badRequest(`Invalid backup: Backup ${record.id} already exists.`)
      // The record names the key; the key itself never leaves the store, so an import shares it (as it shares the
      // chunks) and needs it to be here.
      if (record.encryption_key_id && !(await tx.selectFrom('volume_encryption_keys').select('id').where('id', '=', record.encryption_key_id).executeTakeFirst())) {
        throw badRequest(`Invalid backup: the backup's encryption key ${record.encryption_key_id} is not in this cloud's key store.`)
      }
      await checkQuota(tx, this.store.capabilities, caller.projectId, { backups: 1, backup_gigabytes: record.size })
      const now = this.now()
      await tx
        .insertInto('volume_backups')
        .values({
          id: record.id,
          project_id: caller.projectId,
          user_id: caller.userId,
          volume_id: record.volume_id,
          snapshot_id: record.snapshot_id,
          parent_id: record.parent_id,
          name: record.name,
          description: record.description,
          container: record.container,
          availability_zone: record.availability_zone,
          status: 'available',
          fail_reason: null,
          size: record.size,
          object_count: record.object_count,
          is_incremental: record.is_incremental ? 1 : 0,
          metadata: JSON.stringify(record.metadata),
          chunks: JSON.stringify(record.chunks),
          volume_meta: JSON.stringify(record.volume_meta),
          data_timestamp: record.data_timestamp,
          encryption_key_id: record.encryption_key_id,
          created_at: now,
          updated_at: now,
        })
        .execute()
      const digests = [...new Set(record.chunks.filter((c) => c !== ''))]
      for (const digest of digests) await tx.insertInto('volume_backup_chunks').values({ backup_id: record.id, digest }).execute()
    })
    return this.find(caller, record.id)
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Decodes and checks a backup_url: anything malformed is 400, never a half-made row. */
function parseRecord(backupUrl: string): ExportedBackup {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(backupUrl, 'base64').toString('utf8'))
  } catch {
    throw badRequest('Invalid backup: backup_url is not base64 of a JSON backup record.')
  }
  const r = value as Partial<ExportedBackup> | null
  const bad = (what: string) => badRequest(`Invalid backup: the backup record's ${what} is missing or malformed.`)
  if (!r || typeof r !== 'object') throw bad('body')
  if (typeof r.id !== 'string' || !UUID.test(r.id)) throw bad('id')
  if (typeof r.volume_id !== 'string' || r.volume_id.length > 64) throw bad('volume_id')
  if (!Number.isInteger(r.size) || r.size! < 1) throw bad('size')
  if (!Array.isArray(r.chunks) || !r.chunks.every((c) => c === '' || isDigest(c))) throw bad('chunks')
  if (r.chunks.length * 4 > r.size! * 1024) throw bad('chunks')
  const optString = (x: unknown, what: string): string | null => {
    if (x === undefined || x === null) return null
    if (typeof x !== 'string' || x.length > 255) throw bad(what)
    return x
  }
  const map = (x: unknown, what: string): Record<string, string> => {
    if (x === undefined || x === null) return {}
    if (typeof x !== 'object' || Array.isArray(x) || !Object.values(x).every((v) => typeof v === 'string')) throw bad(what)
    return x as Record<string, string>
  }
  const meta = (r.volume_meta ?? {}) as Partial<BackedUpVolume>
  return {
    id: r.id.toLowerCase(),
    volume_id: r.volume_id,
    snapshot_id: optString(r.snapshot_id, 'snapshot_id'),
    parent_id: optString(r.parent_id, 'parent_id'),
    name: optString(r.name, 'name'),
    description: optString(r.description, 'description'),
    container: optString(r.container, 'container'),
    availability_zone: optString(r.availability_zone, 'availability_zone'),
    size: r.size!,
    object_count: Number.isInteger(r.object_count) ? r.object_count! : 0,
    is_incremental: r.is_incremental === true,
    metadata: map(r.metadata, 'metadata'),
    chunks: r.chunks,
    volume_meta: {
      metadata: map(meta.metadata, 'volume_meta'),
      bootable: meta.bootable === true,
      imageId: optString(meta.imageId, 'volume_meta'),
      imageMetadata: meta.imageMetadata ? map(meta.imageMetadata, 'volume_meta') : null,
      volumeTypeId: optString(meta.volumeTypeId, 'volume_meta'),
    },
    data_timestamp: Number.isInteger(r.data_timestamp) ? r.data_timestamp! : null,
    encryption_key_id: optString(r.encryption_key_id, 'encryption_key_id'),
  }
}

/** What a new volume for the backup inherits: its key, and the type it was backed up from. */
async function restoredFrom(db: Db, backup: BackupRecord): Promise<RestoredBackup> {
  const volumeTypeId = await backedUpType(db, backup.id)
  if (backup.encryptionKeyId && (!volumeTypeId || !(await db.selectFrom('volume_types').select('id').where('id', '=', volumeTypeId).executeTakeFirst()))) {
    throw badRequest(`Invalid backup: the backup is of an encrypted volume, and its volume type ${volumeTypeId ?? ''} is not available any more to restore it into.`)
  }
  return { encryptionKeyId: backup.encryptionKeyId, volumeTypeId }
}

/** The volume type the backed-up volume had (null for backups made before pcc kept it). */
async function backedUpType(db: Db, backupId: string): Promise<string | null> {
  const row = await db.selectFrom('volume_backups').select('volume_meta').where('id', '=', backupId).executeTakeFirstOrThrow()
  return (JSON.parse(row.volume_meta) as BackedUpVolume).volumeTypeId ?? null
}

/**
 * Whether the backup's bytes fit the volume they are restored into, as far as encryption goes; the first rule
 * that applies refuses (400, nothing changed). Cinder's: an encrypted backup only into a volume of the type it was
 * made of. pcc's own: plaintext never into an encrypted volume, and no new key for a volume whose snapshots hold
 * its current one (pcc's snapshots are opened with their volume's key).
 */
interface KeyCase {
  backupEncrypted: boolean
  sourceType: string | null
  volume: VolumeRecord
  /** The restore gives the volume another key: the backup's passphrase is not the volume's. */
  keyChanges: boolean
  snapshots: boolean
}
const KEY_RULES: { refuses: (c: KeyCase) => boolean; reason: (c: KeyCase) => string }[] = [
  { refuses: (c) => !c.backupEncrypted && c.volume.encrypted, reason: () => 'the backup is of an unencrypted volume: its bytes cannot be restored into an encrypted volume' },
  {
    refuses: (c) => c.backupEncrypted && (c.volume.volumeTypeId !== c.sourceType || !c.volume.encrypted),
    reason: (c) => `the backup is of an encrypted volume of type ${c.sourceType}, and is restored only into an encrypted volume of that type (this one is of type ${c.volume.volumeTypeId})`,
  },
  { refuses: (c) => c.keyChanges && c.snapshots, reason: () => "restoring this encrypted backup replaces the volume's key, and the volume's snapshots need the key it has: delete them first" },
]

/** Refuses a restore the rules refuse (`sourceType`: the backed-up volume's type); answers whether the volume must take the backup's key. */
async function refuseKeyMismatch(db: Db, backup: BackupRecord, volume: VolumeRecord, sourceType: string | null): Promise<boolean> {
  const snapshots = (await db.selectFrom('volume_snapshots').select('id').where('volume_id', '=', volume.id).executeTakeFirst()) !== undefined
  const keyChanges = backup.encryptionKeyId !== null && !(await samePassphrase(db, backup.encryptionKeyId, await encryptionKeyOf(db, volume.id)))
  const c: KeyCase = { backupEncrypted: backup.encryptionKeyId !== null, sourceType, volume, keyChanges, snapshots }
  const refused = KEY_RULES.find((r) => r.refuses(c))
  if (refused) throw badRequest(`Invalid volume: cannot restore backup ${backup.id} into volume ${volume.id}: ${refused.reason(c)}.`)
  return keyChanges
}

/** Whether two keys are copies of one (cloneKey copies the sealed passphrase as it is): the same LUKS container opens with either. */
async function samePassphrase(db: Db, a: string, b: string | null): Promise<boolean> {
  if (b === null) return false
  if (a === b) return true
  const rows = await db.selectFrom('volume_encryption_keys').select('sealed_key').where('id', 'in', [a, b]).execute()
  return rows.length === 2 && rows[0].sealed_key === rows[1].sealed_key
}

/**
 * An existing volume an encrypted backup with another key is restored over takes the backup's key (the LUKS
 * header comes with the bytes); its own key goes unless another volume or backup holds it. Cinder replaces the
 * volume's key the same way.
 */
async function replaceKey(tx: Db, volumeId: string, keyId: string): Promise<void> {
  const old = await encryptionKeyOf(tx, volumeId)
  await tx.updateTable('volumes').set({ encryption_key_id: keyId }).where('id', '=', volumeId).execute()
  await dropUnusedKey(tx, old)
}
