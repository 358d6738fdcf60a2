/**
 * Tables of the compute service: servers and what they depend on (flavors, key pairs, server groups, quotas),
 * the instance-action log, and the hypervisor hosts they run on with their claimed capacity.
 */

export interface ServerTable {
  id: string
  /** Raised by the database on every UPDATE of the row (migration 0080); 0 when inserted. */
  rev: number
  /** Monotonic per store; gives `instance_name` (`instance-%08x`). */
  display_id: number
  name: string
  description: string | null
  project_id: string
  user_id: string
  /** Host record id and name once scheduled; null before and after shelve-offload. */
  host_id: string | null
  host: string | null
  node: string | null
  vm_state: string
  task_state: string | null
  power_state: number
  /** JSON FlavorSnapshot; old/new flavor are set only during resize and migrate. */
  flavor: string
  old_flavor: string | null
  new_flavor: string | null
  image_id: string | null
  key_name: string | null
  key_data: string | null
  /** JSON object string → string. */
  metadata: string
  access_ip_v4: string
  access_ip_v6: string
  availability_zone: string | null
  pinned_availability_zone: string | null
  config_drive: number
  disk_config: 'AUTO' | 'MANUAL'
  user_data: string | null
  hostname: string | null
  locked: number
  locked_by: 'owner' | 'admin' | null
  locked_reason: string | null
  launch_index: number
  reservation_id: string
  root_device_name: string | null
  kernel_id: string | null
  ramdisk_id: string | null
  progress: number
  /** JSON array of uuids or null. */
  trusted_image_certificates: string | null
  /** JSON object: the hints sent at create time, or null. */
  scheduler_hints: string | null
  /** JSON array of security group names requested at create (the network service owns the truth once it exists). */
  security_groups: string
  /** JSON: the networks request (`auto`, `none` or a list), kept for rescheduling and rebuild. */
  requested_networks: string
  /** JSON: block_device_mapping_v2 as requested. */
  block_devices: string
  created_at: number
  updated_at: number
  launched_at: number | null
  terminated_at: number | null
  deleted_at: number | null
  /** 1 once deleted: rows stay for `changes-since` and `deleted=true` listings. */
  deleted: number
}

export interface ServerTagTable {
  server_id: string
  tag: string
}

export interface InstanceFaultTable {
  id: string
  server_id: string
  code: number
  message: string
  details: string
  created_at: number
}

export interface InstanceActionTable {
  id: string
  server_id: string
  /** create, delete, reboot, stop, start, resize, confirmResize, … (Nova's action names). */
  action: string
  request_id: string
  user_id: string
  project_id: string
  message: string | null
  start_time: number
  finish_time: number | null
  updated_at: number
}

export interface InstanceActionEventTable {
  id: string
  action_id: string
  /** e.g. compute__do_build_and_run_instance, conductor_schedule_and_build_instances. */
  event: string
  start_time: number
  finish_time: number | null
  /** Success | Error | null while running. */
  result: string | null
  traceback: string | null
  host: string | null
  details: string | null
}

export interface FlavorTable {
  /** Nova's flavorid: a string chosen by the creator (often a number or a uuid). */
  id: string
  /** Raised by the database on every UPDATE of the row (migration 0129, for kept lists); 0 when inserted. */
  rev: number
  name: string
  vcpus: number
  ram: number
  disk: number
  ephemeral: number
  swap: number
  rxtx_factor: number
  is_public: number
  disabled: number
  description: string | null
  /** JSON object string → string. */
  extra_specs: string
  created_at: number
  deleted: number
}

export interface FlavorAccessTable {
  flavor_id: string
  project_id: string
}

export interface KeypairTable {
  id: string
  user_id: string
  name: string
  type: 'ssh' | 'x509'
  public_key: string
  fingerprint: string
  created_at: number
}

export interface ServerGroupTable {
  id: string
  name: string
  project_id: string
  user_id: string
  /** affinity, anti-affinity, soft-affinity, soft-anti-affinity */
  policy: string
  /** JSON object, e.g. {"max_server_per_host": 2}. */
  rules: string
  created_at: number
}

