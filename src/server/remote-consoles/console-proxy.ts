/**
 * The console websocket users open: `{base}/console/websocket?token=…`, nova-novncproxy's and
 * nova-serialproxy's job in one endpoint (nova/console/websocketproxy.py). Before the handshake, refused with a
 * bodiless HTTP error and no stream: a missing, unknown or expired token (401), a browser page of another origin
 * (403), subprotocols without `binary` (400). Then the server's host is asked for the console stream; a host
 * that cannot give it closes the websocket with code 1011 and the host's reason.
 */
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Logger } from 'pino'
import { WebSocketServer } from 'ws'
import type { ConsoleProtocol } from '../../contracts/host/compute-driver.js'
import { cookieValue } from '../http/cookies.js'
import { refuseUpgrade } from '../http/upgrades.js'
import type { ConsoleSessions } from './console-sessions.js'
import type { ConsoleTokens } from './console-tokens.js'
import { closeSocket, hold, pipeConsole } from '../../lib/ws-pipe.js'

export interface ConsoleProxyOptions {
  tokens: ConsoleTokens
  /** Where the websockets this proxy holds are tracked (closed at a graceful stop). */
  sessions: ConsoleSessions
  /** The guest's console from its host's driver. */
  open: (serverId: string, protocol: ConsoleProtocol) => Promise<Duplex>
  publicUrl: string
  /** Host names whose pages may open consoles besides the public URL's. */
  allowedOrigins: string[]
  idleMs: number
  pingMs?: number
  logger: Logger
}

/**
 * nova-novncproxy's origin rule: no Origin (not a browser) passes; a browser page must come from this host (the
 * public URL's, or the one the request names in Host, as Nova compares) with the public URL's scheme, or from an
 * allowed host. Host names only: ports do not matter, as in Nova.
 */
export function originRefusal(origin: string | undefined, requestHost: string | undefined, publicUrl: URL, allowed: string[]): string | undefined {
  if (origin === undefined) return undefined
  let page: URL
  try {
    page = new URL(origin)
  } catch {
    return 'Origin header not valid'
  }
  const host = page.hostname.toLowerCase()
  if (allowed.includes(host)) return undefined
  const own = [publicUrl.hostname.toLowerCase(), hostnameOf(requestHost)]
  if (!own.includes(host)) return 'Origin header does not match this host'
  if (page.protocol !== publicUrl.protocol) return 'Origin header protocol does not match this host'
  return undefined
}

/** The host name of a Host header (`name:port`, `[v6]:port`). */
function hostnameOf(hostHeader: string | undefined): string {
  try {
    return new URL(`http://${hostHeader ?? ''}`).hostname.toLowerCase()
  } catch {
    return ''
  }
}

/** The token from the query, else from a `token` cookie (noVNC before 1.1 sent it so; nova-novncproxy reads both). */
export function tokenOf(request: IncomingMessage): string | undefined {
  const query = new URL(request.url ?? '/', 'http://console').searchParams.get('token')
  return query || cookieValue(request.headers.cookie, 'token')
}

/** Offered subprotocols; websockify answers `binary` when offered and refuses a client that offers only others. */
function offeredProtocols(request: IncomingMessage): string[] {
  return String(request.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')
}

export class ConsoleProxy {
  private readonly wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: 4 << 20,
    handleProtocols: (protocols) => (protocols.has('binary') ? 'binary' : false),
  })
  private readonly publicUrl: URL

  constructor(private readonly o: ConsoleProxyOptions) {
    this.publicUrl = new URL(o.publicUrl)
  }

  async accept(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const token = tokenOf(request)
    if (!token) return refuseUpgrade(socket, 401, 'A console token is required')
    const refusal = originRefusal(request.headers.origin, request.headers.host, this.publicUrl, this.o.allowedOrigins)
    if (refusal) return refuseUpgrade(socket, 403, refusal)
    const offered = offeredProtocols(request)
    if (offered.length > 0 && !offered.includes('binary')) return refuseUpgrade(socket, 400, 'Only the binary subprotocol is supported')
    const grant = await this.o.tokens.find(token)
    if (!grant) return refuseUpgrade(socket, 401, 'The console token is invalid or has expired')
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      this.o.sessions.track(ws)
      const held = hold(ws)
      const log = this.o.logger.child({ serverId: grant.server_id, protocol: grant.protocol, host: grant.hostname })
      const started = Date.now()
      log.info('console session opening')
      // The user's websocket may close while the host is asked: its 'close' cancels nothing, the pipe ends at once.
      this.o
        .open(grant.server_id, grant.protocol as ConsoleProtocol)
        .then(
          async (stream) => {
            const end = await pipeConsole(ws, stream, { idleMs: this.o.idleMs, pingMs: this.o.pingMs }, held)
            log.info({ code: end.code, reason: end.reason, seconds: Math.round((Date.now() - started) / 1000) }, 'console session closed')
          },
          (err: unknown) => {
            held.release()
            log.info({ reason: (err as Error).message }, 'console session refused by the host')
            closeSocket(ws, 1011, (err as Error).message)
          },
        )
        .catch((err: unknown) => log.error({ err }, 'console session failed'))
    })
  }
}
