/**
 * Carrying a remote console over a websocket: the bytes of a stream become binary messages one way and messages become
 * bytes the other, with backpressure both ways, pings that cut a peer which stopped answering, an idle limit,
 * and one ending for everything: whichever side stops, the other is closed and every timer and listener goes.
 * Used at each hop of a remote console (the user's websocket in pcc-server, the agent's on the host, relays between
 * processes), so every hop ends alike.
 */
import type { Duplex } from 'node:stream'
import { WebSocket, type RawData } from 'ws'

export interface PipeOptions {
  /** Close after this long without a byte either way (0: never). */
  idleMs: number
  /** Ping interval; a peer that has not answered the previous ping by the next one is cut (default 15 s). */
  pingMs?: number
}

/** How a remote-console session ended: the websocket close code and reason (sent to the peer when it was still there). */
export interface PipeEnd {
  code: number
  reason: string
}

/** Bytes queued on the websocket above which the stream is paused until they drain. */
const HIGH_WATER = 1 << 20
const DEFAULT_PING_MS = 15_000

export function rawBytes(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)
}

/** A close reason fits a control frame (123 bytes of UTF-8). */
export function closeReason(text: string): string {
  let reason = text
  while (Buffer.byteLength(reason) > 123) reason = reason.slice(0, -1)
  return reason
}

/** Closes a websocket if it is still open (code 1000 … 4999 except the reserved ones) without throwing. */
export function closeSocket(ws: WebSocket, code: number, reason: string): void {
  if (ws.readyState === WebSocket.CLOSING || ws.readyState === WebSocket.CLOSED) return
  // A paused socket would never read the peer's answering close frame, and the close would hang.
  ws.resume()
  const sendable = code === 1000 || code === 1001 || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999)
  ws.close(sendable ? code : 1011, closeReason(reason))
}

/**
 * Pings the websocket every `pingMs`; one that has not answered the previous ping is terminated (its 'close'
 * follows). Returns the function that stops pinging.
 */
export function keepAlive(ws: WebSocket, pingMs = DEFAULT_PING_MS): () => void {
  let answered = true
  const pong = () => (answered = true)
  ws.on('pong', pong)
  const timer = setInterval(() => {
    if (!answered) return ws.terminate()
    answered = false
    if (ws.readyState === WebSocket.OPEN) ws.ping()
  }, pingMs)
  timer.unref()
  const stop = () => {
    clearInterval(timer)
    ws.off('pong', pong)
  }
  ws.once('close', stop)
  return stop
}

/** Messages a websocket received while its console was not joined yet (see `hold`). */
export interface Held {
  /** Stops holding; the messages received meanwhile, oldest first. */
  release(): Buffer[]
}

/**
 * Holds a websocket's messages until its console is joined: the socket is paused, and messages it had already
 * read are kept (a paused websocket still delivers what it parsed).
 */
export function hold(ws: WebSocket): Held {
  const messages: Buffer[] = []
  const keep = (data: RawData) => messages.push(rawBytes(data))
  ws.on('message', keep)
  ws.pause()
  return {
    release: () => {
      ws.off('message', keep)
      return messages
    },
  }
}

/**
 * Joins a websocket and a stream until either ends; resolves with how it ended. The stream is destroyed and the
 * websocket closed (with the code and reason) by then. Messages held while the websocket was paused flow once
 * this starts.
 */
export function pipeConsole(ws: WebSocket, stream: Duplex, options: PipeOptions, held?: Held): Promise<PipeEnd> {
  return new Promise((resolve) => {
    let over = false
    let lastActivity = Date.now()
    let idleTimer: NodeJS.Timeout | undefined
    const stopPings = keepAlive(ws, options.pingMs)

    const end = (code: number, reason: string) => {
      if (over) return
      over = true
      clearTimeout(idleTimer)
      stopPings()
      ws.off('message', onMessage)
      ws.off('close', onClose)
      stream.off('data', onData)
      stream.off('end', onStreamEnd)
      stream.off('close', onStreamEnd)
      stream.off('error', onStreamError)
      // Errors after the end (a write racing the destroy) must not become uncaught.
      stream.on('error', () => {})
      stream.destroy()
      closeSocket(ws, code, reason)
      resolve({ code, reason })
    }

    const onMessage = (data: RawData) => {
      lastActivity = Date.now()
      if (!stream.write(rawBytes(data))) {
        ws.pause()
        stream.once('drain', () => ws.resume())
      }
    }
    const onData = (chunk: Buffer) => {
      lastActivity = Date.now()
      ws.send(chunk, { binary: true }, () => {
        if (stream.isPaused() && ws.bufferedAmount < HIGH_WATER / 2) stream.resume()
      })
      if (ws.bufferedAmount > HIGH_WATER) stream.pause()
    }
    const onClose = (code: number, reason: Buffer) => end(code, reason.toString() || 'The other side closed the console.')
    const onStreamEnd = () => end(1000, 'The console closed.')
    const onStreamError = (err: Error) => end(1011, err.message)
    ws.on('error', () => {})
    ws.on('message', onMessage)
    ws.on('close', onClose)
    stream.on('data', onData)
    stream.on('end', onStreamEnd)
    stream.on('close', onStreamEnd)
    stream.on('error', onStreamError)
    for (const message of held?.release() ?? []) stream.write(message)
    ws.resume()

    if (options.idleMs > 0) {
      const check = () => {
        const quiet = Date.now() - lastActivity
        if (quiet >= options.idleMs) end(1000, `The console was idle for ${Math.round(options.idleMs / 1000)} s.`)
        else idleTimer = setTimeout(check, options.idleMs - quiet)
      }
      idleTimer = setTimeout(check, options.idleMs)
    }
    if (ws.readyState !== WebSocket.OPEN) end(1011, 'The websocket closed before the console opened.')
  })
}
