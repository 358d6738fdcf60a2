/**
 * GET {base}/resmgr/v2/idpclients: client_id → client_secret for the IdP's clients (the spec's client-secrets
 * endpoint), and POST {base}/resmgr/v2/idpclients/{id}/rotate for admins. Authenticated by `x-auth-token`.
 */
import type { FastifyInstance } from 'fastify'
import { AppError } from '../../../contracts/errors.js'
import { authHook } from '../../auth/http-auth.js'
import type { AppDeps } from '../../deps.js'
import { hasProjectRole } from '../../oidc/claims.js'
import { IDP_POLICY } from '../../policy/idp.policy.js'
import { authorize } from '../../policy/rules.js'

const secretsMap = { type: 'object', additionalProperties: { type: 'string' } }

export function idpClientRoutes(deps: AppDeps) {
  const requireAuth = authHook(deps.tokens, deps.urls.identity)
  return async (scope: FastifyInstance): Promise<void> => {
    scope.get('/v2/idpclients', { onRequest: requireAuth, schema: { tags: ['resmgr'], summary: 'IdP client secrets: client_id → client_secret', response: { 200: secretsMap } } }, async (request, reply) => {
      authorize(IDP_POLICY, 'idp_clients:list', request.principal)
      if (!request.principal.roles.length && !(await hasProjectRole(deps.store.db, request.principal.userId))) {
        throw new AppError('forbidden', 'Reading IdP client secrets needs a role on a project.')
      }
      reply.header('cache-control', 'no-store')
      return deps.idp.clients.secrets()
    })

    scope.post<{ Params: { clientId: string } }>(
      '/v2/idpclients/:clientId/rotate',
      {
        onRequest: requireAuth,
        schema: {
          tags: ['resmgr'],
          summary: "Rotate an IdP client's secret (admin); the previous one stays valid for a while",
          params: { type: 'object', properties: { clientId: { type: 'string', minLength: 1, maxLength: 255 } }, required: ['clientId'] },
          response: { 200: { type: 'object', properties: { client_id: { type: 'string' }, client_secret: { type: 'string' }, previous_secret_valid_until: { type: 'string' } } } },
        },
      },
      async (request, reply) => {
        authorize(IDP_POLICY, 'idp_clients:rotate', request.principal)
        const { secret, previousValidUntil } = await deps.idp.clients.rotate(request.params.clientId)
        request.log.info({ clientId: request.params.clientId }, 'IdP client secret rotated')
        reply.header('cache-control', 'no-store')
        return { client_id: request.params.clientId, client_secret: secret, previous_secret_valid_until: new Date(previousValidUntil).toISOString() }
      },
    )
  }
}
