/**
 * The IdP's clients in the resource manager ({base}/resmgr/v2/idpclients), authenticated by `x-auth-token`:
 * the spec's client-secrets map (GET), and for admins the registration of further OIDC clients with their
 * redirect URIs, their details, changes, deletion and secret rotation with a grace period. Policy:
 * policy/idp.policy.ts; rules of redirect URIs: oidc/redirect-uris.ts.
 */
import type { FastifyInstance } from 'fastify'
import { AppError } from '../../../contracts/errors.js'
import { authHook } from '../../auth/http-auth.js'
import type { AppDeps } from '../../deps.js'
import { hasProjectRole } from '../../oidc/claims.js'
import type { IdpClient } from '../../oidc/clients.js'
import { IDP_POLICY } from '../../policy/idp.policy.js'
import { allows, authorize } from '../../policy/rules.js'
import { noBody } from '../../http/openapi.js'

const secretsMap = { type: 'object', additionalProperties: { type: 'string' } }
const clientIdParams = { type: 'object', properties: { clientId: { type: 'string', minLength: 1, maxLength: 255 } }, required: ['clientId'] }
const redirectUris = { type: 'array', minItems: 1, maxItems: 20, items: { type: 'string', minLength: 1, maxLength: 2000 } }

/** The wire form of a client: the allow-list of what an admin sees (the secret only where a route adds it). */
const clientSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    redirect_uris: { type: 'array', items: { type: 'string' } },
    public: { type: 'boolean' },
    builtin: { type: 'boolean' },
    created_at: { type: 'string' },
    secret_rotated_at: { type: ['string', 'null'] },
    client_secret: { type: 'string' },
  },
}
const clientBody = { type: 'object', required: ['client'], properties: { client: clientSchema } }

interface ClientInput {
  id?: string
  name?: string
  redirect_uris?: string[]
  public?: boolean
}

function wire(client: IdpClient, secret?: string) {
  return {
    id: client.id,
    name: client.name,
    redirect_uris: client.redirectUris,
    public: client.public,
    builtin: client.builtin,
    created_at: new Date(client.createdAt).toISOString(),
    secret_rotated_at: client.rotatedAt === null ? null : new Date(client.rotatedAt).toISOString(),
    ...(secret !== undefined ? { client_secret: secret } : {}),
  }
}

export function idpClientRoutes(deps: AppDeps) {
  const requireAuth = authHook(deps.tokens, deps.urls.identity)
  const clients = deps.idp.clients
  const found = async (clientId: string) => {
    const client = await clients.get(clientId)
    if (!client) throw new AppError('not_found', `Could not find IdP client: ${clientId}.`)
    return client
  }

  return async (scope: FastifyInstance): Promise<void> => {
    scope.get('/v2/idpclients', { onRequest: requireAuth, schema: { tags: ['resmgr'], summary: 'IdP client secrets: client_id → client_secret', response: { 200: secretsMap } } }, async (request, reply) => {
      authorize(IDP_POLICY, 'idp_clients:list', request.principal)
      if (!request.principal.roles.length && !(await hasProjectRole(deps.store.db, request.principal.userId))) {
        throw new AppError('forbidden', 'Reading IdP client secrets needs a role on a project.')
      }
      reply.header('cache-control', 'no-store')
      return clients.secrets(allows(IDP_POLICY, 'idp_clients:list_all', request.principal) ? 'all' : 'builtin')
    })

    scope.post<{ Body: { client: ClientInput } }>(
      '/v2/idpclients',
      {
        onRequest: requireAuth,
        schema: {
          tags: ['resmgr'],
          summary: 'Register an OIDC client (admin); answers its secret, once',
          body: {
            type: 'object',
            required: ['client'],
            properties: {
              client: {
                type: 'object',
                required: ['name', 'redirect_uris'],
                additionalProperties: false,
                properties: { id: { type: 'string', maxLength: 64 }, name: { type: 'string', maxLength: 255 }, redirect_uris: redirectUris, public: { type: 'boolean' } },
              },
            },
          },
          response: { 201: clientBody },
        },
      },
      async (request, reply) => {
        authorize(IDP_POLICY, 'idp_clients:create', request.principal)
        const input = request.body.client
        const { client, secret } = await clients.register({ id: input.id, name: input.name!, redirectUris: input.redirect_uris!, public: input.public })
        request.log.info({ clientId: client.id }, 'IdP client registered')
        reply.code(201).header('cache-control', 'no-store')
        return { client: wire(client, secret) }
      },
    )

    scope.get<{ Params: { clientId: string } }>(
      '/v2/idpclients/:clientId',
      { onRequest: requireAuth, schema: { tags: ['resmgr'], summary: 'Show an IdP client with its secret (admin)', params: clientIdParams, response: { 200: clientBody } } },
      async (request, reply) => {
        authorize(IDP_POLICY, 'idp_clients:show', request.principal)
        const client = await found(request.params.clientId)
        reply.header('cache-control', 'no-store')
        return { client: wire(client, await clients.secretOf(client.id)) }
      },
    )

    scope.patch<{ Params: { clientId: string }; Body: { client: ClientInput } }>(
      '/v2/idpclients/:clientId',
      {
        onRequest: requireAuth,
        schema: {
          tags: ['resmgr'],
          summary: "Change an IdP client's name or redirect URIs (admin)",
          params: clientIdParams,
          body: {
            type: 'object',
            required: ['client'],
            properties: { client: { type: 'object', additionalProperties: false, properties: { name: { type: 'string', maxLength: 255 }, redirect_uris: redirectUris } } },
          },
          response: { 200: clientBody },
        },
      },
      async (request) => {
        authorize(IDP_POLICY, 'idp_clients:update', request.principal)
        const { name, redirect_uris } = request.body.client
        return { client: wire(await clients.update(request.params.clientId, { name, redirectUris: redirect_uris })) }
      },
    )

    scope.delete<{ Params: { clientId: string } }>(
      '/v2/idpclients/:clientId',
      { onRequest: requireAuth, schema: { tags: ['resmgr'], summary: 'Delete an IdP client (admin)', params: clientIdParams, response: { 204: noBody('Deleted') } } },
      async (request, reply) => {
        authorize(IDP_POLICY, 'idp_clients:delete', request.principal)
        await clients.remove(request.params.clientId)
        request.log.info({ clientId: request.params.clientId }, 'IdP client deleted')
        return reply.code(204).send()
      },
    )

    scope.post<{ Params: { clientId: string } }>(
      '/v2/idpclients/:clientId/rotate',
      {
        onRequest: requireAuth,
        schema: {
          tags: ['resmgr'],
          summary: "Rotate an IdP client's secret (admin); the previous one stays valid for a while",
          params: clientIdParams,
          response: { 200: { type: 'object', properties: { client_id: { type: 'string' }, client_secret: { type: 'string' }, previous_secret_valid_until: { type: 'string' } } } },
        },
      },
      async (request, reply) => {
        authorize(IDP_POLICY, 'idp_clients:rotate', request.principal)
        const { secret, previousValidUntil } = await clients.rotate(request.params.clientId)
        request.log.info({ clientId: request.params.clientId }, 'IdP client secret rotated')
        reply.header('cache-control', 'no-store')
        return { client_id: request.params.clientId, client_secret: secret, previous_secret_valid_until: new Date(previousValidUntil).toISOString() }
      },
    )
  }
}
