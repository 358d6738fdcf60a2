/**
 * The block storage API's description for /openapi.json: answers (volume/view.ts renders them), the query
 * strings the routes parse by hand (params.ts), the action bodies and the microversion header.
 */
import { MAX_VOLUME_VERSION, MIN_VOLUME_VERSION } from '../../volume/microversion.js'
import { WITH_COUNT_SINCE } from './params.js'
import { BACKUP_GATES, SNAPSHOT_GATES, TRANSFER_DETAIL_GATES, VOLUME_GATES, VOLUME_SHOW_GATES, type Gate } from '../../volume/view.js'

type Schema = Record<string, unknown>

export const str = { type: 'string' }
export const nstr = { type: ['string', 'null'] }
const int = { type: 'integer' }
export const bool = { type: 'boolean' }
const nul = { type: 'null' }
export const strMap = { type: 'object', additionalProperties: str }
const links = { type: 'array', items: { type: 'object', properties: { rel: str, href: str }, required: ['rel', 'href'] } }
export const object = (properties: Record<string, unknown>, required: string[] = []): Schema => ({ type: 'object', properties, required })
const adminOnly = (schema: Schema): Schema => ({ ...schema, 'x-admin-only': true })

/** The fields a gate table of volume/view.ts adds, each with the version it appears from and who may see it. */
export function gated<T>(table: Record<string, Gate<T>>): Record<string, Schema> {
  const described = ({ type, since, adminOnly }: Gate<T>): Schema => ({
    ...type,
    ...(since === MIN_VOLUME_VERSION ? {} : { 'x-microversions': { min: since, max: MAX_VOLUME_VERSION } }),
    ...(adminOnly ? { 'x-admin-only': true } : {}),
  })
  return Object.fromEntries(Object.entries(table).map(([key, gate]) => [key, described(gate)]))
}

export const VOLUME_HEADERS: Schema = {
  type: 'object',
  properties: { 'openstack-api-version': { type: 'string', description: `volume <version>: ${MIN_VOLUME_VERSION} to ${MAX_VOLUME_VERSION}, or latest`, pattern: '^volume ' } },
}

