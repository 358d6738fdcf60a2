/**
 * The one way the web console talks to pcc: the public APIs under this page's own origin and base path (so it works
 * behind any load balancer or path prefix, with no CORS), the user's token in X-Auth-Token, and errors turned
 * into a message plus what to do next. No private endpoint is used.
 */

/** Each service: its path below {base}/ and the headers that pin the API version the web console is written for. */
export const SERVICES = {
  identity: { path: 'identity/v3', headers: {} },
  compute: { path: 'compute/v2.1', headers: { 'OpenStack-API-Version': 'compute 2.96' } },
  network: { path: 'network/v2.0', headers: {} },
  image: { path: 'image/v2', headers: {} },
  volume: { path: 'volume/v3', headers: { 'OpenStack-API-Version': 'volume 3.60' } },
  resmgr: { path: 'resmgr/v1', headers: {} },
} as const
export type Service = keyof typeof SERVICES

/** The base URL of the cloud: the folder this app is served from. */
export function baseUrl(): string {
  return new URL('.', document.baseURI).href.replace(/\/$/, '')
}

export function serviceUrl(service: Service, path: string): string {
  return `${baseUrl()}/${SERVICES[service].path}${path}`
}

/** What to do next, by the kind of failure (the first matching row wins). */
const ADVICE: { when: (e: { status: number; message: string }) => boolean; text: string }[] = [
  { when: (e) => e.status === 0, text: 'The control plane could not be reached. Check the network connection, then try again.' },
  { when: (e) => e.status === 401, text: 'Your session has ended. Log in again.' },
  { when: (e) => /quota|over ?limit|maximum number/i.test(e.message), text: 'Free some resources (delete unused ones), or ask an administrator to raise the quota (Admin → Quotas).' },
  { when: (e) => e.status === 403, text: 'Your role does not allow this here. Switch to a project where you have the role, or ask an administrator.' },
  { when: (e) => e.status === 404, text: 'It may have been deleted meanwhile. Reload the page to see the current state.' },
  { when: (e) => e.status === 409, text: 'It is busy or in a state that does not allow this. Wait for the running task to finish, then try again.' },
  { when: (e) => e.status === 413, text: 'The request is too large for this cloud. Use a smaller file or ask an administrator about the limit.' },
  { when: (e) => e.status === 400, text: 'Correct the value the message names and submit again.' },
  { when: (e) => e.status >= 500, text: 'The control plane failed. Try again; if it keeps failing, give the request id to your operator.' },
]

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly requestId?: string,
    private readonly adviceText?: string,
  ) {
    super(message)
  }
  get advice(): string {
    return this.adviceText ?? ADVICE.find((row) => row.when(this))?.text ?? 'Try again.'
  }
}

/** The message of any of the services' error bodies (Nova, Keystone, Neutron, Glance, OAuth2). */
export function errorMessage(body: unknown, fallback: string): string {
  if (!body || typeof body !== 'object') return typeof body === 'string' && body ? body.slice(0, 300) : fallback
  const b = body as Record<string, unknown>
  if (typeof b.message === 'string') return b.message
  if (typeof b.error_description === 'string') return b.error_description
  for (const value of Object.values(b)) {
    if (value && typeof value === 'object' && typeof (value as { message?: unknown }).message === 'string') return (value as { message: string }).message
  }
  return fallback
}

interface Auth {
  token: () => string | undefined
  /** Called when a request with a token answers 401: the session is over. */
  expired: () => void
}
let auth: Auth = { token: () => undefined, expired: () => {} }
export function setAuth(a: Auth): void {
  auth = a
}

export interface RequestOptions {
  method?: string
  body?: unknown
  headers?: Record<string, string>
  /** Send without the session's token (login). */
  anonymous?: boolean
  signal?: AbortSignal
}

export interface ApiResponse<T> {
  status: number
  body: T
  headers: Headers
}

export async function call<T = unknown>(service: Service, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...SERVICES[service].headers, ...options.headers }
  const token = options.anonymous ? undefined : auth.token()
  if (token) headers['X-Auth-Token'] = token
  let body: BodyInit | undefined
  if (options.body !== undefined) {
    headers['content-type'] ??= 'application/json'
    body = headers['content-type'].includes('json') ? JSON.stringify(options.body) : (options.body as BodyInit)
  }
  let response: Response
  try {
    response = await fetch(serviceUrl(service, path), { method: options.method ?? 'GET', headers, body, signal: options.signal, cache: 'no-store' })
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err
    throw new ApiError(0, 'No answer from the control plane.')
  }
  const text = await response.text()
  let parsed: unknown = undefined
  if (text) {
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = text
    }
  }
  if (!response.ok) {
    const error = new ApiError(response.status, errorMessage(parsed, `${response.status} ${response.statusText}`), response.headers.get('x-openstack-request-id') ?? undefined)
    if (response.status === 401 && token) auth.expired()
    throw Object.assign(error, { response, body: parsed })
  }
  return { status: response.status, body: parsed as T, headers: response.headers }
}

export async function get<T>(service: Service, path: string, signal?: AbortSignal): Promise<T> {
  return (await call<T>(service, path, { signal })).body
}
export async function post<T>(service: Service, path: string, body: unknown): Promise<T> {
  return (await call<T>(service, path, { method: 'POST', body })).body
}
export async function put<T>(service: Service, path: string, body: unknown): Promise<T> {
  return (await call<T>(service, path, { method: 'PUT', body })).body
}
export async function del(service: Service, path: string): Promise<void> {
  await call(service, path, { method: 'DELETE' })
}

/** A query string from the defined values of an object. */
export function query(params: Record<string, string | number | boolean | undefined | null>): string {
  const search = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== '') search.set(key, String(value))
  const text = search.toString()
  return text ? `?${text}` : ''
}

/**
 * Uploads a file with a progress callback. fetch() reports no upload progress in browsers, XMLHttpRequest does
 * (in Chromium and Firefox alike), so uploads use it.
 */
export function upload(service: Service, path: string, file: Blob, onProgress: (sent: number, total: number) => void, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest()
    xhr.open('PUT', serviceUrl(service, path))
    xhr.setRequestHeader('content-type', 'application/octet-stream')
    const token = auth.token()
    if (token) xhr.setRequestHeader('X-Auth-Token', token)
    xhr.upload.onprogress = (event) => onProgress(event.loaded, event.lengthComputable ? event.total : file.size)
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) return resolve()
      let body: unknown = xhr.responseText
      try {
        body = JSON.parse(xhr.responseText)
      } catch {
        // plain text
      }
      if (xhr.status === 401) auth.expired()
      reject(new ApiError(xhr.status, errorMessage(body, `${xhr.status} ${xhr.statusText}`), xhr.getResponseHeader('x-openstack-request-id') ?? undefined))
    }
    xhr.onerror = () => reject(new ApiError(0, 'The upload was interrupted.'))
    xhr.onabort = () => reject(new ApiError(0, 'The upload was cancelled.'))
    signal?.addEventListener('abort', () => xhr.abort())
    xhr.send(file)
  })
}
