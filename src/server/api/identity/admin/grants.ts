/**
 * Role grants of users and groups on projects, domains and the system
 * (`/v3/{projects|domains}/{id}/{users|groups}/{actor}/roles[/{role}]`, `/v3/system/{users|groups}/{actor}/roles[/{role}]`)
 * and `GET /v3/role_assignments` with Keystone's filters.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { badRequest, forbidden, notFound } from '../../../../contracts/errors.js'
import type { ActorType, TargetType } from '../../../storage/tables/identity.js'
import * as assignments from '../../../identity/repo/assignments.repo.js'
import { getDomain, listDomains } from '../../../identity/repo/domains.repo.js'
import { getGroup, listGroups } from '../../../identity/repo/groups.repo.js'
import { findProject, getProject, listProjects, subtreeIds } from '../../../identity/repo/projects.repo.js'
import { getRole, rolesById, type RoleRow } from '../../../identity/repo/roles.repo.js'
import { getUser, listUsers } from '../../../identity/repo/users.repo.js'
import { cloudAdmin, systemReader } from '../../../policy/identity.policy.js'
import type { IdentityOperation } from '../../../policy/identity.policy.js'
import { collection, guard, queryFlag, type AdminContext } from './common.js'
import { query } from './schemas.js'
import { roleView } from './views.js'
import { documented, noBody } from '../../../http/openapi.js'
import { V, list } from '../answers.js'

type GrantParams = { Params: { id?: string; actorId: string; roleId?: string } }

const ACTORS: { segment: string; type: ActorType }[] = [
  { segment: 'users', type: 'user' },
  { segment: 'groups', type: 'group' },
]
const TARGETS: { segment: string; type: TargetType; prefix: string }[] = [
  { segment: 'projects', type: 'project', prefix: '/projects/:id' },
  { segment: 'domains', type: 'domain', prefix: '/domains/:id' },
  { segment: 'system', type: 'system', prefix: '/system' },
]

const OPS = {
  list: { scoped: 'identity:list_grants', system: 'identity:list_system_grants' },
  check: { scoped: 'identity:check_grant', system: 'identity:check_system_grant' },
  create: { scoped: 'identity:create_grant', system: 'identity:create_system_grant' },
  revoke: { scoped: 'identity:revoke_grant', system: 'identity:revoke_system_grant' },
} as const satisfies Record<string, { scoped: IdentityOperation; system: IdentityOperation }>

export function grantRoutes(scope: FastifyInstance, ctx: AdminContext): void {
  for (const target of TARGETS) {
    for (const actor of ACTORS) {
      const base = `${target.prefix}/${actor.segment}/:actorId/roles`

      /** Checks that target and actor exist (404), applies the policy, returns the grant's coordinates. */
      const resolve = async (request: FastifyRequest<GrantParams>, op: keyof typeof OPS) => {
        let domainId: string | undefined
        let targetId = 'all'
        if (target.type === 'project') {
          const project = await getProject(ctx.db, request.params.id!)
          domainId = project.domain_id
          targetId = project.id
        } else if (target.type === 'domain') {
          domainId = (await getDomain(ctx.db, request.params.id!)).id
          targetId = domainId
        }
        const actorRow = actor.type === 'user' ? await getUser(ctx.db, request.params.actorId) : await getGroup(ctx.db, request.params.actorId)
        const actorId = actorRow.id
        const operation = target.type === 'system' ? OPS[op].system : OPS[op].scoped
        guard(request, operation, { domainId, projectId: target.type === 'project' ? targetId : undefined })
        // A domain admin grants and revokes only for users and groups of its own domain (Keystone checks both sides).
        if (target.type !== 'system' && (op === 'create' || op === 'revoke')) guard(request, operation, { domainId: actorRow.domain_id })
        return { domainId, grant: { actorType: actor.type, actorId, targetType: target.type, targetId, roleId: request.params.roleId ?? '' } }
      }

      const on = `${actor.segment} on ${target.type === 'system' ? 'the system' : `a ${target.type}`}`
      scope.get<GrantParams>(base, documented({ summary: `Roles granted to ${on}`, response: { 200: list('roles', V.role) } }), async (request) => {
        const { grant } = await resolve(request, 'list')
        const ids = await assignments.grantedRoleIds(ctx.db, grant.actorType, grant.actorId, grant.targetType, grant.targetId)
        const rows = await rolesById(ctx.db, ids)
        return collection(ctx, request, 'roles', [...rows.values()].sort((a, b) => a.name.localeCompare(b.name)).map((r) => roleView(ctx, r)))
      })

      scope.route<GrantParams>({
        method: ['GET', 'HEAD'],
        url: `${base}/:roleId`,
        ...documented({ summary: `Check a role grant of ${on}`, response: { 204: noBody('Granted') } }),
        handler: async (request, reply) => {
          const { grant } = await resolve(request, 'check')
          await getRole(ctx.db, grant.roleId)
          if (!(await assignments.hasGrant(ctx.db, grant))) throw notAssigned(grant)
          return reply.code(204).send()
        },
      })

      scope.put<GrantParams>(`${base}/:roleId`, documented({ summary: `Grant a role to ${on}`, response: { 204: noBody('Granted') } }), async (request, reply) => {
        const { grant, domainId } = await resolve(request, 'create')
        const role = await getRole(ctx.db, grant.roleId)
        assertRoleFits(role, domainId)
        await ctx.write((tx) => assignments.addGrant(tx, grant))
        return reply.code(204).send()
      })

      scope.delete<GrantParams>(`${base}/:roleId`, documented({ summary: `Revoke a role of ${on}`, response: { 204: noBody('Revoked') } }), async (request, reply) => {
        const { grant } = await resolve(request, 'revoke')
        await getRole(ctx.db, grant.roleId)
        await ctx.write((tx) => assignments.removeGrant(tx, grant))
        return reply.code(204).send()
      })
    }
  }

  assignmentListRoute(scope, ctx)
}

