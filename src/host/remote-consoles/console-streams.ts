/**
 * The agent's side of remote consoles (command op `openConsole`): the host accepts no connections, so for each
 * console session the agent opens the guest's console with its driver and dials a websocket out to the control
 * plane, `{controller}/resmgr/v1/hosts/{id}/consoles/{session}`, with its host credential, and carries the bytes
 * both ways until either side ends. The command answers once the websocket is open; a driver that refuses (no
 * such guest, not running, no VNC) or a control plane that no longer waits fails it, and nothing stays open.
 */
import { readFileSync } from 'node:fs'
import type { Duplex } from 'node:stream'
import { WebSocket } from 'ws'
import { DriverError, type ConsoleProtocol } from '../../contracts/host/compute-driver.js'
import { pipeConsole } from '../../lib/ws-pipe.js'

export interface ConsoleStreamsOptions {
  controller: string
  caFile?: string
  insecure?: boolean
  credential: () => string | undefined
  hostId: () => string
  log: (level: string, message: string, fields?: Record<string, unknown>) => void
  /** Ping interval of the websocket (default 15 s). */
  pingMs?: number
}

export interface OpenConsoleArgs {
  sessionId: string
  serverId: string
  protocol: ConsoleProtocol
}

/** What the agent's driver must offer. */
export interface ConsoleSource {
  openConsole(serverId: string, protocol: ConsoleProtocol): Promise<Duplex>
}

export class ConsoleStreams {
  private readonly sockets = new Set<WebSocket>()
  private readonly ca: Buffer | undefined

  constructor(private readonly o: ConsoleStreamsOptions) {
    this.ca = o.caFile ? readFileSync(o.caFile) : undefined
  }

  async open(driver: ConsoleSource, args: OpenConsoleArgs): Promise<{ opened: true }> {
    const stream = await driver.openConsole(args.serverId, args.protocol)
    let ws: WebSocket
    try {
      ws = await this.dial(args.sessionId)
    } catch (err) {
      stream.destroy()
      throw new DriverError(`the console channel to the control plane could not be opened: ${(err as Error).message}`, 502)
    }
    this.sockets.add(ws)
    const started = Date.now()
    this.o.log('info', 'console session opened', { sessionId: args.sessionId, serverId: args.serverId, protocol: args.protocol })
    void pipeConsole(ws, stream, { idleMs: 0, pingMs: this.o.pingMs }).then((end) => {
      this.sockets.delete(ws)
      this.o.log('info', 'console session closed', { sessionId: args.sessionId, code: end.code, reason: end.reason, seconds: Math.round((Date.now() - started) / 1000) })
    })
    return { opened: true }
  }

  /** Closes every console session (the agent stops). */
  stop(): void {
    for (const ws of this.sockets) ws.terminate()
  }

  private dial(sessionId: string): Promise<WebSocket> {
    const base = this.o.controller.replace(/\/+$/, '').replace(/^http/, 'ws')
    const url = `${base}/resmgr/v1/hosts/${this.o.hostId()}/consoles/${sessionId}`
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, {
        headers: { authorization: `Bearer ${this.o.credential() ?? ''}` },
        perMessageDeflate: false,
        handshakeTimeout: 15_000,
        ca: this.ca,
        rejectUnauthorized: !this.o.insecure,
      })
      ws.once('unexpected-response', (_req, res) => {
        ws.terminate()
        reject(new Error(`${res.statusCode} ${res.statusMessage ?? ''}`.trim()))
      })
      ws.once('error', reject)
      ws.once('open', () => {
        ws.off('error', reject)
        // The session holds a console: it must not start before pipeConsole listens.
        ws.pause()
        resolve(ws)
      })
    })
  }
}
