/**
 * The control plane's side of storage hosts (hosts with the `storage` role): what their agents report, the
 * desired state they read, the image bytes they may read and write, and what happens to their volumes when a
 * host is really gone. Every function is scoped to one host: a host sees only its own volumes, exports and
 * uploads (404 for anything else, so it learns nothing of other hosts').
 */
import type { Readable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { conflict, notFound } from '../../contracts/errors.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { ImageService } from '../image/service.js'
import type { Db } from '../storage/store.js'
import { wantedExports } from './exports.js'
import type { WantedExport } from '../../contracts/host/storage-place.js'

/** A storage host's report: where its exports listen, and each usable backend's capacity. */
export interface StorageReport {
  export_address: string
  backends: Record<string, { total_gb: number; free_gb: number }>
}

export async function recordStorageReport(db: Db, hostId: string, report: StorageReport): Promise<void> {
  const row = { export_address: report.export_address, backends: JSON.stringify(report.backends), reported_at: Date.now() }
  await db
    .insertInto('storage_hosts')
    .values({ host_id: hostId, ...row })
    .onConflict((oc) => oc.column('host_id').doUpdateSet(row))
    .execute()
}

/** The exports the host should serve, with their keys (its agent's desired state). */
export function exportsForHost(db: Db, box: SecretBox, hostId: string): Promise<WantedExport[]> {
  return wantedExports(db, box, hostId)
}

/** The bytes of the image a volume on this host is being created from. */
export async function sourceImageForHost(db: Db, images: Pick<ImageService, 'openBytes'>, hostId: string, volumeId: string): Promise<{ stream: Readable; size: number }> {
  const volume = await db.selectFrom('volumes').select(['image_id', 'status', 'location']).where('id', '=', volumeId).executeTakeFirst()
  if (!volume || volume.location !== hostId || volume.status !== 'creating' || !volume.image_id) throw notFound(`No volume ${volumeId} is being created from an image on this host.`)
  return images.openBytes(volume.image_id)
}

/**
 * Stores the bytes of an image being uploaded from a volume on this host, which makes the image active. An image
 * already active got them from an earlier run of the same upload (the task queue may run it twice): done.
 */
export async function receiveUploadFromHost(db: Db, images: Pick<ImageService, 'completeSnapshotImage' | 'getById'>, hostId: string, imageId: string, data: Readable): Promise<void> {
  const upload = await db
    .selectFrom('volume_image_uploads')
    .innerJoin('volumes', 'volumes.id', 'volume_image_uploads.volume_id')
    .select(['volumes.location', 'volumes.status'])
    .where('volume_image_uploads.image_id', '=', imageId)
    .executeTakeFirst()
  if (!upload || upload.location !== hostId) throw notFound(`No image ${imageId} is being uploaded from a volume on this host.`)
  if (upload.status !== 'uploading') throw conflict(`The volume of image ${imageId} is no longer uploading.`)
  if ((await images.getById(imageId))?.status === 'active') {
    data.resume()
    await finished(data)
    return
  }
  await images.completeSnapshotImage(imageId, data)
}

/** How many volumes (with their bytes) a host holds: the storage role is not removed from under them. */
export async function volumesOnHost(db: Db, hostId: string): Promise<number> {
  const row = await db.selectFrom('volumes').select((eb) => eb.fn.countAll<number>().as('n')).where('location', '=', hostId).executeTakeFirstOrThrow()
  return Number(row.n)
}

/**
 * A storage host removed for good (deregistered, or its storage role forcibly taken away): its volumes' bytes
 * are out of reach, so they go to `error` (and their exports and keys go). A host that is merely DOWN keeps
 * its volumes as they are: it may come back.
 */
export async function storageHostGone(tx: Db, hostId: string): Promise<void> {
  const ids = (await tx.selectFrom('volumes').select('id').where('location', '=', hostId).execute()).map((r) => r.id)
  if (ids.length > 0) {
    await tx.updateTable('volumes').set({ status: 'error', status_reason: `storage host ${hostId} was removed`, updated_at: Date.now() }).where('id', 'in', ids).execute()
    await tx.deleteFrom('volume_export_keys').where('volume_id', 'in', ids).execute()
  }
  // The keys of its exports of snapshots too (keyed by the snapshot's id).
  await tx.deleteFrom('volume_export_keys').where('volume_id', 'in', tx.selectFrom('volume_exports').select('volume_id').where('location', '=', hostId)).execute()
  await tx.deleteFrom('volume_exports').where('location', '=', hostId).execute()
  await tx.deleteFrom('storage_hosts').where('host_id', '=', hostId).execute()
}
