/**
 * Shared by the identity admin tests: a real server, tokens issued directly by the token service (the login
 * route belongs to the auth half of the identity work), and a small JSON client.
 */
import { startTestServer, type Dialect, type TestServer } from '../../../src/testkit/harness.js'
import type { TokenPayload } from '../../../src/server/identity/token-format.js'

// Response bodies are whatever the server sent; the tests assert their shape field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any

export interface Reply<T = Json> {
  status: number
  body: T
  headers: Headers
}

export interface Fixture {
  server: TestServer
  adminToken: string
  base: string
  call<T = Json>(method: string, path: string, options?: { token?: string | null; body?: unknown; raw?: string }): Promise<Reply<T>>
  tokenFor(userId: string, scope: TokenPayload['s']): Promise<string>
  close(): Promise<void>
}

export async function startFixture(dialect: Dialect = 'sqlite'): Promise<Fixture> {
  const server = await startTestServer({ dialect, publicUrlFromListen: true })
  const base = `${server.url}/identity/v3`
  const tokenFor = async (userId: string, scope: TokenPayload['s']) => (await server.deps.tokens.issue({ userId, methods: ['password'], scope })).token
  const adminToken = await tokenFor(server.bootstrap.adminUserId, { p: server.bootstrap.adminProjectId })
  const call: Fixture['call'] = async (method, path, options = {}) => {
    const headers: Record<string, string> = {}
    const token = options.token === undefined ? adminToken : options.token
    if (token) headers['x-auth-token'] = token
    let payload: string | undefined
    if (options.raw !== undefined) payload = options.raw
    else if (options.body !== undefined) payload = JSON.stringify(options.body)
    if (payload !== undefined) headers['content-type'] = 'application/json'
    const res = await fetch(`${base}${path}`, { method, headers, body: payload })
    const text = await res.text()
    let body: Json = text
    try {
      body = text ? JSON.parse(text) : undefined
    } catch {
      /* not JSON: keep the text for the assertion message */
    }
    return { status: res.status, body, headers: res.headers }
  }
  return { server, adminToken, base, call, tokenFor, close: () => server.close() }
}

/** Asserts the identity error envelope and returns its message. */
export function errorMessage(reply: Reply): string {
  const e = reply.body?.error
  if (!e || e.code !== reply.status || typeof e.title !== 'string' || typeof e.message !== 'string') {
    throw new Error(`not an identity error body (${reply.status}): ${JSON.stringify(reply.body)}`)
  }
  if (!reply.headers.get('content-type')?.startsWith('application/json')) throw new Error('error without JSON content type')
  return e.message
}
