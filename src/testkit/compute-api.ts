/**
 * A small client for tests that drive pcc the way a user does: Keystone password login, then the compute API
 * (and any other family) over plain fetch with a token and a microversion. Works against an in-process test
 * server (`server.url`) and against real processes (`cluster.nodes[i].url`) alike.
 */

// Test bodies are arbitrary JSON that assertions walk freely.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface ApiReply<T = any> {
  status: number
  body: T
  headers: Headers
  /** The request id the server answered with (x-openstack-request-id): instance actions are named by it. */
  requestId: string
}

/** The compute microversion tests use unless told otherwise: the latest, where every state field is shown. */
export const LATEST = '2.96'

/** fetch with JSON in and out; never throws for an HTTP status (only for a dead connection or the timeout). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function apiCall<T = any>(url: string, method: string, options: { token?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<ApiReply<T>> {
  const headers: Record<string, string> = { ...options.headers }
  if (options.token) headers['x-auth-token'] = options.token
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(url, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body), signal: AbortSignal.timeout(options.timeoutMs ?? 30_000) })
  const text = await res.text()
  let body: unknown = text
  try {
    body = text ? JSON.parse(text) : undefined
  } catch {
    // not JSON: keep the text for the assertion message
  }
  return { status: res.status, body: body as T, headers: res.headers, requestId: res.headers.get('x-openstack-request-id') ?? '' }
}

/** Keystone password authentication (`POST /identity/v3/auth/tokens`), project-scoped. */
export async function login(baseUrl: string, password: string, user = 'admin', project = 'admin'): Promise<{ token: string; projectId: string; userId: string }> {
  const r = await apiCall(`${baseUrl}/identity/v3/auth/tokens`, 'POST', {
    body: {
      auth: {
        identity: { methods: ['password'], password: { user: { name: user, domain: { id: 'default' }, password } } },
        scope: { project: { name: project, domain: { id: 'default' } } },
      },
    },
  })
  const token = r.headers.get('x-subject-token')
  if (r.status !== 201 || !token) throw new Error(`login as ${user} at ${baseUrl}: ${r.status} ${JSON.stringify(r.body)}`)
  return { token, projectId: r.body.token.project.id as string, userId: r.body.token.user.id as string }
}

/** The compute API (`{base}/compute/v2.1`) as one caller at one microversion. */
export class ComputeClient {
  readonly url: string

  constructor(
    readonly baseUrl: string,
    readonly token: string,
    readonly version = LATEST,
  ) {
    this.url = `${baseUrl}/compute/v2.1`
  }

  /** The same caller at another microversion. */
  at(version: string): ComputeClient {
    return new ComputeClient(this.baseUrl, this.token, version)
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  call<T = any>(method: string, path: string, body?: unknown): Promise<ApiReply<T>> {
    return apiCall<T>(`${this.url}${path}`, method, { token: this.token, body, headers: { 'openstack-api-version': `compute ${this.version}` } })
  }

  /** Any other family of the same server (`/image/v2/…`, `/resmgr/v1/…`), with this caller's token. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  other<T = any>(method: string, path: string, body?: unknown): Promise<ApiReply<T>> {
    return apiCall<T>(`${this.baseUrl}${path}`, method, { token: this.token, body })
  }

  /** `GET /servers/{id}`: the server view, or undefined once it is gone (404). Throws on anything else. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async server(id: string): Promise<Record<string, any> | undefined> {
    const r = await this.call('GET', `/servers/${id}`)
    if (r.status === 404) return undefined
    if (r.status !== 200) throw new Error(`GET /servers/${id}: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body.server
  }

  /** `POST /servers`; throws unless 202. Returns the new server's id and the request id of its `create` action. */
  async create(server: Record<string, unknown>, hints?: Record<string, unknown>): Promise<{ id: string; requestId: string; adminPass: string }> {
    const r = await this.call('POST', '/servers', { server, ...(hints && { 'os:scheduler_hints': hints }) })
    if (r.status !== 202) throw new Error(`POST /servers: ${r.status} ${JSON.stringify(r.body)}`)
    return { id: r.body.server.id as string, requestId: r.requestId, adminPass: r.body.server.adminPass as string }
  }

  /** `POST /servers/{id}/action` with one action; the reply carries the action's request id. */
  action(id: string, name: string, value: unknown = null): Promise<ApiReply> {
    return this.call('POST', `/servers/${id}/action`, { [name]: value })
  }

  /** `GET /servers/{id}/os-instance-actions/{requestId}`: the action with its events. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async instanceAction(id: string, requestId: string): Promise<Record<string, any>> {
    const r = await this.call('GET', `/servers/${id}/os-instance-actions/${requestId}`)
    if (r.status !== 200) throw new Error(`GET os-instance-actions/${requestId}: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body.instanceAction
  }

  /** `GET /servers/{id}/os-instance-actions`: newest first. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async instanceActions(id: string): Promise<Record<string, any>[]> {
    const r = await this.call('GET', `/servers/${id}/os-instance-actions`)
    if (r.status !== 200) throw new Error(`GET os-instance-actions: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body.instanceActions
  }

  /** Every server of the caller's project (`/servers/detail`, following `servers_links`). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async servers(query = ''): Promise<Record<string, any>[]> {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const all: Record<string, any>[] = []
    let path = `/servers/detail?limit=1000${query ? `&${query}` : ''}`
    for (;;) {
      const r = await this.call('GET', path)
      if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${JSON.stringify(r.body)}`)
      all.push(...r.body.servers)
      const next = (r.body.servers_links as { rel: string; href: string }[] | undefined)?.find((l) => l.rel === 'next')
      if (!next) return all
      path = next.href.slice(next.href.indexOf('/servers/detail'))
    }
  }

  /** Lifts the instance, core and RAM quotas of a project (-1 = unlimited); needs an admin token. */
  async unlimitedQuotas(projectId: string): Promise<void> {
    const r = await this.call('PUT', `/os-quota-sets/${projectId}`, { quota_set: { instances: -1, cores: -1, ram: -1 } })
    if (r.status !== 200) throw new Error(`quota update: ${r.status} ${JSON.stringify(r.body)}`)
  }

  /** Creates a flavor (admin) and returns its id. */
  async createFlavor(flavor: { name: string; vcpus: number; ram: number; disk: number }): Promise<string> {
    const r = await this.call('POST', '/flavors', { flavor })
    if (r.status !== 200) throw new Error(`POST /flavors: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body.flavor.id as string
  }

  /** The id of the first active image the image service lists (the default CirrOS image on a new cloud). */
  async bootImage(): Promise<string> {
    const r = await this.other('GET', '/image/v2/images')
    const image = (r.body?.images as { id: string; status: string }[] | undefined)?.find((i) => i.status === 'active')
    if (!image) throw new Error(`no active image: ${r.status} ${JSON.stringify(r.body)}`)
    return image.id
  }
}

/** Polls until `probe` returns a value (not undefined), or fails naming `what` after `timeoutMs`. */
export async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}

/** Runs `work` over `items` with at most `width` in flight at once; results in input order. */
export async function inParallel<I, O>(items: I[], width: number, work: (item: I, index: number) => Promise<O>): Promise<O[]> {
  const out: O[] = new Array(items.length)
  let next = 0
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await work(items[i], i)
  }
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker))
  return out
}
