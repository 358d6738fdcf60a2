/** The agent's HTTP client: JSON over http(s) with the control plane's CA or, when configured, without verification. */
import { readFileSync } from 'node:fs'
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
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
   * A request whose body is a stream (uploads) or whose answer is one (downloads, `stream: true`). No overall
   * timeout: only the connection going quiet for `idleMs` fails it. 4xx/5xx reject with HttpError before any byte.
   */
  stream(method: string, path: string, init: { credential?: string; body?: Readable; idleMs?: number } = {}): Promise<IncomingMessage> {
    const url = new URL(this.options.baseUrl.replace(/\/$/, '') + path)
    const send = this.https ? httpsRequest : httpRequest
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = send(url, {
        method,
        agent: this.agent,
        headers: {
          ...(init.body && { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' }),
          ...(init.credential && { authorization: `Bearer ${init.credential}` }),
        },
        timeout: init.idleMs ?? 60_000,
      })
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no data for ${Math.round((init.idleMs ?? 60_000) / 1000)} s`)))
      req.on('error', reject)
      req.on('response', (res) => {
        const status = res.statusCode ?? 0
        if (status < 400) return resolve(res)
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          let message = text
          try {
            message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text
          } catch {
            // not JSON
          }
          reject(new HttpError(status, `${method} ${path}: ${status} ${message}`))
        })
      })
      if (init.body) {
        init.body.on('error', (err) => req.destroy(err))
        init.body.pipe(req)
      } else {
        req.end()
      }
    })
  }

  close(): void {
    this.agent.destroy()
  }
}
