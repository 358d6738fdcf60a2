/**
 * An authenticated session against pcc (or any Keystone v3 cloud): logs in once with a password (plus a TOTP
 * passcode for MFA users, in one request as Platform9's CLI does), keeps the token and the catalog, and finds
 * service endpoints in it by type, interface and region.
 */
import type { TokenCache } from './token-cache.js'
import { ApiError, Transport, type ResponseHeaders, type TransportOptions } from './transport.js'
import { MAX_VERSION } from '../contracts/compute/versions.js'

export interface PasswordAuth {
  authUrl: string
  username: string
  password: string
  userDomain?: string
  projectName?: string
  projectId?: string
  projectDomain?: string
  region?: string
  interface?: 'public' | 'internal' | 'admin'
  /** TOTP passcode for users with multi-factor authentication. */
  passcode?: string
}

export interface CatalogEndpoint {
  id: string
  interface: string
  region: string | null
  region_id: string | null
  url: string
}

export interface CatalogEntry {
  id: string
  type: string
  name: string
  endpoints: CatalogEndpoint[]
}

export interface TokenInfo {
  id: string
  expires_at: string
  project?: { id: string; name: string }
  user: { id: string; name: string }
  roles?: { id: string; name: string }[]
  catalog?: CatalogEntry[]
}

const UUID_HEX = /^[0-9a-f]{32}$|^[0-9a-f-]{36}$/i

/** The identity v3 root for an auth URL given with or without `/v3`. */
export function identityRoot(authUrl: string): string {
  const trimmed = authUrl.replace(/\/+$/, '')
  return trimmed.endsWith('/v3') ? trimmed : `${trimmed}/v3`
}

export class Session {
  token?: TokenInfo
  /** The token came from the cache: a refusal means it was revoked, not that the credentials are wrong. */
  private cached = false
  /** The microversion `latest` stands for, once asked (negotiated). */
  private computeMax: Promise<string> | undefined

  constructor(
    readonly auth: PasswordAuth,
    readonly transport: Transport,
    /** Reuses tokens between runs; never for MFA logins (each --mfa code is for one login). */
    private readonly cache?: TokenCache,
  ) {}

  static create(auth: PasswordAuth, transportOptions: TransportOptions = {}, cache?: TokenCache): Session {
    return new Session(auth, new Transport(transportOptions), auth.passcode ? undefined : cache)
  }

  async login(): Promise<TokenInfo> {
    const a = this.auth
    const domain = (name?: string) => (name && UUID_HEX.test(name) ? { id: name } : name && name !== 'Default' ? { name } : { id: 'default' })
    const user = { name: a.username, domain: domain(a.userDomain) }
    const methods = a.passcode ? ['password', 'totp'] : ['password']
    const scope = a.projectId
      ? { project: { id: a.projectId } }
      : a.projectName
        ? UUID_HEX.test(a.projectName)
          ? { project: { id: a.projectName } }
          : { project: { name: a.projectName, domain: domain(a.projectDomain) } }
        : undefined
    const body = {
      auth: {
        identity: { methods, password: { user: { ...user, password: a.password } }, ...(a.passcode ? { totp: { user: { ...user, passcode: a.passcode } } } : {}) },
        ...(scope ? { scope } : {}),
      },
    }
    const response = await this.transport.request('POST', `${identityRoot(a.authUrl)}/auth/tokens`, { body })
    const id = response.headers.get('x-subject-token')
    const token = (response.body as { token?: Omit<TokenInfo, 'id'> } | undefined)?.token
    if (response.status !== 201 || !id || !token) throw new ApiError(response.status, 'the identity service answered without a token')
    this.token = { ...token, id }
    this.cached = false
    this.cache?.write(this.auth, this.token)
    return this.token
  }

  async ensureToken(): Promise<TokenInfo> {
    if (this.token) return this.token
    const kept = this.cache?.read(this.auth)
    if (!kept) return this.login()
    this.cached = true
    return (this.token = kept)
  }

  /**
   * `compute latest` / `compute 2.latest` (OS_COMPUTE_API_VERSION=2.latest, which `openstack` accepts) is no version
   * a server takes: as novaclient does, it becomes the newest microversion both sides speak, read once per session
   * from the compute endpoint's version document (docs/cli.md, "Compute microversions").
   */
  private async negotiated(headers: Record<string, string>): Promise<Record<string, string>> {
    const asked = headers['openstack-api-version']
    if (!asked || !/^compute\s+(2\.)?latest$/i.test(asked.trim())) return headers
    this.computeMax ??= this.endpoint('compute').then(async (url) => {
      const doc = (await this.transport.request('GET', `${url}/`)).body as { version?: { version?: string } } | undefined
      const server = doc?.version?.version || '2.1'
      return newer(server, MAX_VERSION) ? MAX_VERSION : server
    })
    this.computeMax.catch(() => (this.computeMax = undefined))
    return { ...headers, 'openstack-api-version': `compute ${await this.computeMax}` }
  }

  /** Sends with the session's token; a cached token the server refuses is dropped and the request retried after a login. */
  private async authorized(method: string, url: string, body: unknown, asked: Record<string, string>) {
    const headers = await this.negotiated(asked)
    const token = await this.ensureToken()
    try {
      return await this.transport.request(method, url, { body, headers: { 'x-auth-token': token.id, ...headers } })
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 401 || !this.cached) throw err
      this.cache?.forget(this.auth)
      const fresh = await this.login()
      return this.transport.request(method, url, { body, headers: { 'x-auth-token': fresh.id, ...headers } })
    }
  }

  /** The URL of a service of `type`, by interface and region; throws naming what is missing. */
  async endpoint(type: string | string[]): Promise<string> {
    const token = await this.ensureToken()
    const types = Array.isArray(type) ? type : [type]
    const iface = this.auth.interface ?? 'public'
    for (const t of types) {
      const entry = token.catalog?.find((e) => e.type === t)
      const endpoint = entry?.endpoints.find((e) => e.interface === iface && (!this.auth.region || e.region_id === this.auth.region || e.region === this.auth.region))
      if (endpoint) return endpoint.url.replace(/\/+$/, '')
    }
    throw new Error(`no ${iface} endpoint of type ${types.join(' or ')}${this.auth.region ? ` in region ${this.auth.region}` : ''} in the catalog`)
  }

  async get<T>(url: string, headers: Record<string, string> = {}): Promise<T> {
    return (await this.authorized('GET', url, undefined, headers)).body as T
  }

  async send<T>(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: ResponseHeaders; body: T }> {
    return (await this.authorized(method, url, body, headers)) as { status: number; headers: ResponseHeaders; body: T }
  }
}

/** Whether microversion `a` ("2.19") is above `b`. */
function newer(a: string, b: string): boolean {
  const [am, an] = a.split('.').map(Number)
  const [bm, bn] = b.split('.').map(Number)
  return am > bm || (am === bm && an > bn)
}
