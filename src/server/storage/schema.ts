/**
 * Row types of every table, as Kysely sees them. Conventions that hold for every table:
 * - ids are text (UUIDs in canonical form unless a table says otherwise);
 * - times are integers, milliseconds since the epoch, UTC (`*_at` columns);
 * - booleans are integers 0/1, so both dialects store and compare them alike;
 * - structured values (options, extra, payload) are JSON text, parsed by the repository that owns the table.
 */
import type { Generated } from 'kysely'

export interface MetaTable {
  key: string
  value: string
}

export interface MigrationTable {
  id: string
  name: string
  applied_at: number
}

export type TaskStatus = 'queued' | 'running' | 'done' | 'failed'

export interface TaskTable {
  id: string
  kind: string
  /** What the task concerns (a server id, a host id…), for listing and for one-task-per-subject rules. */
  subject_id: string | null
  payload: string
  status: TaskStatus
  /** Claims so far, including the running one. */
  attempts: number
  max_attempts: number
  run_after: number
  lease_owner: string | null
  lease_expires_at: number | null
  last_error: string | null
  /** Enqueueing twice with one key yields one task. */
  idempotency_key: string | null
  created_at: number
  updated_at: number
  finished_at: number | null
}

/** Keys of the identity token key ring, sealed with the master key. */
export interface TokenKeyTable {
  /** 16 hex characters: the key id that tokens carry. */
  id: string
  sealed_secret: string
  /** primary signs new tokens; secondary keys still open tokens; staged keys become primary at the next rotation. */
  state: 'staged' | 'primary' | 'secondary'
  created_at: number
}

export interface DomainTable {
  id: string
  name: string
  description: string
  enabled: number
  options: string
  extra: string
  created_at: number
}

export interface ProjectTable {
  id: string
  domain_id: string
  parent_id: string | null
  name: string
  description: string
  enabled: number
  options: string
  extra: string
  created_at: number
}

export interface ProjectTagTable {
  project_id: string
  tag: string
}

export interface UserTable {
  id: string
  domain_id: string
  name: string
  enabled: number
  default_project_id: string | null
  description: string
  email: string | null
  options: string
  extra: string
  password_hash: string | null
  password_created_at: number | null
  password_expires_at: number | null
  failed_auth_count: number
  failed_auth_at: number | null
  last_active_at: number | null
  created_at: number
}

export interface GroupTable {
  id: string
  domain_id: string
  name: string
  description: string
  created_at: number
}

export interface GroupMemberTable {
  group_id: string
  user_id: string
}

export interface RoleTable {
  id: string
  name: string
  /** '' for a global role (so the unique (name, domain_id) index works on both dialects). */
  domain_id: string
  description: string
  options: string
  created_at: number
}

export interface ImpliedRoleTable {
  prior_role_id: string
  implied_role_id: string
}

export type ActorType = 'user' | 'group'
export type TargetType = 'project' | 'domain' | 'system'

export interface RoleAssignmentTable {
  actor_type: ActorType
  actor_id: string
  target_type: TargetType
  /** A project or domain id; 'all' for the system scope. */
  target_id: string
  role_id: string
  inherited: number
}

export interface RegionTable {
  id: string
  description: string
  parent_region_id: string | null
}

export interface ServiceTable {
  id: string
  type: string
  name: string
  description: string
  enabled: number
}

export interface EndpointTable {
  id: string
  service_id: string
  interface: 'public' | 'internal' | 'admin'
  region_id: string | null
  url: string
  enabled: number
}

export interface Database {
  pcc_meta: MetaTable
  pcc_migrations: MigrationTable
  tasks: TaskTable
  token_keys: TokenKeyTable
  domains: DomainTable
  projects: ProjectTable
  project_tags: ProjectTagTable
  users: UserTable
  groups: GroupTable
  group_members: GroupMemberTable
  roles: RoleTable
  implied_roles: ImpliedRoleTable
  role_assignments: RoleAssignmentTable
  regions: RegionTable
  services: ServiceTable
  endpoints: EndpointTable
}

/** Unused marker to keep the Generated import meaningful for tables that add serial columns later. */
export type SerialColumn = Generated<number>
