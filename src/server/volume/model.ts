/** Volume, snapshot, attachment and type records as the service sees them, and their row mappings. */
import type { VolumeAttachmentTable, VolumeSnapshotTable, VolumeTable, VolumeTypeTable } from '../storage/schema.js'
import type { AccessMode } from '../../contracts/host/compute-driver.js'

export const DEFAULT_VOLUME_TYPE = '__DEFAULT__'
/** The default type when Ceph is configured: volumes in RBD. */
export const CEPH_VOLUME_TYPE = 'ceph'
export const AVAILABILITY_ZONES = ['nova'] as const

export interface VolumeAttachment {
  id: string
  volumeId: string
  serverId: string
  attachStatus: string
  attachMode: AccessMode
  device: string | null
  hostName: string | null
  deleteOnTermination: boolean
  attachedAt: number | null
  /** Cinder's connection_info as the hypervisor got it (without the key). */
  connectionInfo: Record<string, unknown> | null
}

export interface VolumeRecord {
  id: string
  projectId: string
  userId: string
  name: string | null
  description: string | null
  status: string
  size: number
  volumeTypeId: string
  volumeTypeName: string
  availabilityZone: string
  bootable: boolean
  snapshotId: string | null
  sourceVolid: string | null
  imageId: string | null
  imageMetadata: Record<string, string> | null
  metadata: Record<string, string>
  attachments: VolumeAttachment[]
  createdAt: number
  updatedAt: number
  /** Backend holding the bytes (file, lvm) and where: `controller` or a storage host's id (null until placed). */
  backend: string
  location: string | null
  /** The location as volume services name it: the storage host's hostname (its id if it is gone), or `controller`. */
  locationName: string | null
  multiattach: boolean
  /** Why the backend failed (admins only). */
  statusReason: string | null
  /** The generic volume group it belongs to (groups.ts), or null. */
  groupId: string | null
  /** Its bytes are a LUKS container (its type was encrypted when it was made); the key stays in the control plane. */
  encrypted: boolean
  /** Its key's id (a row of volume_encryption_keys) when encrypted: shown from 3.64, as Cinder's Barbican secret id. */
  encryptionKeyId: string | null
}

export interface SnapshotRecord {
  id: string
  projectId: string
  userId: string
  volumeId: string
  name: string | null
  description: string | null
  status: string
  size: number
  metadata: Record<string, string>
  createdAt: number
  updatedAt: number
  /** Reported by os-update_snapshot_status; null: derived from the status. */
  progress: string | null
  /** The group snapshot it is part of (group-snapshots.ts), or null. */
  groupSnapshotId: string | null
}

export interface VolumeTypeRecord {
  id: string
  name: string
  description: string | null
  isPublic: boolean
  extraSpecs: Record<string, string>
  /** The QoS specs associated with the type (qos-specs.ts), or null. */
  qosSpecsId: string | null
}

/** What a PUT of a volume or a backup may change (Cinder's name, description and metadata). */
export interface DescribedChanges {
  name?: string | null
  description?: string | null
  metadata?: Record<string, string>
}

/** The columns such an update sets: only the fields it names, and the update time. */
export function describedChanges(changes: DescribedChanges, now: number): { name?: string | null; description?: string | null; metadata?: string; updated_at: number } {
  return {
    ...(changes.name !== undefined ? { name: changes.name } : {}),
    ...(changes.description !== undefined ? { description: changes.description } : {}),
    ...(changes.metadata !== undefined ? { metadata: JSON.stringify(changes.metadata) } : {}),
    updated_at: now,
  }
}

export function rowToAttachment(row: VolumeAttachmentTable): VolumeAttachment {
  return {
    id: row.id,
    volumeId: row.volume_id,
    serverId: row.server_id,
    attachStatus: row.attach_status,
    attachMode: row.attach_mode === 'ro' ? 'ro' : 'rw',
    device: row.device,
    hostName: row.host_name,
    deleteOnTermination: row.delete_on_termination === 1,
    attachedAt: row.attached_at === null ? null : Number(row.attached_at),
    connectionInfo: row.connection_info ? (JSON.parse(row.connection_info) as Record<string, unknown>) : null,
  }
}

export function rowToVolume(row: VolumeTable, typeName: string, attachments: VolumeAttachment[], locationName: string | null = row.location): VolumeRecord {
  return {
    id: row.id,
    projectId: row.project_id,
    userId: row.user_id,
    name: row.name,
    description: row.description,
    status: row.status,
    size: row.size,
    volumeTypeId: row.volume_type_id,
    volumeTypeName: typeName,
    availabilityZone: row.availability_zone,
    bootable: row.bootable === 1,
    snapshotId: row.snapshot_id,
    sourceVolid: row.source_volid,
    imageId: row.image_id,
    imageMetadata: row.image_metadata ? (JSON.parse(row.image_metadata) as Record<string, string>) : null,
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    attachments,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    backend: row.backend,
    location: row.location,
    locationName,
    multiattach: row.multiattach === 1,
    statusReason: row.status_reason,
    groupId: row.group_id,
    encrypted: row.encryption_key_id !== null,
    encryptionKeyId: row.encryption_key_id,
  }
}

export function rowToSnapshot(row: VolumeSnapshotTable): SnapshotRecord {
  return {
    id: row.id,
    projectId: row.project_id,
    userId: row.user_id,
    volumeId: row.volume_id,
    name: row.name,
    description: row.description,
    status: row.status,
    size: row.size,
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    progress: row.progress,
    groupSnapshotId: row.group_snapshot_id,
  }
}

export function rowToType(row: VolumeTypeTable): VolumeTypeRecord {
  return { id: row.id, name: row.name, description: row.description, isPublic: row.is_public === 1, extraSpecs: JSON.parse(row.extra_specs) as Record<string, string>, qosSpecsId: row.qos_specs_id }
}

/** Cinder prints times with microseconds and no zone: 2024-05-01T10:00:00.000000. */
export function cinderTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000')
}
