/** Tables of the block storage service (Cinder v3 model). Volume data is simulated: sizes are accounted, bytes are not stored. */

export interface VolumeTable {
  id: string
  project_id: string
  user_id: string
  name: string | null
  description: string | null
  /** creating | available | reserved | attaching | in-use | detaching | deleting | extending | error | error_deleting | error_extending */
  status: string
  /** GiB */
  size: number
  volume_type_id: string
  availability_zone: string
  bootable: number
  snapshot_id: string | null
  source_volid: string | null
  image_id: string | null
  /** Glance properties copied from the source image (JSON), or null. */
  image_metadata: string | null
  /** JSON object string → string */
  metadata: string
  created_at: number
  updated_at: number
}

export interface VolumeAttachmentTable {
  id: string
  volume_id: string
  server_id: string
  /** reserved | attached | detaching */
  attach_status: string
  device: string | null
  host_name: string | null
  delete_on_termination: number
  attached_at: number | null
  created_at: number
}

export interface VolumeSnapshotTable {
  id: string
  project_id: string
  user_id: string
  volume_id: string
  name: string | null
  description: string | null
  /** creating | available | deleting | error */
  status: string
  size: number
  metadata: string
  created_at: number
  updated_at: number
}

export interface VolumeTypeTable {
  id: string
  name: string
  description: string | null
  is_public: number
  extra_specs: string
  created_at: number
}

export interface VolumeQuotaTable {
  project_id: string
  /** volumes | gigabytes | snapshots */
  resource: string
  hard_limit: number
}

export interface VolumeTables {
  volumes: VolumeTable
  volume_attachments: VolumeAttachmentTable
  volume_snapshots: VolumeSnapshotTable
  volume_types: VolumeTypeTable
  volume_quotas: VolumeQuotaTable
}
