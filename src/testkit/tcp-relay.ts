/**
 * A TCP relay on 127.0.0.1 between a client (an agent) and a server, to drop the network between them in a test.
 * `cut()` closes every connection through it and stops forwarding: a connection opened while cut is closed as
 * soon as its first request arrives, so the client sees the failure at once. `restore()` forwards again. Every
 * HTTP request the client sends (on new or kept-alive connections) is recorded with the time and whether it went
 * through, so a test sees how the client retried.
 */
import { connect, createServer, type Server, type Socket } from 'node:net'

export interface RelayRequest {
  at: number
  /** The request line, e.g. `GET /resmgr/v1/hosts/…/commands?wait=25 HTTP/1.1`. */
  line: string
  /** False when the relay was cut and closed the connection instead. */
  forwarded: boolean
}

const REQUEST_LINE = /^(?:GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) \S+ HTTP\/1\.[01]$/

export class TcpRelay {
  port = 0
  /** Every request a client sent, in order. */
  readonly requests: RelayRequest[] = []
  private server: Server | undefined
  private readonly sockets = new Set<Socket>()
  private cutOff = false

  constructor(private readonly target: { host: string; port: number }) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  async open(): Promise<void> {
    this.server = createServer((client) => this.accept(client))
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve))
    this.port = (this.server.address() as { port: number }).port
  }

  /** The network drops: every connection is closed, new ones are closed as soon as they send something. */
  cut(): void {
    this.cutOff = true
    for (const socket of this.sockets) socket.destroy()
  }

  restore(): void {
    this.cutOff = false
  }

  async close(): Promise<void> {
    this.cut()
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
  }

  private track(socket: Socket): void {
    this.sockets.add(socket)
    socket.on('close', () => this.sockets.delete(socket))
    socket.on('error', () => {})
  }

  private accept(client: Socket): void {
    this.track(client)
    let upstream: Socket | undefined
    client.on('data', (chunk: Buffer) => {
      const forwarded = !this.cutOff
      // Request lines start a line of their own; JSON bodies never hold one.
      for (const line of chunk.toString('latin1').split('\r\n')) if (REQUEST_LINE.test(line)) this.requests.push({ at: Date.now(), line, forwarded })
      if (!forwarded) {
        client.destroy()
        return
      }
      if (!upstream) {
        upstream = connect(this.target.port, this.target.host)
        this.track(upstream)
        upstream.on('close', () => client.destroy())
        client.on('close', () => upstream!.destroy())
        upstream.pipe(client)
      }
      upstream.write(chunk)
    })
  }
}
