/**
 * WebSocket upgrades: Node hands them to the HTTP server's `upgrade` event, outside Fastify's routing. One
 * listener routes them by path through a table (like the API families); an upgrade no route takes, or whose
 * handler fails, is answered with a bodiless HTTP error and the connection closed, so nothing is left hanging.
 */
import type { IncomingMessage, Server } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Logger } from 'pino'

export interface UpgradeRoute {
  /** Matched against the request path (without the query). */
  pattern: RegExp
  /** Takes the upgrade (or refuses it with `refuseUpgrade`); `match` holds the pattern's groups. */
  handle(request: IncomingMessage, socket: Duplex, head: Buffer, match: RegExpExecArray): Promise<void> | void
}

/**
 * Answers an upgrade with an HTTP error and closes the connection. No body: a websocket client reads whatever
 * follows the status as frames (Tempest's bad-token check expects nothing), and the reason is in the status line.
 */
export function refuseUpgrade(socket: Duplex, status: number, reason: string): void {
  if (!socket.writable) return void socket.destroy()
  socket.end(`HTTP/1.1 ${status} ${reason.replace(/[\r\n]/g, ' ')}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, () => socket.destroy())
}

export function attachUpgrades(server: Server, routes: UpgradeRoute[], logger: Logger): void {
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    // A client that vanishes mid-handshake must not raise an uncaught error.
    socket.on('error', () => socket.destroy())
    const path = (request.url ?? '/').split('?')[0]
    for (const route of routes) {
      const match = route.pattern.exec(path)
      if (!match) continue
      Promise.resolve()
        .then(() => route.handle(request, socket, head, match))
        .catch((err: unknown) => {
          logger.error({ err, path }, 'websocket upgrade failed')
          refuseUpgrade(socket, 500, 'Internal Server Error')
        })
      return
    }
    refuseUpgrade(socket, 404, 'Not Found')
  })
}
