/**
 * Shared steps of the IdP's browser and device flow tests: a pcc over HTTPS (PCC_TLS=auto) and a fetch that
 * trusts its CA, a form-driven "browser" (cookie jar, no script) for the login pages, PKCE values, the checks
 * kube-apiserver makes of an ID token, and a fake cluster that makes them and answers kubectl.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer, request, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose'
import { freePort, startTestServer, type Dialect, type TestServer } from '../../src/testkit/harness.js'

/** fetch's shape, without following redirects (a test looks at every 303 itself). */
export type Fetch = (url: string, init?: { method?: string; headers?: Record<string, string>; body?: string; redirect?: 'manual'; signal?: AbortSignal }) => Promise<Response>

/** A fetch over node:https that trusts `ca` (Node's global fetch cannot be given a CA). */
export function caFetch(ca: Buffer): Fetch {
  return (url, init = {}) =>
    new Promise((resolve, reject) => {
      const headers = Object.fromEntries(new Headers(init.headers))
      const req = request(url, { method: init.method ?? 'GET', headers, ca, signal: init.signal }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => {
          const responseHeaders = new Headers()
          for (const [name, value] of Object.entries(res.headers)) for (const v of ([] as (string | undefined)[]).concat(value)) if (v !== undefined) responseHeaders.append(name, v)
          const status = res.statusCode ?? 0
          resolve(new Response(status === 204 || status === 304 ? null : Buffer.concat(chunks), { status, headers: responseHeaders }))
        })
      })
      req.on('error', reject)
      // openid-client hands over URLSearchParams bodies: String() gives their form encoding.
      req.end(init.body == null ? undefined : String(init.body))
    })
}

export interface HttpsPcc {
  server: TestServer
  /** https://127.0.0.1:<port>/idp, the issuer exactly. */
  issuer: string
  base: string
  ca: Buffer
  fetch: Fetch
}

/** A pcc whose public URL is https (PCC_TLS=auto), as kube-apiserver requires of an issuer. */
export async function startHttpsPcc(dialect: Dialect = 'sqlite', env: Record<string, string> = {}): Promise<HttpsPcc> {
  const port = await freePort()
  const base = `https://127.0.0.1:${port}`
  const server = await startTestServer({ dialect, env: { PCC_TLS: 'auto', PCC_LISTEN: `127.0.0.1:${port}`, PCC_PUBLIC_URL: base, ...env } })
  const ca = readFileSync(server.caFile!)
  return { server, issuer: `${base}/idp`, base, ca, fetch: caFetch(ca) }
}

/** A PKCE verifier and its S256 challenge (RFC 7636 §4.1–4.2). */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

/** The hidden `req` field of a login page. */
export function reqOf(html: string): string {
  const match = /name="req" value="([0-9a-f]+)"/.exec(html)
  assert.ok(match, `no req field in: ${html.slice(0, 400)}`)
  return match[1]
}

/** A browser without script: keeps cookies, follows nothing by itself. */
export class FormBrowser {
  private readonly cookies = new Map<string, string>()

  constructor(private readonly fetchFn: Fetch) {}

  async request(url: string, form?: Record<string, string>): Promise<{ status: number; location?: string; html: string; headers: Headers }> {
    const headers: Record<string, string> = {}
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded'
    const res = await this.fetchFn(url, { method: form ? 'POST' : 'GET', headers, body: form ? new URLSearchParams(form).toString() : undefined, redirect: 'manual' })
    for (const cookie of res.headers.getSetCookie()) {
      const [pair] = cookie.split(';')
      const eq = pair.indexOf('=')
      this.cookies.set(pair.slice(0, eq), pair.slice(eq + 1))
    }
    const location = res.headers.get('location') ?? undefined
    return { status: res.status, location: location && new URL(location, url).toString(), html: await res.text(), headers: res.headers }
  }

  get cookieCount(): number {
    return this.cookies.size
  }
}

export interface Login {
  username: string
  password: string
  totp?: () => string
  /** The consent page's answer, when one is shown. */
  approve?: boolean
}

/**
 * Drives the pages from where a login starts (a GET of the authorization URL, or the POST of the device code
 * form) to its end: returns the last answer (the redirect to the client, or the final page).
 */
