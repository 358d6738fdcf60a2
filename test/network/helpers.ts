/**
 * Helpers of the network tests: a real server, project members created straight in the store (the identity
 * admin API is another area), tokens from the server's own TokenService, and a small Neutron client on fetch.
 */
import { randomUUID } from 'node:crypto'
import assert from 'node:assert/strict'
import type { TestServer } from '../../src/testkit/harness.js'
import { touchIdentity } from '../../src/server/identity/generation.js'

export interface Caller {
  token: string
  projectId: string
  userId: string
}

export interface Reply<T = Record<string, unknown>> {
  status: number
  body: T
}

/** Creates a project and a user holding `role` on it, and returns a project-scoped token for that user. */
export async function projectMember(server: TestServer, name: string, role: 'member' | 'reader' | 'admin' = 'member'): Promise<Caller> {
  const db = server.deps.store.db
  const now = Date.now()
  const projectId = randomUUID().replaceAll('-', '')
  const userId = randomUUID().replaceAll('-', '')
  await db.insertInto('projects').values({ id: projectId, domain_id: 'default', parent_id: 'default', name, description: '', enabled: 1, options: '{}', extra: '{}', created_at: now }).execute()
  await db
    .insertInto('users')
    .values({
      id: userId, domain_id: 'default', name: `${name}-user`, enabled: 1, default_project_id: projectId, description: '', email: null, options: '{}', extra: '{}',
      password_hash: null, password_created_at: null, password_expires_at: null, failed_auth_count: 0, failed_auth_at: null, last_active_at: null, created_at: now,
    })
    .execute()
  const roleRow = await db.selectFrom('roles').select('id').where('name', '=', role).executeTakeFirstOrThrow()
  await db.insertInto('role_assignments').values({ actor_type: 'user', actor_id: userId, target_type: 'project', target_id: projectId, role_id: roleRow.id, inherited: 0 }).execute()
  // Identity writes bump the generation, so every process's token validation sees the new user and project.
  await touchIdentity(db)
  const { token } = await server.deps.tokens.issue({ userId, methods: ['password'], scope: { p: projectId } })
  return { token, projectId, userId }
}

export async function admin(server: TestServer): Promise<Caller> {
  const { adminUserId, adminProjectId } = server.bootstrap
  const { token } = await server.deps.tokens.issue({ userId: adminUserId, methods: ['password'], scope: { p: adminProjectId } })
  return { token, projectId: adminProjectId, userId: adminUserId }
}

export function client(server: TestServer, caller: Caller) {
  const call = async <T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<Reply<T>> => {
    const res = await fetch(`${server.url}/network${path}`, {
      method,
      headers: { 'x-auth-token': caller.token, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T }
  }
  return {
    call,
    get: <T = Record<string, unknown>>(path: string) => call<T>('GET', path),
    post: <T = Record<string, unknown>>(path: string, body: unknown) => call<T>('POST', path, body),
    put: <T = Record<string, unknown>>(path: string, body: unknown) => call<T>('PUT', path, body),
    del: (path: string) => call('DELETE', path),
    /** POST that must succeed; returns the created member object. */
    async create(collection: string, member: string, attrs: Record<string, unknown>): Promise<Record<string, Json>> {
      const reply = await call<Record<string, Record<string, Json>>>('POST', `/v2.0/${collection}`, { [member]: attrs })
      assert.equal(reply.status, 201, `create ${member}: ${JSON.stringify(reply.body)}`)
      return reply.body[member]
    },
  }
}

export type Client = ReturnType<typeof client>

/** Asserts a Neutron error: status, `NeutronError.type`, and optionally a message fragment. */
export function assertNeutronError(reply: Reply<Json>, status: number, type: string, message?: RegExp): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body))
  assert.ok(reply.body?.NeutronError, `Neutron error shape expected: ${JSON.stringify(reply.body)}`)
  assert.equal(reply.body.NeutronError.type, type, JSON.stringify(reply.body))
  assert.equal(typeof reply.body.NeutronError.message, 'string')
  assert.equal(typeof reply.body.NeutronError.detail, 'string')
  if (message) assert.match(reply.body.NeutronError.message, message)
}

/** A host registered through the resource manager as an agent registers, with the credential it got. */
export interface RegisteredHost {
  id: string
  hostname: string
  credential: string
  tunnelIp: string
}

/** A call to the resource manager (`{base}/resmgr…`) with a user token or a host credential. */
export async function resmgr(server: TestServer, method: string, path: string, auth: string, body?: unknown): Promise<Reply<Json>> {
  const res = await fetch(`${server.url}/resmgr${path}`, {
    method,
    headers: { authorization: `Bearer ${auth}`, 'x-auth-token': auth, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : undefined }
}

/** Registers a host with a one-time token and sends its first heartbeat with its tunnel address, as an agent does. */
export async function registerHost(server: TestServer, adminToken: string, hostname: string, tunnelIp: string): Promise<RegisteredHost> {
  const token = (await resmgr(server, 'POST', '/v1/registration-tokens', adminToken, {})).body.token
  const id = randomUUID()
  const reg = await resmgr(server, 'POST', '/v1/hosts/register', '', {
    registration_token: token, host_id: id, hostname, os_info: { id: 'debian', version_id: '12', pretty_name: 'Debian' }, arch: 'x86_64',
    cpu: { count: 4, model: 'x', virtualization: true }, memory_mb: 8000, disk_gb: 100, nics: [], agent_version: '0.1.0',
  })
  assert.equal(reg.status, 201)
  const host = { id, hostname, credential: reg.body.credential as string, tunnelIp }
  assert.equal((await resmgr(server, 'POST', `/v1/hosts/${id}/heartbeat`, host.credential, { facts: { network: { backend: 'linux', tunnel_ip: tunnelIp, physical_networks: [] } } })).status, 200)
  return host
}

/** Gives a registered host a role and reports it applied, as the admin and then the host's agent do. */
export async function giveRole(server: TestServer, adminToken: string, host: RegisteredHost, role: string): Promise<void> {
  assert.equal((await resmgr(server, 'PUT', `/v1/hosts/${host.id}/roles/${role}`, adminToken, {})).status, 200)
  assert.equal((await resmgr(server, 'PUT', `/v1/hosts/${host.id}/roles/${role}/status`, host.credential, { state: 'ok' })).status, 200)
}

/** Counts rows of the network tables, to prove a failed request changed nothing. */
export async function tableCounts(server: TestServer): Promise<Record<string, number>> {
  const db = server.deps.store.db
  const out: Record<string, number> = {}
  for (const table of ['networks', 'subnets', 'ports', 'ip_allocations', 'security_groups', 'security_group_rules', 'routers', 'floating_ips'] as const) {
    const row = await db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
    out[table] = Number(row.n)
  }
  return out
}

/** Parsed JSON bodies of the API under test, read field by field in assertions. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any
