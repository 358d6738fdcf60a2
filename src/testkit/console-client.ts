/**
 * Remote-console clients for tests: a websocket client that records what the console sends and waits (bounded)
 * for text in it, the websocket URL of a console URL as noVNC and Tempest derive it, and a raw upgrade written
 * byte for byte as Tempest's `create_websocket` sends it (tempest/common/compute.py), to see exactly what a
 * refused client receives.
 */
import { connect as tcpConnect } from 'node:net'
import { WebSocket } from 'ws'

export interface ConsoleClient {
  ws: WebSocket
  /** The subprotocol the server selected ('' when none). */
  protocol: string
  /** Everything received so far, as UTF-8 text / bytes. */
  text(): string
  bytes(): Buffer
  /** Binary messages received so far, in order (frame boundaries as the proxy sent them). */
  messages: Buffer[]
  /** Waits until the text received matches, or fails naming what it saw. */
  until(pattern: RegExp, timeoutMs?: number): Promise<string>
  /** Resolves once the websocket closed, with the close code and reason. */
  closed: Promise<{ code: number; reason: string }>
  send(data: string | Buffer): void
  close(): Promise<{ code: number; reason: string }>
}

/** The websocket URL a console URL leads to: serial URLs are one; noVNC URLs carry it in `path` (relative to the host); an http URL without one is the websocket's own. */
export function websocketUrlOf(consoleUrl: string): string {
  const url = new URL(consoleUrl)
  if (url.protocol === 'ws:' || url.protocol === 'wss:') return consoleUrl
  const scheme = url.protocol === 'https:' ? 'wss' : 'ws'
  const path = url.searchParams.get('path')
  return path === null ? `${scheme}${consoleUrl.slice(url.protocol.length - 1)}` : `${scheme}://${url.host}/${path}`
}

export async function openConsoleClient(url: string, options: { protocols?: string[]; headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<ConsoleClient> {
  const ws = new WebSocket(websocketUrlOf(url), options.protocols ?? [], { headers: options.headers, perMessageDeflate: false, handshakeTimeout: options.timeoutMs ?? 10_000 })
  const messages: Buffer[] = []
  ws.on('message', (data: Buffer) => messages.push(Buffer.from(data)))
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })))
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode} ${res.statusMessage}`)))
  })
  ws.on('error', () => {})
  const bytes = () => Buffer.concat(messages)
  return {
    ws,
    protocol: ws.protocol,
    messages,
    bytes,
    text: () => bytes().toString('utf8'),
    closed,
    send: (data) => ws.send(data),
    async until(pattern, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (!pattern.test(bytes().toString('utf8'))) {
        if (Date.now() > deadline || ws.readyState === WebSocket.CLOSED) {
          throw new Error(`console never showed ${pattern} (${ws.readyState === WebSocket.CLOSED ? 'closed' : 'timed out'}); it shows:\n${bytes().toString('utf8')}`)
        }
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      return bytes().toString('utf8')
    },
    async close() {
      if (ws.readyState === WebSocket.OPEN) ws.close(1000)
      const timer = setTimeout(() => ws.terminate(), 5000)
      const end = await closed
      clearTimeout(timer)
      return end
    },
  }
}

/** The close a refused or ended session gets; fails if the socket is still open after `timeoutMs`. */
export async function closedWithin(client: ConsoleClient, timeoutMs = 10_000): Promise<{ code: number; reason: string }> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error(`the console websocket is still open after ${timeoutMs} ms`)), timeoutMs)))
  try {
    return await Promise.race([client.closed, late])
  } finally {
    clearTimeout(timer)
  }
}

/** The upgrade request Tempest's create_websocket/_upgrade writes for a console URL. */
function tempestRequest(consoleUrl: string): { url: URL; request: string } {
  const url = new URL(consoleUrl)
  // As Tempest: without a `path` parameter (serial URLs) it asks for /websockify and the token goes as a cookie.
  const path = url.searchParams.get('path') ?? 'websockify'
  const request =
    `GET /${path} HTTP/1.1\r\nHost: ${url.hostname}${url.port ? `:${url.port}` : ''}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    `Cookie: ${url.search.slice(1)}\r\nSec-WebSocket-Key: x3JJHMbDL1EzLkh9GBhXDw==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: binary\r\n\r\n`
  return { url, request }
}

/**
 * Tempest's upgrade (create_websocket/_upgrade): `GET /<path>` with the query as a Cookie and `binary` offered.
 * Resolves with the response's status line and whatever bytes followed the headers before the server closed
 * (or `waitMs` passed).
 */