export async function completeLogin(browser: FormBrowser, start: string | { url: string; form: Record<string, string> }, login: Login) {
  const { url, form } = typeof start === 'string' ? { url: start, form: undefined } : start
  const first = await browser.request(url, form)
  assert.equal(first.status, 303, `the start redirects to the login page: ${first.status} ${first.html.slice(0, 300)}`)
  const page = await browser.request(first.location!)
  assert.equal(page.status, 200, page.html)
  const origin = new URL(url).origin
  let answer = await browser.request(`${origin}/idp/login`, { req: reqOf(page.html), username: login.username, password: login.password })
  if (answer.status === 200 && answer.html.includes('name="totp"')) {
    assert.ok(login.totp, 'a TOTP code is asked for')
    answer = await browser.request(`${origin}/idp/login/totp`, { req: reqOf(answer.html), totp: login.totp() })
  }
  if (answer.status === 200 && answer.html.includes('name="approval"')) {
    answer = await browser.request(`${origin}/idp/approval`, { req: reqOf(answer.html), approval: login.approve === false ? 'deny' : 'approve' })
  }
  return answer
}

export interface Authenticated {
  username: string
  groups: string[]
}

/**
 * What kube-apiserver does with a bearer token (--oidc-issuer-url, --oidc-client-id, --oidc-username-claim=email,
 * --oidc-groups-claim=groups, default --oidc-signing-algs=RS256): the issuer must be https and equal the
 * discovery document's; the key comes from its jwks_uri; the signature must be RS256, the audience contain the
 * client id, exp lie ahead; the username is the `email` claim, which needs email_verified true when present;
 * groups must be a string array. Throws when the token would be refused.
 */
export async function kubeApiserverAuthenticate(token: string, options: { issuer: string; clientId: string; fetch: Fetch }): Promise<Authenticated> {
  if (!options.issuer.startsWith('https://')) throw new Error('the issuer URL must be https')
  const discovery = (await (await options.fetch(`${options.issuer}/.well-known/openid-configuration`)).json()) as { issuer: string; jwks_uri: string }
  if (discovery.issuer !== options.issuer) throw new Error(`discovery issuer ${discovery.issuer} is not ${options.issuer}`)
  const jwks = createLocalJWKSet((await (await options.fetch(discovery.jwks_uri)).json()) as JSONWebKeySet)
  const { payload } = await jwtVerify(token, jwks, { issuer: options.issuer, audience: options.clientId, algorithms: ['RS256'], requiredClaims: ['exp', 'iat', 'sub'] })
  if (typeof payload.email !== 'string') throw new Error('the token has no email claim')
  if (payload.email_verified !== undefined && payload.email_verified !== true) throw new Error('email_verified is not true')
  const groups = payload.groups ?? []
  if (!Array.isArray(groups) || groups.some((g) => typeof g !== 'string')) throw new Error('groups is not a string array')
  return { username: payload.email, groups: [...(groups as string[]), 'system:authenticated'] }
}

export interface FakeCluster {
  url: string
  /** Every request: the bearer it carried and whom it authenticated (undefined = refused). */
  seen: { path: string; authorization?: string; user?: Authenticated }[]
  close(): Promise<void>
}

/**
 * An HTTPS "cluster" that authenticates bearer tokens as kube-apiserver would (above) and answers kubectl's
 * `get --raw /version` and `auth whoami` (a SelfSubjectReview). It reuses pcc's certificate (signed by pcc's CA).
 */
