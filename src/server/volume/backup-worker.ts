/**
 * The backup service's work (Cinder's cinder-backup), as task handlers: a backup's bytes are read from the
 * volume's place into a raw file, cut into 4 MiB chunks and kept in the blob store under their SHA-256
 * (`backups/chunks/<digest>`); a chunk of zeros is not stored. Content addressing makes an incremental backup
 * store only what changed since its parent, and lets a chunk go only when no backup uses it any more
 * (docs/block-storage.md, "Backups").
 *
 * Every handler is idempotent: it checks the status it expects first; a chunk already stored is not written again.
 */
import { createHash } from 'node:crypto'
import { open, truncate } from 'node:fs/promises'
import { Readable } from 'node:stream'
import type { Logger } from 'pino'
import { GIB, VolumeBackendError, type NbdSource, type VolumeRef } from '../../contracts/host/volume.js'
import { CONTROLLER, type RawSource, type RawTarget } from '../../contracts/host/storage-place.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { BlobStore } from '../blobs/blob-store.js'
import type { Db, Store } from '../storage/store.js'
import { sql } from 'kysely'
import type { TaskRecord } from '../tasks/queue.js'
import { PermanentTaskError, type TaskHandler } from '../tasks/runner.js'
import type { StoragePlaces } from './places/registry.js'
import { backupIdentity, restoreIdentity, withExportedVolume, type PortRange } from './exports.js'
import type { VolumeWorker } from './worker.js'
import { dropUnusedKey } from './encryption.js'
import { ADVISORY_LOCKS } from '../storage/locks.js'

export const BACKUP_TASKS = {
  create: 'backup.create',
  restore: 'backup.restore',
  delete: 'backup.delete',
} as const

/** The size of a backup chunk (Cinder's chunked drivers use a few MiB too). */
export const CHUNK_BYTES = 4 * 1024 * 1024

const ZEROS = Buffer.alloc(CHUNK_BYTES)

export function chunkKey(digest: string): string {
  return `backups/chunks/${digest}`
}

export function isDigest(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{64}$/.test(value)
}

type Payload = { id: string } & Record<string, unknown>

export interface BackupWorkerDeps {
  store: Store
  places: StoragePlaces
  /** The master key and export ports: a storage host's volume is read and written through an export of its own. */
  box: SecretBox
  ports: PortRange
  blobs: BlobStore
  /** Makes a new volume's (blank) bytes at a place it chooses: a restore's target. */
  volumes: Pick<VolumeWorker, 'createBlank'>
  logger?: Logger
}

export class BackupWorker {
  /** SQLite's per-chunk locks (withChunkLock): the last critical section queued for each digest. */
  private readonly chunkLocks = new Map<string, Promise<void>>()

  constructor(private readonly deps: BackupWorkerDeps) {}

  handlers(): Map<string, TaskHandler> {
    const run = (work: (p: Payload, task: TaskRecord) => Promise<void>): TaskHandler => async (task) => {
      const payload = task.payload as Payload
      if (typeof payload?.id !== 'string') throw new PermanentTaskError('task payload has no id')
      await work(payload, task)
    }
    return new Map<string, TaskHandler>([
      [BACKUP_TASKS.create, run((p, t) => this.create(t, p))],
      [BACKUP_TASKS.restore, run((p, t) => this.restore(t, p.id, String(p.volumeId)))],
      [BACKUP_TASKS.delete, run((p, t) => this.delete(t, p.id))],
    ])
  }

  private async backupRow(id: string) {
    return this.deps.store.db.selectFrom('volume_backups').selectAll().where('id', '=', id).executeTakeFirst()
  }

  /** Whether to give up: a backend's refusal is final, anything else is retried until the last attempt. */
  private final(task: TaskRecord, err: unknown): boolean {
    return err instanceof VolumeBackendError || task.attempts >= task.maxAttempts
  }

  private async create(task: TaskRecord, p: Payload): Promise<void> {
    const db = this.deps.store.db
    const backup = await this.backupRow(p.id)
    if (backup?.status !== 'creating') return
    const sourceTable = p.sourceTable === 'volume_snapshots' ? 'volume_snapshots' : 'volumes'
    const previousStatus = String(p.previousStatus ?? 'available')
    // The source is back in the transaction that ends the backup: a client that saw the backup ready finds its
    // volume or snapshot ready too.
    const sourceBack = (tx: Db) => tx.updateTable(sourceTable).set({ status: previousStatus, updated_at: Date.now() }).where('id', '=', String(p.sourceId)).where('status', '=', 'backing-up').execute()
    try {
      const volume = await db.selectFrom('volumes').selectAll().where('id', '=', backup.volume_id).executeTakeFirst()
      if (!volume?.location) throw new VolumeBackendError(`volume ${backup.volume_id} has no bytes to back up`)
      const ref: VolumeRef = backup.snapshot_id ? { snapshotId: backup.snapshot_id, snapshotOf: volume.id } : { volumeId: volume.id }
      const { chunks, stored } = await this.reach(volume, ref, backupIdentity(p.id), (nbd) => {
        const from: RawSource = nbd ? { kind: 'nbd', source: nbd } : { kind: 'backend', backend: volume.backend, ref }
        return this.deps.places.controller.withRawCopy(from, (path) => this.storeChunks(p.id, path))
      })
      await db.transaction().execute(async (tx) => {
        await tx.updateTable('volume_backups').set({ status: 'available', chunks: JSON.stringify(chunks), object_count: stored, updated_at: Date.now() }).where('id', '=', p.id).where('status', '=', 'creating').execute()
        await sourceBack(tx)
      })
    } catch (err) {
      if (!this.final(task, err)) throw err
      this.deps.logger?.warn({ err, id: p.id }, 'volume backup failed')
      await db.transaction().execute(async (tx) => {
        await tx.updateTable('volume_backups').set({ status: 'error', fail_reason: (err as Error).message, updated_at: Date.now() }).where('id', '=', p.id).where('status', '=', 'creating').execute()
        await sourceBack(tx)
      })
    }
  }

