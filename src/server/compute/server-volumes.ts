/**
 * A server's volume attachments (os-volume_attachments) after the body was validated: Nova's rules, then one
 * transaction that changes the volume (attaching / detaching), the block device mapping, records the instance
 * action (attach_volume, detach_volume, swap_volume) and enqueues `compute.volume` for the conductor, which
 * connects the volume on the host and completes it (conductor/volumes.ts). A server without a host (shelved
 * offloaded) has nothing to connect: the API completes the change itself, as Nova does.
 *
 * Codes: a server in the wrong state 409; a volume the project cannot see 404; a volume that is not available
 * 400 (the block storage service's reservation refuses it as Cinder's InvalidVolume, which Nova answers with 400);
 * a device name in use 409.
 */
import { randomUUID } from 'node:crypto'
import { AppError, badRequest, conflict, forbidden, notFound } from '../../contracts/errors.js'
import { boolWord } from '../../contracts/compute/params.js'
import type { ApiVersion } from '../../contracts/compute/versions.js'
import type { VolumeAttachmentModel } from '../../contracts/compute/volume-attachment.fields.js'
import type { BlockDeviceMappingTable } from '../storage/tables/compute-volumes.js'
import type { ServerTable } from '../storage/tables/compute.js'
import type { Db } from '../storage/store.js'
import type { TaskQueue } from '../tasks/queue.js'
import { nextDeviceName, volumeMappings, withDev } from './block-devices.js'
import { volumeOperationRefusal, type VolumeOperation } from './server-states.js'
import type { ComputeStorage } from './storage.js'
import { COMPUTE_TASK_KINDS, type VolumeTaskPayload } from './tasks.js'
import { insertAction } from './instance-actions.js'
import type { Visibility } from '../policy/rules.js'

export interface VolumeOpDeps {
  db: Db
  queue: TaskQueue
  storage: ComputeStorage
}

export interface VolumeCaller {
  /** Whose volumes the request may name (other_projects:use), decided by the route. */
  visibility: Visibility
  projectId: string
  userId: string
  /** May act on a locked server (servers:locked:override, checked by the route). */
  lockOverride: boolean
}

export function attachmentModel(bdm: BlockDeviceMappingTable): VolumeAttachmentModel {
  return {
    volumeId: bdm.volume_id!,
    serverId: bdm.server_id,
    device: bdm.device_name,
    tag: bdm.tag,
    deleteOnTermination: bdm.delete_on_termination === 1,
    attachmentId: bdm.attachment_id,
    bdmId: bdm.id,
  }
}

function refuse(api: ApiVersion, operation: VolumeOperation, row: ServerTable, caller: VolumeCaller): void {
  const view = { id: row.id, vmState: row.vm_state, taskState: row.task_state, powerState: row.power_state, launchedAt: row.launched_at, host: row.host, locked: row.locked === 1 }
  const why = volumeOperationRefusal(operation, view, caller.lockOverride, api.has('volumeOpsOnShelved'))
  if (why) throw conflict(why)
}

/** The server's volume attachments with Nova's limit/offset paging. */
export async function listAttachments(db: Db, serverId: string, paging: { limit?: number; offset?: number }, maxLimit: number): Promise<BlockDeviceMappingTable[]> {
  const all = (await volumeMappings(db, serverId)).filter((b) => b.volume_id !== null)
  const offset = paging.offset ?? 0
  const limit = Math.min(paging.limit ?? maxLimit, maxLimit)
  return all.slice(offset, offset + limit)
}

/** The mapping of `volumeId` on the server, or Nova's 404. */
export async function findAttachment(db: Db, serverId: string, volumeId: string): Promise<BlockDeviceMappingTable> {
  const bdm = await db
    .selectFrom('block_device_mappings')
    .selectAll()
    .where('server_id', '=', serverId)
    .where('volume_id', '=', volumeId)
    .where('destination_type', '=', 'volume')
    .executeTakeFirst()
  if (!bdm) throw notFound(`Instance ${serverId} is not attached to volume ${volumeId}`)
  return bdm
}

async function recordAction(tx: Db, row: ServerTable, caller: VolumeCaller, requestId: string, action: string, finished: boolean): Promise<void> {
  await insertAction(tx, { serverId: row.id, action, requestId, userId: caller.userId, projectId: caller.projectId || row.project_id, finished })
}

