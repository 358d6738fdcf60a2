/**
 * The OIDC provider's HTTP surface at {base}/idp (issuer = {base}/idp): discovery, JWKS and the token endpoint.
 * The token endpoint reads application/x-www-form-urlencoded bodies (RFC 6749); errors are OAuth2 JSON
 * (the family's renderer); successful token responses are never cached.
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import type { TokenForm } from '../../oidc/provider.js'

const TOKEN_FIELDS = ['grant_type', 'client_id', 'client_secret', 'scope', 'username', 'password', 'connector_id', 'refresh_token', 'nonce', 'totp']

const str = { type: 'string' }
const tokenBody = {
  type: 'object',
  properties: Object.fromEntries(TOKEN_FIELDS.map((f) => [f, { type: 'string' }])),
}

export function idpRoutes(deps: AppDeps) {
  const provider = deps.idp.provider
  return async (scope: FastifyInstance): Promise<void> => {
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
      // Repeated fields: the first one counts, as Go's url.Values.Get reads it in Dex.
      const form: Record<string, string> = {}
      for (const [key, value] of new URLSearchParams(body as string)) if (!(key in form)) form[key] = value
      done(null, form)
    })

    const json = (description: string) => ({ type: 'object', description })
    scope.get('/.well-known/openid-configuration', { schema: { tags: ['idp'], summary: 'OpenID Connect discovery', response: { 200: json('OpenID Provider Metadata') } } }, async (_request, reply) => {
      reply.header('access-control-allow-origin', '*').header('cache-control', 'public, max-age=3600')
      return provider.discovery()
    })

    scope.get('/keys', { schema: { tags: ['idp'], summary: 'The signing keys', response: { 200: json('A JSON Web Key Set') } } }, async (_request, reply) => {
      reply.header('access-control-allow-origin', '*').header('cache-control', 'max-age=600, must-revalidate')
      return provider.jwks()
    })

    const tokenAnswer = { type: 'object', properties: { access_token: str, token_type: str, expires_in: { type: 'integer' }, id_token: str, refresh_token: str }, required: ['access_token', 'token_type'] }
    scope.post<{ Body: TokenForm }>('/token', { schema: { tags: ['idp'], summary: 'The token endpoint (RFC 6749)', consumes: ['application/x-www-form-urlencoded'], body: tokenBody, response: { 200: tokenAnswer } } }, async (request, reply) => {
      const result = await provider.token(request.body ?? {}, request.headers.authorization)
      reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
      return result
    })
  }
}
