/**
 * HTTP for the API client, on Node's own http/https modules: a CA file or --insecure applies to every request,
 * an http(s) proxy is used as openstack's clients use one (plain requests in absolute form for http URLs, a
 * CONNECT tunnel for https URLs), and connections are kept alive for the life of the transport. Errors carry
 * the service's own message and the request id, as openstack prints them.
 *
 * Node's modules and not a fetch library because pcctl is a command run once per line of a script: a fetch
 * implementation (undici) is 800 KB to compile at every start and compiles its HTTP parser on the first request,
 * which together cost more than the request itself (docs/cli.md, "Start-up time").
 */
import { readFileSync, type ReadStream } from 'node:fs'
import http from 'node:http'
import type * as Https from 'node:https'
import { isIP } from 'node:net'
import type { Duplex } from 'node:stream'
import type * as Tls from 'node:tls'

export interface TransportOptions {
  proxyUrl?: string
  caFile?: string
  insecure?: boolean
  /** Longest silence on a connection before the request fails as timed out (default 30 s). */
  timeoutMs?: number
}

export class ApiError extends Error {
  override name = 'ApiError'
  constructor(
    readonly status: number,
    message: string,
    readonly requestId?: string,
  ) {
    super(message)
  }
}

/** The message a service put in its error body, whatever its family's shape. */
export function errorMessage(body: unknown): string | undefined {
  if (!body || typeof body !== 'object') return undefined
  const b = body as Record<string, unknown>
  if (typeof b.error_description === 'string') return b.error_description
  if (b.error && typeof b.error === 'object' && typeof (b.error as Record<string, unknown>).message === 'string') return (b.error as { message: string }).message
  if (b.NeutronError && typeof b.NeutronError === 'object') return String((b.NeutronError as { message: unknown }).message)
  if (typeof b.message === 'string') return b.message
  const first = Object.values(b)[0]
  if (first && typeof first === 'object' && typeof (first as Record<string, unknown>).message === 'string') return (first as { message: string }).message
  return undefined
}

/** No HTTP answer at all (refused, timed out, DNS, TLS): the URL, the network or the proxy is wrong. */
export class UnreachableError extends Error {
  override name = 'UnreachableError'
  constructor(
    message: string,
    readonly reason: string,
  ) {
    super(message)
  }
}

export interface RequestInit {
  headers?: Record<string, string>
  /** JSON (any value) or text (a string). */
  body?: unknown
  /** Raw bytes streamed as the body (an image upload); the caller sets content-type and content-length. */
  upload?: ReadStream
  timeoutMs?: number
}

/** The headers of an answer, read by name in any case (the part of fetch's Headers that callers use). */
export interface ResponseHeaders {
  get(name: string): string | null
}

export interface TransportResponse {
  status: number
  headers: ResponseHeaders
  body: unknown
  text: string
}

type TlsOptions = { ca?: Buffer; rejectUnauthorized?: boolean }

/** Node's https with the agent every https request of a transport uses. */
interface Secure {
  https: typeof Https
  agent: Https.Agent
}

/** An https agent whose connections go through an http proxy's CONNECT tunnel. */
function tunnelAgent(https: typeof Https, tls: typeof Tls, proxy: URL, tlsOptions: TlsOptions): Https.Agent {
  class TunnelAgent extends https.Agent {
    override createConnection(options: Https.RequestOptions, done: (err: Error | null, socket?: Duplex) => void): undefined {
      const target = `${options.host}:${options.port}`
      const connect = http.request({ host: proxy.hostname, port: proxy.port || 80, method: 'CONNECT', path: target, headers: { host: target, ...proxyAuthorization(proxy) } })
      connect.once('connect', (res, socket) => {
        if (res.statusCode !== 200) {
          socket.destroy()
          return done(Object.assign(new Error(`proxy answered ${res.statusCode} to CONNECT ${target}`), { code: `PROXY_${res.statusCode}` }))
        }
        // SNI carries host names only (an IP address there is refused by RFC 6066, and Node warns about it).
        const host = String(options.servername || options.host)
        done(null, tls.connect({ socket, host, ...(isIP(host) ? {} : { servername: host }), ...tlsOptions }))
      })
      connect.once('error', (err) => done(err))
      connect.end()
      return undefined
    }
  }
  return new TunnelAgent({ keepAlive: true })
}

