/**
 * The conductor's side of block storage:
 *
 * - `compute.volume` tasks (os-volume_attachments): connect, disconnect or swap a volume on the server's host (a
 *   host whose hypervisor reads bytes first gets the volume's NBD export and its attachment's key), then
 *   complete the change on the volume (attaching → in-use, detaching → available) and the mapping, with the
 *   event and the instance action finished in the same transaction. A host that fails the operation leaves the
 *   volume as it was before the request (Nova rolls back too) and the action in error.
 * - the build's `block_device_mapping` step: volumes from images, snapshots or blank are created (one
 *   transaction per mapping, so a run repeated after a crash finds them) and every volume attached (in-use);
 *   the spawn then boots the guest with them.
 * - server delete and failed builds: every volume is detached and those with delete_on_termination deleted.
 *
 * Every step is idempotent: the task queue may run a handler twice.
 */
import { AppError } from '../../contracts/errors.js'
import type { VolumeTaskPayload } from '../compute/tasks.js'
import type { ComputeStorage } from '../compute/storage.js'
import { volumeMappings } from '../compute/block-devices.js'
import { DriverError, type ComputeDriver, type VolumeConnection } from '../../contracts/host/compute-driver.js'
import { VolumeBackendError } from '../../contracts/host/volume.js'
import type { BlockDeviceMappingTable } from '../storage/tables/compute-volumes.js'
import type { ServerTable } from '../storage/tables/compute.js'
import type { Db } from '../storage/store.js'
import type { ExtendRequest } from '../volume/worker.js'
import { frontEndThrottle } from '../volume/qos-specs.js'
import { driverFor, loadServer, type ConductorContext } from './context.js'
import { findAction, finishAction, finishEvent, startAction, startEvent } from '../compute/instance-actions.js'
import { recordFault } from './records.js'

const EVENTS: Record<VolumeTaskPayload['operation'], string> = { attach: 'compute_attach_volume', detach: 'compute_detach_volume', swap: 'compute_swap_volume' }

export function storageOf(ctx: ConductorContext): ComputeStorage {
  if (!ctx.storage) throw new Error('the conductor runs without the image and block storage services')
  return ctx.storage
}

async function attachmentStatus(db: Db, volumeId: string, serverId: string): Promise<string | undefined> {
  const row = await db.selectFrom('volume_attachments').select('attach_status').where('volume_id', '=', volumeId).where('server_id', '=', serverId).executeTakeFirst()
  return row?.attach_status
}

/** The driver of the server's host, or none when it has no host (nothing to connect there). */
function hostDriver(ctx: ConductorContext, server: ServerTable): ComputeDriver | undefined {
  return server.host_id ? driverFor(ctx, server.host_id, server.host) : undefined
}

/**
 * What the server's host needs to connect a volume: its front-end QoS limits and, on a host that runs real guests,
 * the volume's export, granted to the attachment and served first (a failure there is the hypervisor's: a DriverError with its reason).
 */
export async function volumeConnection(ctx: ConductorContext, server: ServerTable, volumeId: string, device: string | null, hostId = server.host_id): Promise<VolumeConnection> {
  // The front-end QoS limits of the volume's type, which the hypervisor sets on the guest's disk.
  const throttle = await frontEndThrottle(ctx.store.db, volumeId)
  const volume = { volumeId, device, ...(throttle ? { throttle } : {}) }
  // Simulated hosts read no bytes: they attach without an export.
  if (!hostId || !(await ctx.drivers.find(hostId))?.guestDetails) return volume
  try {
    const connection = await storageOf(ctx).volumes.connect({ volumeId, serverId: server.id, hostId })
    return { ...volume, connection }
  } catch (err) {
    if (err instanceof VolumeBackendError) throw new DriverError(`Volume ${volumeId} could not be exported to host ${hostId}: ${err.message}`)
    throw err
  }
}

/**
 * Every volume attached to the server, connected for `hostId`: what a guest rebuilt, migrated or evacuated there
 * needs to find its disks again (during a live migration both hosts hold a connection).
 */
export async function attachedVolumes(ctx: ConductorContext, server: ServerTable, hostId: string): Promise<VolumeConnection[]> {
  const out: VolumeConnection[] = []
  for (const bdm of await volumeMappings(ctx.store.db, server.id)) {
    if (!bdm.volume_id || (await attachmentStatus(ctx.store.db, bdm.volume_id, server.id)) !== 'attached') continue
    out.push(await volumeConnection(ctx, server, bdm.volume_id, bdm.device_name, hostId))
  }
  return out
}

