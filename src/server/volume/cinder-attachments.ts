/**
 * Cinder's attachment records made through the volume API rather than compute: the legacy actions (os-attach,
 * os-detach, os-force_detach) and the attachments API (3.27+: create, update with a connector, os-complete,
 * delete). They record in the same `volume_attachments` rows compute uses that the volume is attached to an
 * instance; a record made here is marked `attached_by = 'cinder'`. The legacy actions are bookkeeping only; the
 * attachments API also connects the volume for its consumer (an NBD export and its key, or a Ceph volume's name)
 * as Cinder's attachment_update does. One compute made (and connected to a hypervisor) is left to compute's own
 * detach, so these never pull a disk from under a running guest (docs/image-volume.md, "Cinder's attach actions"
 * and "The attachments API").
 */
import { randomUUID } from 'node:crypto'
import { AppError, badRequest, notFound } from '../../contracts/errors.js'
import { VolumeBackendError } from '../../contracts/host/volume.js'
import type { Principal } from '../auth/principal.js'
import { authorize } from '../policy/rules.js'
import { volumePolicy } from '../policy/volume.policy.js'
import type { Db, Store } from '../storage/store.js'
import { rowToAttachment, type VolumeAttachment, type VolumeRecord } from './model.js'
import type { AccessMode, VolumeConnectionInfo } from '../../contracts/host/compute-driver.js'
import { callerOf, type VolumeService } from './service.js'

/** A consumer's connector (os-brick's dict); pcc reads `host` (a Ceph volume's opener) and `mountpoint`. */
export type Connector = Record<string, unknown>

export interface AttachmentCreate {
  volumeId: string
  instanceUuid: string
  /** Absent or empty: only reserved (Cinder: attachment_create without a connector). */
  connector?: Connector
  mode: AccessMode
}

/** An attachment and, when it was just connected, the connection info its consumer uses (with the export's key). */
export interface AttachmentAnswer {
  attachment: VolumeAttachment
  connectionInfo?: VolumeConnectionInfo
}

/** Attach statuses an attachments-API record goes through, and the volume status each gives a volume with no other. */
const ATTACHMENT_STEPS = {
  reserved: { volume: 'reserved' },
  attaching: { volume: 'attaching' },
  attached: { volume: 'in-use' },
} as const
type AttachmentStep = keyof typeof ATTACHMENT_STEPS

export interface AttachInput {
  instanceUuid?: string
  hostName?: string
  mountpoint: string
  mode: 'rw' | 'ro'
}

/** An attachment compute made is compute's to change: it connected a hypervisor that a guest reads through. */
function computeOwned(volumeId: string, serverId: string): Error {
  return badRequest(`Invalid volume: Volume ${volumeId} was attached to server ${serverId} through compute; detach it there (DELETE /servers/${serverId}/os-volume_attachments/${volumeId}).`)
}

export class CinderAttachActions {
  private readonly now: () => number

  constructor(
    private readonly store: Store,
    private readonly volumes: VolumeService,
    options: { now?: () => number } = {},
  ) {
    this.now = options.now ?? Date.now
  }

