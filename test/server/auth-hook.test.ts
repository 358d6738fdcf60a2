/**
 * The authentication hook's three paths: a principal ready at once, one that needs the authenticator's async
 * path (a snapshot that is not fresh yet), and a refused token, which is 401 with Keystone's challenge.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import Fastify from 'fastify'
import { AppError } from '../../src/contracts/errors.js'
import { authHook } from '../../src/server/auth/http-auth.js'
import type { Authenticator, Principal } from '../../src/server/auth/principal.js'

const principal = (userId: string) => ({ userId }) as unknown as Principal

/** Knows `now-…` tokens at once, `later-…` tokens only asynchronously, and refuses the rest. */
function authenticator(calls: string[]): Authenticator {
  const refuse = () => new AppError('unauthorized', 'The request you have made requires authentication.')
  return {
    authenticateNow(token) {
      calls.push(`now ${token}`)
      if (token.startsWith('later-')) return undefined
      if (token.startsWith('now-')) return principal(token)
      throw refuse()
    },
    async authenticate(token) {
      calls.push(`async ${token}`)
      await new Promise((resolve) => setTimeout(resolve, 5))
      if (token.startsWith('later-')) return principal(token)
      throw refuse()
    },
  }
}

async function app(calls: string[]) {
  const server = Fastify()
  server.decorateRequest('principal', null as unknown as Principal)
  server.setErrorHandler((err, _request, reply) => {
    const e = err as AppError
    return reply.code(e.status ?? 500).headers(e.options?.headers ?? {}).send({ error: e.message })
  })
  server.get('/who', { onRequest: authHook(authenticator(calls), 'http://pcc.test/identity/v3') }, async (request) => ({ user: (request.principal as unknown as { userId: string }).userId }))
  await server.ready()
  return server
}

describe('authHook', () => {
  it('uses the principal that is ready at once, without the async path', async () => {
    const calls: string[] = []
    const r = await (await app(calls)).inject({ url: '/who', headers: { 'x-auth-token': 'now-1' } })
    assert.equal(r.statusCode, 200)
    assert.deepEqual(r.json(), { user: 'now-1' })
    assert.deepEqual(calls, ['now now-1'])
  })

  it('waits for the authenticator when the principal is not ready at once (Bearer works too)', async () => {
    const calls: string[] = []
    const r = await (await app(calls)).inject({ url: '/who', headers: { authorization: 'Bearer later-2' } })
    assert.equal(r.statusCode, 200)
    assert.deepEqual(r.json(), { user: 'later-2' })
    assert.deepEqual(calls, ['now later-2', 'async later-2'])
  })

  it('answers a refused or missing token with 401 and the challenge that names the identity endpoint', async () => {
    const calls: string[] = []
    const server = await app(calls)
    for (const headers of [{ 'x-auth-token': 'bad' }, {}]) {
      const r = await server.inject({ url: '/who', headers })
      assert.equal(r.statusCode, 401)
      assert.equal(r.headers['www-authenticate'], 'Keystone uri="http://pcc.test/identity/v3"')
    }
    assert.deepEqual(calls, ['now bad'])
  })
})
