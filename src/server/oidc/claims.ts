/**
 * What an ID token says about a user. The `groups` rule, for Kubernetes RBAC: for every enabled project where
 * the user has a role (directly or through an identity group, implied roles included), the project's name and
 * `<project>:<role>` for each role. Projects outside the Default domain are written `<domain>/<project>`.
 * Sorted, without duplicates. Example: admin on project `admin` → ["admin", "admin:admin", "admin:member", "admin:reader"].
 */
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
    groups: await projectGroups(db, userId),
    enabled: Boolean(user.enabled) && Boolean(user.domain_enabled),
    passwordStamp: user.password_created_at,
  }
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
