/**
 * Builds the principal a token payload stands for: the user, the scope's names, and the effective roles
 * (direct and group assignments, closed over implied roles). Throws AppError 'not_found' when the token no
 * longer stands for anything valid (user, project or domain disabled or gone, no role left on the scope).
 */
import { AppError } from '../../contracts/errors.js'
import type { Principal, TokenScope } from '../auth/principal.js'
import type { Db } from '../storage/store.js'
import type { TokenPayload } from './token-format.js'

const invalid = () => new AppError('not_found', 'The token is not valid any more.')

export async function effectiveRoleNames(db: Db, userId: string, targetType: 'project' | 'domain' | 'system', targetId: string): Promise<string[]> {
  const groupIds = (await db.selectFrom('group_members').select('group_id').where('user_id', '=', userId).execute()).map((r) => r.group_id)
  const direct = await db
    .selectFrom('role_assignments')
    .select('role_id')
    .where('target_type', '=', targetType)
    .where('target_id', '=', targetId)
    .where((eb) =>
      eb.or([
        eb.and([eb('actor_type', '=', 'user'), eb('actor_id', '=', userId)]),
        ...(groupIds.length ? [eb.and([eb('actor_type', '=', 'group'), eb('actor_id', 'in', groupIds)])] : []),
      ]),
    )
    .execute()
  if (direct.length === 0) return []
  const implications = await db.selectFrom('implied_roles').selectAll().execute()
  const ids = new Set(direct.map((r) => r.role_id))
  for (let grew = true; grew; ) {
    grew = false
    for (const { prior_role_id, implied_role_id } of implications) {
      if (ids.has(prior_role_id) && !ids.has(implied_role_id)) {
        ids.add(implied_role_id)
        grew = true
      }
    }
  }
  const roles = await db.selectFrom('roles').select('name').where('id', 'in', [...ids]).execute()
  return roles.map((r) => r.name).sort()
}

export async function resolvePrincipal(db: Db, payload: TokenPayload): Promise<Principal> {
  const user = await db
    .selectFrom('users')
    .innerJoin('domains', 'domains.id', 'users.domain_id')
    .select(['users.id', 'users.name', 'users.enabled', 'users.domain_id', 'domains.name as domain_name', 'domains.enabled as domain_enabled'])
    .where('users.id', '=', payload.u)
    .executeTakeFirst()
  if (!user || !user.enabled || !user.domain_enabled) throw invalid()

  let scope: TokenScope = { type: 'unscoped' }
  let roles: string[] = []
  if (payload.s && 'p' in payload.s) {
    const project = await db
      .selectFrom('projects')
      .innerJoin('domains', 'domains.id', 'projects.domain_id')
      .select(['projects.id', 'projects.name', 'projects.enabled', 'projects.domain_id', 'domains.name as domain_name', 'domains.enabled as domain_enabled'])
      .where('projects.id', '=', payload.s.p)
      .executeTakeFirst()
    if (!project || !project.enabled || !project.domain_enabled) throw invalid()
    scope = { type: 'project', projectId: project.id, projectName: project.name, domainId: project.domain_id, domainName: project.domain_name }
    roles = await effectiveRoleNames(db, user.id, 'project', project.id)
  } else if (payload.s && 'd' in payload.s) {
    const domain = await db.selectFrom('domains').select(['id', 'name', 'enabled']).where('id', '=', payload.s.d).executeTakeFirst()
    if (!domain || !domain.enabled) throw invalid()
    scope = { type: 'domain', domainId: domain.id, domainName: domain.name }
    roles = await effectiveRoleNames(db, user.id, 'domain', domain.id)
  } else if (payload.s && 'sys' in payload.s) {
    scope = { type: 'system' }
    roles = await effectiveRoleNames(db, user.id, 'system', 'all')
  }
  if (scope.type !== 'unscoped' && roles.length === 0) throw invalid()

  return {
    userId: user.id,
    userName: user.name,
    userDomainId: user.domain_id,
    userDomainName: user.domain_name,
    scope,
    roles,
    methods: payload.m,
    auditIds: payload.a,
    issuedAt: payload.i,
    expiresAt: payload.e,
    applicationCredentialId: payload.ac,
  }
}
