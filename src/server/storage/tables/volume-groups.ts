/** Tables of Cinder's generic volume groups: group types, groups and group snapshots (volume/groups.ts). */

/** A group type: what kind of group (its group specs), as volume types are for volumes. */
export interface VolumeGroupTypeTable {
  id: string
  name: string
  description: string | null
  is_public: number
  /** JSON object string → string */
  group_specs: string
  created_at: number
}

export interface VolumeGroupTable {
  id: string
  project_id: string
  user_id: string
  name: string | null
  description: string | null
  /** creating | available | updating | deleting | error | error_deleting (volume/groups.ts) */
  status: string
  group_type_id: string
  /** JSON array of the volume type ids its volumes may have, in the order given. */
  volume_type_ids: string
  availability_zone: string
  /** The group snapshot it was made from (create-from-src), or null. */
  group_snapshot_id: string | null
  /** The group it was cloned from (create-from-src), or null. */
  source_group_id: string | null
  created_at: number
  updated_at: number
}

/** A snapshot of every volume of a group, taken together; the member snapshots carry its id. */
export interface VolumeGroupSnapshotTable {
  id: string
  project_id: string
  user_id: string
  group_id: string
  group_type_id: string
  name: string | null
  description: string | null
  /** creating | available | deleting | error | error_deleting */
  status: string
  created_at: number
  updated_at: number
}

export interface VolumeGroupTables {
  volume_group_types: VolumeGroupTypeTable
  volume_groups: VolumeGroupTable
  volume_group_snapshots: VolumeGroupSnapshotTable
}
