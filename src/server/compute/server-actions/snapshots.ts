/** The actions that make an image of a server: createImage, createBackup, and shelve (with unshelve, its way back). */
import { badRequest, conflict } from '../../../contracts/errors.js'
import { checkMetadataQuota } from '../quotas.js'
import { isVolumeBacked } from '../block-devices.js'
import { createVolumeBackedImage, reserveSnapshotImage, shelvedImageName } from '../server-images.js'
import { accept, type ActionContext, type ActionHandler, type ActionOutcome } from './common.js'

/** Where the new image is: its id in the body from 2.45, a Location header before. */
function imageAnswer({ api, deps }: ActionContext, imageId: string): ActionOutcome {
  if (api.has('createImageReturnsId')) return { status: 202, body: { image_id: imageId } }
  return { status: 202, headers: { location: `${deps.imageUrl}/v2/images/${imageId}` } }
}

export const createImage: ActionHandler<'createImage'> = async (ctx) => {
  const { deps, api, caller, row, value: v, requestId } = ctx
  const db = deps.db
  if (v.metadata && !api.has('limitsNoImageMeta')) await checkMetadataQuota(db, row.project_id, Object.keys(v.metadata).length)
  const request = { name: v.name, metadata: v.metadata ?? {} }
  let imageId = ''
  if (await isVolumeBacked(db, row.id)) {
    imageId = await createVolumeBackedImage(db, deps.storage, deps.guest, row, caller, { ...request, requestId })
  } else {
    await accept(ctx, request, {}, async (tx) => {
      imageId = await reserveSnapshotImage(tx, deps.storage, row, caller, request)
      return { imageId }
    })
  }
  return imageAnswer(ctx, imageId)
}

/** A createImage whose image is a backup of a kind; the conductor then keeps the newest `rotation` of that kind. */
export const createBackup: ActionHandler<'createBackup'> = async (ctx) => {
  const { deps, api, caller, row, value: v } = ctx
  const db = deps.db
  if (await isVolumeBacked(db, row.id)) throw badRequest('Backups of volume-backed servers are not supported; use createImage.')
  if (v.metadata && !api.has('limitsNoImageMeta')) await checkMetadataQuota(db, row.project_id, Object.keys(v.metadata).length)
  const backupType = v.backup_type
  const metadata = { ...v.metadata, image_type: 'backup', backup_type: backupType }
  let imageId = ''
  await accept(ctx, { name: v.name, backupType, rotation: Number(v.rotation) }, {}, async (tx) => {
    imageId = await reserveSnapshotImage(tx, deps.storage, row, caller, { name: v.name, metadata })
    return { imageId }
  })
  return imageAnswer(ctx, imageId)
}

/** An image-backed server is snapshotted to `<name>-shelved`; a volume-backed one keeps its volumes. */
export const shelve: ActionHandler = async (ctx) => {
  const { deps, caller, row } = ctx
  const volumeBacked = await isVolumeBacked(deps.db, row.id)
  await accept(ctx, {}, {}, async (tx) =>
    volumeBacked ? {} : { imageId: await reserveSnapshotImage(tx, deps.storage, row, caller, { name: shelvedImageName(row), metadata: {} }) },
  )
  return { status: 202 }
}

/** Below 2.77 unshelve takes any value (its schema's type is unknown): the zone and host are read as they come. */
export const unshelve: ActionHandler<'unshelve'> = async (ctx) => {
  const { caller, row, v } = ctx
  const az = v.availability_zone
  const host = v.host as string | undefined
  if ((az !== undefined || host !== undefined) && row.vm_state !== 'shelved_offloaded') {
    throw conflict(`Cannot 'unshelve' instance ${row.id} while it is in vm_state ${row.vm_state}`)
  }
  if (host !== undefined) caller.authorize('os-shelve:unshelve_to_host')
  await accept(ctx, { availabilityZone: az, host })
  return { status: 202 }
}
