/**
 * A QMP client (QEMU Machine Protocol: JSON over a unix socket; QEMU docs interop/qmp-spec). It knows nothing of
 * servers: connect (greeting, then `qmp_capabilities`), one command at a time with its own timeout, events. The
 * QEMU driver composes commands from it; other parts of the agent (volume hot-plug, remote consoles) use it the same way.
 *
 * One client per monitor socket at a time: QEMU serves one connection per monitor and leaves the next waiting, so
 * callers hold a connection only for the few commands they need (the driver serialises per guest).
 */
import { connect, type Socket } from 'node:net'

export interface QmpEvent {
  event: string
  data?: Record<string, unknown>
  timestamp?: { seconds: number; microseconds: number }
}

/** An error QEMU answered (`class` such as GenericError, CommandNotFound, DeviceNotFound). */
export class QmpError extends Error {
  override name = 'QmpError'
  constructor(
    readonly command: string,
    readonly errorClass: string,
    readonly desc: string,
  ) {
    super(`QMP ${command}: ${errorClass}: ${desc}`)
  }
}

/** The monitor could not be reached or went away (QEMU not running, or exited meanwhile). */
export class QmpUnavailable extends Error {
  override name = 'QmpUnavailable'
}

/** Per-command timeouts (ms) that differ from the default; Proxmox's QMPClient uses the same orders of magnitude. */
const COMMAND_TIMEOUTS: Record<string, number> = {
  device_add: 60_000,
  device_del: 60_000,
  'blockdev-add': 60_000,
  // Formatting LUKS derives keys (about 2 s of PBKDF2 each) before QEMU answers.
  'blockdev-create': 60_000,
  'object-add': 60_000,
  'blockdev-del': 600_000,
  'blockdev-mirror': 600_000,
  'block-job-cancel': 600_000,
  quit: 60_000,
}
const DEFAULT_TIMEOUT_MS = 5_000

interface Pending {
  command: string
  resolve: (value: unknown) => void
  reject: (err: Error) => void
  timer: NodeJS.Timeout
}

export class QmpClient {
  /** Every event received on this connection, oldest first (waitEvent looks here before waiting). */
  readonly events: QmpEvent[] = []
  private buffer = ''
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private readonly eventWaiters = new Set<(e: QmpEvent) => void>()
  private readonly closeWaiters = new Set<(err: Error) => void>()
  private closed: Error | undefined
  private greeting: { resolve: (v: unknown) => void; reject: (e: Error) => void } | undefined

  private constructor(
    private readonly socket: Socket,
    readonly path: string,
  ) {
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => this.receive(chunk))
    socket.on('error', (err) => this.fail(new QmpUnavailable(`QMP socket ${path}: ${err.message}`)))
    socket.on('close', () => this.fail(new QmpUnavailable(`QMP socket ${path} closed`)))
  }

  /** Connects, reads the greeting and leaves capabilities negotiation; fails with QmpUnavailable when nobody answers. */
  static async connect(path: string, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<QmpClient> {
    const socket = connect(path)
    const client = new QmpClient(socket, path)
    const greeted = new Promise((resolve, reject) => (client.greeting = { resolve, reject }))
    const timer = setTimeout(() => client.fail(new QmpUnavailable(`QMP socket ${path}: no greeting within ${timeoutMs} ms`)), timeoutMs)
    try {
      await greeted
      await client.execute('qmp_capabilities')
      return client
    } catch (err) {
      client.close()
      throw err
    } finally {
      clearTimeout(timer)
    }
  }

  /** Runs one command; resolves with its `return` value, rejects with QmpError or QmpUnavailable. */
  execute<T = unknown>(command: string, args?: Record<string, unknown>, timeoutMs = COMMAND_TIMEOUTS[command] ?? DEFAULT_TIMEOUT_MS): Promise<T> {
    if (this.closed) return Promise.reject(this.closed)
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new QmpUnavailable(`QMP ${command}: no answer within ${timeoutMs} ms`))
      }, timeoutMs)
      this.pending.set(id, { command, resolve: resolve as (v: unknown) => void, reject, timer })
      this.socket.write(JSON.stringify({ execute: command, ...(args && { arguments: args }), id }) + '\r\n')
    })
  }

  /**
   * The first event named `name` (and matching `match`) received after the `since`-th event of this connection;
   * rejects after `timeoutMs`, or when the connection closes first (QEMU exiting, e.g. after SHUTDOWN).
   */
  waitEvent(name: string, timeoutMs: number, options: { since?: number; match?: (e: QmpEvent) => boolean } = {}): Promise<QmpEvent> {
    const matches = (e: QmpEvent) => e.event === name && (!options.match || options.match(e))
    const seen = this.events.slice(options.since ?? 0).find(matches)
    if (seen) return Promise.resolve(seen)
    if (this.closed) return Promise.reject(this.closed)
    return new Promise((resolve, reject) => {
      const waiter = (e: QmpEvent) => {
        if (!matches(e)) return
        cleanup()
        resolve(e)
      }
      const onClose = (err: Error) => {
        cleanup()
        reject(err)
      }
      const timer = setTimeout(() => {
        cleanup()
        reject(new QmpUnavailable(`QMP event ${name} did not come within ${timeoutMs} ms`))
      }, timeoutMs)
      const cleanup = () => {
        clearTimeout(timer)
        this.eventWaiters.delete(waiter)
        this.closeWaiters.delete(onClose)
      }
      this.eventWaiters.add(waiter)
      this.closeWaiters.add(onClose)
    })
  }

  /** Resolves when QEMU closes the connection (it exited), or after `timeoutMs` with false. */
  waitClosed(timeoutMs: number): Promise<boolean> {
    if (this.closed) return Promise.resolve(true)
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.closeWaiters.delete(done)
        resolve(false)
      }, timeoutMs)
      const done = () => {
        clearTimeout(timer)
        resolve(true)
      }
      this.closeWaiters.add(done)
    })
  }

  close(): void {
    this.socket.destroy()
    this.fail(new QmpUnavailable(`QMP socket ${this.path} closed by the client`))
  }

  private receive(chunk: string): void {
    this.buffer += chunk
    let nl: number
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl).trim()
      this.buffer = this.buffer.slice(nl + 1)
      if (!line) continue
      let message: Record<string, unknown>
      try {
        message = JSON.parse(line) as Record<string, unknown>
      } catch {
        continue
      }
      this.dispatch(message)
    }
  }

  private dispatch(message: Record<string, unknown>): void {
    if ('QMP' in message) {
      this.greeting?.resolve(message)
      this.greeting = undefined
      return
    }
    if (typeof message.event === 'string') {
      const event = message as unknown as QmpEvent
      this.events.push(event)
      for (const w of [...this.eventWaiters]) w(event)
      return
    }
    const pending = typeof message.id === 'number' ? this.pending.get(message.id) : undefined
    if (!pending) return
    this.pending.delete(message.id as number)
    clearTimeout(pending.timer)
    const error = message.error as { class?: string; desc?: string } | undefined
    if (error) pending.reject(new QmpError(pending.command, error.class ?? 'GenericError', error.desc ?? ''))
    else pending.resolve(message.return)
  }

  private fail(err: Error): void {
    if (this.closed) return
    this.closed = err
    this.greeting?.reject(err)
    this.greeting = undefined
    for (const p of this.pending.values()) {
      clearTimeout(p.timer)
      p.reject(err)
    }
    this.pending.clear()
    for (const w of [...this.closeWaiters]) w(err)
    this.closeWaiters.clear()
  }
}
