/** Shared steps of the IdP tests: identity tokens, users, token-endpoint calls. */
import { randomUUID } from 'node:crypto'
import { hashPassword } from '../../src/server/crypto/passwords.js'
import { touchIdentity } from '../../src/server/identity/generation.js'
import type { Db } from '../../src/server/storage/store.js'
import type { TestServer } from '../../src/testkit/harness.js'

export async function adminToken(server: TestServer): Promise<string> {
  const { token } = await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })
  return token
}

export interface NewUser {
  name: string
  password: string
  email?: string
  options?: Record<string, unknown>
  /** Role name on the admin project; none when omitted. */
  role?: string
}

/** Inserts a user of the Default domain directly, as an identity write (the identity admin API is another area's). */
export async function createUser(server: TestServer, user: NewUser): Promise<string> {
  const id = randomUUID().replaceAll('-', '')
  await identityWrite(server, (db) => insertUser(db, id, user, server.bootstrap.adminProjectId))
  return id
}

/** Writes identity rows in one transaction that moves the identity generation, so that every process sees them (MFA rules included). */
export async function identityWrite(server: TestServer, write: (db: Db) => Promise<unknown>): Promise<void> {
  await server.deps.store.db.transaction().execute(async (tx) => {
    await write(tx)
    await touchIdentity(tx)
  })
  await server.deps.tokens.refresh()
}

async function insertUser(db: Db, id: string, user: NewUser, projectId: string): Promise<void> {
  const now = Date.now()
  await db
    .insertInto('users')
    .values({
      id, domain_id: 'default', name: user.name, enabled: 1, default_project_id: null, description: '', email: user.email ?? null,
      options: JSON.stringify(user.options ?? {}), extra: '{}', password_hash: await hashPassword(user.password, { N: 1024, r: 8, p: 1 }),
      password_created_at: now, password_expires_at: null, failed_auth_count: 0, failed_auth_at: null, last_active_at: null, created_at: now,
    })
    .execute()
  if (user.role) {
    const role = await db.selectFrom('roles').select('id').where('name', '=', user.role).executeTakeFirstOrThrow()
    await db
      .insertInto('role_assignments')
      .values({ actor_type: 'user', actor_id: id, target_type: 'project', target_id: projectId, role_id: role.id, inherited: 0 })
      .execute()
  }
}

export async function userToken(server: TestServer, userId: string, scoped = true): Promise<string> {
  const { token } = await server.deps.tokens.issue({ userId, methods: ['password'], scope: scoped ? { p: server.bootstrap.adminProjectId } : null })
  return token
}

export async function kubernetesSecret(server: TestServer, token: string): Promise<string> {
  const res = await fetch(`${server.url}/resmgr/v2/idpclients`, { headers: { 'x-auth-token': token } })
  if (res.status !== 200) throw new Error(`idpclients: ${res.status} ${await res.text()}`)
  return ((await res.json()) as Record<string, string>).kubernetes
}

export interface TokenCall {
  status: number
  body: Record<string, unknown>
  headers: Headers
}

/** POST {base}/idp/token, form-encoded; `basic` sends the client credentials as HTTP Basic instead of form fields. */
export async function tokenCall(server: TestServer, form: Record<string, string>, basic?: { id: string; secret: string }): Promise<TokenCall> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' }
  if (basic) headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(basic.id)}:${encodeURIComponent(basic.secret)}`).toString('base64')}`
  const res = await fetch(`${server.url}/idp/token`, { method: 'POST', headers, body: new URLSearchParams(form).toString() })
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers }
}

export const FULL_SCOPE = 'openid offline_access groups email profile'

/** Gives a user a TOTP secret (base32) through identity's credentials API, as the user would; `fetchFn`/`base` for HTTPS servers. */
export async function addTotpCredential(server: TestServer, userId: string, secret: string, via: { fetch: (url: string, init: { method: string; headers: Record<string, string>; body: string }) => Promise<Response>; base: string } = { fetch, base: server.url }): Promise<void> {
  const res = await via.fetch(`${via.base}/identity/v3/credentials`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-auth-token': await adminToken(server) },
    body: JSON.stringify({ credential: { type: 'totp', user_id: userId, blob: secret } }),
  })
  if (res.status !== 201) throw new Error(`credentials: ${res.status} ${await res.text()}`)
}