  /** os-attach: available (or reserved by os-reserve, or in use when multiattach) → in-use, with the attachment recorded. */
  async attach(principal: Principal, id: string, input: AttachInput): Promise<void> {
    const caller = callerOf(principal)
    await this.store.db.transaction().execute(async (tx) => {
      // The row before the new attachment's view revision, as every writer (VolumeService.lockFirst).
      await this.volumes.lockFirst(tx, id)
      const volume = await this.volumes.find(caller, id, tx)
      authorize(volumePolicy, 'volume:attach', principal, { projectId: volume.projectId })
      if (input.instanceUuid === undefined) {
        // Attachments are kept per instance (compute's releases them when the server goes); a host alone names none.
        throw badRequest(input.hostName === undefined ? 'Invalid request to attach volume to an invalid target' : 'Invalid request to attach volume: pcc records attachments to instances; instance_uuid is required.')
      }
      await this.requireServer(tx, input.instanceUuid, volume.projectId)
      if (input.mode === 'rw' && volume.metadata.readonly === 'True') throw badRequest(`Invalid volume: Unable to attach readonly volume ${id} in read-write mode.`)
      const attachable = volume.multiattach ? ['available', 'attaching', 'in-use'] : ['available', 'attaching']
      const live = volume.attachments.filter((a) => a.attachStatus !== 'reserved')
      if (!attachable.includes(volume.status) || (!volume.multiattach && live.length > 0)) {
        throw badRequest(`Invalid volume: Volume ${id} status must be ${attachable.join(' or ')} to attach, but it is ${volume.status}${volume.multiattach ? '' : ' (it is not multiattach)'}.`)
      }
      if (volume.attachments.some((a) => a.serverId === input.instanceUuid)) throw badRequest(`Invalid volume: Volume ${id} is already attached to instance ${input.instanceUuid}.`)
      const now = this.now()
      await tx
        .insertInto('volume_attachments')
        .values({
          id: randomUUID(),
          volume_id: id,
          server_id: input.instanceUuid,
          attach_status: 'attached',
          attach_mode: input.mode,
          device: input.mountpoint,
          host_name: input.hostName ?? null,
          delete_on_termination: 0,
          attached_at: now,
          created_at: now,
          host_id: null,
          connection_info: null,
          attached_by: 'cinder',
        })
        .execute()
      await tx.updateTable('volumes').set({ status: 'in-use', updated_at: now }).where('id', '=', id).execute()
    })
  }

  /**
   * os-detach: removes the named attachment, or the only one; with none left the volume is available. A volume
   * with no attachment that is still reserved or in use (a record lost) is made available, as Cinder does.
   */
  async detach(principal: Principal, id: string, attachmentId: string | undefined): Promise<void> {
    const caller = callerOf(principal)
    await this.store.db.transaction().execute(async (tx) => {
      const volume = await this.volumes.find(caller, id, tx)
      authorize(volumePolicy, 'volume:detach', principal, { projectId: volume.projectId })
      if (volume.status === 'maintenance') throw badRequest(`Invalid volume: Volume ${id} is in maintenance; it cannot be detached.`)
      const attachment = this.chosen(volume, attachmentId)
      if (attachment) await this.remove(tx, volume, attachment)
      else await this.releaseStatus(tx, id)
    })
  }

  /**
   * os-force_detach (admins): as os-detach, whatever the volume's status (an admin clearing a record of a volume
   * reset to error); the volume is available, or in use while other records remain. With no record to remove only
   * an attach status is undone: a creating or offered volume stays what it is.
   */
  async forceDetach(principal: Principal, id: string, attachmentId: string | undefined): Promise<void> {
    authorize(volumePolicy, 'volume:force_detach', principal)
    await this.store.db.transaction().execute(async (tx) => {
      const volume = await this.volumes.find(callerOf(principal), id, tx)
      const attachment = this.chosen(volume, attachmentId)
      if (!attachment) return this.releaseStatus(tx, id)
      await this.remove(tx, volume, attachment)
      const left = await tx.selectFrom('volume_attachments').select('id').where('volume_id', '=', id).execute()
      await tx.updateTable('volumes').set({ status: left.length > 0 ? 'in-use' : 'available', updated_at: this.now() }).where('id', '=', id).execute()
    })
  }

  /** A volume without attachments left in an attach status (a record lost, an os-reserve never used) is available. */
  private async releaseStatus(tx: Db, id: string): Promise<void> {
    await tx.updateTable('volumes').set({ status: 'available', updated_at: this.now() }).where('id', '=', id).where('status', 'in', ['attaching', 'in-use', 'detaching']).execute()
  }

  /** The attachment an action names, or the volume's only one; undefined when it has none. */
  private chosen(volume: VolumeRecord, attachmentId: string | undefined): VolumeAttachment | undefined {
    if (attachmentId !== undefined) {
      const named = volume.attachments.find((a) => a.id === attachmentId)
      if (!named) throw notFound(`VolumeAttachment ${attachmentId} could not be found.`)
      return named
    }
    if (volume.attachments.length > 1) throw badRequest(`Invalid volume: Volume ${volume.id} has ${volume.attachments.length} attachments; name the one to detach with attachment_id.`)
    return volume.attachments[0]
  }

