/**
 * Cinder v3 wire shapes. Fields that depend on the microversion or on being admin are listed in one table per
 * resource (`since` inclusive), applied by `gated`; nothing else compares versions.
 */
import { atLeast, type VolumeVersion } from './microversion.js'
import type { TransferRecord } from './transfers.js'
import type { BackupRecord } from './backups.js'
import { cinderTime, type SnapshotRecord, type VolumeAttachment, type VolumeRecord, type VolumeTypeRecord } from './model.js'

export interface Gate<T> {
  since: string
  adminOnly?: boolean
  /** The JSON Schema of what `read` gives: the field's description in /openapi.json (api/volume/answers.ts). */
  type: Record<string, unknown>
  read: (r: T) => unknown
  /** The key is left out when `read` gives null (Cinder adds `encryption_key_id` only to encrypted volumes and backups). */
  whenSet?: boolean
}

const NULL = { type: 'null' }
const STRING = { type: 'string' }

export interface ViewContext {
  version: VolumeVersion
  isAdmin: boolean
  /** `{base}/volume/v3` */
  baseUrl: string
}

export function gated<T>(table: Record<string, Gate<T>>, record: T, ctx: ViewContext): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, gate] of Object.entries(table)) {
    if (!atLeast(ctx.version, gate.since) || (gate.adminOnly && !ctx.isAdmin)) continue
    const value = gate.read(record)
    if (value !== null || !gate.whenSet) out[key] = value
  }
  return out
}

export const VOLUME_GATES: Record<string, Gate<VolumeRecord>> = {
  group_id: { since: '3.13', type: { type: ['string', 'null'] }, read: (v) => v.groupId },
  provider_id: { since: '3.21', adminOnly: true, type: NULL, read: () => null },
  service_uuid: { since: '3.48', adminOnly: true, type: NULL, read: () => null },
  shared_targets: { since: '3.48', type: { type: 'boolean' }, read: () => false },
  // pcc has no Active/Active clusters of volume services: the cluster is always none.
  cluster_name: { since: '3.61', adminOnly: true, type: NULL, read: () => null },
  volume_type_id: { since: '3.63', type: STRING, read: (v) => v.volumeTypeId },
  encryption_key_id: { since: '3.64', whenSet: true, type: STRING, read: (v) => v.encryptionKeyId },
}

/**
 * What Cinder's API extensions add to show and detail only: the answers to create and update (and Tempest's
 * schemas for them) have none of these keys.
 */
export const VOLUME_SHOW_GATES: Record<string, Gate<VolumeRecord>> = {
  'os-vol-tenant-attr:tenant_id': { since: '3.0', type: STRING, read: (v) => v.projectId },
  // Cinder's host@backend#pool: the storage place as `openstack volume service list` names it (`controller` or the
  // storage host's hostname) and the backend, so that tools can join the two on `host@backend`.
  'os-vol-host-attr:host': { since: '3.0', adminOnly: true, type: { type: ['string', 'null'] }, read: (v) => (v.location ? `${v.locationName ?? v.location}@${v.backend}#${v.backend}` : null) },
  'os-vol-mig-status-attr:migstat': { since: '3.0', adminOnly: true, type: NULL, read: () => null },
  'os-vol-mig-status-attr:name_id': { since: '3.0', adminOnly: true, type: NULL, read: () => null },
}

export const SNAPSHOT_GATES: Record<string, Gate<SnapshotRecord>> = {
  group_snapshot_id: { since: '3.14', type: { type: ['string', 'null'] }, read: (s) => s.groupSnapshotId },
  user_id: { since: '3.41', type: STRING, read: (s) => s.userId },
}

export function links(ctx: ViewContext, kind: string, id: string) {
  const bookmark = ctx.baseUrl.replace(/\/v3$/, '')
  return [
    { href: `${ctx.baseUrl}/${kind}/${id}`, rel: 'self' },
    { href: `${bookmark}/${kind}/${id}`, rel: 'bookmark' },
  ]
}

export function volumeSummary(v: VolumeRecord, ctx: ViewContext): Record<string, unknown> {
  return { id: v.id, name: v.name, links: links(ctx, 'volumes', v.id) }
}

/** A volume as create and update answer it (Cinder's view builder without the show-only extensions). */
export function volumeView(v: VolumeRecord, ctx: ViewContext): Record<string, unknown> {
  return {
    id: v.id,
    name: v.name,
    description: v.description,
    status: v.status,
    size: v.size,
    availability_zone: v.availabilityZone,
    created_at: cinderTime(v.createdAt),
    updated_at: cinderTime(v.updatedAt),
    volume_type: v.volumeTypeName,
    snapshot_id: v.snapshotId,
    source_volid: v.sourceVolid,
    // Cinder sends the flag as a string.
    bootable: v.bootable ? 'true' : 'false',
    encrypted: v.encrypted,
    multiattach: v.multiattach,
    replication_status: null,
    consistencygroup_id: null,
    migration_status: null,
    metadata: v.metadata,
    user_id: v.userId,
    attachments: v.attachments
      .filter((a) => a.attachStatus !== 'reserved')
      .map((a) => ({
        id: v.id,
        attachment_id: a.id,
        volume_id: v.id,
        server_id: a.serverId,
        host_name: a.hostName,
        device: a.device,
        attached_at: a.attachedAt === null ? null : cinderTime(a.attachedAt),
      })),
    links: links(ctx, 'volumes', v.id),
    ...gated(VOLUME_GATES, v, ctx),
  }
}

