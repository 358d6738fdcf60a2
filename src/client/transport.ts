/**
 * HTTP for the API client: fetch over an undici dispatcher that applies the proxy, a CA file or --insecure to
 * every request, with a timeout. Errors carry the service's own message and the request id, as openstack prints.
 */
import { readFileSync } from 'node:fs'
import { Agent, ProxyAgent, fetch as undiciFetch, type Dispatcher } from 'undici'

export interface TransportOptions {
  proxyUrl?: string
  caFile?: string
  insecure?: boolean
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

export class Transport {
  private readonly dispatcher: Dispatcher

  constructor(private readonly options: TransportOptions = {}) {
    const connect = { ...(options.caFile ? { ca: readFileSync(options.caFile) } : {}), ...(options.insecure ? { rejectUnauthorized: false } : {}) }
    this.dispatcher = options.proxyUrl ? new ProxyAgent({ uri: options.proxyUrl, requestTls: connect }) : new Agent({ connect })
  }

  async request(method: string, url: string, init: { headers?: Record<string, string>; body?: unknown; timeoutMs?: number } = {}) {
    const headers: Record<string, string> = { accept: 'application/json', ...init.headers }
    let body: string | undefined
    if (init.body !== undefined) {
      headers['content-type'] ??= 'application/json'
      body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body)
    }
    let response
    try {
      response = await undiciFetch(url, {
        method,
        headers,
        body,
        dispatcher: this.dispatcher,
        signal: AbortSignal.timeout(init.timeoutMs ?? this.options.timeoutMs ?? 30_000),
      })
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } }
      const reason = e.name === 'TimeoutError' ? 'timed out' : (e.cause?.code ?? e.cause?.message ?? e.message)
      throw new UnreachableError(`cannot reach ${new URL(url).origin}: ${reason}`, reason)
    }
    const text = await response.text()
    let json: unknown
    try {
      json = text ? JSON.parse(text) : undefined
    } catch {
      json = undefined
    }
    if (!response.ok) {
      const requestId = response.headers.get('x-openstack-request-id') ?? undefined
      throw new ApiError(response.status, `${errorMessage(json) ?? (text.slice(0, 200) || response.statusText)} (HTTP ${response.status})${requestId ? ` (Request-ID: ${requestId})` : ''}`, requestId)
    }
    return { status: response.status, headers: response.headers, body: json, text }
  }

  async close(): Promise<void> {
    await this.dispatcher.close()
  }
}