  private async remove(tx: Db, volume: VolumeRecord, attachment: VolumeAttachment): Promise<void> {
    const row = await tx.selectFrom('volume_attachments').select('attached_by').where('id', '=', attachment.id).executeTakeFirstOrThrow()
    if (row.attached_by !== 'cinder') throw computeOwned(volume.id, attachment.serverId)
    await this.volumes.detach(tx, { volumeId: volume.id, serverId: attachment.serverId })
  }

  // ---- the attachments API (3.27+) ----

  /**
   * attachment_create: reserves the volume for the instance (available, or in use when multiattach → reserved)
   * and, with a non-empty connector, connects it at once (→ attaching). 400 when it cannot be attached.
   */
  async createAttachment(principal: Principal, input: AttachmentCreate): Promise<AttachmentAnswer> {
    const caller = callerOf(principal)
    const attachmentId = randomUUID()
    await this.store.db.transaction().execute(async (tx) => {
      const volume = await this.volumes.find(caller, input.volumeId, tx)
      authorize(volumePolicy, 'volume:attachment_create', principal, { projectId: volume.projectId })
      await this.requireServer(tx, input.instanceUuid, volume.projectId)
      if (input.mode === 'rw' && volume.metadata.readonly === 'True') throw badRequest(`Invalid volume: Unable to attach readonly volume ${volume.id} in read-write mode.`)
      const attachable = volume.multiattach ? ['available', 'reserved', 'in-use'] : ['available']
      if (!attachable.includes(volume.status)) {
        throw badRequest(`Invalid volume: Volume ${volume.id} status must be ${attachable.join(' or ')} to attach, but it is ${volume.status}${volume.multiattach ? '' : ' (it is not multiattach)'}.`)
      }
      if (volume.attachments.some((a) => a.serverId === input.instanceUuid)) throw badRequest(`Invalid volume: Volume ${volume.id} is already attached to instance ${input.instanceUuid}.`)
      const claimed = await tx
        .updateTable('volumes')
        .set({ status: volume.status === 'in-use' ? 'in-use' : 'reserved', updated_at: this.now() })
        .where('id', '=', volume.id)
        .where('status', '=', volume.status)
        .executeTakeFirst()
      if (Number(claimed.numUpdatedRows) === 0) throw badRequest(`Invalid volume: Volume ${volume.id} is being attached elsewhere.`)
      await tx
        .insertInto('volume_attachments')
        .values({ id: attachmentId, volume_id: volume.id, server_id: input.instanceUuid, attach_status: 'reserved', attach_mode: input.mode, device: null, host_name: null, delete_on_termination: 0, attached_at: null, created_at: this.now(), host_id: null, connection_info: null, attached_by: 'cinder' })
        .execute()
    })
    if (input.connector === undefined || Object.keys(input.connector).length === 0) return { attachment: await this.attachmentOf(attachmentId) }
    try {
      return await this.connect(attachmentId, input.connector)
    } catch (err) {
      // A create that could not connect leaves nothing behind: the reservation goes with it.
      await this.store.db.transaction().execute((tx) => this.volumes.detach(tx, { volumeId: input.volumeId, serverId: input.instanceUuid }))
      throw err
    }
  }

  /** attachment_update: connects a reserved (or already connected) record for the connector's consumer (→ attaching). */
  async updateAttachment(principal: Principal, attachmentId: string, connector: Connector): Promise<AttachmentAnswer> {
    const { attachment, volume } = await this.findOwn(principal, attachmentId, 'volume:attachment_update')
    if (attachment.attachStatus === 'detaching') throw badRequest(`Invalid volume: attachment ${attachmentId} is being detached.`)
    if (volume.status === 'maintenance' || volume.status === 'error') throw badRequest(`Invalid volume: Volume ${volume.id} is ${volume.status}; it cannot be connected.`)
    return this.connect(attachmentId, connector)
  }

  /** os-complete: the consumer has the volume attached (→ attached, the volume in-use). Repeating it changes nothing. */
  async completeAttachment(principal: Principal, attachmentId: string): Promise<void> {
    const { volume } = await this.findOwn(principal, attachmentId, 'volume:attachment_complete')
    await this.store.db.transaction().execute(async (tx) => {
      await this.volumes.lockFirst(tx, volume.id)
      await tx.updateTable('volume_attachments').set({ attach_status: 'attached', attached_at: this.now() }).where('id', '=', attachmentId).where('attach_status', '!=', 'attached').execute()
      await this.settleVolume(tx, volume.id)
    })
  }

