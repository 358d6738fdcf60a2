/**
 * Images from a server's disk, the conductor's part (the API made the queued image, server-images.ts):
 *
 * - createImage: the driver copies the root disk out and its bytes stream into the image, which becomes active.
 *   A snapshot that fails kills the image and ends the action in error, the server staying as it was (Nova).
 * - shelve: an image-backed server is snapshotted to its `<name>-shelved` image, remembered in the server's
 *   system metadata, before it is offloaded; a volume-backed one keeps its volumes and has no image.
 * - unshelve: the guest is spawned from the shelved image, with its volumes, and the image is deleted once the
 *   server runs again.
 */
import { AppError } from '../../contracts/errors.js'
import { isVolumeBacked, volumeMappings } from '../compute/block-devices.js'
import { deleteSystemMetadata, setSystemMetadata, SHELVE_KEYS, systemMetadata } from '../compute/system-metadata.js'
import { DriverError, type VolumeConnection } from '../../contracts/host/compute-driver.js'
import type { Db } from '../storage/store.js'
import type { ActionRun } from './actions.js'
import { StepFailure } from './context.js'
import { storageOf, volumeConnection } from './volumes.js'

/**
 * Copies the guest's disk into the queued image `imageId` (none: the task came without one, the driver still
 * snapshots). Failures end the action without touching the server's state.
 */
export async function snapshotInto(run: ActionRun, imageId: string | undefined, name: string, between: () => Promise<void>): Promise<void> {
  const images = storageOf(run.ctx).images
  const existing = imageId ? await images.getById(imageId) : undefined
  if (imageId && existing?.status === 'active') {
    // An earlier run uploaded it; only the task states are left to walk.
    await between()
    return
  }
  try {
    const snapshot = await run.driver().snapshot(run.server.id, name, imageId)
    await between()
    if (snapshot.stored) snapshot.data.resume()
    else if (imageId) await images.completeSnapshotImage(imageId, snapshot.data, { diskFormat: snapshot.diskFormat, containerFormat: snapshot.containerFormat })
    else snapshot.data.resume()
  } catch (err) {
    if (!(err instanceof DriverError) && !(err instanceof AppError)) throw err
    if (imageId) await images.killImage(imageId)
    const code = err instanceof DriverError ? err.code : err.status
    throw new StepFailure(`Snapshot of instance ${run.server.id} failed: ${err.message}`, code, err.stack ?? '', run.payload.before.vmState)
  }
}

export async function createImage(run: ActionRun): Promise<Record<string, never>> {
  await run.step('image_snapshot')
  await snapshotInto(run, run.params.imageId as string | undefined, String(run.params.name ?? 'snapshot'), async () => {
    await run.step('image_pending_upload')
    await run.step('image_uploading')
  })
  return {}
}

/**
 * createBackup: the snapshot as createImage makes it, then Nova's rotation: of this server's backups of the same
 * backup_type, only the newest `rotation` stay (0 keeps none, the new one included).
 */
export async function createBackup(run: ActionRun): Promise<Record<string, never>> {
  await snapshotInto(run, run.params.imageId as string | undefined, String(run.params.name ?? 'backup'), async () => {
    await run.step('image_pending_upload')
    await run.step('image_uploading')
  })
  const images = storageOf(run.ctx).images
  const rows = await run.ctx.store.db.selectFrom('images').select(['id', 'properties', 'created_at']).where('owner', '=', run.server.project_id).orderBy('created_at', 'desc').orderBy('id', 'desc').execute()
  const backups = rows.filter((r) => {
    const p = JSON.parse(r.properties) as Record<string, string>
    return p.image_type === 'backup' && p.instance_uuid === run.server.id && p.backup_type === run.params.backupType
  })
  for (const old of backups.slice(Number(run.params.rotation ?? 0))) {
    const blob = await run.ctx.store.db.transaction().execute((tx) => images.removeImage(old.id, tx))
    await images.removeBlob(blob)
  }
  return {}
}

/** Shelve up to the offload: power off, then (image-backed) the snapshot into the shelved image. */
export async function shelveToImage(run: ActionRun): Promise<void> {
  const db = run.ctx.store.db
  await run.driver().powerOff(run.server.id)
  if (await isVolumeBacked(db, run.server.id)) return
  const imageId = run.params.imageId as string | undefined
  await run.step('shelving_image_pending_upload')
  await snapshotInto(run, imageId, `${run.server.name}-shelved`, () => run.step('shelving_image_uploading'))
  if (imageId) {
    await db.transaction().execute((tx) => setSystemMetadata(tx, run.server.id, { [SHELVE_KEYS.imageId]: imageId, [SHELVE_KEYS.at]: new Date().toISOString(), [SHELVE_KEYS.host]: run.server.host ?? '' }))
  }
}

/** The image an unshelve spawns from: the shelved one when there is one (ERROR when it is gone), else the server's. */
export async function unshelveImage(run: ActionRun): Promise<string | null> {
  const imageId = await systemMetadata(run.ctx.store.db, run.server.id, SHELVE_KEYS.imageId)
  if (!imageId) return run.server.image_id
  const image = await storageOf(run.ctx).images.getById(imageId)
  if (!image || image.status !== 'active') throw new StepFailure(`Unshelve attempted but the image ${imageId} cannot be found.`, 404, '', 'error')
  return imageId
}

/** The volumes the unshelved guest boots with, their attachments moved to its new host. */
export async function unshelveVolumes(run: ActionRun): Promise<VolumeConnection[]> {
  const db = run.ctx.store.db
  const connections: VolumeConnection[] = []
  for (const bdm of await volumeMappings(db, run.server.id)) {
    if (!bdm.volume_id) continue
    await db.updateTable('volume_attachments').set({ host_name: run.server.host }).where('volume_id', '=', bdm.volume_id).where('server_id', '=', run.server.id).execute()
    connections.push(await volumeConnection(run.ctx, run.server, bdm.volume_id, bdm.device_name))
  }
  return connections
}

/** Once the guest runs again: the shelved image and its record gone. */
export async function finishUnshelve(run: ActionRun): Promise<void> {
  const blob = await run.ctx.store.db.transaction().execute((tx) => forgetShelvedImage(run, tx))
  await storageOf(run.ctx).images.removeBlob(blob)
}

async function forgetShelvedImage(run: ActionRun, tx: Db): Promise<string | null> {
  const imageId = await systemMetadata(tx, run.server.id, SHELVE_KEYS.imageId)
  await deleteSystemMetadata(tx, run.server.id, Object.values(SHELVE_KEYS))
  return imageId ? storageOf(run.ctx).images.removeImage(imageId, tx) : null
}

/** A deleted server's shelved image and system metadata, inside the delete's transaction; returns the blob to remove. */
export async function releaseShelvedImage(ctx: ActionRun['ctx'], tx: Db, serverId: string): Promise<string | null> {
  const imageId = await systemMetadata(tx, serverId, SHELVE_KEYS.imageId)
  await deleteSystemMetadata(tx, serverId)
  return imageId && ctx.storage ? ctx.storage.images.removeImage(imageId, tx) : null
}
