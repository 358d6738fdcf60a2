/**
 * Where the console streams of agent hosts arrive. Hosts accept no connections, so for each console session the
 * process holding the user's websocket (the owner) asks the agent to dial in, and waits here for that websocket:
 *
 *   owner: expect() → row in console_sessions {owner's advertised URL, sealed relay secret} → command to the agent
 *   agent → any process: GET /resmgr/v1/hosts/{id}/consoles/{session} (upgrade, host credential)
 *     - the owner itself: the stream is handed to the waiting session;
 *     - another process: it dials the owner's /console/relay/{session} with the relay secret (opened with the
 *       master key every process shares) and joins the two websockets.
 *
 * A session not joined within the wait is dropped on both sides; a late agent finds no session (404) and closes
 * its console. Every websocket held here is pinged, and closed when the process stops.
 */
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Logger } from 'pino'
import { WebSocket, WebSocketServer, createWebSocketStream } from 'ws'
import type { SecretBox } from '../crypto/secret-box.js'
import type { Db } from '../storage/store.js'
import { refuseUpgrade } from '../http/upgrades.js'
import { closeSocket, hold, keepAlive, pipeConsole } from '../../lib/ws-pipe.js'

/** How long an owner waits for the host's websocket. */
export const SESSION_WAIT_MS = 30_000
/** The header a relaying process proves itself with. */
const RELAY_SECRET_HEADER = 'x-pcc-console-relay'

interface Waiting {
  hostId: string
  secret: string
  arrive(ws: WebSocket): void
  cancel(reason: string): void
}

export interface ConsoleSessionsOptions {
  db: Db
  box: SecretBox
  logger: Logger
  /** The host a credential belongs to (throws for a bad one). */
  authenticateHost: (credential: string | undefined) => Promise<string>
  pingMs?: number
  waitMs?: number
}

/** One console session the owner waits for: its id (the agent dials it), the host's stream, and a way to give up. */
export interface ExpectedStream {
  id: string
  stream: Promise<Duplex>
  cancel(reason: string): void
}