function notAssigned(g: assignments.Grant) {
  return notFound(`Could not find role assignment with role: ${g.roleId}, ${g.actorType}: ${g.actorId}, ${g.targetType}: ${g.targetId}.`)
}

/** A domain-specific role can only be granted inside its domain (Keystone: DomainSpecificRoleMismatch, 403). */
function assertRoleFits(role: RoleRow, domainId: string | undefined): void {
  if (role.domain_id && role.domain_id !== domainId) throw forbidden(`Role ${role.id} is specific to domain ${role.domain_id} and cannot be granted outside it.`)
}

type AssignmentQuery = Record<'user.id' | 'group.id' | 'role.id' | 'scope.project.id' | 'scope.domain.id' | 'scope.system' | 'effective' | 'include_names' | 'include_subtree', string | undefined>

function assignmentListRoute(scope: FastifyInstance, ctx: AdminContext): void {
  const keys = ['user.id', 'group.id', 'role.id', 'scope.project.id', 'scope.domain.id', 'scope.system', 'effective', 'include_names', 'include_subtree']
  scope.get<{ Querystring: AssignmentQuery }>('/role_assignments', { schema: { querystring: query(keys) }, ...documented({ summary: 'List role assignments', response: { 200: list('role_assignments', V.assignment) } }) }, async (request) => {
    const q = request.query
    const effective = queryFlag(q.effective) ?? false
    const includeNames = queryFlag(q.include_names) ?? false
    const includeSubtree = queryFlag(q.include_subtree) ?? false
    if (effective && q['group.id'] !== undefined) throw badRequest(`Invalid input for field 'group.id': combining effective and group filter will always result in an empty list.`)
    const scopes = [q['scope.project.id'], q['scope.domain.id'], q['scope.system']].filter((s) => s !== undefined)
    if (scopes.length > 1) throw badRequest(`Invalid input for field 'scope': specify only one of scope.project.id, scope.domain.id and scope.system.`)
    if (includeSubtree && q['scope.project.id'] === undefined) throw badRequest(`Invalid input for field 'include_subtree': it needs scope.project.id.`)

    // The policy target: the filtered scope's domain; a domain-scoped reader without a filter sees its domain.
    const p = request.principal
    const privileged = cloudAdmin(p, {}) || systemReader(p, {})
    let domainId: string | undefined
    // A filter naming an unknown project lists nothing (it is a filter, not a lookup).
    if (q['scope.project.id'] !== undefined) domainId = (await findProject(ctx.db, q['scope.project.id']))?.domain_id
    else if (q['scope.domain.id'] !== undefined) domainId = q['scope.domain.id']
    else if (!privileged && p.scope.type === 'domain') domainId = p.scope.domainId
    guard(request, 'identity:list_role_assignments', { domainId })

    const projectIds = q['scope.project.id'] === undefined ? undefined : includeSubtree ? await subtreeIds(ctx.db, q['scope.project.id']) : [q['scope.project.id']]
    let entries = await assignments.listAssignments(ctx.db, {
      userId: q['user.id'],
      groupId: q['group.id'],
      roleId: q['role.id'],
      projectIds,
      domainId: q['scope.domain.id'],
      system: q['scope.system'] !== undefined,
      effective,
    })
    if (!privileged && domainId !== undefined && projectIds === undefined && q['scope.domain.id'] === undefined) {
      // Unfiltered domain reader: only the domain itself and its projects.
      const own = new Set((await listProjects(ctx.db, { domainId })).map((x) => x.id))
      entries = entries.filter((e) => (e.targetType === 'domain' && e.targetId === domainId) || (e.targetType === 'project' && own.has(e.targetId)))
    }
    const names = includeNames ? await nameBook(ctx, entries) : undefined
    return collection(ctx, request, 'role_assignments', entries.map((e) => assignmentView(ctx, e, names)))
  })
}

