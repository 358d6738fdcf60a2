/** /v3/users, the self-service password change, and group membership (/v3/groups/{g}/users/{u}). */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Static } from '@sinclair/typebox'
import { badRequest, notFound, unauthorized } from '../../../../contracts/errors.js'
import { DEFAULT_DOMAIN_ID } from '../../../bootstrap/bootstrap.js'
import * as users from '../../../identity/repo/users.repo.js'
import * as groups from '../../../identity/repo/groups.repo.js'
import { listDomainFor } from '../../../policy/identity.policy.js'
import { untilText } from '../../../identity/lockout.js'
import { collection, guard, queryFlag, type AdminContext } from './common.js'
import { GroupCreate, GroupUpdate, PasswordChange, UserCreate, UserUpdate, query } from './schemas.js'
import { groupView, userView } from './views.js'
import { documented, noBody } from '../../../http/openapi.js'
import { V, list, one } from '../answers.js'

type IdParams = { Params: { id: string } }
type MemberParams = { Params: { id: string; userId: string } }

function callerDomain(request: FastifyRequest): string {
  const s = request.principal.scope
  return s.type === 'project' || s.type === 'domain' ? s.domainId : DEFAULT_DOMAIN_ID
}

export function userRoutes(scope: FastifyInstance, ctx: AdminContext): void {
  scope.get<{ Querystring: { name?: string; domain_id?: string; enabled?: string } }>(
    '/users',
    { ...documented({ summary: 'List users', response: { 200: list('users', V.user) } }), schema: { querystring: query(['name', 'domain_id', 'enabled']) } },
    async (request) => {
      const domainId = listDomainFor(request.principal, request.query.domain_id)
      guard(request, 'identity:list_users', { domainId })
      const rows = await users.listUsers(ctx.db, { name: request.query.name, domainId, enabled: queryFlag(request.query.enabled) })
      return collection(ctx, request, 'users', rows.map((u) => userView(ctx, u)))
    },
  )

  scope.get<IdParams>('/users/:id', documented({ summary: 'Show a user', response: { 200: one('user', V.user) } }), async (request) => {
    const row = await users.getUser(ctx.db, request.params.id)
    guard(request, 'identity:get_user', { userId: row.id, domainId: row.domain_id })
    return { user: userView(ctx, row) }
  })

  scope.post<{ Body: Static<typeof UserCreate> }>('/users', { ...documented({ summary: 'Create a user', response: { 201: one('user', V.user) } }), schema: { body: UserCreate } }, async (request, reply) => {
    const domainId = request.body.user.domain_id ?? callerDomain(request)
    guard(request, 'identity:create_user', { domainId })
    const row = await ctx.write((tx) => users.createUser(tx, request.body.user, domainId, ctx.now()))
    return reply.code(201).send({ user: userView(ctx, row) })
  })

  scope.patch<IdParams & { Body: Static<typeof UserUpdate> }>('/users/:id', { ...documented({ summary: 'Update a user', response: { 200: one('user', V.user) } }), schema: { body: UserUpdate } }, async (request) => {
    const current = await users.getUser(ctx.db, request.params.id)
    guard(request, 'identity:update_user', { userId: current.id, domainId: current.domain_id })
    const row = await ctx.write((tx) => users.updateUser(tx, current.id, request.body.user, ctx.now()))
    return { user: userView(ctx, row) }
  })

  scope.delete<IdParams>('/users/:id', documented({ summary: 'Delete a user', response: { 204: noBody('Deleted') } }), async (request, reply) => {
    const current = await users.getUser(ctx.db, request.params.id)
    guard(request, 'identity:delete_user', { userId: current.id, domainId: current.domain_id })
    await ctx.write((tx) => users.deleteUser(tx, current.id))
    return reply.code(204).send()
  })

  scope.post<IdParams & { Body: Static<typeof PasswordChange> }>(
    '/users/:id/password',
    { schema: { body: PasswordChange }, config: { public: true, docs: { security: [], summary: 'Change your own password (proven by the original password; no token)', response: { 204: noBody('Changed') } } } },
    async (request, reply) => {
      const { password, original_password } = request.body.user
      const checked = await users.checkOriginalPassword(ctx.db, request.params.id, original_password, ctx.now(), ctx.deps.identityAuth.lockout.policy)
      if (checked === 'denied') throw unauthorized('The request you have made requires authentication.')
      if (checked === 'locked') {
        const end = await ctx.deps.identityAuth.lockout.lockedUntil(request.params.id)
        throw unauthorized(`The account is locked for user: ${request.params.id} ${untilText(end ?? null, ctx.now())}.`)
      }
      await ctx.write((tx) => users.setPassword(tx, request.params.id, password, ctx.now()))
      return reply.code(204).send()
    },
  )

  scope.get<IdParams>('/users/:id/groups', documented({ summary: "The groups a user is in", response: { 200: list('groups', V.group) } }), async (request) => {
    const user = await users.getUser(ctx.db, request.params.id)
    guard(request, 'identity:list_groups_for_user', { userId: user.id, domainId: user.domain_id })
    return collection(ctx, request, 'groups', (await groups.userGroups(ctx.db, user.id)).map((g) => groupView(ctx, g)))
  })
}