/** A volume as show and the detail list answer it. */
export function volumeDetail(v: VolumeRecord, ctx: ViewContext): Record<string, unknown> {
  return {
    ...volumeView(v, ctx),
    ...gated(VOLUME_SHOW_GATES, v, ctx),
    ...(v.imageMetadata ? { volume_image_metadata: v.imageMetadata } : {}),
  }
}

/** A snapshot in the list, and as create and update answer it. */
export function snapshotSummary(s: SnapshotRecord, ctx: ViewContext): Record<string, unknown> {
  return {
    id: s.id,
    name: s.name,
    description: s.description,
    status: s.status,
    size: s.size,
    volume_id: s.volumeId,
    metadata: s.metadata,
    created_at: cinderTime(s.createdAt),
    updated_at: cinderTime(s.updatedAt),
    ...gated(SNAPSHOT_GATES, s, ctx),
  }
}

/** A snapshot as show and the detail list answer it (with the extended-attributes extension's keys). */
export function snapshotDetail(s: SnapshotRecord, ctx: ViewContext): Record<string, unknown> {
  return {
    ...snapshotSummary(s, ctx),
    'os-extended-snapshot-attributes:progress': s.progress ?? (s.status === 'available' ? '100%' : '0%'),
    'os-extended-snapshot-attributes:project_id': s.projectId,
  }
}

/**
 * A volume type. `answer` is which of Cinder's answers: show and list carry admins' `qos_specs_id`, create does not,
 * and update has neither that nor the `os-volume-type-access:is_public` alias (Tempest's schemas refuse them there).
 */
export function typeView(t: VolumeTypeRecord, isAdmin: boolean, answer: 'show' | 'create' | 'update' = 'show'): Record<string, unknown> {
  return {
    id: t.id,
    name: t.name,
    description: t.description,
    is_public: t.isPublic,
    ...(answer !== 'update' ? { 'os-volume-type-access:is_public': t.isPublic } : {}),
    // Extra specs are an operator's business.
    ...(isAdmin ? { extra_specs: t.extraSpecs } : {}),
    ...(isAdmin && answer === 'show' ? { qos_specs_id: t.qosSpecsId } : {}),
  }
}

/** Cinder's attachment record (the /attachments API, 3.27+). */
export function attachmentView(a: VolumeAttachment, detail: boolean): Record<string, unknown> {
  return {
    id: a.id,
    volume_id: a.volumeId,
    instance: a.serverId,
    status: a.attachStatus,
    ...(detail
      ? {
          attach_mode: a.attachMode,
          attached_at: a.attachedAt === null ? null : cinderTime(a.attachedAt),
          detached_at: null,
          // As the hypervisor got it, without the key (which only the attachment's host may fetch).
          connection_info: a.connectionInfo,
        }
      : {}),
  }
}

/** A transfer's fields beyond the list's (show, create and the detail list); a transfer that exists was never accepted (accepting ends it). */
export const TRANSFER_DETAIL_GATES: Record<string, Gate<TransferRecord>> = {
  created_at: { since: '3.0', type: STRING, read: (t) => cinderTime(t.createdAt) },
  no_snapshots: { since: '3.55', type: { type: 'boolean' }, read: (t) => t.noSnapshots },
  source_project_id: { since: '3.57', type: STRING, read: (t) => t.projectId },
  destination_project_id: { since: '3.57', type: { type: ['string', 'null'] }, read: () => null },
  accepted: { since: '3.57', type: { type: 'boolean' }, read: () => false },
}

/** A volume transfer under `collection` (os-volume-transfer or volume-transfers): the list's summary, or `detail`. */
export function transferView(t: TransferRecord, ctx: ViewContext, detail: boolean, collection: string): Record<string, unknown> {
  return { id: t.id, name: t.name, volume_id: t.volumeId, links: links(ctx, collection, t.id), ...(detail ? gated(TRANSFER_DETAIL_GATES, t, ctx) : {}) }
}

/** A backup's fields that depend on the microversion or on being admin (Cinder's backup view builder). */
export const BACKUP_GATES: Record<string, Gate<BackupRecord>> = {
  'os-backup-project-attr:project_id': { since: '3.18', adminOnly: true, type: STRING, read: (b) => b.projectId },
  metadata: { since: '3.43', type: { type: 'object', additionalProperties: STRING }, read: (b) => b.metadata },
  user_id: { since: '3.56', type: STRING, read: (b) => b.userId },
  // The backup's own copy of its volume's key (docs/block-storage.md, "Backups"), not the volume's.
  encryption_key_id: { since: '3.64', whenSet: true, type: STRING, read: (b) => b.encryptionKeyId },
}

/** A backup in the list, and as create, update and import answer it. */
export function backupSummary(b: BackupRecord, ctx: ViewContext): Record<string, unknown> {
  return { id: b.id, name: b.name, links: links(ctx, 'backups', b.id) }
}

/** A backup as show and the detail list answer it. */
export function backupDetail(b: BackupRecord, ctx: ViewContext): Record<string, unknown> {
  return {
    id: b.id,
    name: b.name,
    description: b.description,
    status: b.status,
    size: b.size,
    object_count: b.objectCount,
    availability_zone: b.availabilityZone,
    container: b.container,
    created_at: cinderTime(b.createdAt),
    updated_at: cinderTime(b.updatedAt),
    fail_reason: b.failReason,
    volume_id: b.volumeId,
    snapshot_id: b.snapshotId,
    is_incremental: b.isIncremental,
    has_dependent_backups: b.hasDependentBackups,
    data_timestamp: b.dataTimestamp === null ? null : cinderTime(b.dataTimestamp),
    links: links(ctx, 'backups', b.id),
    ...gated(BACKUP_GATES, b, ctx),
  }
}