const volumeSummary = object({ id: str, name: nstr, links }, ['id', 'links'])
const volumeDetail = object(
  {
    id: str,
    name: nstr,
    description: nstr,
    status: str,
    size: int,
    availability_zone: nstr,
    created_at: str,
    updated_at: nstr,
    volume_type: nstr,
    snapshot_id: nstr,
    source_volid: nstr,
    bootable: { type: 'string', enum: ['true', 'false'] },
    encrypted: bool,
    multiattach: bool,
    replication_status: nul,
    consistencygroup_id: nul,
    migration_status: nul,
    metadata: strMap,
    user_id: str,
    attachments: {
      type: 'array',
      items: object({ id: str, attachment_id: str, volume_id: str, server_id: nstr, host_name: nstr, device: nstr, attached_at: nstr }),
    },
    links,
    volume_image_metadata: strMap,
    ...gated(VOLUME_GATES),
    ...gated(VOLUME_SHOW_GATES),
  },
  ['id', 'status', 'size', 'links'],
)
const snapshotSummary = {
  id: str,
  name: nstr,
  description: nstr,
  status: str,
  size: int,
  volume_id: str,
  metadata: strMap,
  created_at: str,
  updated_at: nstr,
  ...gated(SNAPSHOT_GATES),
}
const snapshotDetail = object({ ...snapshotSummary, 'os-extended-snapshot-attributes:progress': str, 'os-extended-snapshot-attributes:project_id': str }, ['id', 'status', 'volume_id'])
const backupSummary = object({ id: str, name: nstr, links }, ['id', 'links'])
const backupDetail = object(
  {
    id: str,
    name: nstr,
    description: nstr,
    status: str,
    size: int,
    object_count: int,
    availability_zone: nstr,
    container: nstr,
    created_at: str,
    updated_at: nstr,
    fail_reason: nstr,
    volume_id: str,
    snapshot_id: nstr,
    is_incremental: bool,
    has_dependent_backups: bool,
    data_timestamp: nstr,
    links,
    ...gated(BACKUP_GATES),
  },
  ['id', 'status', 'size', 'volume_id', 'links'],
)
const volumeType = object(
  { id: str, name: str, description: nstr, is_public: bool, 'os-volume-type-access:is_public': bool, extra_specs: adminOnly(strMap), qos_specs_id: adminOnly(nstr) },
  ['id', 'name'],
)
const attachment = object({ id: str, volume_id: str, instance: nstr, status: str, attach_mode: str, attached_at: nstr, detached_at: nul, connection_info: { type: ['object', 'null'] } }, ['id', 'volume_id'])
/** A volume transfer as the list names it; `transferDetail` as show, create and the detail list answer it. */
const transferSummary = { id: str, name: nstr, volume_id: str, links }
const transferDetail = object({ ...transferSummary, ...gated(TRANSFER_DETAIL_GATES) }, ['id', 'volume_id', 'links'])
/** A user message (3.3+). */
const message = object(
  { id: str, request_id: str, message_level: str, event_id: str, user_message: str, resource_type: str, resource_uuid: str, created_at: str, guaranteed_until: str, links },
  ['id', 'request_id', 'message_level', 'event_id', 'user_message', 'created_at'],
)
/** QoS specs: `consumer` says who applies the limits in `specs` (volume/qos-specs.ts). */
const qosSpecs = object({ id: str, name: str, consumer: { type: 'string', enum: ['front-end', 'back-end', 'both'] }, specs: strMap }, ['id', 'name', 'consumer', 'specs'])
/** A volume type's encryption spec (volume/encryption.ts); `typeEncryptionDetail` as show answers it ({} when none). */
const encryptionFields = { provider: str, cipher: nstr, key_size: { type: ['integer', 'null'] }, control_location: { type: 'string', enum: ['front-end', 'back-end'] } }
const typeEncryption = object({ volume_type_id: str, encryption_id: str, ...encryptionFields }, ['volume_type_id', 'encryption_id', 'provider', 'control_location'])
const typeEncryptionDetail = object({ volume_type_id: str, encryption_id: str, ...encryptionFields, deleted: bool, created_at: str, updated_at: nstr, deleted_at: nul })
/** A project's default volume type (3.62). */
const defaultType = object({ project_id: str, volume_type_id: str }, ['project_id', 'volume_type_id'])

/** A quota: the limit, or with `usage=true` the limit with what is used. */
const quota = { anyOf: [int, object({ limit: int, in_use: int, reserved: int, allocated: int })] }

export const envelope = (key: string, inner: Schema, more: Record<string, Schema> = {}): Schema => object({ [key]: inner, ...more }, [key])
export const listOf = (inner: Schema): Schema => ({ type: 'array', items: inner })

/** Cinder 3.45: `count`, how many records match the list's filters (whatever limit and marker), asked by `with_count`. */
const listCount = { ...int, description: 'how many match the filters, ignoring limit and marker (with_count=true)', 'x-microversions': { min: WITH_COUNT_SINCE, max: MAX_VOLUME_VERSION } }