async function enqueue(deps: VolumeOpDeps, tx: Db, payload: VolumeTaskPayload): Promise<void> {
  await deps.queue.enqueue<VolumeTaskPayload>({ kind: COMPUTE_TASK_KINDS.volume, payload, subjectId: payload.serverId }, tx)
}

/** The device for a new attachment: the one asked for when free (409 when taken), else the next free /dev/vdX. */
async function chooseDevice(db: Db, serverId: string, requested: string | null | undefined): Promise<string> {
  const taken = new Set(['/dev/vda', ...(await db.selectFrom('block_device_mappings').select('device_name').where('server_id', '=', serverId).execute()).map((r) => r.device_name).filter((d): d is string => !!d)])
  const asked = withDev(requested)
  if (asked) {
    if (taken.has(asked)) throw conflict(`The supplied device path (${asked}) is in use.`)
    return asked
  }
  const next = nextDeviceName(taken)
  if (!next) throw forbidden('The maximum allowed number of disk devices (26) to attach to a single instance has been exceeded.')
  return next
}

export interface AttachRequest {
  volumeId: string
  device?: string | null
  tag?: string
  delete_on_termination?: boolean | string
}

/** POST os-volume_attachments: the volume reserved (attaching), its mapping recorded, the host asked to connect it. */
export async function attachVolume(deps: VolumeOpDeps, api: ApiVersion, caller: VolumeCaller, row: ServerTable, request: AttachRequest, requestId: string): Promise<BlockDeviceMappingTable> {
  refuse(api, 'attach_volume', row, caller)
  const volume = await deps.storage.volumes.getForProject(deps.db, { volumeId: request.volumeId, projectId: row.project_id, visibility: caller.visibility })
  const deleteOnTermination = request.delete_on_termination === undefined ? false : boolWord(request.delete_on_termination)
  return deps.db.transaction().execute(async (tx) => {
    const device = await chooseDevice(tx, row.id, request.device)
    const { attachmentId } = await deps.storage.volumes.reserveForAttach(tx, { volumeId: volume.id, projectId: row.project_id, serverId: row.id, visibility: caller.visibility })
    const bdm: BlockDeviceMappingTable = {
      id: randomUUID(),
      server_id: row.id,
      boot_index: null,
      source_type: 'volume',
      destination_type: 'volume',
      volume_id: volume.id,
      image_id: null,
      snapshot_id: null,
      volume_size: volume.size,
      volume_type: null,
      device_name: device,
      device_type: 'disk',
      disk_bus: null,
      guest_format: null,
      delete_on_termination: deleteOnTermination ? 1 : 0,
      tag: request.tag ?? null,
      attachment_id: attachmentId,
      created_at: Date.now(),
    }
    await tx.insertInto('block_device_mappings').values(bdm).execute()
    if (row.host) {
      await recordAction(tx, row, caller, requestId, 'attach_volume', false)
      await enqueue(deps, tx, { serverId: row.id, requestId, operation: 'attach', bdmId: bdm.id, volumeId: volume.id })
    } else {
      // Shelved offloaded: no host to connect on; the volume is in use at once and connected at unshelve.
      await deps.storage.volumes.attach(tx, { volumeId: volume.id, serverId: row.id, device, hostName: null, deleteOnTermination })
      await recordAction(tx, row, caller, requestId, 'attach_volume', true)
    }
    return bdm
  })
}

/** DELETE os-volume_attachments/{volume}: the volume detaching, the host asked to disconnect it. */
export async function detachVolume(deps: VolumeOpDeps, api: ApiVersion, caller: VolumeCaller, row: ServerTable, volumeId: string, requestId: string): Promise<void> {
  refuse(api, 'detach_volume', row, caller)
  const bdm = await findAttachment(deps.db, row.id, volumeId)
  if (bdm.boot_index === 0) throw badRequest('Cannot detach a root device volume')
  await deps.db.transaction().execute(async (tx) => {
    const volume = await deps.storage.volumes.getForProject(tx, { volumeId, projectId: row.project_id, visibility: 'all_projects' })
    if (volume.status === 'available') throw badRequest(`Invalid volume: volume ${volumeId} already detached`)
    if (volume.status !== 'in-use') {
      throw badRequest(`Invalid volume: Unable to detach volume. Volume status must be 'in-use' and attach_status must be 'attached' to detach. Currently: ${volume.status}.`)
    }
    await deps.storage.volumes.beginDetach(tx, { volumeId, serverId: row.id })
    if (row.host) {
      await recordAction(tx, row, caller, requestId, 'detach_volume', false)
      await enqueue(deps, tx, { serverId: row.id, requestId, operation: 'detach', bdmId: bdm.id, volumeId })
    } else {
      await deps.storage.volumes.detach(tx, { volumeId, serverId: row.id })
      await tx.deleteFrom('block_device_mappings').where('id', '=', bdm.id).execute()
      await recordAction(tx, row, caller, requestId, 'detach_volume', true)
    }
  })
}

