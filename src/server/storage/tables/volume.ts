/** Tables of the block storage service (Cinder v3 model) and of the bytes behind it (backends, exports, keys). */

export interface VolumeTable {
  id: string
  /** Raised by the database on every UPDATE of the row (migration 0128, for kept views); 0 when inserted. */
  rev: number
  project_id: string
  user_id: string
  name: string | null
  description: string | null
  /** creating | available | reserved | attaching | in-use | detaching | deleting | extending | awaiting-transfer | error | error_deleting | error_extending */
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
  /** The backend holding the bytes: file | lvm (from the volume type's volume_backend_name). */
  backend: string
  /** Where: 'controller' (the control plane's data dir) or a storage host's id; null until placed. */
  location: string | null
  /** Why the backend failed, for admins and the log (Cinder keeps it in its messages API). */
  status_reason: string | null
  /** 1 when the volume may be attached to several servers at once (its type's `multiattach` extra spec). */
  multiattach: number
  /** The group it belongs to (volume_groups), or null. */
  group_id: string | null
  /** The key of an encrypted volume's LUKS container (volume_encryption_keys), or null: not encrypted. */
  encryption_key_id: string | null
}

export interface VolumeAttachmentTable {
  id: string
  volume_id: string
  server_id: string
  /** reserved | attaching | attached | detaching */
  attach_status: string
  /** rw | ro (Cinder's attach_mode; the attachments API's `mode`) */
  attach_mode: string
  device: string | null
  host_name: string | null
  delete_on_termination: number
  attached_at: number | null
  created_at: number
  /** The hypervisor host the volume is connected on. */
  host_id: string | null
  /** JSON: the connection info the host was given (driver_volume_type nbd, without the key). */
  connection_info: string | null
  /** compute (attached and connected through compute's API) | cinder (recorded by Cinder's os-attach action or attachments API) */
  attached_by: string
}

/** A volume offered to another project (Cinder's transfers): the project that accepts with the key takes it. */
export interface VolumeTransferTable {
  id: string
  volume_id: string
  /** The volume's project when the transfer was made. */
  project_id: string
  name: string | null
  salt: string
  /** SHA-256 hex of salt + auth key; the key itself is never stored. */
  key_hash: string
  /** 1: the volume's snapshots stay with the giving project (3.55+). */
  no_snapshots: number
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
  /** As reported by os-update_snapshot_status ('80%'); null: derived from the status. */
  progress: string | null
  /** The group snapshot it was taken as part of (volume_group_snapshots), or null. */
  group_snapshot_id: string | null
}

export interface VolumeTypeTable {
  id: string
  name: string
  description: string | null
  is_public: number
  extra_specs: string
  created_at: number
  /** The QoS specs associated with the type (volume_qos_specs), or null. */
  qos_specs_id: string | null
}

/** Cinder's QoS specs: limits associated with volume types; `consumer` says who applies them. */
export interface VolumeQosSpecsTable {
  id: string
  name: string
  /** front-end (the hypervisor throttles the attached disk) | back-end | both */
  consumer: string
  /** JSON object of string values. */
  specs: string
  created_at: number
}

/** A volume type's encryption (Cinder's volume type encryption; docs/block-storage.md, "Encrypted volumes"). */
export interface VolumeTypeEncryptionTable {
  volume_type_id: string
  encryption_id: string
  /** As given: `luks`, or Cinder's class names for it; pcc applies only LUKS (volume/encryption.ts). */
  provider: string
  cipher: string | null
  /** Bits, or null (the cipher's default). */
  key_size: number | null
  /** front-end (the hypervisor decrypts) | back-end */
  control_location: string
  created_at: number
  updated_at: number | null
}

/** An encrypted volume's LUKS passphrase, sealed with the master key; shared by volumes cloned from one another. */
export interface VolumeEncryptionKeyTable {
  id: string
  sealed_key: string
  cipher: string
  key_size: number
  created_at: number
}

/** A project that may use a private volume type (os-volume-type-access). */
export interface VolumeTypeAccessTable {
  volume_type_id: string
  project_id: string
  created_at: number
}

/** A project's default volume type (Cinder's default-types API, 3.62): used for its volumes created without a type. */
export interface VolumeDefaultTypeTable {
  project_id: string
  volume_type_id: string
  created_at: number
  updated_at: number
}

export interface VolumeQuotaTable {
  project_id: string
  /** volumes | gigabytes | snapshots | backups | … | volumes_<type name> | gigabytes_<type name> | snapshots_<type name> */
  resource: string
  hard_limit: number
}

/** A quota class's limits (os-quota-class-sets); the class `default` gives every project its defaults. */
export interface VolumeQuotaClassTable {
  class_name: string
  /** As volume_quotas.resource. */
  resource: string
  hard_limit: number
}

