/**
 * The authentication hook API families add to their authenticated routes. It reads the identity token from
 * `X-Auth-Token` (OpenStack clients) or `Authorization: Bearer` (the spec's compute scheme) and sets
 * `request.principal`; a missing or invalid token is 401 in the family's error shape.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../../contracts/errors.js'
import { accessAllowed } from '../identity/access-rules.js'
import type { Authenticator, Principal } from './principal.js'

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal
  }
}

export function tokenFrom(request: FastifyRequest): string | undefined {
  const header = request.headers['x-auth-token']
  if (typeof header === 'string' && header !== '') return header
  const authorization = request.headers.authorization
  if (authorization && /^bearer /i.test(authorization)) return authorization.slice(7).trim() || undefined
  return undefined
}

/** Identity's WWW-Authenticate value: clients read it to know where to get a token. */
export function authChallenge(identityUrl: string): Record<string, string> {
  return { 'www-authenticate': `Keystone uri="${identityUrl}"` }
}

/** A 401 from the authenticator, with the challenge that tells the client where to get a token. */
function challenged(err: unknown, identityUrl: string): Error {
  if (err instanceof AppError && err.code === 'unauthorized') {
    return new AppError('unauthorized', err.message, { headers: { ...authChallenge(identityUrl), ...err.options.headers } })
  }
  return err as Error
}

/**
 * A token from an application credential with access rules makes only the requests they allow; any other is
 * 401, as keystonemiddleware answers in front of an OpenStack service.
 */
function outsideAccessRules(request: FastifyRequest, identityUrl: string): Error | undefined {
  const rules = request.principal.accessRules
  if (!rules || accessAllowed(rules, request.method, request.url)) return undefined
  return new AppError('unauthorized', 'The application credential used for this token does not allow this request (access rules).', { headers: authChallenge(identityUrl) })
}

/**
 * The hook that sets `request.principal` (onRequest or preHandler). Callback style: most requests are answered
 * from the token snapshot at once and need no promise.
 */
export function authHook(authenticator: Authenticator, identityUrl: string) {
  return function requireAuth(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
    const token = tokenFrom(request)
    if (!token) return done(new AppError('unauthorized', 'The request you have made requires authentication.', { headers: authChallenge(identityUrl) }))
    let now: Principal | undefined
    try {
      now = authenticator.authenticateNow?.(token)
    } catch (err) {
      return done(challenged(err, identityUrl))
    }
    if (now) {
      request.principal = now
      return done(outsideAccessRules(request, identityUrl))
    }
    authenticator.authenticate(token).then(
      (principal) => {
        request.principal = principal
        done(outsideAccessRules(request, identityUrl))
      },
      (err: unknown) => done(challenged(err, identityUrl)),
    )
  }
}