/**
 * Before a server's disks are opened on another host than the lost one (evacuation): with Ceph, every client that
 * still has its disks or volumes open is blocklisted (src/server/ceph/fencing.ts). Without Ceph nothing is shared.
 */
export async function fenceLostHost(ctx: ConductorContext, server: ServerTable): Promise<void> {
  const fencing = ctx.storage?.fencing
  if (!fencing) return
  const volumeIds = (await volumeMappings(ctx.store.db, server.id)).flatMap((bdm) => (bdm.volume_id ? [bdm.volume_id] : []))
  const fenced = await fencing.fence(server.id, volumeIds)
  if (fenced.length) ctx.logger.warn({ serverId: server.id, host: server.host, clients: fenced }, 'the lost host was fenced: its Ceph clients of this server are blocklisted')
}

/**
 * An attached volume grew (Nova's `volume-extended` external event): the server gets an `extend_volume` action
 * whose `compute_extend_volume` event is its hypervisor moving the guest onto the export's new generation. A
 * repeated run (the volume task retried) finds the action of the first by its request id.
 */
export async function extendAttachedVolume(ctx: ConductorContext, serverId: string, volume: VolumeConnection, sizeBytes: number, by: ExtendRequest): Promise<void> {
  const db = ctx.store.db
  const server = await loadServer(db, serverId)
  if (!server || server.deleted) return
  const actionId = (await findAction(db, serverId, by.requestId))?.id ?? (await startAction(db, server, by, 'extend_volume'))
  const eventId = await startEvent(db, actionId, 'compute_extend_volume', server.host)
  try {
    await hostDriver(ctx, server)?.extendVolume(serverId, volume, sizeBytes)
  } catch (err) {
    await finishEvent(db, eventId, 'Error', { traceback: (err as Error).stack })
    await finishAction(db, actionId, true)
    throw err
  }
  await finishEvent(db, eventId, 'Success')
  await finishAction(db, actionId)
}

export async function runVolumeTask(ctx: ConductorContext, payload: VolumeTaskPayload, lastAttempt: boolean): Promise<void> {
  const db = ctx.store.db
  const server = await loadServer(db, payload.serverId)
  const actionId = (await findAction(db, payload.serverId, payload.requestId))?.id
  const bdm = await db.selectFrom('block_device_mappings').selectAll().where('id', '=', payload.bdmId).executeTakeFirst()
  // The server is gone (its delete detached everything) or an earlier run finished the job.
  if (!server || server.deleted || !bdm || (await alreadyDone(db, payload, bdm))) {
    await finishAction(db, actionId)
    return
  }
  const eventId = await startEvent(db, actionId, EVENTS[payload.operation], server.host)
  try {
    await OPERATIONS[payload.operation].connect(ctx, server, bdm, payload)
  } catch (err) {
    if (!(err instanceof DriverError) && !lastAttempt) throw err
    await db.transaction().execute(async (tx) => {
      await OPERATIONS[payload.operation].rollBack(storageOf(ctx), tx, server, bdm, payload)
      await recordFault(tx, server.id, { code: err instanceof DriverError ? err.code : 500, message: (err as Error).message, details: (err as Error).stack ?? '' })
      await finishEvent(tx, eventId, 'Error', { traceback: (err as Error).stack })
      await finishAction(tx, actionId, true)
    })
    return
  }
  await db.transaction().execute(async (tx) => {
    await OPERATIONS[payload.operation].complete(storageOf(ctx), tx, server, bdm, payload)
    await finishEvent(tx, eventId, 'Success')
    await finishAction(tx, actionId)
  })
}

async function alreadyDone(db: Db, payload: VolumeTaskPayload, bdm: BlockDeviceMappingTable): Promise<boolean> {
  if (payload.operation === 'attach') return (await attachmentStatus(db, payload.volumeId, payload.serverId)) === 'attached'
  if (payload.operation === 'swap') return bdm.volume_id === payload.newVolumeId
  return false
}

interface Operation {
  /** The host's part; throws DriverError when the hypervisor refuses. */
  connect(ctx: ConductorContext, server: ServerTable, bdm: BlockDeviceMappingTable, payload: VolumeTaskPayload): Promise<void>
  /** The volume and the mapping once the host did its part. */
  complete(storage: ComputeStorage, tx: Db, server: ServerTable, bdm: BlockDeviceMappingTable, payload: VolumeTaskPayload): Promise<void>
  /** The volume and the mapping as they were before the request. */
  rollBack(storage: ComputeStorage, tx: Db, server: ServerTable, bdm: BlockDeviceMappingTable, payload: VolumeTaskPayload): Promise<void>
}