export const A = {
  versions: object({ versions: listOf(object({ id: str, status: str, version: str, min_version: str, updated: str, links: { type: 'array' } })) }, ['versions']),
  volumes: (detail: boolean) => envelope('volumes', listOf(detail ? volumeDetail : volumeSummary), { volumes_links: links, count: listCount }),
  volume: envelope('volume', volumeDetail),
  snapshots: (detail: boolean) => envelope('snapshots', listOf(detail ? snapshotDetail : object(snapshotSummary)), { snapshots_links: links, count: listCount }),
  snapshot: envelope('snapshot', snapshotDetail),
  backups: (detail: boolean) => envelope('backups', listOf(detail ? backupDetail : backupSummary), { backups_links: links, count: listCount }),
  backup: envelope('backup', backupDetail),
  backupSummary: envelope('backup', backupSummary),
  restore: envelope('restore', object({ backup_id: str, volume_id: str, volume_name: str }, ['backup_id', 'volume_id', 'volume_name'])),
  backupRecord: envelope('backup-record', object({ backup_service: str, backup_url: str }, ['backup_service', 'backup_url'])),
  metadata: envelope('metadata', strMap),
  meta: envelope('meta', strMap),
  types: envelope('volume_types', listOf(volumeType)),
  defaultType: envelope('default_type', defaultType),
  defaultTypes: envelope('default_types', listOf(defaultType)),
  type: envelope('volume_type', volumeType),
  extraSpecs: envelope('extra_specs', strMap),
  qosSpecsList: envelope('qos_specs', listOf(qosSpecs)),
  qosSpecs: envelope('qos_specs', qosSpecs, { links }),
  /** A QoS specs' keys as they were set. */
  qosKeys: envelope('qos_specs', strMap),
  qosAssociations: envelope('qos_associations', listOf(object({ association_type: { type: 'string', enum: ['volume_type'] }, id: str, name: str }, ['association_type', 'id', 'name']))),
  typeEncryption: envelope('encryption', typeEncryption),
  typeEncryptionShown: typeEncryptionDetail,
  /** An update's answer: the fields it was given. */
  typeEncryptionChange: envelope('encryption', object(encryptionFields)),
  /** One field of a type's encryption spec. */
  typeEncryptionField: { type: 'object', additionalProperties: { type: ['string', 'integer', 'boolean', 'null'] } },
  typeAccess: envelope('volume_type_access', listOf(object({ volume_type_id: str, project_id: str }, ['volume_type_id', 'project_id']))),
  /** The answer to os-volume_upload_image: the volume and the image it is being copied into. */
  uploadedImage: envelope(
    'os-volume_upload_image',
    object({ id: str, updated_at: str, status: str, display_description: nstr, size: int, volume_type: volumeType, image_id: str, container_format: str, disk_format: str, image_name: str }, ['id', 'image_id']),
  ),
  /** 3.12+: how many volumes and their total size (GiB); from 3.36 each metadata key with the values it has. */
  volumeSummary: envelope(
    'volume-summary',
    object({ total_size: int, total_count: int, metadata: { type: 'object', additionalProperties: listOf(str), 'x-microversions': { min: '3.36', max: MAX_VOLUME_VERSION } } }, ['total_size', 'total_count']),
  ),
  attachments: envelope('attachments', listOf(attachment)),
  attachment: envelope('attachment', attachment),
  transfers: (detail: boolean) => envelope('transfers', listOf(detail ? transferDetail : object(transferSummary, ['id', 'volume_id', 'links']))),
  transfer: envelope('transfer', transferDetail),
  /** Create's answer: the transfer with its auth key, shown this once. */
  createdTransfer: envelope('transfer', object({ ...(transferDetail.properties as Record<string, unknown>), auth_key: str }, ['id', 'volume_id', 'links', 'auth_key'])),
  acceptedTransfer: envelope('transfer', object(transferSummary, ['id', 'volume_id', 'links'])),
  quotaSet: envelope('quota_set', { type: 'object', properties: { id: str }, additionalProperties: quota }),
  quotaClassSet: envelope('quota_class_set', { type: 'object', properties: { id: str }, additionalProperties: int }),
  limits: envelope('limits', object({ rate: { type: 'array', maxItems: 0 }, absolute: { type: 'object', additionalProperties: int } })),
  zones: envelope('availabilityZoneInfo', listOf(object({ zoneName: str, zoneState: object({ available: bool }) }))),
  extensions: envelope('extensions', { type: 'array' }),
  services: envelope('services', listOf(object({ binary: str, host: str, zone: str, status: str, state: str, updated_at: str, disabled_reason: nstr, frozen: bool }))),
  /** os-services enable / disable / disable-log-reason. */
  serviceChange: object({ disabled: bool, status: str, host: str, service: str, binary: str, disabled_reason: nstr }, ['disabled', 'status', 'host', 'service', 'binary']),
  pools: envelope('pools', listOf(object({ name: str, capabilities: { type: 'object' } }, ['name']))),
  capabilities: object(
    { namespace: str, vendor_name: str, volume_backend_name: str, pool_name: nstr, driver_version: str, storage_protocol: str, display_name: nstr, description: nstr, visibility: nstr, replication_targets: { type: 'array' }, properties: { type: 'object' } },
    ['namespace', 'volume_backend_name', 'vendor_name', 'properties'],
  ),
  messages: envelope('messages', listOf(message)),
  message: envelope('message', message),
  hosts: envelope('hosts', listOf(object({ service: str, host_name: str, zone: str, 'service-state': str, 'service-status': str, 'last-update': nstr }))),
  host: envelope('host', listOf(object({ resource: object({ host: str, project: str, volume_count: str, total_volume_gb: str, snapshot_count: str, total_snapshot_gb: str }) }, ['resource']))),
}