interface NameBook {
  roles: Map<string, RoleRow>
  users: Map<string, { name: string; domain_id: string }>
  groups: Map<string, { name: string; domain_id: string }>
  projects: Map<string, { name: string; domain_id: string }>
  domains: Map<string, string>
}

async function nameBook(ctx: AdminContext, entries: assignments.AssignmentEntry[]): Promise<NameBook> {
  const ids = (type: string) => [...new Set(entries.filter((e) => e.actorType === type).map((e) => e.actorId))]
  const targets = (type: string) => [...new Set(entries.filter((e) => e.targetType === type).map((e) => e.targetId))]
  const [roles, users, groups, projects, domains] = await Promise.all([
    rolesById(ctx.db, entries.map((e) => e.roleId)),
    listUsers(ctx.db, { ids: ids('user') }),
    listGroups(ctx.db, { ids: ids('group') }),
    listProjects(ctx.db, { ids: targets('project') }),
    listDomains(ctx.db, {}),
  ])
  return {
    roles,
    users: new Map(users.map((u) => [u.id, u])),
    groups: new Map(groups.map((g) => [g.id, g])),
    projects: new Map(projects.map((x) => [x.id, x])),
    domains: new Map(domains.map((d) => [d.id, d.name])),
  }
}

function assignmentView(ctx: AdminContext, e: assignments.AssignmentEntry, names?: NameBook) {
  const domainRef = (id: string) => ({ id, name: names?.domains.get(id) ?? '' })
  const named = <R extends { name: string; domain_id: string }>(id: string, rec: R | undefined) => (names && rec ? { id, name: rec.name, domain: domainRef(rec.domain_id) } : { id })
  const role = names?.roles.get(e.roleId)
  const roleOut = names && role ? { id: e.roleId, name: role.name, ...(role.domain_id ? { domain: domainRef(role.domain_id) } : {}) } : { id: e.roleId }
  const actor = e.actorType === 'user' ? { user: named(e.actorId, names?.users.get(e.actorId)) } : { group: named(e.actorId, names?.groups.get(e.actorId)) }
  const scopeOut =
    e.targetType === 'project'
      ? { project: named(e.targetId, names?.projects.get(e.targetId)) }
      : e.targetType === 'domain'
        ? { domain: names ? domainRef(e.targetId) : { id: e.targetId } }
        : { system: { all: true } }
  // The assignment link names the grant as stored: through the group when it came from one.
  const actorPath = e.viaGroupId ? `groups/${e.viaGroupId}` : `${e.actorType}s/${e.actorId}`
  const targetPath = e.targetType === 'system' ? 'system' : `${e.targetType}s/${e.targetId}`
  const links: Record<string, string> = { assignment: ctx.link(`${targetPath}/${actorPath}/roles/${e.priorRoleId ?? e.roleId}`).self }
  if (e.viaGroupId) links.membership = ctx.link(`groups/${e.viaGroupId}/users/${e.actorId}`).self
  if (e.priorRoleId) links.prior_role = ctx.link(`roles/${e.priorRoleId}`).self
  return { role: roleOut, ...actor, scope: scopeOut, links }
}
