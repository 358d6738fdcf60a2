/** The agent's HTTP client: JSON (and streamed files) over http(s) with the control plane's CA or, when configured, without verification. */
import { createReadStream, createWriteStream, readFileSync, statSync } from 'node:fs'
import { pipeline } from 'node:stream/promises'
import { Agent as HttpAgent, request as httpRequest } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'

export class HttpError extends Error {
  override name = 'HttpError'
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

export interface JsonClientOptions {
  baseUrl: string
  caFile?: string
  insecure?: boolean
}

export class JsonClient {
  private readonly agent: HttpAgent | HttpsAgent
  private readonly https: boolean

  constructor(private readonly options: JsonClientOptions) {
    this.https = options.baseUrl.startsWith('https:')
    this.agent = this.https
      ? new HttpsAgent({ keepAlive: true, ca: options.caFile ? readFileSync(options.caFile) : undefined, rejectUnauthorized: !options.insecure })
      : new HttpAgent({ keepAlive: true })
  }

  /** Sends a request; resolves with the parsed body (undefined for 204), rejects with HttpError for 4xx/5xx. */
  call<T>(method: string, path: string, body?: unknown, init: { credential?: string; timeoutMs?: number } = {}): Promise<T> {
    const url = new URL(this.options.baseUrl.replace(/\/$/, '') + path)
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
    const send = this.https ? httpsRequest : httpRequest
    return new Promise<T>((resolve, reject) => {
      const req = send(
        url,
        {
          method,
          agent: this.agent,
          headers: {
            accept: 'application/json',
            ...(payload && { 'content-type': 'application/json', 'content-length': String(payload.length) }),
            ...(init.credential && { authorization: `Bearer ${init.credential}` }),
          },
          timeout: init.timeoutMs ?? 15_000,
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('error', reject)
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8')
            const status = res.statusCode ?? 0
            if (status >= 400) {
              let message = text
              try {
                message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text
              } catch {
                // not JSON
              }
              reject(new HttpError(status, `${method} ${path}: ${status} ${message}`))
              return
            }
            try {
              resolve((text ? JSON.parse(text) : undefined) as T)
            } catch (err) {
              reject(err as Error)
            }
          })
        },
      )
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)))
      req.on('error', reject)
      req.end(payload)
    })
  }

  /**
   * Streams a file to or from the control plane (image bytes): `download` writes the response body to `file`,
   * `upload` sends `file` as the body. Rejects with HttpError for 4xx/5xx; no timeout while bytes flow.
   */
  transfer(method: 'GET' | 'PUT', path: string, file: string, init: { credential?: string } = {}): Promise<void> {
    const url = new URL(this.options.baseUrl.replace(/\/$/, '') + path)
    const send = this.https ? httpsRequest : httpRequest
    return new Promise<void>((resolve, reject) => {
      const headers: Record<string, string> = { ...(init.credential && { authorization: `Bearer ${init.credential}` }) }
      if (method === 'PUT') Object.assign(headers, { 'content-type': 'application/octet-stream', 'content-length': String(statSync(file).size) })
      const req = send(url, { method, agent: this.agent, headers }, (res) => {
        const status = res.statusCode ?? 0
        if (status >= 400) {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () => reject(new HttpError(status, `${method} ${path}: ${status} ${Buffer.concat(chunks).toString('utf8').slice(0, 500)}`)))
          return
        }
        if (method === 'PUT') {
          res.resume()
          res.on('end', () => resolve())
          return
        }
        pipeline(res, createWriteStream(file, { mode: 0o600 })).then(resolve, reject)
      })
      req.on('error', reject)
      if (method === 'PUT') pipeline(createReadStream(file), req).catch(reject)
      else req.end()
    })
  }

  close(): void {
    this.agent.destroy()
  }
}