export const query = (properties: Record<string, Schema>): Schema => ({ type: 'object', properties, additionalProperties: true })
const count = { type: 'string', pattern: '^[0-9]+$' }
export const flag = { type: 'string', description: 'true/false, 1/0, yes/no, on/off' }
const withCount = { ...flag, description: `${flag.description}: answer count (${WITH_COUNT_SINCE}+)`, 'x-microversions': { min: WITH_COUNT_SINCE, max: MAX_VOLUME_VERSION } }
export const paging = { limit: count, marker: str, offset: count, sort: { type: 'string', description: 'key[:asc|desc],…' }, sort_key: str, sort_dir: { type: 'string', enum: ['asc', 'desc'] } }

export const QUERY = {
  volumes: query({
    all_tenants: flag,
    project_id: str,
    name: str,
    display_name: str,
    status: str,
    bootable: flag,
    availability_zone: str,
    metadata: { type: 'string', description: 'a JSON object (or Python dict literal) of metadata to match' },
    with_count: withCount,
    ...paging,
  }),
  snapshots: query({ all_tenants: flag, name: str, status: str, volume_id: str, with_count: withCount, ...paging }),
  backups: query({ all_tenants: flag, name: str, status: str, volume_id: str, with_count: withCount, ...paging }),
  attachments: query({ all_tenants: flag, volume_id: str, instance_id: str }),
  transfers: query({ all_tenants: flag }),
  deleteVolume: query({ cascade: flag }),
  volumeSummary: query({ all_tenants: flag }),
  quota: query({ usage: flag }),
  deleteQos: query({ force: flag }),
  qosType: query({ vol_type_id: str }),
}

export const action = (name: string, value: Schema): Schema => ({ type: 'object', properties: { [name]: value }, required: [name], additionalProperties: false })
export const boolish = { anyOf: [bool, str] }

/** POST /volumes/{id}/action: one key, the action. */
export const VOLUME_ACTIONS: Schema = {
  anyOf: [
    action('os-extend', object({ new_size: { anyOf: [int, { type: 'string', pattern: '^[0-9]+$' }] } }, ['new_size'])),
    action('os-set_bootable', object({ bootable: boolish }, ['bootable'])),
    action('os-reset_status', object({ status: str }, ['status'])),
    action('os-update_readonly_flag', object({ readonly: boolish }, ['readonly'])),
    action('os-retype', object({ new_type: str, migration_policy: str }, ['new_type'])),
    action('os-set_image_metadata', object({ metadata: strMap }, ['metadata'])),
    action('os-unset_image_metadata', object({ key: str }, ['key'])),
    action('os-show_image_metadata', {}),
    action('os-volume_upload_image', object({ image_name: str, force: boolish, disk_format: str, container_format: str, visibility: { type: 'string', enum: ['private', 'shared'] } }, ['image_name'])),
    action('os-reserve', {}),
    action('os-unreserve', {}),
    action('os-force_delete', {}),
    action('os-attach', object({ instance_uuid: str, host_name: str, mountpoint: str, mode: { type: 'string', enum: ['rw', 'ro'] } }, ['mountpoint'])),
    action('os-detach', object({ attachment_id: str })),
    action('os-force_detach', object({ attachment_id: str, connector: { type: ['object', 'null'] } })),
  ],
}

/** POST /snapshots/{id}/action: one key, the action (Cinder's os-admin-actions, and os-update_snapshot_status). */
export const SNAPSHOT_ACTIONS: Schema = {
  anyOf: [action('os-reset_status', object({ status: str }, ['status'])), action('os-force_delete', {}), action('os-update_snapshot_status', object({ status: str, progress: str }, ['status']))],
}

/** POST /backups/{id}/action: one key, the action (Cinder's backup admin actions). */
export const BACKUP_ACTIONS: Schema = {
  anyOf: [action('os-reset_status', object({ status: str }, ['status'])), action('os-force_delete', {})],
}