export interface ServerGroupMemberTable {
  group_id: string
  server_id: string
}

export interface QuotaTable {
  project_id: string
  /** instances, cores, ram, metadata_items, key_pairs, server_groups, server_group_members … */
  resource: string
  hard_limit: number
}

/**
 * A hypervisor host (simulated or onboarded through an agent). Capacity and usage live on the row so the
 * scheduler claims in one conditional UPDATE: `... SET vcpus_used = vcpus_used + n WHERE vcpus_used + n <= vcpus * ratio`,
 * which can never over-commit, whichever process runs it.
 */
export interface HostTable {
  id: string
  hostname: string
  /** simulated | agent */
  kind: string
  /** Compute driver the host runs servers with. */
  driver: string
  availability_zone: string
  cell: string
  /** JSON array of the host's IP addresses. */
  ip_addresses: string
  /** JSON: facts the host reported (OS, CPU model, NICs, bonds, agent version). */
  facts: string
  vcpus: number
  memory_mb: number
  disk_gb: number
  cpu_allocation_ratio: number
  ram_allocation_ratio: number
  disk_allocation_ratio: number
  vcpus_used: number
  memory_mb_used: number
  disk_gb_used: number
  running_vms: number
  /** Nova service status: enabled | disabled (os-services). */
  service_status: 'enabled' | 'disabled'
  disabled_reason: string | null
  forced_down: number
  last_heartbeat_at: number | null
  created_at: number
  updated_at: number
}

export interface HostRoleTable {
  host_id: string
  /** e.g. hypervisor */
  role: string
  /** applying | ok | failed | removing */
  state: string
  updated_at: number
}

/** What a server holds on a host; removed (and the host's usage released) when the server leaves it. */
export interface AllocationTable {
  server_id: string
  host_id: string
  vcpus: number
  memory_mb: number
  disk_gb: number
  created_at: number
}

/** Raised by the database whenever another table a server's view shows changes for the server (migration 0080). */
export interface ServerViewRevisionTable {
  server_id: string
  rev: number
}

/** A host aggregate (migration 0101): Nova's integer id and uuid; its hosts and metadata are rows of their own. */
export interface AggregateTable {
  id: number
  uuid: string
  name: string
  created_at: number
  updated_at: number | null
}

/** A host (by hostname, as Nova names them) in an aggregate. */
export interface AggregateHostTable {
  aggregate_id: number
  host: string
}

/** One metadata key of an aggregate; `availability_zone` is the zone of its hosts. */
export interface AggregateMetadataTable {
  aggregate_id: number
  key: string
  value: string
}

/** One move of a server (migration 0101): os-migrations and /servers/{id}/migrations show these. */
export interface ServerMigrationTable {
  id: number
  uuid: string
  server_id: string
  project_id: string
  user_id: string
  /** The action's request id: a repeated run of the action's task finds its row. */
  request_id: string
  /** live-migration | migration | resize | evacuation */
  migration_type: string
  status: string
  source_host: string | null
  dest_host: string | null
  old_flavor_id: string | null
  new_flavor_id: string | null
  created_at: number
  updated_at: number | null
}

/** A quota class's limit (migration 0101); the `default` class's are the defaults of every project. */
export interface QuotaClassTable {
  class_name: string
  resource: string
  hard_limit: number
}

export interface ComputeTables {
  servers: ServerTable
  server_view_revisions: ServerViewRevisionTable
  server_tags: ServerTagTable
  instance_faults: InstanceFaultTable
  instance_actions: InstanceActionTable
  instance_action_events: InstanceActionEventTable
  flavors: FlavorTable
  flavor_access: FlavorAccessTable
  keypairs: KeypairTable
  server_groups: ServerGroupTable
  server_group_members: ServerGroupMemberTable
  quotas: QuotaTable
  hosts: HostTable
  host_roles: HostRoleTable
  allocations: AllocationTable
  aggregates: AggregateTable
  aggregate_hosts: AggregateHostTable
  aggregate_metadata: AggregateMetadataTable
  migrations: ServerMigrationTable
  quota_classes: QuotaClassTable
}
