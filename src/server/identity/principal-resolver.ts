/**
 * Builds the principal a token payload stands for, from the in-process identity snapshot (no database): the
 * user, the scope's names and the effective roles (direct, group and inherited assignments closed over implied
 * roles, narrowed to an application credential's roles). Throws AppError 'not_found' when the token no longer
 * stands for anything valid: user, project or domain disabled or gone, password changed since issue, no role
 * left on the scope, application credential deleted, or a revocation event matches.
 */
import { AppError } from '../../contracts/errors.js'
import type { Principal, TokenScope } from '../auth/principal.js'
import type { IdentitySnapshot, RoleRecord, ScopeRef } from './snapshot.js'
import type { Db } from '../storage/store.js'
import type { TokenPayload } from './token-format.js'

const invalid = () => new AppError('not_found', 'The token is not valid any more.')

export interface ResolvedToken {
  principal: Principal
  roles: RoleRecord[]
}

/** What a token was delegated through, if anything: an application credential or an OAuth access token. */
export interface Delegation {
  appCredId?: string
  oauthAccessId?: string
}

/**
 * Roles a token on this scope carries: the user's effective roles, narrowed to an application credential's or an
 * OAuth access token's delegated roles (closed over implied roles); a delegation gone leaves none.
 */
export function tokenRoles(snap: IdentitySnapshot, userId: string, scope: ScopeRef, via: Delegation = {}): RoleRecord[] {
  const roles = snap.effectiveRoles(userId, scope)
  if (!via.appCredId && !via.oauthAccessId) return roles
  const delegatedIds = via.appCredId ? snap.appCreds.get(via.appCredId)?.roleIds : snap.oauthAccess.get(via.oauthAccessId ?? '')?.roleIds
  if (!delegatedIds) return []
  const allowed = snap.withImplied(delegatedIds)
  return roles.filter((r) => allowed.has(r.id))
}

export function resolveToken(snap: IdentitySnapshot, payload: TokenPayload): ResolvedToken {
  const user = snap.users.get(payload.u)
  const userDomain = user && snap.domains.get(user.domainId)
  if (!user || !user.enabled || !userDomain || !userDomain.enabled) throw invalid()
  // A password change ends every token issued before it (Keystone revokes by user on password change).
  if (user.passwordCreatedAt !== null && payload.i < user.passwordCreatedAt) throw invalid()
  const cred = payload.ac ? snap.appCreds.get(payload.ac) : undefined
  if (payload.ac && (!cred || cred.userId !== user.id)) throw invalid()
  // An OAuth token stands only while its access token does, for its user and project.
  const oauth = payload.oa ? snap.oauthAccess.get(payload.oa) : undefined
  if (payload.oa && (!oauth || oauth.userId !== user.id || !(payload.s && 'p' in payload.s && payload.s.p === oauth.projectId))) throw invalid()

  let scope: TokenScope = { type: 'unscoped' }
  const s = payload.s
  if (s && 'p' in s) {
    const project = snap.projects.get(s.p)
    const domain = project && snap.domains.get(project.domainId)
    if (!project || !project.enabled || !domain || !domain.enabled) throw invalid()
    scope = { type: 'project', projectId: project.id, projectName: project.name, domainId: domain.id, domainName: domain.name }
  } else if (s && 'd' in s) {
    const domain = snap.domains.get(s.d)
    if (!domain || !domain.enabled) throw invalid()
    scope = { type: 'domain', domainId: domain.id, domainName: domain.name }
  } else if (s && 'sys' in s) {
    scope = { type: 'system' }
  }
  const roles = scope.type === 'unscoped' ? [] : tokenRoles(snap, user.id, s, { appCredId: payload.ac, oauthAccessId: payload.oa })
  if (scope.type !== 'unscoped' && roles.length === 0) throw invalid()
  if (snap.isRevoked(payload.a, user.id, scope.type === 'project' ? scope.projectId : undefined, payload.i)) throw invalid()

  return {
    roles,
    principal: {
      userId: user.id,
      userName: user.name,
      userDomainId: user.domainId,
      userDomainName: userDomain.name,
      scope,
      roles: roles.map((r) => r.name),
      methods: payload.m,
      auditIds: payload.a,
      issuedAt: payload.i,
      expiresAt: payload.e,
      applicationCredentialId: payload.ac,
      ...(cred?.accessRules ? { accessRules: cred.accessRules } : {}),
      ...(oauth ? { oauth: { accessTokenId: oauth.id, consumerId: oauth.consumerId } } : {}),
    },
  }
}

/** The user's effective role names on a target, read from the database (for callers outside the token hot path). */
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
