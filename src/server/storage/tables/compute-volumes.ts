/** Compute's records of a server's block devices (Nova's block_device_mappings) and its system metadata. */

export interface BlockDeviceMappingTable {
  /** Nova's bdm uuid (`bdm_uuid` in os-volume_attachments from 2.89). */
  id: string
  server_id: string
  /** 0 = the boot device; null or negative = not bootable. */
  boot_index: number | null
  /** image | volume | snapshot | blank */
  source_type: string
  /** volume | local */
  destination_type: string
  /** The volume once it exists (source volume: from the start; image/snapshot/blank: created at build). */
  volume_id: string | null
  image_id: string | null
  snapshot_id: string | null
  /** GiB */
  volume_size: number | null
  volume_type: string | null
  device_name: string | null
  device_type: string | null
  disk_bus: string | null
  guest_format: string | null
  delete_on_termination: number
  tag: string | null
  /** The block storage attachment (`attachment_id` in os-volume_attachments from 2.89). */
  attachment_id: string | null
  created_at: number
}

export interface ServerSystemMetadataTable {
  server_id: string
  /** shelved_image_id, shelved_at, shelved_host … */
  key: string
  value: string
}

export interface ComputeVolumeTables {
  block_device_mappings: BlockDeviceMappingTable
  server_system_metadata: ServerSystemMetadataTable
}