  /**
   * Runs `work` with the way this machine reaches the bytes of a volume or one of its snapshots (`ref`): undefined
   * for the control plane's own backends (read and written in place), an NBD source for a storage host's, whose
   * export to `identity` lasts as long as `work` (exports.ts, withExportedVolume; a snapshot's is read-only).
   */
  private async reach<T>(volume: { id: string; location: string | null }, ref: VolumeRef, identity: string, work: (nbd: NbdSource | undefined) => Promise<T>): Promise<T> {
    if (!volume.location) throw new VolumeBackendError(`volume ${volume.id} has no bytes`)
    if (volume.location === CONTROLLER) return work(undefined)
    return withExportedVolume(this.deps, this.deps.places.get(volume.location), ref, identity, work)
  }

  /**
   * Runs a chunk's claim-and-look (a backup taking it) or check-and-remove (a deletion letting it go) one at a
   * time per chunk, so a backup never counts on a chunk a deletion is removing. PostgreSQL: in a transaction
   * holding a lock on the digest (several pcc-server processes share the store). SQLite, whose store one process
   * owns: under an in-process lock, outside any transaction, so that its one connection is not held while the blob
   * store answers.
   */
  private async withChunkLock<T>(digest: string, critical: (db: Db) => Promise<T>): Promise<T> {
    const { store } = this.deps
    if (store.capabilities.advisoryLocks) {
      return store.db.transaction().execute(async (tx) => {
        await sql`SELECT pg_advisory_xact_lock(${ADVISORY_LOCKS.backupChunk}, hashtext(${digest}))`.execute(tx)
        return critical(tx)
      })
    }
    const before = this.chunkLocks.get(digest) ?? Promise.resolve()
    const run = before.then(() => critical(store.db))
    const settled = run.then(() => {}, () => {})
    this.chunkLocks.set(digest, settled)
    try {
      return await run
    } finally {
      if (this.chunkLocks.get(digest) === settled) this.chunkLocks.delete(digest)
    }
  }

  /**
   * Cuts the raw file into chunks and stores those the blob store lacks: each claimed first, under the chunk's
   * lock (withChunkLock), then written if it was not there. Answers the ordered digests and how many chunks were new.
   */
  private async storeChunks(backupId: string, path: string): Promise<{ chunks: string[]; stored: number }> {
    const chunks: string[] = []
    let stored = 0
    const file = await open(path, 'r')
    try {
      const buffer = Buffer.alloc(CHUNK_BYTES)
      for (;;) {
        const { bytesRead } = await file.read(buffer, 0, CHUNK_BYTES, chunks.length * CHUNK_BYTES)
        if (bytesRead === 0) break
        const data = buffer.subarray(0, bytesRead)
        if (data.equals(ZEROS.subarray(0, bytesRead))) {
          chunks.push('')
          continue
        }
        const digest = createHash('sha256').update(data).digest('hex')
        chunks.push(digest)
        const present = await this.withChunkLock(digest, async (tx) => {
          await tx.insertInto('volume_backup_chunks').values({ backup_id: backupId, digest }).onConflict((oc) => oc.columns(['backup_id', 'digest']).doNothing()).execute()
          return this.deps.blobs.exists(chunkKey(digest))
        })
        // Claimed now, so no deletion removes it from here on: written after the lock is let go.
        if (present) continue
        await this.deps.blobs.put(chunkKey(digest), Readable.from([Buffer.from(data)]), { maxBytes: CHUNK_BYTES })
        stored++
      }
    } finally {
      await file.close()
    }
    return { chunks, stored }
  }

