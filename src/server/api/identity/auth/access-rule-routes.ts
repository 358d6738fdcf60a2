/**
 * /v3/users/{user_id}/access_rules (Keystone): the access rules a user's application credentials made. A rule is
 * listed until deleted; one that a credential still names cannot be deleted (403).
 */
import type { FastifyInstance, preHandlerHookHandler } from 'fastify'
import { notFound } from '../../../../contracts/errors.js'
import type { AppDeps } from '../../../deps.js'
import { type AccessRuleRow, deleteUserAccessRule, getUserAccessRule, listUserAccessRules } from '../../../identity/repo/access-rules.repo.js'
import { authorize } from '../../../policy/rules.js'
import { identityAuthPolicy } from '../../../policy/identity-auth.policy.js'
import { documented, noBody } from '../../../http/openapi.js'
import { V, list, one } from '../answers.js'

const listQuery = {
  type: 'object',
  properties: { service: { type: 'string' }, method: { type: 'string' }, path: { type: 'string' } },
} as const

export function accessRuleRoutes(deps: AppDeps, requireAuth: preHandlerHookHandler) {
  const db = deps.store.db
  const base = (userId: string) => `${deps.urls.identity}/users/${userId}/access_rules`
  const render = (row: AccessRuleRow) => ({ id: row.id, service: row.service, method: row.method, path: row.path, links: { self: `${base(row.user_id)}/${row.id}` } })
  const requireUser = (userId: string) => {
    if (!deps.tokens.snapshot.users.has(userId)) throw notFound(`Could not find user: ${userId}.`)
  }

  return async (scope: FastifyInstance): Promise<void> => {
    scope.get<{ Params: { user_id: string }; Querystring: { service?: string; method?: string; path?: string } }>(
      '/v3/users/:user_id/access_rules',
      { ...documented({ summary: "A user's access rules", response: { 200: list('access_rules', V.accessRule) } }), schema: { querystring: listQuery }, preHandler: requireAuth },
      async (request) => {
        const userId = request.params.user_id
        authorize(identityAuthPolicy, 'identity:list_access_rules', request.principal, { userId })
        requireUser(userId)
        const rows = await listUserAccessRules(db, userId, request.query)
        return { access_rules: rows.map(render), links: { self: base(userId), previous: null, next: null } }
      },
    )

    scope.get<{ Params: { user_id: string; access_rule_id: string } }>(
      '/v3/users/:user_id/access_rules/:access_rule_id',
      { ...documented({ summary: 'Show an access rule', response: { 200: one('access_rule', V.accessRule) } }), preHandler: requireAuth },
      async (request) => {
        const { user_id: userId, access_rule_id: id } = request.params
        authorize(identityAuthPolicy, 'identity:get_access_rule', request.principal, { userId })
        return { access_rule: render(await getUserAccessRule(db, userId, id)) }
      },
    )

    scope.delete<{ Params: { user_id: string; access_rule_id: string } }>(
      '/v3/users/:user_id/access_rules/:access_rule_id',
      { ...documented({ summary: 'Delete an access rule no application credential uses', response: { 204: noBody('Deleted') } }), preHandler: requireAuth },
      async (request, reply) => {
        const { user_id: userId, access_rule_id: id } = request.params
        authorize(identityAuthPolicy, 'identity:delete_access_rule', request.principal, { userId })
        await deleteUserAccessRule(db, userId, id)
        return reply.code(204).send()
      },
    )
  }
}