/** An admin's settings of a block storage service (os-services); no row: enabled, not frozen. */
export interface VolumeServiceStateTable {
  /** As os-services names it: `pcc` (the scheduler) or `<place>@<backend>`. */
  host: string
  /** cinder-scheduler | cinder-volume */
  binary: string
  disabled: number
  disabled_reason: string | null
  /** A frozen volume service's backend gets no new volumes and its volumes are not deleted, extended or retyped. */
  frozen: number
  updated_at: number
}

/** A user message (/messages): why an operation on a volume or snapshot failed. */
export interface VolumeMessageTable {
  id: string
  project_id: string
  request_id: string
  /** VOLUME | VOLUME_SNAPSHOT */
  resource_type: string
  resource_uuid: string | null
  /** VOLUME_<resource>_<action id>_<detail id> (volume/messages.ts) */
  event_id: string
  /** ERROR */
  message_level: string
  user_message: string
  created_at: number
  /** Shown until then (Cinder's guaranteed_until). */
  expires_at: number
}

/** The NBD export of an attached volume: one qemu-storage-daemon per volume at its storage place. */
export interface VolumeExportTable {
  /** The exported volume's id, or the snapshot's for an export of a snapshot. */
  volume_id: string
  /** For an export of a snapshot: the volume it was taken of (read-only export); null for a volume. */
  snapshot_of: string | null
  location: string
  /** The address clients connect to (the place's export address); null until the place reported it. */
  address: string | null
  port: number
  /** JSON array of generation numbers served, ascending (more than one only during an online extend). */
  generations: string
  created_at: number
}

/** A TLS-PSK key that opens a volume's export: one per attachment, or per copy to another place. */
export interface VolumeExportKeyTable {
  /** PSK identity: att-<attachment id> or copy-<volume id>. */
  identity: string
  volume_id: string
  attachment_id: string | null
  /** The 256-bit key, sealed with the master key. */
  sealed_key: string
  created_at: number
}

/** What a storage host's agent last reported: where its exports listen and its backends' capacity. */
export interface StorageHostTable {
  host_id: string
  export_address: string
  /** JSON: { <backend>: { total_gb, free_gb } } for each backend usable on the host. */
  backends: string
  reported_at: number
}

/** An image being made from a volume (os-volume_upload_image) until its bytes are stored. */
export interface VolumeImageUploadTable {
  image_id: string
  volume_id: string
  disk_format: string
  created_at: number
}

/** A volume backup (volume/backups.ts): its bytes are chunks in the blob store. */
export interface VolumeBackupTable {
  id: string
  project_id: string
  user_id: string
  volume_id: string
  /** The snapshot whose bytes were backed up, or null: the volume's. */
  snapshot_id: string | null
  /** The backup an incremental one builds on (the volume's latest at the time), or null. */
  parent_id: string | null
  name: string | null
  description: string | null
  container: string | null
  availability_zone: string | null
  /** creating | available | restoring | deleting | error | error_deleting */
  status: string
  fail_reason: string | null
  /** GiB: the volume's size when backed up. */
  size: number
  /** Chunks this backup stored itself (an incremental one: the changed ones). */
  object_count: number
  is_incremental: number
  /** JSON object string → string (3.43). */
  metadata: string
  /** JSON array: the digest of each 4 MiB chunk in order, '' for a chunk of zeros. */
  chunks: string
  /** JSON: what a restore gives the volume back (metadata, bootable, image id and metadata). */
  volume_meta: string
  /** When the backed-up bytes were read (the snapshot's creation for a backup of a snapshot). */
  data_timestamp: number | null
  /** The backup's own copy of an encrypted volume's key (volume_encryption_keys), or null: not encrypted. */
  encryption_key_id: string | null
  created_at: number
  updated_at: number
}

/** Which backups use which stored chunk (`backups/chunks/<digest>` in the blob store). */
export interface VolumeBackupChunkTable {
  backup_id: string
  digest: string
}

export interface VolumeTables {
  volumes: VolumeTable
  volume_attachments: VolumeAttachmentTable
  volume_transfers: VolumeTransferTable
  volume_snapshots: VolumeSnapshotTable
  volume_types: VolumeTypeTable
  volume_type_access: VolumeTypeAccessTable
  volume_default_types: VolumeDefaultTypeTable
  volume_qos_specs: VolumeQosSpecsTable
  volume_type_encryption: VolumeTypeEncryptionTable
  volume_encryption_keys: VolumeEncryptionKeyTable
  volume_quotas: VolumeQuotaTable
  volume_quota_classes: VolumeQuotaClassTable
  volume_exports: VolumeExportTable
  volume_export_keys: VolumeExportKeyTable
  storage_hosts: StorageHostTable
  volume_service_states: VolumeServiceStateTable
  volume_messages: VolumeMessageTable
  volume_image_uploads: VolumeImageUploadTable
  volume_backups: VolumeBackupTable
  volume_backup_chunks: VolumeBackupChunkTable
}
