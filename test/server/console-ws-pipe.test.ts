/**
 * The console pipe (src/server/remote-consoles/ws-pipe.ts) every hop of a remote console uses, with real websockets on
 * 127.0.0.1: a peer that stops answering pings is cut and its stream destroyed; a reader that stops reading
 * pauses the producer instead of buffering without bound; the end removes every listener it added.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { Duplex } from 'node:stream'
import { WebSocket, WebSocketServer } from 'ws'
import { pipeConsole, type PipeEnd } from '../../src/lib/ws-pipe.js'

/** A server whose first connection is piped to `stream`; resolves with the pipe's end. */
async function serve(stream: Duplex, pingMs: number): Promise<{ url: string; ended: Promise<PipeEnd>; serverSide: Promise<WebSocket>; close(): Promise<void> }> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
  await once(wss, 'listening')
  let ws!: (w: WebSocket) => void
  const serverSide = new Promise<WebSocket>((resolve) => (ws = resolve))
  const ended = new Promise<PipeEnd>((resolve) =>
    wss.once('connection', (socket) => {
      ws(socket)
      resolve(pipeConsole(socket, stream, { idleMs: 0, pingMs }))
    }),
  )
  return { url: `ws://127.0.0.1:${(wss.address() as { port: number }).port}`, ended, serverSide, close: () => new Promise((resolve) => wss.close(() => resolve())) }
}

describe('console pipe', () => {
  it('cuts a peer that stops answering pings, and destroys its stream', async () => {
    const stream = new Duplex({ read() {}, write(_c, _e, done) { done() } })
    const server = await serve(stream, 100)
    const client = new WebSocket(server.url, { autoPong: false })
    await once(client, 'open')
    const started = Date.now()
    const end = await server.ended
    assert.equal(end.code, 1006, 'terminated, no close frame')
    assert.ok(Date.now() - started < 2000, `cut after ${Date.now() - started} ms`)
    assert.ok(stream.destroyed)
    client.terminate()
    await server.close()
  })

  it('pauses the producer while the reader does not read, and removes its listeners at the end', async () => {
    const total = 64 << 20
    let produced = 0
    const stream = new Duplex({
      read() {
        if (produced >= total) return
        produced += 64 << 10
        this.push(Buffer.alloc(64 << 10, 0x41))
      },
      write(_c, _e, done) {
        done()
      },
    })
    const server = await serve(stream, 10_000)
    const client = new WebSocket(server.url)
    await once(client, 'open')
    client.pause()
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const held = produced
    assert.ok(held < total / 2, `the producer went on to ${held} bytes with nobody reading`)
    await new Promise((resolve) => setTimeout(resolve, 500))
    assert.equal(produced, held, 'and stays paused')
    const serverSide = await server.serverSide
    client.terminate()
    await server.ended
    assert.equal(serverSide.listenerCount('message'), 0)
    assert.equal(serverSide.listenerCount('pong'), 0)
    assert.equal(stream.listenerCount('data'), 0)
    await server.close()
  })
})
