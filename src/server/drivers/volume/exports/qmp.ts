/**
 * A small QMP client for qemu-storage-daemon's monitor: connect, negotiate capabilities, run commands one at a
 * time with a timeout each, collect events. It knows nothing of volumes (export-manager.ts composes commands).
 */
import { createConnection, type Socket } from 'node:net'

export class QmpError extends Error {
  override name = 'QmpError'
}

export interface QmpEvent {
  event: string
  data?: Record<string, unknown>
}

export class QmpConnection {
  private buffer = ''
  private pending: { resolve: (v: unknown) => void; reject: (e: Error) => void } | undefined
  private readonly events: QmpEvent[] = []
  private readonly eventWaiters: { match: (e: QmpEvent) => boolean; resolve: (e: QmpEvent) => void }[] = []
  private greeted!: () => void
  private closedError: Error | undefined

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => this.receive(chunk))
    socket.on('error', (err) => this.fail(new QmpError(`QMP socket error: ${err.message}`)))
    socket.on('close', () => this.fail(new QmpError('QMP socket closed')))
  }

  /** Connects to the monitor socket and leaves capabilities negotiation behind. */
  static async open(path: string, timeoutMs = 5000): Promise<QmpConnection> {
    const socket = createConnection(path)
    const qmp = new QmpConnection(socket)
    await withTimeout(
      new Promise<void>((resolve, reject) => {
        qmp.greeted = resolve
        socket.once('error', reject)
      }),
      timeoutMs,
      `no QMP greeting on ${path}`,
    ).catch((err: Error) => {
      socket.destroy()
      throw new QmpError(err.message)
    })
    await qmp.execute('qmp_capabilities', undefined, timeoutMs)
    return qmp
  }

  private receive(chunk: string): void {
    this.buffer += chunk
    let at: number
    while ((at = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, at).trim()
      this.buffer = this.buffer.slice(at + 1)
      if (line) this.dispatch(JSON.parse(line) as Record<string, unknown>)
    }
  }

  private dispatch(message: Record<string, unknown>): void {
    if ('QMP' in message) return this.greeted?.()
    if ('event' in message) {
      const event = message as unknown as QmpEvent
      const waiter = this.eventWaiters.findIndex((w) => w.match(event))
      if (waiter >= 0) this.eventWaiters.splice(waiter, 1)[0].resolve(event)
      else this.events.push(event)
      return
    }
    const pending = this.pending
    this.pending = undefined
    if (!pending) return
    if ('error' in message) {
      const error = message.error as { class: string; desc: string }
      pending.reject(new QmpError(`${error.class}: ${error.desc}`))
    } else pending.resolve(message.return)
  }

  private fail(err: Error): void {
    this.closedError ??= err
    this.pending?.reject(err)
    this.pending = undefined
  }

  /** Runs one command; rejects with the daemon's error, or when no answer comes within `timeoutMs`. */
  async execute<T = unknown>(command: string, args?: Record<string, unknown>, timeoutMs = 10_000): Promise<T> {
    if (this.closedError) throw this.closedError
    if (this.pending) throw new QmpError('a QMP command is already running on this connection')
    const answer = new Promise<unknown>((resolve, reject) => (this.pending = { resolve, reject }))
    this.socket.write(JSON.stringify({ execute: command, ...(args ? { arguments: args } : {}) }) + '\n')
    return (await withTimeout(answer, timeoutMs, `QMP ${command} did not answer within ${timeoutMs} ms`)) as T
  }

  /** The first event (already received or still to come) that `match` accepts. */
  async waitEvent(match: (e: QmpEvent) => boolean, timeoutMs: number): Promise<QmpEvent> {
    const seen = this.events.findIndex(match)
    if (seen >= 0) return this.events.splice(seen, 1)[0]
    return withTimeout(new Promise<QmpEvent>((resolve) => this.eventWaiters.push({ match, resolve })), timeoutMs, 'the QMP event did not come')
  }

  close(): void {
    this.socket.destroy()
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout
  return Promise.race([promise, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new QmpError(message)), ms)))]).finally(() => clearTimeout(timer))
}
