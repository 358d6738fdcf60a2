/**
 * Test helpers of the image and volume suites: tokens issued straight from the token service (so these tests
 * do not depend on the password route), a second project with a member user, and small fetch wrappers.
 */
import { randomUUID } from 'node:crypto'
import type { TestServer } from '../../src/testkit/harness.js'
import { touchIdentity } from '../../src/server/identity/generation.js'

export interface Session {
  token: string
  projectId: string
  userId: string
}

export async function adminSession(server: TestServer): Promise<Session> {
  const { adminUserId: userId, adminProjectId: projectId } = server.bootstrap
  const { token } = await server.deps.tokens.issue({ userId, methods: ['password'], scope: { p: projectId } })
  return { token, projectId, userId }
}

/** A new project with a user holding `role` on it (member by default), and a token scoped to it. */
export async function projectSession(server: TestServer, role: 'member' | 'reader' = 'member'): Promise<Session> {
  const projectId = randomUUID().replaceAll('-', '')
  const userId = randomUUID().replaceAll('-', '')
  const now = Date.now()
  // Identity writes bump the identity generation, so token services that cache identity see them.
  await server.deps.store.db.transaction().execute(async (db) => {
    await db
      .insertInto('projects')
      .values({ id: projectId, domain_id: 'default', parent_id: 'default', name: `p-${projectId.slice(0, 8)}`, description: '', enabled: 1, options: '{}', extra: '{}', created_at: now })
      .execute()
    await db
      .insertInto('users')
      .values({
        id: userId, domain_id: 'default', name: `u-${userId.slice(0, 8)}`, enabled: 1, default_project_id: projectId, description: '', email: null, options: '{}', extra: '{}',
        password_hash: null, password_created_at: null, password_expires_at: null, failed_auth_count: 0, failed_auth_at: null, last_active_at: null, created_at: now,
      })
      .execute()
    const roleRow = await db.selectFrom('roles').select('id').where('name', '=', role).executeTakeFirstOrThrow()
    await db.insertInto('role_assignments').values({ actor_type: 'user', actor_id: userId, target_type: 'project', target_id: projectId, role_id: roleRow.id, inherited: 0 }).execute()
    await touchIdentity(db)
  })
  const { token } = await server.deps.tokens.issue({ userId, methods: ['password'], scope: { p: projectId } })
  return { token, projectId, userId }
}

// Test bodies are read loosely; each assertion names the field it needs.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface Reply<T = any> {
  status: number
  headers: Headers
  body: T
}

/** fetch with the session's token; JSON bodies in and out. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function call<T = any>(server: TestServer, session: Session | undefined, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> {
  const init: RequestInit = { method, headers: { ...(session ? { 'x-auth-token': session.token } : {}), ...headers } }
  if (body !== undefined) {
    init.body = typeof body === 'string' || body instanceof Uint8Array ? (body as string) : JSON.stringify(body)
    if (!headers['content-type']) (init.headers as Record<string, string>)['content-type'] = 'application/json'
  }
  const res = await fetch(`${server.url}${path}`, init)
  const text = await res.text()
  let parsed: unknown = text
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, body: parsed as T }
}

/** Polls until `check` returns a value, or fails after `ms`. */
export async function eventually<T>(check: () => Promise<T | undefined | false>, ms = 10_000, what = 'condition'): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
