/** The image record as the service sees it, its row mapping, and the value sets Glance accepts. */
import type { ImageTable } from '../storage/schema.js'

export const DISK_FORMATS = ['ami', 'ari', 'aki', 'vhd', 'vhdx', 'vmdk', 'raw', 'qcow2', 'vdi', 'iso', 'ploop'] as const
export const CONTAINER_FORMATS = ['ami', 'ari', 'aki', 'bare', 'ovf', 'ova', 'docker', 'compressed'] as const
export const VISIBILITIES = ['public', 'private', 'shared', 'community'] as const
export const IMAGE_STATUSES = ['queued', 'saving', 'active', 'killed', 'deleted', 'pending_delete', 'deactivated', 'uploading', 'importing'] as const
export const MEMBER_STATUSES = ['pending', 'accepted', 'rejected'] as const

export type Visibility = (typeof VISIBILITIES)[number]

export interface ImageRecord {
  id: string
  name: string | null
  owner: string | null
  status: string
  visibility: Visibility
  protected: boolean
  osHidden: boolean
  diskFormat: string | null
  containerFormat: string | null
  size: number | null
  virtualSize: number | null
  checksum: string | null
  osHashAlgo: string | null
  osHashValue: string | null
  minDisk: number
  minRam: number
  properties: Record<string, string>
  tags: string[]
  blobKey: string | null
  createdAt: number
  updatedAt: number
}

export interface ImageMember {
  imageId: string
  memberId: string
  status: string
  createdAt: number
  updatedAt: number
}

/** Attributes a client may never set (Glance answers 403 "Attribute 'x' is read-only."). */
export const READ_ONLY_ATTRIBUTES = new Set([
  'status', 'checksum', 'os_hash_algo', 'os_hash_value', 'size', 'virtual_size', 'created_at', 'updated_at', 'file', 'self',
  'schema', 'direct_url', 'locations', 'owner', 'stores',
])

/** Reserved names that are not free-form properties. */
export const CORE_ATTRIBUTES = new Set(['id', 'name', 'visibility', 'protected', 'os_hidden', 'disk_format', 'container_format', 'min_disk', 'min_ram', 'tags', ...READ_ONLY_ATTRIBUTES])

export function rowToImage(row: ImageTable, tags: string[]): ImageRecord {
  return {
    id: row.id,
    name: row.name,
    owner: row.owner,
    status: row.status,
    visibility: row.visibility as Visibility,
    protected: row.protected === 1,
    osHidden: row.os_hidden === 1,
    diskFormat: row.disk_format,
    containerFormat: row.container_format,
    size: row.size === null ? null : Number(row.size),
    virtualSize: row.virtual_size === null ? null : Number(row.virtual_size),
    checksum: row.checksum,
    osHashAlgo: row.os_hash_algo,
    osHashValue: row.os_hash_value,
    minDisk: row.min_disk,
    minRam: row.min_ram,
    properties: JSON.parse(row.properties) as Record<string, string>,
    tags: [...tags].sort(),
    blobKey: row.blob_key,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  }
}

/** Glance prints times without fractions: 2024-05-01T10:00:00Z. */
export function glanceTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
}