  /** attachment_delete: removes the record and its export key; answers the volume's attachments left. */
  async deleteAttachment(principal: Principal, attachmentId: string): Promise<VolumeAttachment[]> {
    const { attachment, volume } = await this.findOwn(principal, attachmentId, 'volume:attachment_delete')
    await this.store.db.transaction().execute((tx) => this.remove(tx, volume, attachment))
    return (await this.volumes.find(callerOf(principal), volume.id)).attachments
  }

  private async connect(attachmentId: string, connector: Connector): Promise<AttachmentAnswer> {
    const connectionInfo = await this.volumes.connectConsumer(attachmentId, connector).catch((err: unknown) => {
      if (err instanceof VolumeBackendError) throw new AppError('unavailable', `The volume's storage could not serve it to a consumer (${err.message}); try again later.`, { cause: err })
      throw err
    })
    await this.store.db.transaction().execute(async (tx) => {
      const mountpoint = typeof connector.mountpoint === 'string' ? connector.mountpoint : null
      const hostName = typeof connector.host === 'string' ? connector.host : null
      const row = await tx.selectFrom('volume_attachments').select('volume_id').where('id', '=', attachmentId).executeTakeFirstOrThrow()
      await this.volumes.lockFirst(tx, row.volume_id)
      await tx.updateTable('volume_attachments').set({ attach_status: 'attaching' }).where('id', '=', attachmentId).where('attach_status', '=', 'reserved').execute()
      await tx.updateTable('volume_attachments').set({ device: mountpoint, host_name: hostName }).where('id', '=', attachmentId).execute()
      await this.settleVolume(tx, row.volume_id)
    })
    return { attachment: await this.attachmentOf(attachmentId), connectionInfo }
  }

  /** The volume's status from its records: in-use once one is attached, else the furthest step of the rest. */
  private async settleVolume(tx: Db, volumeId: string): Promise<void> {
    const steps = (await tx.selectFrom('volume_attachments').select('attach_status').where('volume_id', '=', volumeId).execute()).map((r) => r.attach_status)
    const order: AttachmentStep[] = ['attached', 'attaching', 'reserved']
    const step = order.find((s) => steps.includes(s))
    if (step) await tx.updateTable('volumes').set({ status: ATTACHMENT_STEPS[step].volume, updated_at: this.now() }).where('id', '=', volumeId).execute()
  }

  /** The attachment and its volume, if the caller sees the volume and the record was made here; 404 otherwise. */
  private async findOwn(principal: Principal, attachmentId: string, operation: 'volume:attachment_update' | 'volume:attachment_complete' | 'volume:attachment_delete'): Promise<{ attachment: VolumeAttachment; volume: VolumeRecord }> {
    const row = await this.store.db.selectFrom('volume_attachments').select(['volume_id', 'attached_by']).where('id', '=', attachmentId).executeTakeFirst()
    const volume = row ? await this.volumes.find(callerOf(principal), row.volume_id).catch(() => undefined) : undefined
    if (!row || !volume) throw notFound(`VolumeAttachment ${attachmentId} could not be found.`)
    authorize(volumePolicy, operation, principal, { projectId: volume.projectId })
    const attachment = await this.attachmentOf(attachmentId)
    if (row.attached_by !== 'cinder') throw computeOwned(volume.id, attachment.serverId)
    return { attachment, volume }
  }

  private async attachmentOf(attachmentId: string): Promise<VolumeAttachment> {
    return rowToAttachment(await this.store.db.selectFrom('volume_attachments').selectAll().where('id', '=', attachmentId).executeTakeFirstOrThrow())
  }

  /** The instance must be a live server of the volume's project: a record naming another project's server would show in it. */
  private async requireServer(db: Db, serverId: string, projectId: string): Promise<void> {
    const server = await db.selectFrom('servers').select('id').where('id', '=', serverId).where('project_id', '=', projectId).where('deleted', '=', 0).executeTakeFirst()
    if (!server) throw notFound(`Instance ${serverId} could not be found.`)
  }
}
