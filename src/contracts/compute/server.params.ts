/**
 * Query parameters of GET /servers and /servers/detail (docs/compute.md, "Listing"): for each, the column it reads,
 * how it matches, and from which microversion a non-admin may use it (absent: admins only). Admins may use
 * every parameter here; anything not here is ignored below 2.75 (`strictQuery`) and a 400 from it.
 */
import type { ComputeVersion } from './versions.js'

export type ListMatch =
  /** Column equals one of the values. */
  | 'exact'
  /** Unanchored regular expression on the column's text (Nova's REGEXP). */
  | 'regex'
  /** Strict boolean word. */
  | 'bool'
  /** Handled by name in the query builder. */
  | 'special'

export interface ListParam {
  match: ListMatch
  /** The servers column (exact/regex/bool). */
  column?: string
  /** A timestamp column matched as Nova's text form `YYYY-MM-DD HH:MM:SS`. */
  time?: boolean
  /** First version a non-admin may use it; absent = admin only. */
  since?: ComputeVersion
}

export const SERVER_LIST_PARAMS: Record<string, ListParam> = {
  reservation_id: { match: 'regex', column: 'reservation_id', since: '2.1' },
  name: { match: 'regex', column: 'name', since: '2.1' },
  display_name: { match: 'regex', column: 'name' },
  status: { match: 'special', since: '2.1' },
  image: { match: 'exact', column: 'image_id', since: '2.1' },
  image_ref: { match: 'exact', column: 'image_id' },
  flavor: { match: 'special', since: '2.1' },
  ip: { match: 'special', since: '2.1' },
  ip6: { match: 'special', since: '2.5' },
  'changes-since': { match: 'special', since: '2.1' },
  all_tenants: { match: 'special', since: '2.1' },
  tags: { match: 'special', since: '2.26' },
  'tags-any': { match: 'special', since: '2.26' },
  'not-tags': { match: 'special', since: '2.26' },
  'not-tags-any': { match: 'special', since: '2.26' },
  'changes-before': { match: 'special', since: '2.66' },
  locked: { match: 'bool', column: 'locked', since: '2.73' },
  availability_zone: { match: 'regex', column: 'availability_zone', since: '2.83' },
  config_drive: { match: 'bool', column: 'config_drive', since: '2.83' },
  key_name: { match: 'regex', column: 'key_name', since: '2.83' },
  created_at: { match: 'regex', column: 'created_at', time: true, since: '2.83' },
  launched_at: { match: 'regex', column: 'launched_at', time: true, since: '2.83' },
  terminated_at: { match: 'regex', column: 'terminated_at', time: true, since: '2.83' },
  power_state: { match: 'regex', column: 'power_state', since: '2.83' },
  task_state: { match: 'exact', column: 'task_state', since: '2.83' },
  vm_state: { match: 'exact', column: 'vm_state', since: '2.83' },
  progress: { match: 'regex', column: 'progress', since: '2.83' },
  user_id: { match: 'exact', column: 'user_id', since: '2.83' },
  hostname: { match: 'regex', column: 'hostname', since: '2.90' },
  // Admins only.
  project_id: { match: 'special' },
  tenant_id: { match: 'special' },
  host: { match: 'exact', column: 'host' },
  node: { match: 'regex', column: 'node' },
  deleted: { match: 'special' },
  soft_deleted: { match: 'special' },
  description: { match: 'regex', column: 'description' },
  display_description: { match: 'regex', column: 'description' },
  launch_index: { match: 'regex', column: 'launch_index' },
  kernel_id: { match: 'regex', column: 'kernel_id' },
  ramdisk_id: { match: 'regex', column: 'ramdisk_id' },
  locked_by: { match: 'regex', column: 'locked_by' },
  uuid: { match: 'exact', column: 'id' },
  root_device_name: { match: 'regex', column: 'root_device_name' },
  access_ip_v4: { match: 'regex', column: 'access_ip_v4' },
  access_ip_v6: { match: 'regex', column: 'access_ip_v6' },
  auto_disk_config: { match: 'regex', column: 'disk_config' },
}

/** Paging and sorting, for everyone. */
export const SERVER_PAGING_PARAMS = ['limit', 'marker', 'sort_key', 'sort_dir'] as const

/** Filters an admin may not use at all (400 "Invalid filter field"); names starting with `_` too. */
export const FORBIDDEN_FILTERS = ['block_device_mapping', 'services', 'metadata', 'system_metadata', 'info_cache', 'security_groups', 'pci_devices']

export interface SortKey {
  column: string
  /** What NULL sorts as, so both dialects order alike. */
  nullAs?: string | number
  adminOnly?: boolean
  since?: ComputeVersion
}

/** Valid sort keys → column. */
export const SERVER_SORT_KEYS: Record<string, SortKey> = {
  access_ip_v4: { column: 'access_ip_v4' },
  access_ip_v6: { column: 'access_ip_v6' },
  auto_disk_config: { column: 'disk_config' },
  availability_zone: { column: 'availability_zone', nullAs: '' },
  config_drive: { column: 'config_drive' },
  created_at: { column: 'created_at' },
  display_description: { column: 'description', nullAs: '' },
  display_name: { column: 'name' },
  host: { column: 'host', nullAs: '', adminOnly: true },
  hostname: { column: 'hostname', nullAs: '' },
  image_ref: { column: 'image_id', nullAs: '' },
  instance_type_id: { column: 'flavor' },
  kernel_id: { column: 'kernel_id', nullAs: '' },
  key_name: { column: 'key_name', nullAs: '' },
  launch_index: { column: 'launch_index' },
  launched_at: { column: 'launched_at', nullAs: 0 },
  locked: { column: 'locked', since: '2.73' },
  locked_by: { column: 'locked_by', nullAs: '' },
  node: { column: 'node', nullAs: '', adminOnly: true },
  power_state: { column: 'power_state' },
  progress: { column: 'progress' },
  project_id: { column: 'project_id' },
  ramdisk_id: { column: 'ramdisk_id', nullAs: '' },
  root_device_name: { column: 'root_device_name', nullAs: '' },
  task_state: { column: 'task_state', nullAs: '' },
  terminated_at: { column: 'terminated_at', nullAs: 0 },
  updated_at: { column: 'updated_at' },
  user_id: { column: 'user_id' },
  uuid: { column: 'id' },
  vm_state: { column: 'vm_state' },
}

/** Keys Nova ignores below 2.75 and rejects from it. */
export const LEGACY_SORT_KEYS = [
  'architecture', 'cell_name', 'cleaned', 'default_ephemeral_device', 'default_swap_device', 'deleted', 'deleted_at', 'disable_terminate', 'ephemeral_gb',
  'ephemeral_key_uuid', 'id', 'key_data', 'launched_on', 'locked', 'memory_mb', 'os_type', 'reservation_id', 'root_gb', 'shutdown_terminate', 'user_data', 'vcpus', 'vm_mode',
]

export const TRUE_WORDS = ['1', 't', 'true', 'on', 'y', 'yes']
export const FALSE_WORDS = ['0', 'f', 'false', 'off', 'n', 'no']