export function groupRoutes(scope: FastifyInstance, ctx: AdminContext): void {
  scope.get<{ Querystring: { name?: string; domain_id?: string } }>('/groups', { ...documented({ summary: 'List groups', response: { 200: list('groups', V.group) } }), schema: { querystring: query(['name', 'domain_id']) } }, async (request) => {
    const domainId = listDomainFor(request.principal, request.query.domain_id)
    guard(request, 'identity:list_groups', { domainId })
    const rows = await groups.listGroups(ctx.db, { name: request.query.name, domainId })
    return collection(ctx, request, 'groups', rows.map((g) => groupView(ctx, g)))
  })

  scope.get<IdParams>('/groups/:id', documented({ summary: 'Show a group', response: { 200: one('group', V.group) } }), async (request) => {
    const row = await groups.getGroup(ctx.db, request.params.id)
    guard(request, 'identity:get_group', { domainId: row.domain_id })
    return { group: groupView(ctx, row) }
  })

  scope.post<{ Body: Static<typeof GroupCreate> }>('/groups', { ...documented({ summary: 'Create a group', response: { 201: one('group', V.group) } }), schema: { body: GroupCreate } }, async (request, reply) => {
    const domainId = request.body.group.domain_id ?? callerDomain(request)
    guard(request, 'identity:create_group', { domainId })
    const row = await ctx.write((tx) => groups.createGroup(tx, request.body.group, domainId, ctx.now()))
    return reply.code(201).send({ group: groupView(ctx, row) })
  })

  scope.patch<IdParams & { Body: Static<typeof GroupUpdate> }>('/groups/:id', { ...documented({ summary: 'Update a group', response: { 200: one('group', V.group) } }), schema: { body: GroupUpdate } }, async (request) => {
    const current = await groups.getGroup(ctx.db, request.params.id)
    guard(request, 'identity:update_group', { domainId: current.domain_id })
    if (request.body.group.domain_id !== undefined && request.body.group.domain_id !== current.domain_id) {
      throw badRequest(`Invalid input for field 'domain_id': the domain of a group cannot change.`)
    }
    const row = await ctx.write((tx) => groups.updateGroup(tx, current.id, request.body.group))
    return { group: groupView(ctx, row) }
  })

  scope.delete<IdParams>('/groups/:id', documented({ summary: 'Delete a group', response: { 204: noBody('Deleted') } }), async (request, reply) => {
    const current = await groups.getGroup(ctx.db, request.params.id)
    guard(request, 'identity:delete_group', { domainId: current.domain_id })
    await ctx.write((tx) => groups.deleteGroup(tx, current.id))
    return reply.code(204).send()
  })

  scope.get<IdParams>('/groups/:id/users', documented({ summary: "A group's members", response: { 200: list('users', V.user) } }), async (request) => {
    const group = await groups.getGroup(ctx.db, request.params.id)
    guard(request, 'identity:list_users_in_group', { domainId: group.domain_id })
    return collection(ctx, request, 'users', (await groups.groupUsers(ctx.db, group.id)).map((u) => userView(ctx, u)))
  })

  /** Both sides are checked: a domain admin manages membership only when group and user are in its domain. */
  const member = async (request: FastifyRequest<MemberParams>) => {
    const group = await groups.getGroup(ctx.db, request.params.id)
    const user = await users.getUser(ctx.db, request.params.userId)
    return { group, user }
  }

  scope.route<MemberParams>({
    method: ['GET', 'HEAD'],
    url: '/groups/:id/users/:userId',
    ...documented({ summary: 'Check that a user is in a group', response: { 204: noBody('A member') } }),
    handler: async (request, reply) => {
      const { group, user } = await member(request)
      guard(request, 'identity:check_user_in_group', { domainId: group.domain_id })
      guard(request, 'identity:check_user_in_group', { domainId: user.domain_id })
      if (!(await groups.isMember(ctx.db, group.id, user.id))) throw notFound(`User ${user.id} is not a member of group ${group.id}.`)
      return reply.code(204).send()
    },
  })

  scope.put<MemberParams>('/groups/:id/users/:userId', documented({ summary: 'Add a user to a group', response: { 204: noBody('Added') } }), async (request, reply) => {
    const { group, user } = await member(request)
    guard(request, 'identity:add_user_to_group', { domainId: group.domain_id })
      guard(request, 'identity:add_user_to_group', { domainId: user.domain_id })
    await ctx.write((tx) => groups.addMember(tx, group.id, user.id))
    return reply.code(204).send()
  })

  scope.delete<MemberParams>('/groups/:id/users/:userId', documented({ summary: 'Remove a user from a group', response: { 204: noBody('Removed') } }), async (request, reply) => {
    const { group, user } = await member(request)
    guard(request, 'identity:remove_user_from_group', { domainId: group.domain_id })
      guard(request, 'identity:remove_user_from_group', { domainId: user.domain_id })
    await ctx.write((tx) => groups.removeMember(tx, group.id, user.id))
    return reply.code(204).send()
  })
}
