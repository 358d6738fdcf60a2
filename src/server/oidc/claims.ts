/**
 * What an ID token (and the userinfo endpoint) says about a user, and which scope brings which claim.
 *
 * The `groups` rule, for Kubernetes RBAC (docs/idp.md): the names of the user's identity groups, and for every
 * enabled project where the user has a role (directly or through an identity group, implied roles included),
 * the project's name and `<project>:<role>` for each role. Groups and projects outside the Default domain are
 * written `<domain>/<name>`. Sorted, without duplicates. Example: admin on project `admin` →
 * ["admin", "admin:admin", "admin:member", "admin:reader"].
 */
import { createHash } from 'node:crypto'
import type { Db } from '../storage/store.js'
import { DEFAULT_DOMAIN_ID } from './login.js'

export interface UserClaims {
  userId: string
  name: string
  email?: string
  groups: string[]
  enabled: boolean
  passwordStamp: number | null
}

/** Undefined when the user no longer exists. */
export async function userClaims(db: Db, userId: string): Promise<UserClaims | undefined> {
  const user = await db
    .selectFrom('users')
    .innerJoin('domains', 'domains.id', 'users.domain_id')
    .select(['users.id', 'users.name', 'users.email', 'users.enabled', 'users.password_created_at', 'domains.enabled as domain_enabled'])
    .where('users.id', '=', userId)
    .executeTakeFirst()
  if (!user) return undefined
  // Platform9 users log in with an e-mail as their name; use it when no e-mail is recorded.
  const email = user.email ?? (user.name.includes('@') ? user.name : undefined)
  return {
    userId: user.id,
    name: user.name,
    email: email ?? undefined,
    groups: [...new Set([...(await identityGroups(db, userId)), ...(await projectGroups(db, userId))])].sort(),
    enabled: Boolean(user.enabled) && Boolean(user.domain_enabled),
    passwordStamp: user.password_created_at,
  }
}

/** Dex's subject: base64url(protobuf{1: user id, 2: connector id}), stable per user and connector. */
export function dexSubject(userId: string, connectorId: string): string {
  const field = (tag: number, value: string) => {
    const bytes = Buffer.from(value)
    if (bytes.length > 127) throw new Error('subject field too long')
    return Buffer.concat([Buffer.from([tag, bytes.length]), bytes])
  }
  return Buffer.concat([field(0x0a, userId), field(0x12, connectorId)]).toString('base64url')
}

/** OIDC core §3.1.3.6 (at_hash) and §3.3.2.11 (c_hash): the left half of the SHA-256 of the value, base64url. */
export function atHash(value: string): string {
  return createHash('sha256').update(value).digest().subarray(0, 16).toString('base64url')
}

/** Scope → the claims it brings (OpenID Connect Core §5.4, as Dex issues them). `openid` brings `sub` only. */
export const SCOPE_CLAIMS: Partial<Record<string, { claims: string[]; of: (claims: UserClaims) => Record<string, unknown> }>> = {
  email: { claims: ['email', 'email_verified'], of: (c) => (c.email ? { email: c.email, email_verified: true } : {}) },
  profile: { claims: ['name', 'preferred_username'], of: (c) => ({ name: c.name, preferred_username: c.name }) },
  groups: { claims: ['groups'], of: (c) => ({ groups: c.groups }) },
}

/** The claims the scopes grant, in both the ID token and the userinfo answer. */
export function scopedClaims(claims: UserClaims, scopes: readonly string[]): Record<string, unknown> {
  return Object.assign({}, ...scopes.map((scope) => SCOPE_CLAIMS[scope]?.of(claims) ?? {}))
}

/** The names of the identity groups the user belongs to (`<domain>/<group>` outside the Default domain). */
export async function identityGroups(db: Db, userId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('group_members')
    .innerJoin('groups', 'groups.id', 'group_members.group_id')
    .innerJoin('domains', 'domains.id', 'groups.domain_id')
    .select(['groups.name', 'groups.domain_id', 'domains.name as domain'])
    .where('group_members.user_id', '=', userId)
    .execute()
  return rows.map((r) => (r.domain_id === DEFAULT_DOMAIN_ID ? r.name : `${r.domain}/${r.name}`))
}

export async function projectGroups(db: Db, userId: string): Promise<string[]> {
  const groupIds = (await db.selectFrom('group_members').select('group_id').where('user_id', '=', userId).execute()).map((r) => r.group_id)
  const assignments = await db
    .selectFrom('role_assignments')
    .innerJoin('projects', 'projects.id', 'role_assignments.target_id')
    .innerJoin('domains', 'domains.id', 'projects.domain_id')
    .select(['projects.name as project', 'projects.domain_id', 'domains.name as domain', 'role_assignments.role_id'])
    .where('role_assignments.target_type', '=', 'project')
    .where('projects.enabled', '=', 1)
    .where((eb) =>
      eb.or([
        eb.and([eb('role_assignments.actor_type', '=', 'user'), eb('role_assignments.actor_id', '=', userId)]),
        ...(groupIds.length ? [eb.and([eb('role_assignments.actor_type', '=', 'group'), eb('role_assignments.actor_id', 'in', groupIds)])] : []),
      ]),
    )
    .execute()
  if (assignments.length === 0) return []
  const implications = await db.selectFrom('implied_roles').selectAll().execute()
  const roleNames = new Map((await db.selectFrom('roles').select(['id', 'name']).execute()).map((r) => [r.id, r.name]))
  const byProject = new Map<string, Set<string>>()
  for (const a of assignments) {
    const label = a.domain_id === DEFAULT_DOMAIN_ID ? a.project : `${a.domain}/${a.project}`
    const roles = byProject.get(label) ?? new Set<string>()
    roles.add(a.role_id)
    byProject.set(label, roles)
  }
  const groups = new Set<string>()
  for (const [project, roles] of byProject) {
    for (let grew = true; grew; ) {
      grew = false
      for (const { prior_role_id, implied_role_id } of implications) {
        if (roles.has(prior_role_id) && !roles.has(implied_role_id)) {
          roles.add(implied_role_id)
          grew = true
        }
      }
    }
    groups.add(project)
    for (const id of roles) {
      const name = roleNames.get(id)
      if (name) groups.add(`${project}:${name}`)
    }
  }
  return [...groups].sort()
}

/** For the client-secrets endpoint: does the user hold any role on an enabled project? */
export async function hasProjectRole(db: Db, userId: string): Promise<boolean> {
  return (await projectGroups(db, userId)).length > 0
}
