/**
 * Request schemas of the identity admin API, after Keystone's: names 1–64 characters (users and roles 255),
 * booleans strictly boolean, descriptions string or null. Records Keystone lets carry extra attributes
 * (domains, projects, users) accept unknown properties and keep them; closed objects (options, password
 * change, tags) reject unknown ones.
 */
import { Type as T, type TSchema } from '@sinclair/typebox'

export const Id = T.String({ minLength: 1, maxLength: 64 })
const Name64 = T.String({ minLength: 1, maxLength: 64, pattern: '\\S' })
const Name255 = T.String({ minLength: 1, maxLength: 255, pattern: '\\S' })
const Description = T.Union([T.String({ maxLength: 65535 }), T.Null()])
const Bool = T.Boolean()
const Nullable = <S extends TSchema>(s: S) => T.Union([s, T.Null()])

/** Keystone's tag rule: 1–255 characters, no '/' or ','; at most 80 per project. */
export const Tag = T.String({ minLength: 1, maxLength: 255, pattern: '^[^/,]+$' })
export const Tags = T.Array(Tag, { maxItems: 80 })

/** Options of domains, projects and roles: only `immutable` exists. */
const ResourceOptions = T.Object({ immutable: T.Optional(Nullable(Bool)) }, { additionalProperties: false })

const MfaRules = T.Array(T.Array(T.String({ minLength: 1, maxLength: 255 }), { minItems: 1, uniqueItems: true }), { uniqueItems: true })

/** User options Keystone knows; null removes one on update. */
export const UserOptions = T.Object(
  {
    ignore_change_password_upon_first_use: T.Optional(Nullable(Bool)),
    ignore_password_expiry: T.Optional(Nullable(Bool)),
    ignore_lockout_failure_attempts: T.Optional(Nullable(Bool)),
    lock_password: T.Optional(Nullable(Bool)),
    ignore_user_inactivity: T.Optional(Nullable(Bool)),
    multi_factor_auth_rules: T.Optional(Nullable(MfaRules)),
    multi_factor_auth_enabled: T.Optional(Nullable(Bool)),
  },
  { additionalProperties: false },
)

const open = { additionalProperties: true }

export const DomainCreate = T.Object({ domain: T.Object({ name: Name64, description: T.Optional(Description), enabled: T.Optional(Bool), options: T.Optional(ResourceOptions), explicit_domain_id: T.Optional(Id) }, open) })
export const DomainUpdate = T.Object({ domain: T.Object({ name: T.Optional(Name64), description: T.Optional(Description), enabled: T.Optional(Bool), options: T.Optional(ResourceOptions) }, open) })

const projectFields = {
  description: T.Optional(Description),
  enabled: T.Optional(Bool),
  // null: no domain named (a project acting as a domain has none; a regular one goes to the caller's domain).
  domain_id: T.Optional(Nullable(Id)),
  parent_id: T.Optional(Nullable(Id)),
  is_domain: T.Optional(Bool),
  tags: T.Optional(Tags),
  options: T.Optional(ResourceOptions),
}
export const ProjectCreate = T.Object({ project: T.Object({ name: Name64, ...projectFields }, open) })
export const ProjectUpdate = T.Object({ project: T.Object({ name: T.Optional(Name64), ...projectFields }, open) })
export const TagsBody = T.Object({ tags: Tags }, { additionalProperties: false })

const Password = Nullable(T.String({ maxLength: 4096 }))
const userFields = {
  domain_id: T.Optional(Id),
  enabled: T.Optional(Bool),
  default_project_id: T.Optional(Nullable(Id)),
  description: T.Optional(Description),
  email: T.Optional(Nullable(T.String({ maxLength: 255 }))),
  password: T.Optional(Password),
  options: T.Optional(UserOptions),
}
export const UserCreate = T.Object({ user: T.Object({ name: Name255, ...userFields }, open) })
export const UserUpdate = T.Object({ user: T.Object({ name: T.Optional(Name255), ...userFields }, open) })
export const PasswordChange = T.Object({
  user: T.Object({ password: T.String({ minLength: 1, maxLength: 4096 }), original_password: T.String({ minLength: 1, maxLength: 4096 }) }, { additionalProperties: false }),
})

export const GroupCreate = T.Object({ group: T.Object({ name: Name64, domain_id: T.Optional(Id), description: T.Optional(Description) }, open) })
export const GroupUpdate = T.Object({ group: T.Object({ name: T.Optional(Name64), domain_id: T.Optional(Id), description: T.Optional(Description) }, open) })

export const RoleCreate = T.Object({ role: T.Object({ name: Name255, domain_id: T.Optional(Nullable(Id)), description: T.Optional(Description), options: T.Optional(ResourceOptions) }, open) })
export const RoleUpdate = T.Object({ role: T.Object({ name: T.Optional(Name255), domain_id: T.Optional(Nullable(Id)), description: T.Optional(Description), options: T.Optional(ResourceOptions) }, open) })

const RegionId = T.String({ minLength: 1, maxLength: 255, pattern: '^[^/]+$' })
export const RegionCreate = T.Object({ region: T.Object({ id: T.Optional(RegionId), description: T.Optional(Description), parent_region_id: T.Optional(Nullable(RegionId)) }, open) })
export const RegionUpdate = T.Object({ region: T.Object({ description: T.Optional(Description), parent_region_id: T.Optional(Nullable(RegionId)) }, open) })

const ServiceType = T.String({ minLength: 1, maxLength: 255 })
export const ServiceCreate = T.Object({ service: T.Object({ type: ServiceType, name: T.Optional(T.String({ maxLength: 255 })), description: T.Optional(Description), enabled: T.Optional(Bool) }, open) })
export const ServiceUpdate = T.Object({ service: T.Object({ type: T.Optional(ServiceType), name: T.Optional(T.String({ maxLength: 255 })), description: T.Optional(Description), enabled: T.Optional(Bool) }, open) })

const Interface = T.Union([T.Literal('public'), T.Literal('internal'), T.Literal('admin')])
const Url = T.String({ minLength: 1, maxLength: 225, pattern: '^[a-zA-Z][a-zA-Z0-9+.-]*://' })
const endpointFields = { region_id: T.Optional(Nullable(RegionId)), region: T.Optional(Nullable(RegionId)), enabled: T.Optional(Bool) }
export const EndpointCreate = T.Object({ endpoint: T.Object({ service_id: Id, interface: Interface, url: Url, ...endpointFields }, open) })
export const EndpointUpdate = T.Object({ endpoint: T.Object({ service_id: T.Optional(Id), interface: T.Optional(Interface), url: T.Optional(Url), ...endpointFields }, open) })

/** Policy blobs: Keystone's, a blob and a type, extra attributes kept. */
const PolicyType = T.String({ minLength: 1, maxLength: 255 })
const Blob = T.String({ maxLength: 65535 })
export const PolicyCreate = T.Object({ policy: T.Object({ type: PolicyType, blob: Blob }, open) })
export const PolicyUpdate = T.Object({ policy: T.Object({ type: T.Optional(PolicyType), blob: T.Optional(Blob) }, open) })

/** OAuth 1.0a consumers: a description; the secret is made by the server and never changed. */
export const ConsumerCreate = T.Object({ consumer: T.Object({ description: T.Optional(Description) }, open) })
export const ConsumerUpdate = T.Object({ consumer: T.Object({ description: T.Optional(Description) }, open) })

/** Query strings: every value a string; unknown parameters are ignored, as Keystone does. */
export const query = (keys: string[]) => T.Object(Object.fromEntries(keys.map((k) => [k, T.Optional(T.String())])), { additionalProperties: true })