  private async restore(task: TaskRecord, id: string, volumeId: string): Promise<void> {
    const db = this.deps.store.db
    const backup = await this.backupRow(id)
    if (backup?.status !== 'restoring') return
    // The backup is available again in the transaction that ends the volume's restore: a client that saw the
    // volume ready (Tempest's waiters, a script restoring again) finds the backup ready too.
    const backupBack = (tx: Db) => tx.updateTable('volume_backups').set({ status: 'available', updated_at: Date.now() }).where('id', '=', id).where('status', '=', 'restoring').execute()
    try {
      let volume = await db.selectFrom('volumes').selectAll().where('id', '=', volumeId).executeTakeFirst()
      if (volume?.status !== 'restoring-backup') return void (await backupBack(db))
      if (!volume.location) {
        await this.deps.volumes.createBlank(volumeId)
        volume = await db.selectFrom('volumes').selectAll().where('id', '=', volumeId).executeTakeFirstOrThrow()
      }
      const chunks = JSON.parse(backup.chunks) as string[]
      const { backend } = volume
      await this.reach(volume, { volumeId }, restoreIdentity(volumeId), (nbd) => {
        const to: RawTarget = nbd ? { kind: 'nbd', source: nbd } : { kind: 'backend', backend, volumeId }
        return this.deps.places.controller.writeRaw(to, (path) => this.writeChunks(chunks, backup.size, path))
      })
      const meta = JSON.parse(backup.volume_meta) as { metadata?: Record<string, string>; bootable?: boolean; imageId?: string | null; imageMetadata?: Record<string, string> | null }
      const current = JSON.parse(volume.metadata) as Record<string, string>
      await db.transaction().execute(async (tx) => {
        await tx
          .updateTable('volumes')
          .set({
            status: 'available',
            status_reason: null,
            metadata: JSON.stringify({ ...current, ...(meta.metadata ?? {}) }),
            bootable: meta.bootable ? 1 : 0,
            ...(meta.imageMetadata ? { image_metadata: JSON.stringify(meta.imageMetadata), image_id: meta.imageId ?? null } : {}),
            updated_at: Date.now(),
          })
          .where('id', '=', volumeId)
          .where('status', '=', 'restoring-backup')
          .execute()
        await backupBack(tx)
      })
    } catch (err) {
      if (!this.final(task, err)) throw err
      this.deps.logger?.warn({ err, id, volumeId }, 'restore of a volume backup failed')
      await db.transaction().execute(async (tx) => {
        await tx.updateTable('volumes').set({ status: 'error_restoring', status_reason: (err as Error).message, updated_at: Date.now() }).where('id', '=', volumeId).where('status', '=', 'restoring-backup').execute()
        await backupBack(tx)
      })
    }
  }

  /** Writes the backup's bytes into a sparse raw file of its size: stored chunks at their offsets, zeros as holes. */
  private async writeChunks(chunks: string[], sizeGb: number, path: string): Promise<void> {
    await (await open(path, 'w', 0o600)).close()
    await truncate(path, sizeGb * GIB)
    const file = await open(path, 'r+')
    try {
      for (const [index, digest] of chunks.entries()) {
        if (digest === '') continue
        const { stream } = await this.deps.blobs.open(chunkKey(digest)).catch(() => {
          throw new VolumeBackendError(`the backup's chunk ${digest} is gone from the backup store`)
        })
        const parts: Buffer[] = []
        for await (const part of stream) parts.push(part as Buffer)
        const data = Buffer.concat(parts)
        await file.write(data, 0, data.length, index * CHUNK_BYTES)
      }
    } finally {
      await file.close()
    }
  }

  /** Removes the backup's row, then the chunks no other backup claims. */
  private async delete(task: TaskRecord, id: string): Promise<void> {
    const db = this.deps.store.db
    const backup = await this.backupRow(id)
    if (backup?.status !== 'deleting') return
    try {
      // The claims recorded, and the backup's list (a retried run finds the claims already gone).
      const claims = (await db.selectFrom('volume_backup_chunks').select('digest').where('backup_id', '=', id).execute()).map((r) => r.digest)
      const digests = [...new Set([...claims, ...(JSON.parse(backup.chunks) as string[]).filter(isDigest)])]
      await db.deleteFrom('volume_backup_chunks').where('backup_id', '=', id).execute()
      for (const digest of digests) {
        await this.withChunkLock(digest, async (tx) => {
          const claimed = await tx.selectFrom('volume_backup_chunks').select('digest').where('digest', '=', digest).executeTakeFirst()
          if (!claimed) await this.deps.blobs.delete(chunkKey(digest))
        })
      }
      // The backup's key goes with it unless a volume restored from it (or an imported record) still holds it.
      await db.transaction().execute(async (tx) => {
        await tx.deleteFrom('volume_backups').where('id', '=', id).where('status', '=', 'deleting').execute()
        await dropUnusedKey(tx, backup.encryption_key_id)
      })
    } catch (err) {
      if (!this.final(task, err)) throw err
      this.deps.logger?.warn({ err, id }, 'deleting a volume backup failed')
      await db.updateTable('volume_backups').set({ status: 'error_deleting', fail_reason: (err as Error).message, updated_at: Date.now() }).where('id', '=', id).where('status', '=', 'deleting').execute()
    }
  }
}