export function tempestUpgrade(consoleUrl: string, waitMs = 2000): Promise<{ statusLine: string; headers: string; after: Buffer }> {
  const { url, request } = tempestRequest(consoleUrl)
  return new Promise((resolve, reject) => {
    const socket = tcpConnect(Number(url.port || 80), url.hostname)
    const chunks: Buffer[] = []
    const finish = () => {
      clearTimeout(timer)
      socket.destroy()
      const all = Buffer.concat(chunks)
      const end = all.indexOf('\r\n\r\n')
      const head = end < 0 ? all.toString('latin1') : all.subarray(0, end).toString('latin1')
      const [statusLine, ...rest] = head.split('\r\n')
      resolve({ statusLine, headers: rest.join('\n'), after: end < 0 ? Buffer.alloc(0) : all.subarray(end + 4) })
    }
    const timer = setTimeout(finish, waitMs)
    socket.on('connect', () => socket.write(request))
    socket.on('data', (d) => chunks.push(d))
    socket.on('close', finish)
    socket.on('error', reject)
  })
}

/**
 * A websocket spoken as Tempest's `_WebSocket` does, on a raw socket: upgrade, then single frames. The frame
 * reader is Tempest's: it reads the length from the second byte only, so a frame of 126 bytes or more would be
 * misread there; this one fails instead, to show the proxy keeps RFB's handshake messages in small frames.
 */
export async function tempestWebSocket(consoleUrl: string): Promise<{
  statusLine: string
  receiveFrame(timeoutMs?: number): Promise<Buffer | null>
  sendFrame(data: Buffer): void
  close(): void
}> {
  const { url, request } = tempestRequest(consoleUrl)
  const socket = tcpConnect(Number(url.port || 80), url.hostname)
  let buffered = Buffer.alloc(0)
  let closed = false
  let wake: (() => void) | undefined
  socket.on('data', (d: Buffer) => {
    buffered = Buffer.concat([buffered, d])
    wake?.()
  })
  socket.on('close', () => {
    closed = true
    wake?.()
  })
  socket.on('error', () => {})
  const need = async (n: number, deadline: number): Promise<Buffer | null> => {
    while (buffered.length < n) {
      if (closed) return null
      if (Date.now() > deadline) throw new Error(`no ${n} bytes from the proxy in time (have ${buffered.length})`)
      await new Promise<void>((resolve) => {
        wake = resolve
        setTimeout(resolve, 50)
      })
    }
    const out = buffered.subarray(0, n)
    buffered = buffered.subarray(n)
    return out
  }
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve())
    socket.once('error', reject)
  })
  socket.write(request)
  const deadline = Date.now() + 10_000
  while (buffered.indexOf('\r\n\r\n') < 0) {
    if (closed || Date.now() > deadline) throw new Error(`no upgrade response: ${buffered.toString('latin1')}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const end = buffered.indexOf('\r\n\r\n')
  const statusLine = buffered.subarray(0, end).toString('latin1').split('\r\n')[0]
  buffered = buffered.subarray(end + 4)
  return {
    statusLine,
    async receiveFrame(timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs
      for (;;) {
        const header = await need(2, until)
        if (!header) return null
        const length = header[1] & 127
        if (length >= 126) throw new Error(`a frame of ${length === 126 ? '126+' : 'many'} bytes: Tempest reads only 7-bit lengths`)
        if (length > 0) return need(length, until)
      }
    },
    sendFrame(data: Buffer) {
      const mask = [7, 2, 1, 9]
      socket.write(Buffer.from([130, data.length | 128, ...mask, ...data.map((b, i) => b ^ mask[i % 4])]))
    },
    close: () => socket.destroy(),
  }
}

/**
 * Tempest's RFB check (test_novnc.py _validate_rfb_negotiation) over a `tempestWebSocket`: the server's version,
 * security type None, the security result, ClientInit, and a ServerInit of the right length. Returns what it saw.
 */
export async function tempestRfbNegotiation(ws: Awaited<ReturnType<typeof tempestWebSocket>>): Promise<{ version: string; securityTypes: number[]; desktopName: string }> {
  const hello = await ws.receiveFrame()
  if (!hello) throw new Error('the proxy closed before the RFB version')
  const version = hello.toString('latin1')
  ws.sendFrame(hello)
  const types = await ws.receiveFrame()
  if (!types) throw new Error('no security types')
  const securityTypes = [...types.subarray(1, 1 + types[0])]
  if (!securityTypes.includes(1)) throw new Error(`security type None not offered: ${securityTypes}`)
  ws.sendFrame(Buffer.from([1]))
  const result = await ws.receiveFrame()
  if (!result || result.length !== 4 || result.readUInt32BE(0) !== 0) throw new Error(`security result ${result?.toString('hex')}`)
  ws.sendFrame(Buffer.from([1]))
  const init = await ws.receiveFrame()
  if (!init || init.length <= 24 || init.length !== init.readUInt32BE(20) + 24) throw new Error(`ServerInit of ${init?.length} bytes is not the right format`)
  return { version, securityTypes, desktopName: init.subarray(24).toString('utf8') }
}
