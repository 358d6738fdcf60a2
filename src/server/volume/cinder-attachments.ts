/**
 * Cinder's legacy attachment actions (os-attach, os-detach, os-force_detach): bookkeeping, as in Cinder. They
 * record in the same `volume_attachments` rows compute uses that the volume is attached to an instance at a
 * mountpoint, and take such a record away; no disk is plugged into a guest. A record made here is marked
 * `attached_by = 'cinder'`; one compute made (and connected to a hypervisor) is left to compute's own detach,
 * so these actions never pull a disk from under a running guest (docs/image-volume.md, "Cinder's attach actions").
 */
import { randomUUID } from 'node:crypto'
import { badRequest, notFound } from '../../contracts/errors.js'
import type { Principal } from '../auth/principal.js'
import { authorize } from '../policy/rules.js'
import { volumePolicy } from '../policy/volume.policy.js'
import type { Db, Store } from '../storage/store.js'
import type { VolumeAttachment, VolumeRecord } from './model.js'
import { callerOf, type VolumeService } from './service.js'

export interface AttachInput {
  instanceUuid?: string
  hostName?: string
  mountpoint: string
  mode: 'rw' | 'ro'
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
    if (row.attached_by !== 'cinder') {
      throw badRequest(`Invalid volume: Volume ${volume.id} was attached to server ${attachment.serverId} through compute; detach it there (DELETE /servers/${attachment.serverId}/os-volume_attachments/${volume.id}).`)
    }
    await this.volumes.detach(tx, { volumeId: volume.id, serverId: attachment.serverId })
  }

  /** The instance must be a live server of the volume's project: a record naming another project's server would show in it. */
  private async requireServer(db: Db, serverId: string, projectId: string): Promise<void> {
    const server = await db.selectFrom('servers').select('id').where('id', '=', serverId).where('project_id', '=', projectId).where('deleted', '=', 0).executeTakeFirst()
    if (!server) throw notFound(`Instance ${serverId} could not be found.`)
  }
}
