/**
 * Bodies of POST /servers, PUT /servers/{id} and rebuild, per microversion (docs/compute.md, "Create" and "Representations").
 */
import { Type as T, type TSchema } from '@sinclair/typebox'
import { objectAt, P, type ParamTable } from './params.js'
import { versionNumber, type VersionNumber } from './versions.js'

const at = (v: string) => versionNumber(v)

const hostname = (version: VersionNumber) =>
  version >= at('2.94') ? T.String({ minLength: 1, maxLength: 255, pattern: '^[a-zA-Z0-9-._]*$' }) : T.String({ minLength: 2, maxLength: 63, pattern: '^[a-zA-Z0-9]+[a-zA-Z0-9-]*[a-zA-Z0-9]+$' })

const networkItem = (version: VersionNumber): TSchema => {
  const props: Record<string, TSchema> = {
    uuid: version >= at('2.37') ? P.uuid : T.String({ maxLength: 255 }),
    port: T.Union([T.Null(), P.uuid]),
    fixed_ip: T.Union([P.ipv4, P.ipv6]),
  }
  if (version === at('2.32') || version >= at('2.42')) props.tag = T.String({ minLength: 1, maxLength: 60, pattern: '^[^,/]*$' })
  return T.Object(Object.fromEntries(Object.entries(props).map(([k, s]) => [k, T.Optional(s)])), { additionalProperties: false })
}

const networks = (version: VersionNumber): TSchema =>
  version >= at('2.37') ? T.Union([T.Literal('auto'), T.Literal('none'), T.Array(networkItem(version), { minItems: 1 })]) : T.Array(networkItem(version))

const bdmItem = (version: VersionNumber): TSchema => {
  const props: Record<string, TSchema> = {
    source_type: T.Union(['volume', 'image', 'snapshot', 'blank'].map((v) => T.Literal(v))),
    destination_type: T.Union([T.Literal('local'), T.Literal('volume')]),
    uuid: T.String({ minLength: 1, maxLength: 255, pattern: '^[a-zA-Z0-9._-]*$' }),
    boot_index: T.Union([T.Null(), T.Integer(), T.String({ pattern: '^-?[0-9]+$' })]),
    volume_size: T.Union([T.Null(), T.Integer({ minimum: 1, maximum: 2147483647 }), T.String({ pattern: '^[0-9]*[1-9][0-9]*$' })]),
    device_name: T.String({ minLength: 1, maxLength: 255, pattern: '^[a-zA-Z0-9._/-]*$' }),
    delete_on_termination: P.boolean,
    guest_format: T.String({ maxLength: 255 }),
    device_type: T.String({ maxLength: 255 }),
    disk_bus: T.Union(['ide', 'usb', 'virtio', 'scsi', 'sata', 'uml', 'xen', 'lxc', 'fdc'].map((v) => T.Literal(v))),
    no_device: T.Union([T.Boolean(), T.Null()]),
    volume_id: P.uuid,
    snapshot_id: P.uuid,
    image_id: P.uuid,
  }
  if (version === at('2.32') || version >= at('2.42')) props.tag = T.String({ minLength: 1, maxLength: 60, pattern: '^[^,/]*$' })
  if (version >= at('2.67')) props.volume_type = T.Union([T.Null(), T.String({ maxLength: 255 })])
  return T.Object(Object.fromEntries(Object.entries(props).map(([k, s]) => [k, T.Optional(s)])), { additionalProperties: false })
}

export const personality = T.Array(T.Object({ path: T.String({ maxLength: 255 }), contents: T.String({ pattern: '^[A-Za-z0-9+/]*={0,2}$' }) }, { additionalProperties: false }))

