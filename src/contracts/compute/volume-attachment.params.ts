/**
 * Bodies and query of /servers/{id}/os-volume_attachments per microversion (nova/api/openstack/compute/schemas/
 * volumes.py): attach (POST), update or swap (PUT), and the list's paging parameters.
 */
import { Type as T, type TSchema } from '@sinclair/typebox'
import { objectAt, P, type ParamTable } from './params.js'
import { versionNumber, type VersionNumber } from './versions.js'

/** Nova's match_device() pattern. */
const device = T.Union([T.Null(), T.String({ maxLength: 255, pattern: '(^/dev/x{0,1}[a-z]{0,1}d{0,1})([a-z]+)[0-9]*$' })])

export const VOLUME_ATTACH_FIELDS = {
  volumeId: { schema: P.uuid, required: true },
  device: { schema: device },
  tag: { schema: P.tag, since: '2.49' },
  delete_on_termination: { schema: P.boolean, since: '2.79' },
} satisfies ParamTable

/** From 2.85 the PUT may carry the attachment as shown; only volumeId and delete_on_termination may change. */
export const VOLUME_UPDATE_FIELDS = {
  volumeId: { schema: P.uuid, required: true },
  id: { schema: P.uuid, since: '2.85' },
  serverId: { schema: P.uuid, since: '2.85' },
  device: { schema: device, since: '2.85' },
  tag: { schema: P.tag, since: '2.85' },
  delete_on_termination: { schema: P.boolean, since: '2.85' },
} satisfies ParamTable

export function attachBodySchema(version: VersionNumber) {
  return T.Object({ volumeAttachment: objectAt(VOLUME_ATTACH_FIELDS, version) }, { additionalProperties: false })
}

export function updateAttachmentBodySchema(version: VersionNumber) {
  return T.Object({ volumeAttachment: objectAt(VOLUME_UPDATE_FIELDS, version) }, { additionalProperties: false })
}

/** GET …/os-volume_attachments: limit and offset; other parameters are refused from 2.75. */
export function attachmentListQuerySchema(version: VersionNumber): TSchema {
  const props = { limit: T.Optional(P.nonNegativeInt), offset: T.Optional(P.nonNegativeInt) }
  return T.Object(props, { additionalProperties: version < versionNumber('2.75') })
}
