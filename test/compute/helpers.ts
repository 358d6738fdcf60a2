/**
 * Shared by the compute tests: a test server, tokens for personas (admin, project member, reader, another
 * project's member) issued directly by the token service, and a small fetch wrapper for the compute API.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { until } from '../../src/testkit/compute-api.js'
import { startTestServer, type Dialect, type TestServer, type TestServerOptions } from '../../src/testkit/harness.js'
import { newId } from '../../src/server/bootstrap/bootstrap.js'
import { defaultImageName } from '../../src/server/image/default-image.js'

export interface Persona {
  token: string
  userId: string
  projectId: string
}

export interface ComputeTestbed {
  server: TestServer
  admin: Persona
  member: Persona
  reader: Persona
  other: Persona
  compute: string
  close(): Promise<void>
}

async function roleId(server: TestServer, name: string): Promise<string> {
  const r = await server.deps.store.db.selectFrom('roles').select('id').where('name', '=', name).executeTakeFirstOrThrow()
  return r.id
}

async function makeProject(server: TestServer, name: string): Promise<string> {
  const id = newId()
  await server.deps.store.db
    .insertInto('projects')
    .values({ id, domain_id: 'default', parent_id: 'default', name, description: '', enabled: 1, options: '{}', extra: '{}', created_at: Date.now() })
    .execute()
  return id
}

async function makeUser(server: TestServer, name: string, projectId: string, role: string): Promise<Persona> {
  const db = server.deps.store.db
  const userId = newId()
  await db.insertInto('users').values({ id: userId, domain_id: 'default', name, enabled: 1, description: '', options: '{}', extra: '{}', failed_auth_count: 0, created_at: Date.now() }).execute()
  await db
    .insertInto('role_assignments')
    .values({ actor_type: 'user', actor_id: userId, target_type: 'project', target_id: projectId, role_id: await roleId(server, role), inherited: 0 })
    .execute()
  const issued = await server.deps.tokens.issue({ userId, methods: ['password'], scope: { p: projectId } })
  return { token: issued.token, userId, projectId }
}

/**
 * A server whose task runner and conductor are stopped (unless `withConductor`), so API tests see exactly the
 * state the API wrote (BUILD/scheduling, start task states, queued tasks) without the lifecycle moving on.
 */
export async function computeTestbed(dialect: Dialect = 'sqlite', env: Record<string, string> = {}, withConductor = false, options: Pick<TestServerOptions, 'publicUrlFromListen'> = {}): Promise<ComputeTestbed> {
  const server = await startTestServer({ dialect, env: { PCC_RECONCILE_SECONDS: '0', ...env }, ...options })
  if (!withConductor) {
    await server.deps.runner.stop(0)
    server.deps.conductor.stop()
  }
  const adminUser = await server.deps.store.db.selectFrom('users').select('id').where('name', '=', 'admin').executeTakeFirstOrThrow()
  const adminIssued = await server.deps.tokens.issue({ userId: adminUser.id, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })
  const image = await server.deps.store.db.selectFrom('images').select('id').where('name', '=', defaultImageName()).executeTakeFirst()
  if (image) IMAGE = image.id
  const projectA = await makeProject(server, `proj-a-${randomUUID().slice(0, 6)}`)
  const projectB = await makeProject(server, `proj-b-${randomUUID().slice(0, 6)}`)
  const member = await makeUser(server, 'alice', projectA, 'member')
  const reader = await makeUser(server, 'rita', projectA, 'reader')
  const other = await makeUser(server, 'bob', projectB, 'member')
  return {
    server,
    admin: { token: adminIssued.token, userId: adminUser.id, projectId: server.bootstrap.adminProjectId },
    member,
    reader,
    other,
    compute: `${server.url}/compute/v2.1`,
    close: () => server.close(),
  }
}

// Test bodies are arbitrary JSON that assertions walk freely.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface CallResult<T = any> {
  status: number
  body: T
  headers: Headers
}

/** Calls the compute API as `who` at microversion `version` (undefined: no header). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function call<T = any>(tb: ComputeTestbed, who: Persona, method: string, path: string, body?: unknown, version?: string): Promise<CallResult<T>> {
  const headers: Record<string, string> = { 'x-auth-token': who.token }
  if (version) headers['openstack-api-version'] = `compute ${version}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${tb.compute}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  let parsed: unknown = text
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {
    /* keep text */
  }
  return { status: res.status, body: parsed as T, headers: res.headers }
}

/** The bootable image of the current testbed: the image service's default image (set by computeTestbed). */
export let IMAGE = '70a599e0-31e7-49b7-b260-868f441e862b'

/** A minimal valid create body at 2.37+ (networks required there; harmless below). */
export function createBody(name: string, extra: Record<string, unknown> = {}, networks: unknown = 'none') {
  return { server: { name, imageRef: IMAGE, flavorRef: '1', networks, ...extra } }
}

/** Boots a server of the default image with no network as `who` (needs the conductor) and answers its id once ACTIVE. */
export async function bootServer(tb: ComputeTestbed, who: Persona, name: string): Promise<string> {
  const r = await call(tb, who, 'POST', '/servers', createBody(name), '2.96')
  assert.equal(r.status, 202, JSON.stringify(r.body))
  const id = r.body.server.id as string
  await until(`server ${name} ACTIVE`, 60_000, async () => ((await call(tb, who, 'GET', `/servers/${id}`)).body.server.status === 'ACTIVE' ? true : undefined))
  return id
}

/** Calls the block storage API (`/volume/v3…`) of the testbed as `who`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read answers' fields freely, as with call()
export async function volumeCall(tb: ComputeTestbed, who: Persona, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${tb.server.url}/volume/v3${path}`, { method, headers: { 'x-auth-token': who.token, 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : undefined }
}

/** Creates a 1 GiB volume (with `extra` fields) as `who` and answers its id once it is available. */
export async function newVolume(tb: ComputeTestbed, who: Persona, extra: Record<string, unknown> = {}): Promise<string> {
  const id = (await volumeCall(tb, who, 'POST', '/volumes', { volume: { size: 1, ...extra } })).body.volume.id as string
  await until(`volume ${id} available`, 30_000, async () => ((await volumeCall(tb, who, 'GET', `/volumes/${id}`)).body.volume.status === 'available' ? true : undefined))
  return id
}

/** Sets a server's states directly, as the conductor would have (for action tests without a conductor). */
export async function setState(tb: ComputeTestbed, id: string, changes: Record<string, unknown>): Promise<void> {
  if (Object.keys(changes).length === 0) return
  await tb.server.deps.store.db.updateTable('servers').set(changes).where('id', '=', id).execute()
}

export const ACTIVE = { vm_state: 'active', task_state: null, power_state: 1, launched_at: Date.now(), host: 'sim-1', node: 'sim-1' }

/** Lifts the instance/cores/ram quotas of a project (-1 = unlimited). */
export async function unlimited(tb: ComputeTestbed, projectId: string): Promise<void> {
  const r = await call(tb, tb.admin, 'PUT', `/os-quota-sets/${projectId}`, { quota_set: { instances: -1, cores: -1, ram: -1 } })
  if (r.status !== 200) throw new Error(`quota update failed: ${JSON.stringify(r.body)}`)
}