export class ConsoleSessions {
  readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 4 << 20 })
  private readonly waiting = new Map<string, Waiting>()
  private readonly sockets = new Set<WebSocket>()
  private ownUrl = ''

  constructor(private readonly o: ConsoleSessionsOptions) {}

  /** The URL the other processes reach this one at (set once it listens). */
  advertise(url: string): void {
    this.ownUrl = url.replace(/\/+$/, '')
  }

  /** Owner side: a new session for the host; resolves with the host's stream when its websocket arrives here. */
  async expect(hostId: string, serverId: string): Promise<ExpectedStream> {
    const id = randomUUID()
    const secret = randomBytes(32).toString('base64url')
    const now = Date.now()
    const waitMs = this.o.waitMs ?? SESSION_WAIT_MS
    const db = this.o.db
    await db.deleteFrom('console_sessions').where('expires_at', '<=', now).execute()
    await db
      .insertInto('console_sessions')
      .values({ id, host_id: hostId, server_id: serverId, owner_url: this.ownUrl, relay_secret: this.o.box.seal(secret), created_at: now, expires_at: now + waitMs })
      .execute()
    let settle!: { resolve: (s: Duplex) => void; reject: (e: Error) => void }
    const stream = new Promise<Duplex>((resolve, reject) => (settle = { resolve, reject }))
    // Nobody may be awaiting yet when it fails: the caller's await sees the rejection all the same.
    stream.catch(() => {})
    const forget = () => {
      clearTimeout(timer)
      this.waiting.delete(id)
      void db.deleteFrom('console_sessions').where('id', '=', id).execute().catch(() => {})
    }
    const cancel = (reason: string) => {
      if (!this.waiting.has(id)) return
      forget()
      settle.reject(new Error(reason))
    }
    const timer = setTimeout(() => cancel(`the host did not open the console within ${Math.round(waitMs / 1000)} s`), waitMs)
    timer.unref()
    this.waiting.set(id, {
      hostId,
      secret,
      arrive: (ws) => {
        forget()
        settle.resolve(createWebSocketStream(ws))
      },
      cancel,
    })
    return { id, stream, cancel }
  }

  /** The agent's websocket: `/resmgr/v1/hosts/{hostId}/consoles/{sessionId}`, with the host's credential. */
  async acceptHost(request: IncomingMessage, socket: Duplex, head: Buffer, hostId: string, sessionId: string): Promise<void> {
    const authorization = request.headers.authorization
    const credential = authorization && /^bearer /i.test(authorization) ? authorization.slice(7).trim() : undefined
    let authenticated: string
    try {
      authenticated = await this.o.authenticateHost(credential)
    } catch {
      return refuseUpgrade(socket, 401, 'Unauthorized')
    }
    if (authenticated !== hostId.toLowerCase()) return refuseUpgrade(socket, 403, 'A host credential acts only for its own host')
    const local = this.waiting.get(sessionId)
    if (local) {
      if (local.hostId !== authenticated) return refuseUpgrade(socket, 404, 'No such console session')
      return this.wss.handleUpgrade(request, socket, head, (ws) => this.arrive(sessionId, ws))
    }
    const row = await this.o.db
      .selectFrom('console_sessions')
      .select(['owner_url', 'relay_secret'])
      .where('id', '=', sessionId)
      .where('host_id', '=', authenticated)
      .where('expires_at', '>', Date.now())
      .executeTakeFirst()
    if (!row || row.owner_url === this.ownUrl) return refuseUpgrade(socket, 404, 'No such console session')
    let relay: WebSocket
    try {
      relay = await this.dialOwner(row.owner_url, sessionId, this.o.box.openText(row.relay_secret))
    } catch (err) {
      this.o.logger.warn({ err, sessionId, owner: row.owner_url }, 'console relay to the owning process failed')
      return refuseUpgrade(socket, 502, 'The process holding the console session cannot be reached')
    }
    this.o.logger.info({ sessionId, owner: row.owner_url }, 'console session relayed to the process that owns it')
    const held = hold(relay)
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      this.track(ws)
      this.track(relay)
      keepAlive(relay, this.o.pingMs)
      void pipeConsole(ws, createWebSocketStream(relay), { idleMs: 0, pingMs: this.o.pingMs }, held)
    })
  }

  /** A relayed websocket from the process the agent reached: `/console/relay/{sessionId}`. */
  acceptRelay(request: IncomingMessage, socket: Duplex, head: Buffer, sessionId: string): void {
    const waiting = this.waiting.get(sessionId)
    const presented = Buffer.from(String(request.headers[RELAY_SECRET_HEADER] ?? ''))
    const expected = Buffer.from(waiting?.secret ?? '')
    if (!waiting || presented.length !== expected.length || !timingSafeEqual(presented, expected)) return refuseUpgrade(socket, 404, 'No such console session')
    this.wss.handleUpgrade(request, socket, head, (ws) => this.arrive(sessionId, ws))
  }

  /** Closes every websocket this process holds for consoles (graceful stop). */
  closeAll(reason: string): void {
    for (const waiting of [...this.waiting.values()]) waiting.cancel(reason)
    for (const ws of this.sockets) {
      closeSocket(ws, 1001, reason)
      // A peer that does not answer the close must not hold the stop for ws's 30 s close timeout.
      setTimeout(() => ws.terminate(), 1000).unref()
    }
  }

  /** Websockets held now (tests check nothing leaks). */
  get openSockets(): number {
    return this.sockets.size
  }

  /** Holds a websocket until it closes; a protocol error on it (a bad frame) closes it instead of the process. */
  track(ws: WebSocket): void {
    this.sockets.add(ws)
    ws.on('error', () => {})
    ws.once('close', () => this.sockets.delete(ws))
  }

  private arrive(sessionId: string, ws: WebSocket): void {
    this.track(ws)
    const waiting = this.waiting.get(sessionId)
    if (!waiting) return closeSocket(ws, 1011, 'The console session is over')
    keepAlive(ws, this.o.pingMs)
    waiting.arrive(ws)
  }

  private dialOwner(ownerUrl: string, sessionId: string, secret: string): Promise<WebSocket> {
    const url = `${ownerUrl.replace(/^http/, 'ws')}/console/relay/${sessionId}`
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers: { [RELAY_SECRET_HEADER]: secret }, perMessageDeflate: false, handshakeTimeout: 10_000 })
      ws.once('open', () => {
        ws.off('error', reject)
        ws.on('error', () => {})
        resolve(ws)
      })
      ws.once('error', reject)
    })
  }
}