export async function startFakeCluster(pcc: HttpsPcc, clientId: string): Promise<FakeCluster> {
  const tls = join(pcc.server.dataDir, 'tls')
  const seen: FakeCluster['seen'] = []
  const cluster: Server = createServer({ key: readFileSync(join(tls, 'server.key')), cert: readFileSync(join(tls, 'server.crt')) }, async (req, res) => {
    const authorization = req.headers.authorization
    let user: Authenticated | undefined
    if (authorization?.startsWith('Bearer ')) user = await kubeApiserverAuthenticate(authorization.slice(7), { issuer: pcc.issuer, clientId, fetch: pcc.fetch }).catch(() => undefined)
    seen.push({ path: req.url ?? '', authorization, user })
    res.setHeader('content-type', 'application/json')
    if (!user) {
      res.statusCode = 401
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 }))
      return
    }
    if (req.url?.startsWith('/apis/authentication.k8s.io/v1/selfsubjectreviews')) {
      res.statusCode = 201
      res.end(JSON.stringify({ kind: 'SelfSubjectReview', apiVersion: 'authentication.k8s.io/v1', metadata: {}, status: { userInfo: { username: user.username, groups: user.groups } } }))
      return
    }
    if (req.url === '/version') {
      res.end(JSON.stringify({ major: '1', minor: '32', gitVersion: 'v1.32.0', platform: 'linux/amd64' }))
      return
    }
    res.statusCode = 404
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 }))
  })
  await new Promise<void>((resolve) => cluster.listen(0, '127.0.0.1', resolve))
  return {
    url: `https://127.0.0.1:${(cluster.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((resolve) => cluster.close(() => resolve())),
  }
}

/** A kubeconfig whose user is kubectl's oidc auth-provider with these tokens. */
export function oidcKubeconfig(options: { clusterUrl: string; caFile: string; issuer: string; clientId: string; clientSecret: string; idToken: string; refreshToken: string }): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: pcc',
    '  cluster:',
    `    server: ${options.clusterUrl}`,
    `    certificate-authority: ${options.caFile}`,
    'users:',
    '- name: oidc',
    '  user:',
    '    auth-provider:',
    '      name: oidc',
    '      config:',
    `        idp-issuer-url: ${options.issuer}`,
    `        client-id: ${options.clientId}`,
    `        client-secret: ${options.clientSecret}`,
    `        id-token: ${options.idToken}`,
    `        refresh-token: ${options.refreshToken}`,
    `        idp-certificate-authority: ${options.caFile}`,
    'contexts:',
    '- name: pcc',
    '  context:',
    '    cluster: pcc',
    '    user: oidc',
    'current-context: pcc',
    '',
  ].join('\n')
}

export const KUBECTL = '/usr/bin/kubectl'

/** Runs Debian's kubectl with a clean environment and a 60 s bound. */
export function kubectl(args: string[], home: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(KUBECTL, args, { env: { HOME: home, PATH: '/usr/bin:/bin' }, timeout: 60_000 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }))
  })
}

/** A JWT kubectl reads as expired (it decodes id-tokens without verifying them), so it refreshes first. */
export function expiredToken(issuer: string): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')
  const now = Math.floor(Date.now() / 1000)
  return `${part({ alg: 'RS256', kid: 'old' })}.${part({ iss: issuer, aud: 'kubernetes', sub: 'x', iat: now - 7200, exp: now - 3600 })}.${Buffer.from('sig').toString('base64url')}`
}

/** POST {issuer}/token (or another form endpoint) over the test's HTTPS; `basic` sends client credentials as HTTP Basic. */
export async function formPost(pcc: HttpsPcc, path: string, form: Record<string, string>, basic?: { id: string; secret: string }): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' }
  if (basic) headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(basic.id)}:${encodeURIComponent(basic.secret)}`).toString('base64')}`
  const res = await pcc.fetch(`${pcc.issuer}${path}`, { method: 'POST', headers, body: new URLSearchParams(form).toString() })
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers }
}

/** Registers an OIDC client through the resource manager as the admin; returns its secret (undefined for a public one). */
export async function registerClient(pcc: HttpsPcc, adminToken: string, client: { id: string; name: string; redirect_uris: string[]; public?: boolean }): Promise<string | undefined> {
  const res = await pcc.fetch(`${pcc.base}/resmgr/v2/idpclients`, { method: 'POST', headers: { 'x-auth-token': adminToken, 'content-type': 'application/json' }, body: JSON.stringify({ client }) })
  const body = (await res.json()) as { client: { client_secret?: string } }
  assert.equal(res.status, 201, JSON.stringify(body))
  return body.client.client_secret
}

/** The authorization URL of {issuer}/auth for these parameters. */
export function authorizeUrl(issuer: string, params: Record<string, string>): string {
  return `${issuer}/auth?${new URLSearchParams(params).toString()}`
}
