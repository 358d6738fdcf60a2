/** Shared by the high-availability tests and the HA benchmark: Keystone and Nova calls over plain fetch. */
import { randomUUID } from 'node:crypto'
import type { Cluster, ClusterNode } from '../../src/testkit/cluster.js'

// Test bodies are arbitrary JSON that assertions walk freely.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface Reply<T = any> {
  status: number
  body: T
  headers: Headers
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function call<T = any>(base: string, method: string, path: string, options: { token?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Reply<T>> {
  // Compute calls at 2.60 unless told otherwise: networks 'none' needs 2.37 or later.
  const headers: Record<string, string> = base.endsWith('/compute/v2.1') ? { 'openstack-api-version': 'compute 2.60', ...options.headers } : { ...options.headers }
  if (options.token) headers['x-auth-token'] = options.token
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${base}${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body), signal: AbortSignal.timeout(30_000) })
  const text = await res.text()
  let body: unknown = text
  try {
    body = text ? JSON.parse(text) : undefined
  } catch {
    /* keep the text */
  }
  return { status: res.status, body: body as T, headers: res.headers }
}

/** Keystone password authentication as the bootstrap admin, project-scoped to `admin`. */
export async function issueToken(node: ClusterNode, password: string): Promise<{ token: string; projectId: string }> {
  const r = await call(node.url, 'POST', '/identity/v3/auth/tokens', {
    body: {
      auth: {
        identity: { methods: ['password'], password: { user: { name: 'admin', domain: { id: 'default' }, password } } },
        scope: { project: { name: 'admin', domain: { id: 'default' } } },
      },
    },
  })
  const token = r.headers.get('x-subject-token')
  if (r.status !== 201 || !token) throw new Error(`token issue on node ${node.index}: ${r.status} ${JSON.stringify(r.body)}`)
  return { token, projectId: r.body.token.project.id as string }
}

/** GET /auth/tokens: the status a validation of `subject` gets on `node`. */
export async function validateToken(node: ClusterNode, authToken: string, subject: string): Promise<Reply> {
  return call(node.url, 'GET', '/identity/v3/auth/tokens', { token: authToken, headers: { 'x-subject-token': subject } })
}

export const compute = (node: ClusterNode) => `${node.url}/compute/v2.1`

/** The id of the smallest flavor the compute API's bootstrap created. */
export async function smallestFlavor(node: ClusterNode, token: string): Promise<string> {
  const r = await call(compute(node), 'GET', '/flavors/detail', { token })
  if (r.status !== 200 || !r.body.flavors?.length) throw new Error(`flavors on node ${node.index}: ${r.status} ${JSON.stringify(r.body)}`)
  const flavors = r.body.flavors as { id: string; ram: number; vcpus: number }[]
  return flavors.sort((a, b) => a.ram - b.ram || a.vcpus - b.vcpus)[0].id
}

/** An image to boot: the first one the image service lists, or any UUID while no image service answers. */
export async function bootImage(cluster: Cluster, token: string): Promise<string> {
  const r = await call(cluster.nodes[0].url, 'GET', '/image/v2/images', { token }).catch(() => undefined)
  const images = (r?.status === 200 ? (r.body.images as { id: string; status: string }[]) : []).filter((i) => i.status === 'active')
  return images[0]?.id ?? randomUUID()
}

export async function liftQuotas(node: ClusterNode, token: string, projectId: string): Promise<void> {
  const r = await call(compute(node), 'PUT', `/os-quota-sets/${projectId}`, { token, body: { quota_set: { instances: -1, cores: -1, ram: -1 } } })
  if (r.status !== 200) throw new Error(`quota update: ${r.status} ${JSON.stringify(r.body)}`)
}

export function createBody(name: string, flavorRef: string, imageRef: string) {
  return { server: { name, flavorRef, imageRef, networks: 'none' } }
}

/** Every live server of the caller's project, as one node sees it (id → status). */
export async function serverStatuses(node: ClusterNode, token: string): Promise<Map<string, string>> {
  const r = await call(compute(node), 'GET', '/servers/detail?limit=1000', { token })
  if (r.status !== 200) throw new Error(`server list on node ${node.index}: ${r.status} ${JSON.stringify(r.body)}`)
  return new Map((r.body.servers as { id: string; status: string }[]).map((s) => [s.id, s.status]))
}