const OPERATIONS: Record<VolumeTaskPayload['operation'], Operation> = {
  attach: {
    connect: async (ctx, server, bdm, p) => hostDriver(ctx, server)?.attachVolume(server.id, await volumeConnection(ctx, server, p.volumeId, bdm.device_name)),
    complete: async (storage, tx, server, bdm, p) => {
      await storage.volumes.attach(tx, { volumeId: p.volumeId, serverId: server.id, device: bdm.device_name, hostName: server.host, deleteOnTermination: bdm.delete_on_termination === 1 })
    },
    rollBack: async (storage, tx, server, bdm, p) => {
      await storage.volumes.detach(tx, { volumeId: p.volumeId, serverId: server.id })
      await tx.deleteFrom('block_device_mappings').where('id', '=', bdm.id).execute()
    },
  },
  detach: {
    connect: async (ctx, server, _bdm, p) => hostDriver(ctx, server)?.detachVolume(server.id, p.volumeId),
    complete: async (storage, tx, server, bdm, p) => {
      await storage.volumes.detach(tx, { volumeId: p.volumeId, serverId: server.id })
      await tx.deleteFrom('block_device_mappings').where('id', '=', bdm.id).execute()
    },
    rollBack: async (storage, tx, server, _bdm, p) => storage.volumes.rollDetaching(tx, { volumeId: p.volumeId, serverId: server.id }),
  },
  swap: {
    // The hypervisor copies the old volume onto the new one and switches the guest's disk: connect, then disconnect.
    connect: async (ctx, server, bdm, p) => {
      const driver = hostDriver(ctx, server)
      await driver?.attachVolume(server.id, await volumeConnection(ctx, server, p.newVolumeId!, bdm.device_name))
      await driver?.detachVolume(server.id, p.volumeId)
    },
    complete: async (storage, tx, server, bdm, p) => {
      await storage.volumes.detach(tx, { volumeId: p.volumeId, serverId: server.id })
      await storage.volumes.attach(tx, { volumeId: p.newVolumeId!, serverId: server.id, device: bdm.device_name, hostName: server.host, deleteOnTermination: bdm.delete_on_termination === 1 })
      const attachment = await tx.selectFrom('volume_attachments').select('id').where('volume_id', '=', p.newVolumeId!).where('server_id', '=', server.id).executeTakeFirst()
      const size = await tx.selectFrom('volumes').select('size').where('id', '=', p.newVolumeId!).executeTakeFirst()
      await tx
        .updateTable('block_device_mappings')
        .set({ volume_id: p.newVolumeId!, attachment_id: attachment?.id ?? null, volume_size: size?.size ?? bdm.volume_size })
        .where('id', '=', bdm.id)
        .execute()
    },
    rollBack: async (storage, tx, server, _bdm, p) => {
      await storage.volumes.rollDetaching(tx, { volumeId: p.volumeId, serverId: server.id })
      await storage.volumes.detach(tx, { volumeId: p.newVolumeId!, serverId: server.id })
    },
  },
}

// ---- build: the block_device_mapping step ----

/** A block device that could not be prepared: the build is aborted (Nova's BuildAbortException). */
export class BlockDeviceFailure extends DriverError {
  constructor(serverId: string, cause: unknown) {
    // Quota problems are shown as they are; anything else as Nova words it, the cause in the fault's details.
    const reason = cause instanceof AppError && cause.status === 413 ? cause.message : 'Failure prepping block device.'
    super(`Build of instance ${serverId} aborted: ${reason}`)
    this.stack = `${this.stack ?? ''}\nCaused by: ${(cause as Error).stack ?? String(cause)}`
  }
}

/**
 * Creates the volumes a server's mappings ask for and attaches every volume mapping to the server (in-use, as
 * Nova's _prep_block_device leaves them); returns them for the spawn, which boots the guest with them. A repeated
 * run skips what the first one did: a mapping with a volume has it, an attached volume is attached.
 */
export async function prepareBlockDevices(ctx: ConductorContext, server: ServerTable): Promise<VolumeConnection[]> {
  const db = ctx.store.db
  const connections: VolumeConnection[] = []
  for (const bdm of await volumeMappings(db, server.id)) {
    try {
      const volumeId = bdm.volume_id ?? (await createBootVolume(ctx, server, bdm))
      if (!volumeId) return [] // the server was deleted meanwhile
      if (!(await reserveBootVolume(ctx, server, bdm, volumeId))) return []
      if ((await attachmentStatus(db, volumeId, server.id)) !== 'attached') {
        await db.transaction().execute((tx) =>
          storageOf(ctx).volumes.attach(tx, { volumeId, serverId: server.id, device: bdm.device_name, hostName: server.host, deleteOnTermination: bdm.delete_on_termination === 1 }),
        )
      }
      connections.push(await volumeConnection(ctx, server, volumeId, bdm.device_name))
    } catch (err) {
      if (err instanceof AppError) throw new BlockDeviceFailure(server.id, err)
      throw err
    }
  }
  return connections
}

