/**
 * The volume attachment representation of /servers/{id}/os-volume_attachments per microversion (docs/compute.md,
 * "Volume attachments"): `list`/`show` (GET) and `attach` (the POST answer, which keeps `id` and always has `device`).
 */
import type { FieldTable } from './fields.js'
import { J } from './json-types.js'

export type VolumeAttachmentView = 'list' | 'show' | 'attach'

export interface VolumeAttachmentModel {
  volumeId: string
  serverId: string
  device: string | null
  tag: string | null
  deleteOnTermination: boolean
  attachmentId: string | null
  bdmId: string
}

const READ: readonly VolumeAttachmentView[] = ['list', 'show']
const ALL: readonly VolumeAttachmentView[] = ['list', 'show', 'attach']

export const volumeAttachmentFields: FieldTable<VolumeAttachmentModel, VolumeAttachmentView> = {
  id: [
    { type: J.str, views: READ, until: '2.89', read: (a) => a.volumeId },
    { type: J.str, views: ['attach'], read: (a) => a.volumeId },
  ],
  serverId: { type: J.str, views: ALL, read: (a) => a.serverId },
  volumeId: { type: J.str, views: ALL, read: (a) => a.volumeId },
  // GET leaves the key out when there is no device; the POST answer always has it (Nova keeps it for compatibility).
  device: [
    { type: J.str, views: READ, read: (a) => a.device, omit: (a) => !a.device },
    { type: J.nstr, views: ['attach'], read: (a) => a.device },
  ],
  tag: { type: J.nstr, views: ALL, since: '2.70', read: (a) => a.tag },
  delete_on_termination: { type: J.bool, views: ALL, since: '2.79', read: (a) => a.deleteOnTermination },
  attachment_id: { type: J.nstr, views: READ, since: '2.89', read: (a) => a.attachmentId },
  bdm_uuid: { type: J.str, views: READ, since: '2.89', read: (a) => a.bdmId },
}