function proxyAuthorization(proxy: URL): Record<string, string> {
  if (!proxy.username) return {}
  const credentials = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`
  return { 'proxy-authorization': `Basic ${Buffer.from(credentials).toString('base64')}` }
}

/** Node gives header names in lower case; repeated ones are joined as fetch joins them. (Not fetch's own Headers:
 * touching that global loads Node's built-in fetch, some 10 ms of a start.) */
function toHeaders(raw: http.IncomingHttpHeaders): ResponseHeaders {
  return {
    get: (name) => {
      const value = raw[name.toLowerCase()]
      return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value
    },
  }
}

export class Transport {
  private readonly tlsOptions: TlsOptions
  private readonly proxy?: URL
  private readonly httpAgent: http.Agent
  private secure?: Promise<Secure>

  constructor(private readonly options: TransportOptions = {}) {
    this.tlsOptions = { ...(options.caFile ? { ca: readFileSync(options.caFile) } : {}), ...(options.insecure ? { rejectUnauthorized: false } : {}) }
    this.proxy = options.proxyUrl ? new URL(options.proxyUrl) : undefined
    this.httpAgent = new http.Agent({ keepAlive: true })
  }

  /** https and tls load with the first https URL: a start that needs neither skips some 5 ms of loading them. */
  private secureClient(): Promise<Secure> {
    this.secure ??= Promise.all([import('node:https'), import('node:tls')]).then(([https, tls]) => ({
      https,
      agent: this.proxy ? tunnelAgent(https, tls, this.proxy, this.tlsOptions) : new https.Agent({ keepAlive: true, ...this.tlsOptions }),
    }))
    return this.secure
  }

  async request(method: string, url: string, init: RequestInit = {}): Promise<TransportResponse> {
    const headers: Record<string, string> = { accept: 'application/json', ...init.headers }
    let body: string | undefined
    if (init.body !== undefined) {
      headers['content-type'] ??= 'application/json'
      body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body)
      headers['content-length'] = String(Buffer.byteLength(body))
    }
    let response: { status: number; headers: ResponseHeaders; text: string }
    try {
      response = await this.exchange(method, new URL(url), headers, body, init)
    } catch (err) {
      const e = err as NodeJS.ErrnoException
      const reason = e.code === 'ETIMEDOUT_PCCTL' ? 'timed out' : (e.code ?? e.message)
      throw new UnreachableError(`cannot reach ${new URL(url).origin}: ${reason}`, reason)
    }
    let json: unknown
    try {
      json = response.text ? JSON.parse(response.text) : undefined
    } catch {
      json = undefined
    }
    if (response.status < 200 || response.status > 299) {
      const requestId = response.headers.get('x-openstack-request-id') ?? undefined
      const reason = errorMessage(json) ?? (response.text.slice(0, 200) || (http.STATUS_CODES[response.status] ?? ''))
      throw new ApiError(response.status, `${reason} (HTTP ${response.status})${requestId ? ` (Request-ID: ${requestId})` : ''}`, requestId)
    }
    return { ...response, body: json }
  }

  /** One request and its whole answer as text; rejects only when no answer came. */
  private async exchange(method: string, url: URL, headers: Record<string, string>, body: string | undefined, init: RequestInit): Promise<{ status: number; headers: ResponseHeaders; text: string }> {
    const secure = url.protocol === 'https:' ? await this.secureClient() : undefined
    // Plain http through a proxy: the request goes to the proxy with the absolute URL as its path.
    const viaProxy = this.proxy && !secure
    const options: http.RequestOptions = viaProxy
      ? { host: this.proxy!.hostname, port: this.proxy!.port || 80, path: url.href, headers: { ...headers, host: url.host, ...proxyAuthorization(this.proxy!) }, agent: this.httpAgent }
      : { host: url.hostname, port: url.port || (secure ? 443 : 80), path: url.pathname + url.search, headers, agent: secure ? secure.agent : this.httpAgent }
    return new Promise((resolve, reject) => {
      const req = (secure ? secure.https : http).request({ ...options, method }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: toHeaders(res.headers), text: Buffer.concat(chunks).toString('utf8') }))
        res.on('error', reject)
      })
      req.setTimeout(init.timeoutMs ?? this.options.timeoutMs ?? 30_000, () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT_PCCTL' })))
      req.on('error', reject)
      if (init.upload) {
        init.upload.on('error', (err) => req.destroy(err))
        init.upload.pipe(req)
      } else {
        req.end(body)
      }
    })
  }

  async close(): Promise<void> {
    this.httpAgent.destroy()
    if (this.secure) (await this.secure).agent.destroy()
  }
}