export interface UpdateRequest {
  volumeId: string
  id?: string
  serverId?: string
  device?: string | null
  tag?: string
  delete_on_termination?: boolean | string
}

/** Whether a PUT swaps the volume (policy `swap`, admins) or only updates the attachment (2.85, policy `update`). */
export function isSwap(api: ApiVersion, pathVolumeId: string, request: UpdateRequest): boolean {
  return !api.has('volumeAttachmentUpdate') || request.volumeId !== pathVolumeId
}

/**
 * PUT os-volume_attachments/{volume}: from 2.85 the attachment's delete_on_termination may change (the other
 * fields shown must stay as they are); a different volumeId swaps the volume under the guest (both volumes must
 * be the project's, the new one available and at least as large).
 */
export async function updateAttachment(deps: VolumeOpDeps, api: ApiVersion, caller: VolumeCaller, row: ServerTable, volumeId: string, request: UpdateRequest, requestId: string): Promise<void> {
  const swap = isSwap(api, volumeId, request)
  if (swap) refuse(api, 'swap_volume', row, caller)
  const bdm = await findAttachment(deps.db, row.id, volumeId)
  for (const [key, current] of [['id', volumeId], ['serverId', row.id], ['device', bdm.device_name], ['tag', bdm.tag]] as const) {
    if (key in request && request[key] !== current) throw badRequest(`The ${key} property is not mutable`)
  }
  const deleteOnTermination = request.delete_on_termination === undefined ? undefined : boolWord(request.delete_on_termination)
  await deps.db.transaction().execute(async (tx) => {
    if (deleteOnTermination !== undefined) {
      await tx.updateTable('block_device_mappings').set({ delete_on_termination: deleteOnTermination ? 1 : 0 }).where('id', '=', bdm.id).execute()
      await deps.storage.volumes.setDeleteOnTermination(tx, { volumeId, serverId: row.id, deleteOnTermination })
    }
    if (swap) await beginSwap(deps, tx, caller, row, bdm, request.volumeId, requestId)
  })
}

async function beginSwap(deps: VolumeOpDeps, tx: Db, caller: VolumeCaller, row: ServerTable, bdm: BlockDeviceMappingTable, newVolumeId: string, requestId: string): Promise<void> {
  const volumes = deps.storage.volumes
  const old = await volumes.getForProject(tx, { volumeId: bdm.volume_id!, projectId: row.project_id, visibility: 'all_projects' })
  // A new volume named in the body that cannot be found is a bad request, not a missing resource (Nova).
  const neu = await volumes.getForProject(tx, { volumeId: newVolumeId, projectId: row.project_id, visibility: caller.visibility }).catch((err: unknown) => {
    if (err instanceof AppError && err.status === 404) throw badRequest(err.message)
    throw err
  })
  if (neu.status !== 'available') throw badRequest('Invalid volume: New volume must be detached in order to swap.')
  if (neu.size < old.size) throw badRequest('Invalid volume: New volume must be the same size or larger.')
  if (old.status !== 'in-use') throw badRequest(`Invalid volume: volume '${old.id}' status must be 'in-use'. Currently in '${old.status}' status`)
  // Every attachment is read/write (there are no read-only volumes), so a volume other servers keep cannot move.
  if (old.attachments.length > 1) throw badRequest('Swapping multi-attach volumes with more than one read/write attachment is not supported.')
  await volumes.beginDetach(tx, { volumeId: old.id, serverId: row.id })
  await volumes.reserveForAttach(tx, { volumeId: neu.id, projectId: row.project_id, serverId: row.id, visibility: caller.visibility })
  await recordAction(tx, row, caller, requestId, 'swap_volume', false)
  await enqueue(deps, tx, { serverId: row.id, requestId, operation: 'swap', bdmId: bdm.id, volumeId: old.id, newVolumeId: neu.id })
}
