/**
 * The authentication hook API families add to their authenticated routes. It reads the identity token from
 * `X-Auth-Token` (OpenStack clients) or `Authorization: Bearer` (the spec's compute scheme) and sets
 * `request.principal`; a missing or invalid token is 401 in the family's error shape.
 */
import type { FastifyRequest } from 'fastify'
import { AppError } from '../../contracts/errors.js'
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

export function authHook(authenticator: Authenticator, identityUrl: string) {
  return async function requireAuth(request: FastifyRequest): Promise<void> {
    const token = tokenFrom(request)
    if (!token) throw new AppError('unauthorized', 'The request you have made requires authentication.', { headers: authChallenge(identityUrl) })
    try {
      request.principal = await authenticator.authenticate(token)
    } catch (err) {
      if (err instanceof AppError && err.code === 'unauthorized') {
        throw new AppError('unauthorized', err.message, { headers: { ...authChallenge(identityUrl), ...err.options.headers } })
      }
      throw err
    }
  }
}
