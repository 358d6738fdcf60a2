/**
 * Keystone's OS-OAUTH1 token flow (docs/identity.md, "OAuth 1.0a delegation"): request tokens and access tokens
 * (signed by the consumer, no X-Auth-Token; answers form-encoded as Keystone's), authorizing a request token
 * (a user's token), and a user's access tokens and their roles. The rules are identity/oauth1.ts; the consumers
 * are admin/oauth-consumers.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify'
import { forbidden, notFound } from '../../../../contracts/errors.js'
import type { AppDeps } from '../../../deps.js'
import { deleteAccessToken, delegated, getUserAccessToken, listUserAccessTokens, oauthTime, type SignedRequest } from '../../../identity/oauth1.js'
import { normalizedUri } from '../../../identity/oauth1-signature.js'
import { authorize } from '../../../policy/rules.js'
import { identityAuthPolicy } from '../../../policy/identity-auth.policy.js'
import { documented, noBody, OPEN } from '../../../http/openapi.js'
import { A, V, list, one } from '../answers.js'
import type { FromSchema } from '../../../http/route-types.js'

const FORM_TYPE = 'application/x-www-form-urlencoded'

const projectHeader = { type: 'object', properties: { 'requested-project-id': { type: 'string', maxLength: 64 } } } as const

const authorizeBody = {
  type: 'object',
  required: ['roles'],
  properties: {
    roles: {
      type: 'array',
      maxItems: 100,
      items: {
        type: 'object',
        additionalProperties: false,
        minProperties: 1,
        maxProperties: 1,
        properties: { id: { type: 'string', minLength: 1, maxLength: 64 }, name: { type: 'string', minLength: 1, maxLength: 255 } },
      },
    },
  },
} as const

type AccessTokenRow = Awaited<ReturnType<typeof getUserAccessToken>>

/**
 * The request as the consumer signed it. The URI it signed is the identity endpoint the client was given (the
 * catalog's, from the server's public URL) or, behind no proxy, the one this request reached; both are tried.
 */
export function signedRequest(request: FastifyRequest, identityUrl: string): SignedRequest {
  const [path, query = ''] = request.url.split('?', 2)
  const under = path.indexOf('/v3/')
  const uris = [under >= 0 ? `${identityUrl}${path.slice(under + 3)}` : undefined, `${request.protocol}://${request.headers.host ?? ''}${path}`]
    .map((u) => (u === undefined ? undefined : normalizedUri(u)))
    .filter((u): u is string => u !== undefined)
  const authorization = request.headers.authorization
  return { method: request.method, authorization: typeof authorization === 'string' ? authorization : undefined, uris, query: [...new URLSearchParams(query)] }
}

/** Keystone's form answer; the expiry is not encoded, as Keystone writes it. */
function formAnswer(reply: FastifyReply, token: { key: string; secret: string; expiresAt: number }) {
  return reply.code(201).type(FORM_TYPE).send(`oauth_token=${token.key}&oauth_token_secret=${token.secret}&oauth_expires_at=${oauthTime(token.expiresAt)}`)
}