export const SERVER_CREATE_FIELDS = {
  name: { schema: P.name, required: true },
  flavorRef: { schema: T.Union([T.String({ minLength: 1, maxLength: 255 }), T.Integer({ minimum: 0 })]), required: true },
  imageRef: { schema: T.Union([P.uuid, T.Literal('')]) },
  networks: { schema: networks, required: (v) => v >= at('2.37') },
  adminPass: { schema: T.String() },
  metadata: { schema: P.metadata },
  key_name: { schema: T.String({ minLength: 1, maxLength: 255 }) },
  availability_zone: { schema: T.String({ minLength: 1, maxLength: 255 }) },
  security_groups: { schema: T.Array(T.Object({ name: T.String({ minLength: 1, maxLength: 255 }) }, { additionalProperties: false })) },
  user_data: { schema: T.String({ maxLength: 65535, pattern: '^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$' }) },
  accessIPv4: { schema: P.ipv4 },
  accessIPv6: { schema: P.ipv6 },
  'OS-DCF:diskConfig': { schema: P.diskConfig },
  config_drive: { schema: P.boolean },
  min_count: { schema: P.positiveInt },
  max_count: { schema: P.positiveInt },
  return_reservation_id: { schema: P.boolean },
  block_device_mapping: { schema: T.Array(T.Object({}, { additionalProperties: true })) },
  block_device_mapping_v2: { schema: (v) => T.Array(bdmItem(v)) },
  personality: { schema: personality, until: '2.57' },
  description: { schema: P.description, since: '2.19' },
  tags: { schema: T.Array(P.tag, { maxItems: 50 }), since: '2.52' },
  trusted_image_certificates: { schema: T.Union([T.Null(), T.Array(T.String({ minLength: 1 }), { minItems: 1, maxItems: 50, uniqueItems: true })]), since: '2.63' },
  host: { schema: P.hostLike, since: '2.74' },
  hypervisor_hostname: { schema: P.hostLike, since: '2.74' },
  hostname: { schema: hostname, since: '2.90' },
} satisfies ParamTable

const hints = T.Object(
  {
    group: T.Optional(P.uuid),
    different_host: T.Optional(T.Union([P.uuid, T.Array(P.uuid)])),
    same_host: T.Optional(T.Union([P.uuid, T.Array(P.uuid)])),
    query: T.Optional(T.Union([T.String(), T.Array(T.Unknown())])),
    target_cell: T.Optional(T.String({ minLength: 1, maxLength: 255 })),
    different_cell: T.Optional(T.Union([T.String(), T.Array(T.String())])),
    build_near_host_ip: T.Optional(T.Union([P.ipv4, P.ipv6])),
    cidr: T.Optional(T.String({ pattern: '^/[0-9a-f.:]+$' })),
  },
  { additionalProperties: true },
)

export function createBodySchema(version: VersionNumber) {
  return T.Object(
    { server: objectAt(SERVER_CREATE_FIELDS, version), 'os:scheduler_hints': T.Optional(hints), 'OS-SCH-HNT:scheduler_hints': T.Optional(hints) },
    { additionalProperties: false },
  )
}

export const SERVER_UPDATE_FIELDS = {
  name: { schema: P.name },
  description: { schema: P.description, since: '2.19' },
  accessIPv4: { schema: P.ipv4 },
  accessIPv6: { schema: P.ipv6 },
  'OS-DCF:diskConfig': { schema: P.diskConfig },
  hostname: { schema: hostname, since: '2.90' },
} satisfies ParamTable

export function updateBodySchema(version: VersionNumber) {
  return T.Object({ server: objectAt(SERVER_UPDATE_FIELDS, version) }, { additionalProperties: false })
}

export const SERVER_REBUILD_FIELDS = {
  imageRef: { schema: P.uuid, required: true },
  name: { schema: P.name },
  adminPass: { schema: T.String() },
  metadata: { schema: P.metadata },
  preserve_ephemeral: { schema: T.Boolean() },
  'OS-DCF:diskConfig': { schema: P.diskConfig },
  accessIPv4: { schema: P.ipv4 },
  accessIPv6: { schema: P.ipv6 },
  personality: { schema: personality, until: '2.57' },
  description: { schema: P.description, since: '2.19' },
  key_name: { schema: T.Union([T.Null(), T.String({ minLength: 1, maxLength: 255 })]), since: '2.54' },
  user_data: { schema: T.Union([T.Null(), T.String({ maxLength: 65535, pattern: '^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$' })]), since: '2.57' },
  trusted_image_certificates: { schema: T.Union([T.Null(), T.Array(T.String({ minLength: 1 }), { minItems: 1, maxItems: 50, uniqueItems: true })]), since: '2.63' },
  hostname: { schema: hostname, since: '2.90' },
} satisfies ParamTable