/**
 * The volume of an image, snapshot or blank mapping, recorded (creating) in one transaction with the mapping's
 * update. The server row is locked first: a delete that committed meanwhile makes this a no-op (undefined), one
 * that comes later finds the volume and deletes it with the server's mappings.
 */
async function createBootVolume(ctx: ConductorContext, server: ServerTable, bdm: BlockDeviceMappingTable): Promise<string | undefined> {
  const storage = storageOf(ctx)
  return ctx.store.db.transaction().execute(async (tx) => {
    const live = await tx.updateTable('servers').set({ updated_at: Date.now() }).where('id', '=', server.id).where('deleted', '=', 0).executeTakeFirst()
    if (Number(live.numUpdatedRows) === 0) return undefined
    const current = await tx.selectFrom('block_device_mappings').select('volume_id').where('id', '=', bdm.id).executeTakeFirst()
    if (current?.volume_id) return current.volume_id
    const source = bdm.source_type as 'image' | 'snapshot' | 'blank'
    const volume = await storage.volumes.createForBoot(tx, {
      projectId: server.project_id,
      userId: server.user_id,
      // The API checked the caller's right to the image or snapshot; the server's project owns the volume.
      visibility: 'all_projects',
      source,
      sourceId: (source === 'image' ? bdm.image_id : source === 'snapshot' ? bdm.snapshot_id : null) ?? undefined,
      size: bdm.volume_size ?? undefined,
      volumeType: bdm.volume_type,
      availabilityZone: null,
      name: '',
    })
    await tx.updateTable('block_device_mappings').set({ volume_id: volume.id, volume_size: volume.size }).where('id', '=', bdm.id).execute()
    return volume.id
  })
}

/**
 * Makes a boot volume's bytes (Nova waits for Cinder's `available` likewise) and reserves it for the server,
 * once: a repeated run finds it reserved. False when the server was deleted meanwhile.
 */
async function reserveBootVolume(ctx: ConductorContext, server: ServerTable, bdm: BlockDeviceMappingTable, volumeId: string): Promise<boolean> {
  const storage = storageOf(ctx)
  const status = await storage.volumes.build(volumeId)
  if (status === 'error') throw new AppError('bad_request', `Volume ${volumeId} could not be created (its backend failed).`)
  if (await attachmentStatus(ctx.store.db, volumeId, server.id)) return true
  return ctx.store.db.transaction().execute(async (tx) => {
    const live = await tx.updateTable('servers').set({ updated_at: Date.now() }).where('id', '=', server.id).where('deleted', '=', 0).executeTakeFirst()
    if (Number(live.numUpdatedRows) === 0) return false
    const { attachmentId } = await storage.volumes.reserveForAttach(tx, { volumeId, projectId: server.project_id, serverId: server.id, visibility: 'all_projects' })
    await tx.updateTable('block_device_mappings').set({ attachment_id: attachmentId }).where('id', '=', bdm.id).execute()
    return true
  })
}

// ---- delete and failed builds ----

/**
 * Inside the transaction that deletes the server (or fails its build): every volume detached (available again),
 * those with delete_on_termination deleted, the mappings removed. Safe to run twice.
 */
export async function releaseVolumes(ctx: ConductorContext, tx: Db, serverId: string): Promise<void> {
  if (!ctx.storage) return
  const volumes = ctx.storage.volumes
  const bdms = await tx.selectFrom('block_device_mappings').selectAll().where('server_id', '=', serverId).execute()
  const attachments = await tx.selectFrom('volume_attachments').select(['volume_id', 'delete_on_termination']).where('server_id', '=', serverId).execute()
  const doomed = new Set([...bdms.filter((b) => b.delete_on_termination === 1).map((b) => b.volume_id), ...attachments.filter((a) => a.delete_on_termination === 1).map((a) => a.volume_id)])
  const volumeIds = new Set([...bdms.map((b) => b.volume_id), ...attachments.map((a) => a.volume_id)].filter((v): v is string => !!v))
  // In id order: two servers' deletes that share multiattach volumes lock their rows in one order (no deadlock).
  for (const volumeId of [...volumeIds].sort()) {
    await volumes.detach(tx, { volumeId, serverId })
    if (doomed.has(volumeId)) await volumes.deleteOnTermination(tx, { volumeId })
  }
  await tx.deleteFrom('block_device_mappings').where('server_id', '=', serverId).execute()
}
