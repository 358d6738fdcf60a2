/** Tables of the identity service (Keystone v3 model). */

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

/** A domain's specific configuration (identity/domain-config.ts): group → option → value. */
export interface DomainConfigTable {
  domain_id: string
  /** JSON: the options answered by the API. */
  config: string
  /** The sensitive options (the LDAP password) as JSON sealed with the master key, or null. */
  sensitive: string | null
  updated_at: number
}

/** A policy blob (Keystone's /v3/policies): stored and served, never evaluated. */
export interface PolicyBlobTable {
  id: string
  type: string
  blob: string
  /** JSON: the extra attributes the record was given. */
  extra: string
  created_at: number
}

/** An OAuth 1.0a consumer (Keystone's OS-OAUTH1). */
export interface OAuthConsumerTable {
  id: string
  description: string | null
  /** The consumer's secret, sealed with the master key (shown once, when created). */
  secret: string
  extra: string
  created_at: number
}

/** An OAuth 1.0a request token (OS-OAUTH1): asked for by a consumer for a project, then authorized by a user. */
export interface OAuthRequestTokenTable {
  id: string
  consumer_id: string
  /** The token's secret, sealed with the master key (signatures are checked with it). */
  secret: string
  project_id: string
  /** Set when a user authorized it, with the roles delegated (JSON array of role ids) and the verifier's hash. */
  authorizing_user_id: string | null
  role_ids: string | null
  /** SHA-256 of the verifier, hex. */
  verifier_hash: string | null
  expires_at: number
  created_at: number
}

/** An OAuth 1.0a access token: a user's roles on one project, delegated to a consumer. */
export interface OAuthAccessTokenTable {
  id: string
  consumer_id: string
  /** Sealed with the master key. */
  secret: string
  authorizing_user_id: string
  project_id: string
  /** JSON array of role ids. */
  role_ids: string
  expires_at: number
  created_at: number
}

/** A nonce of a signed OAuth request, kept while its timestamp is within the window (a second use is a replay). */
export interface OAuthNonceTable {
  consumer_id: string
  nonce: string
  expires_at: number
}

/** An endpoint group (OS-EP-FILTER): the endpoints its filters match (identity/endpoint-filter.ts). */
export interface EndpointGroupTable {
  id: string
  name: string
  description: string | null
  /** JSON: `{service_id?, interface?, region_id?}`; an endpoint matches when every one given is equal. */
  filters: string
  created_at: number
}

export interface ProjectEndpointGroupTable {
  endpoint_group_id: string
  project_id: string
}

export interface ProjectEndpointTable {
  endpoint_id: string
  project_id: string
}

export interface IdentityTables {
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
  domain_configs: DomainConfigTable
  policies: PolicyBlobTable
  oauth_consumers: OAuthConsumerTable
  oauth_request_tokens: OAuthRequestTokenTable
  oauth_access_tokens: OAuthAccessTokenTable
  oauth_nonces: OAuthNonceTable
  endpoint_groups: EndpointGroupTable
  project_endpoint_groups: ProjectEndpointGroupTable
  project_endpoints: ProjectEndpointTable
}
