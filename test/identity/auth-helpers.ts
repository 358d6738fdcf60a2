/* eslint-disable @typescript-eslint/no-explicit-any -- JSON response bodies, checked field by field */
/**
 * Helpers of the identity authentication tests: log in over HTTP, and seed identity records straight into the
 * store (the admin API is another area), bumping the identity generation like every identity writer does.
 */
import { randomUUID } from 'node:crypto'
import { hashPassword, type ScryptCost } from '../../src/server/crypto/passwords.js'
import { touchIdentity } from '../../src/server/identity/generation.js'
import { ADMIN_PASSWORD, type TestServer } from '../../src/testkit/harness.js'

export const id = () => randomUUID().replaceAll('-', '')

/** A cheap scrypt cost for seeded users, so tests stay fast; the login path rehashes to the real cost. */
export const TEST_COST: ScryptCost = { N: 2 ** 10, r: 8, p: 1 }

export interface Issued {
  status: number
  token: string | null
  body: Record<string, any>
  headers: Headers
}

export async function post(server: TestServer, auth: unknown, options: { query?: string; headers?: Record<string, string> } = {}): Promise<Issued> {
  const res = await fetch(`${server.url}/identity/v3/auth/tokens${options.query ?? ''}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...options.headers },
    body: JSON.stringify(auth),
  })
  const text = await res.text()
  return { status: res.status, token: res.headers.get('x-subject-token'), body: text ? JSON.parse(text) : {}, headers: res.headers }
}

export function passwordAuth(user: Record<string, unknown>, scope?: unknown) {
  return { auth: { identity: { methods: ['password'], password: { user } }, ...(scope !== undefined ? { scope } : {}) } }
}

export async function adminToken(server: TestServer, scope: unknown = { project: { name: 'admin', domain: { id: 'default' } } }): Promise<string> {
  const r = await post(server, passwordAuth({ name: 'admin', domain: { id: 'default' }, password: ADMIN_PASSWORD }, scope))
  if (r.status !== 201 || !r.token) throw new Error(`admin login failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.token
}

export async function call(server: TestServer, method: string, path: string, headers: Record<string, string> = {}, body?: unknown) {
  const res = await fetch(`${server.url}/identity/v3${path}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers }
}

export async function roleId(server: TestServer, name: string): Promise<string> {
  const row = await server.deps.store.db.selectFrom('roles').select('id').where('name', '=', name).executeTakeFirstOrThrow()
  return row.id
}

/** Writes identity rows in one transaction that bumps the generation, then lets this process see them at once. */
export async function identityWrite(server: TestServer, write: (db: TestServer['deps']['store']['db']) => Promise<unknown>): Promise<void> {
  await server.deps.store.db.transaction().execute(async (tx) => {
    await write(tx)
    await touchIdentity(tx)
  })
  await server.deps.tokens.refresh()
}

export async function createProject(server: TestServer, name: string, options: { domainId?: string; enabled?: boolean } = {}): Promise<string> {
  const projectId = id()
  await identityWrite(server, (db) =>
    db
      .insertInto('projects')
      .values({ id: projectId, domain_id: options.domainId ?? 'default', parent_id: options.domainId ?? 'default', name, description: '', enabled: options.enabled === false ? 0 : 1, options: '{}', extra: '{}', created_at: Date.now() })
      .execute(),
  )
  return projectId
}

export interface SeedUser {
  name: string
  password?: string
  domainId?: string
  enabled?: boolean
  defaultProjectId?: string | null
  options?: Record<string, unknown>
  passwordExpiresAt?: number | null
  /** [projectId, roleName] pairs to grant. */
  roles?: [string, string][]
}

export async function createUser(server: TestServer, seed: SeedUser): Promise<string> {
  const userId = id()
  const hash = seed.password ? await hashPassword(seed.password, TEST_COST) : null
  const grants = await Promise.all((seed.roles ?? []).map(async ([projectId, role]) => [projectId, await roleId(server, role)] as const))
  await identityWrite(server, async (db) => {
    await db
      .insertInto('users')
      .values({
        id: userId, domain_id: seed.domainId ?? 'default', name: seed.name, enabled: seed.enabled === false ? 0 : 1, default_project_id: seed.defaultProjectId ?? null,
        description: '', email: null, options: JSON.stringify(seed.options ?? {}), extra: '{}', password_hash: hash, password_created_at: hash ? Date.now() - 1000 : null,
        password_expires_at: seed.passwordExpiresAt ?? null, failed_auth_count: 0, failed_auth_at: null, last_active_at: null, created_at: Date.now(),
      })
      .execute()
    for (const [projectId, rid] of grants) {
      await db.insertInto('role_assignments').values({ actor_type: 'user', actor_id: userId, target_type: 'project', target_id: projectId, role_id: rid, inherited: 0 }).execute()
    }
  })
  return userId
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
