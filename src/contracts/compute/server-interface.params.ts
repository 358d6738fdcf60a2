/**
 * POST /servers/{id}/os-interface: the `interfaceAttachment` body per microversion (Nova's
 * schemas/attach_interfaces.py). The object itself is optional: without it Nova attaches the project's network.
 */
import { Type as T } from '@sinclair/typebox'
import { objectAt, P, type ParamTable } from './params.js'
import type { VersionNumber } from './versions.js'

export const INTERFACE_ATTACHMENT_FIELDS = {
  net_id: { schema: P.uuid },
  port_id: { schema: P.uuid },
  fixed_ips: { schema: T.Array(T.Object({ ip_address: T.Union([P.ipv4, P.ipv6]) }, { additionalProperties: false }), { minItems: 1, maxItems: 1 }) },
  tag: { schema: P.tag, since: '2.49' },
} satisfies ParamTable

export const interfaceAttachBody = (version: VersionNumber) =>
  T.Object({ interfaceAttachment: T.Optional(objectAt(INTERFACE_ATTACHMENT_FIELDS, version)) }, { additionalProperties: false })
