/**
 * The OIDC provider's HTTP surface at {base}/idp (issuer = {base}/idp): discovery, JWKS, the token endpoint,
 * the device authorization endpoint and userinfo (this file), and the pages for browsers (browser-routes.ts).
 * Form endpoints read application/x-www-form-urlencoded bodies (RFC 6749); errors are OAuth2 JSON (the
 * family's renderer); token responses are never cached.
 */
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { AppDeps } from '../../deps.js'
import type { TokenForm } from '../../oidc/provider.js'
import { idpBrowserRoutes } from './browser-routes.js'

const TOKEN_FIELDS = [
  'grant_type', 'client_id', 'client_secret', 'scope', 'username', 'password', 'connector_id', 'refresh_token', 'nonce', 'totp',
  'code', 'redirect_uri', 'code_verifier', 'device_code',
]

const str = { type: 'string' }
// Null: a bodiless request is an empty form, which the provider answers with what is missing (RFC 6749 §5.2).
const formBody = (fields: string[]) => ({ type: ['object', 'null'], properties: Object.fromEntries(fields.map((f) => [f, { type: 'string' }])) })

/** RFC 6749 §5.1: responses carrying tokens are never stored by caches. */
const noStore = (reply: FastifyReply) => reply.header('cache-control', 'no-store').header('pragma', 'no-cache')

export function idpRoutes(deps: AppDeps) {
  const provider = deps.idp.provider
  return async (scope: FastifyInstance): Promise<void> => {
    scope.addContentTypeParser<string>('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
      // Repeated fields: the first one counts, as Go's url.Values.Get reads it in Dex.
      const form: Record<string, string> = {}
      for (const [key, value] of new URLSearchParams(body)) if (!(key in form)) form[key] = value
      done(null, form)
    })

    const json = (description: string) => ({ type: 'object', description })
    scope.get('/.well-known/openid-configuration', { schema: { tags: ['idp'], summary: 'OpenID Connect discovery', security: [], response: { 200: json('OpenID Provider Metadata') } } }, async (_request, reply) => {
      reply.header('access-control-allow-origin', '*').header('cache-control', 'public, max-age=3600')
      return provider.discovery()
    })

    scope.get('/keys', { schema: { tags: ['idp'], summary: 'The signing keys', security: [], response: { 200: json('A JSON Web Key Set') } } }, async (_request, reply) => {
      reply.header('access-control-allow-origin', '*').header('cache-control', 'max-age=600, must-revalidate')
      return provider.jwks()
    })

    const tokenAnswer = { type: 'object', properties: { access_token: str, token_type: str, expires_in: { type: 'integer' }, id_token: str, refresh_token: str }, required: ['access_token', 'token_type'] }
    const token = { tags: ['idp'], summary: 'The token endpoint (RFC 6749): the client authenticates itself', security: [], consumes: ['application/x-www-form-urlencoded'], body: formBody(TOKEN_FIELDS), response: { 200: tokenAnswer } }
    scope.post<{ Body: TokenForm }>('/token', { schema: token }, async (request, reply) => {
      const result = await provider.token(request.body ?? {}, request.headers.authorization)
      noStore(reply)
      return result
    })

    const deviceAnswer = { type: 'object', properties: { device_code: str, user_code: str, verification_uri: str, verification_uri_complete: str, expires_in: { type: 'integer' }, interval: { type: 'integer' } }, required: ['device_code', 'user_code', 'verification_uri'] }
    const device = { tags: ['idp'], summary: 'The device authorization endpoint (RFC 8628 §3.1)', security: [], consumes: ['application/x-www-form-urlencoded'], body: formBody(['client_id', 'client_secret', 'scope']), response: { 200: deviceAnswer } }
    scope.post<{ Body: TokenForm }>('/device/code', { schema: device }, async (request, reply) => {
      const result = await provider.deviceAuthorization(request.body ?? {}, request.headers.authorization)
      noStore(reply)
      return result
    })

    // OpenID Connect Core §5.3.1: GET and POST, the access token in the Authorization header.
    for (const method of ['GET', 'POST'] as const) {
      scope.route({
        method,
        url: '/userinfo',
        schema: { tags: ['idp'], summary: "The user's claims (OpenID Connect Core §5.3), for its access token", security: [{ idpAccessToken: [] }], response: { 200: { type: 'object', properties: { sub: str }, required: ['sub'] } } },
        handler: async (request, reply) => {
          const claims = await provider.userinfo(request.headers.authorization)
          noStore(reply)
          return claims
        },
      })
    }

    await idpBrowserRoutes(deps)(scope)
  }
}