export function oauth1Routes(deps: AppDeps, requireAuth: preHandlerHookHandler) {
  const db = deps.store.db
  const flow = deps.identityAuth.oauth1
  const identityUrl = deps.urls.identity
  const tokenBase = (userId: string) => `${identityUrl}/users/${userId}/OS-OAUTH1/access_tokens`
  const render = (row: AccessTokenRow) => ({
    id: row.id,
    consumer_id: row.consumer_id,
    project_id: row.project_id,
    authorizing_user_id: row.authorizing_user_id,
    expires_at: oauthTime(Number(row.expires_at)),
    links: { self: `${tokenBase(row.authorizing_user_id)}/${row.id}`, roles: `${tokenBase(row.authorizing_user_id)}/${row.id}/roles` },
  })
  const roleView = (row: AccessTokenRow, roleId: string) => {
    const role = deps.tokens.snapshot.roles.get(roleId)
    return role ? { id: role.id, name: role.name, domain_id: role.domainId, description: role.description, links: { self: `${tokenBase(row.authorizing_user_id)}/${row.id}/roles/${role.id}` } } : undefined
  }
  const roleIdsOf = (row: AccessTokenRow) => JSON.parse(row.role_ids) as string[]

  type TokenParams = { Params: { user_id: string; access_token_id: string } }

  return async (scope: FastifyInstance): Promise<void> => {
    scope.post<{ Headers: FromSchema<typeof projectHeader> }>(
      '/v3/OS-OAUTH1/request_token',
      { ...documented({ ...OPEN, summary: 'Create a request token (OAuth 1.0a, signed by the consumer; Requested-Project-Id)', response: { 201: A.oauthForm } }), schema: { headers: projectHeader } },
      async (request, reply) => {
        const token = await flow.createRequestToken(signedRequest(request, identityUrl), request.headers['requested-project-id'], async (id) => {
          // A project made a moment ago by another process: look once more before answering 404.
          if (!deps.tokens.snapshot.projects.has(id)) await deps.tokens.refresh()
          return deps.tokens.snapshot.projects.has(id)
        })
        return formAnswer(reply, token)
      },
    )

    scope.put<{ Params: { request_token_id: string }; Body: FromSchema<typeof authorizeBody> }>(
      '/v3/OS-OAUTH1/authorize/:request_token_id',
      { ...documented({ summary: 'Authorize a request token with roles the caller holds on its project (answers the verifier)', response: { 200: A.oauthVerifier } }), schema: { body: authorizeBody }, preHandler: requireAuth },
      async (request) => {
        authorize(identityAuthPolicy, 'identity:authorize_request_token', request.principal)
        // Grants written a moment ago by any process count (the flow reads the store anyway).
        await deps.tokens.refresh()
        const verifier = await flow.authorize(request.params.request_token_id, request.principal, request.body.roles, deps.tokens.snapshot)
        return { token: { oauth_verifier: verifier } }
      },
    )

    scope.post(
      '/v3/OS-OAUTH1/access_token',
      documented({ ...OPEN, summary: 'Exchange an authorized request token and its verifier for an access token (OAuth 1.0a, signed)', response: { 201: A.oauthForm } }),
      async (request, reply) => {
        const token = await flow.createAccessToken(signedRequest(request, identityUrl))
        await deps.tokens.refresh()
        return formAnswer(reply, token)
      },
    )

    scope.get<{ Params: { user_id: string } }>(
      '/v3/users/:user_id/OS-OAUTH1/access_tokens',
      { ...documented({ summary: "A user's OAuth access tokens", response: { 200: list('access_tokens', V.accessToken) } }), preHandler: requireAuth },
      async (request) => {
        const userId = request.params.user_id
        authorize(identityAuthPolicy, 'identity:list_access_tokens', request.principal, { userId })
        if (delegated(request.principal, deps.tokens.snapshot)) throw forbidden('Cannot list access tokens with a token issued via delegation.')
        if (!deps.tokens.snapshot.users.has(userId)) throw notFound(`Could not find user: ${userId}.`)
        const rows = await listUserAccessTokens(db, userId)
        return { access_tokens: rows.map(render), links: { self: tokenBase(userId), previous: null, next: null } }
      },
    )

    scope.get<TokenParams>(
      '/v3/users/:user_id/OS-OAUTH1/access_tokens/:access_token_id',
      { ...documented({ summary: 'Show an OAuth access token', response: { 200: one('access_token', V.accessToken) } }), preHandler: requireAuth },
      async (request) => {
        const { user_id: userId, access_token_id: id } = request.params
        authorize(identityAuthPolicy, 'identity:get_access_token', request.principal, { userId })
        return { access_token: render(await getUserAccessToken(db, userId, id)) }
      },
    )

    scope.delete<TokenParams>(
      '/v3/users/:user_id/OS-OAUTH1/access_tokens/:access_token_id',
      { ...documented({ summary: 'Delete an OAuth access token (the tokens made from it end)', response: { 204: noBody('Deleted') } }), preHandler: requireAuth },
      async (request, reply) => {
        const { user_id: userId, access_token_id: id } = request.params
        authorize(identityAuthPolicy, 'identity:delete_access_token', request.principal, { userId })
        const row = await getUserAccessToken(db, userId, id)
        await deleteAccessToken(db, row.id)
        // Its tokens end with it, here at once and elsewhere at the next poll.
        await deps.tokens.refresh()
        return reply.code(204).send()
      },
    )

    scope.get<TokenParams>(
      '/v3/users/:user_id/OS-OAUTH1/access_tokens/:access_token_id/roles',
      { ...documented({ summary: 'The roles an OAuth access token delegates', response: { 200: list('roles', V.role) } }), preHandler: requireAuth },
      async (request) => {
        const { user_id: userId, access_token_id: id } = request.params
        authorize(identityAuthPolicy, 'identity:list_access_token_roles', request.principal, { userId })
        const row = await getUserAccessToken(db, userId, id)
        const roles = roleIdsOf(row).map((roleId) => roleView(row, roleId)).filter((r) => r !== undefined)
        return { roles, links: { self: `${tokenBase(userId)}/${id}/roles`, previous: null, next: null } }
      },
    )

    scope.get<TokenParams & { Params: { role_id: string } }>(
      '/v3/users/:user_id/OS-OAUTH1/access_tokens/:access_token_id/roles/:role_id',
      { ...documented({ summary: 'Show a role an OAuth access token delegates', response: { 200: one('role', V.role) } }), preHandler: requireAuth },
      async (request) => {
        const { user_id: userId, access_token_id: id, role_id: roleId } = request.params
        authorize(identityAuthPolicy, 'identity:get_access_token_role', request.principal, { userId })
        const row = await getUserAccessToken(db, userId, id)
        const role = roleIdsOf(row).includes(roleId) ? roleView(row, roleId) : undefined
        if (!role) throw notFound(`Could not find role: ${roleId}.`)
        return { role }
      },
    )
  }
}
