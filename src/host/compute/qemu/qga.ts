/**
 * A client of the QEMU guest agent (qemu-ga, running inside the guest; QEMU docs interop/qemu-ga and the QGA
 * schema): JSON commands over the guest's virtio-serial port `org.qemu.guest_agent.0`, whose host end is a unix
 * socket QEMU serves (command-line.ts). Like qmp.ts it knows nothing of servers.
 *
 * The channel is a plain byte pipe: QEMU accepts a connection whether or not an agent runs inside, an agent keeps
 * no session, and an answer to an earlier client's command may still be on its way. So every connection starts
 * with `guest-sync-delimited` carrying a random id: the client sends 0xFF (which resets the agent's JSON parser),
 * then the command; the agent answers with a 0xFF sentinel byte and the id, and everything before the answer with
 * our id is stale and dropped. Every wait has a timeout: a guest without a running agent is a
 * GuestAgentUnavailable after the sync's timeout, never a hang.
 */
import { randomInt } from 'node:crypto'
import { connect, type Socket } from 'node:net'

/** No agent answers: QEMU is not running, the guest has no agent running, or it did not answer in time. */
export class GuestAgentUnavailable extends Error {
  override name = 'GuestAgentUnavailable'
}

/** The agent answered with an error (`class` such as GenericError, CommandNotFound). */
export class GuestAgentError extends Error {
  override name = 'GuestAgentError'
  constructor(
    readonly command: string,
    readonly errorClass: string,
    readonly desc: string,
  ) {
    super(`guest agent ${command}: ${errorClass}: ${desc}`)
  }
}

const SENTINEL = 0xff
export const AGENT_SYNC_TIMEOUT_MS = 10_000
export const AGENT_COMMAND_TIMEOUT_MS = 30_000

interface Answer {
  return?: unknown
  error?: { class?: string; desc?: string }
}

export class GuestAgentClient {
  private buffer = Buffer.alloc(0)
  /** Until the sync's answer: drop everything up to a sentinel byte. */
  private delimited = true
  private waiter: ((answer: Answer) => void) | undefined
  private closed: Error | undefined
  private onClose: ((err: Error) => void) | undefined

  private constructor(
    private readonly socket: Socket,
    readonly path: string,
  ) {
    socket.on('data', (chunk: Buffer) => this.receive(chunk))
    socket.on('error', (err) => this.fail(new GuestAgentUnavailable(`the guest agent's channel ${path}: ${err.message}`)))
    socket.on('close', () => this.fail(new GuestAgentUnavailable(`the guest agent's channel ${path} closed`)))
  }

  /** Connects and synchronises with the agent; GuestAgentUnavailable when the channel or the agent does not answer. */
  static async connect(path: string, syncTimeoutMs = AGENT_SYNC_TIMEOUT_MS): Promise<GuestAgentClient> {
    const socket = connect(path)
    const client = new GuestAgentClient(socket, path)
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve)
        client.onClose = reject
      })
      await client.sync(syncTimeoutMs)
      return client
    } catch (err) {
      client.close()
      throw err
    }
  }

  /** Runs one command; resolves with its `return` value, rejects with GuestAgentError or GuestAgentUnavailable. */
  async execute<T = unknown>(command: string, args?: Record<string, unknown>, timeoutMs = AGENT_COMMAND_TIMEOUT_MS): Promise<T> {
    const answer = await this.request({ execute: command, ...(args && { arguments: args }) }, command, timeoutMs)
    if (answer.error) throw new GuestAgentError(command, answer.error.class ?? 'GenericError', answer.error.desc ?? 'unknown error')
    return answer.return as T
  }

  /**
   * A command that answers nothing when it succeeds (`guest-shutdown`: the guest goes down instead). Sent, then an
   * error answer within `waitMs` is a GuestAgentError; silence is success.
   */
  async sendWithoutAnswer(command: string, args?: Record<string, unknown>, waitMs = 2_000): Promise<void> {
    try {
      await this.execute(command, args, waitMs)
    } catch (err) {
      if (err instanceof GuestAgentError) throw err
      // No answer (or the channel closed as the guest went down): what success looks like.
    }
  }

  close(): void {
    this.fail(new GuestAgentUnavailable('closed'))
  }

  private async sync(timeoutMs: number): Promise<void> {
    const id = randomInt(1, 2 ** 31)
    this.socket.write(Buffer.from([SENTINEL]))
    this.send({ execute: 'guest-sync-delimited', arguments: { id } })
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const answer = await this.next('guest-sync-delimited', deadline - Date.now())
      if (answer.return === id) return
      // An earlier client's sync answered late: read on to the next sentinel, for ours.
      this.delimited = true
    }
  }

  private async request(message: Record<string, unknown>, command: string, timeoutMs: number): Promise<Answer> {
    this.send(message)
    return this.next(command, timeoutMs)
  }

  private send(message: Record<string, unknown>): void {
    if (!this.closed) this.socket.write(JSON.stringify(message) + '\n')
  }

  /** The next answer on the channel, within `timeoutMs`; a timeout closes the connection (a late answer would be taken for the next command's). */
  private next(command: string, timeoutMs: number): Promise<Answer> {
    if (this.closed) return Promise.reject(this.closed)
    return new Promise<Answer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined
        this.fail(new GuestAgentUnavailable(`the QEMU guest agent is not responding (no answer to ${command} within ${Math.round(timeoutMs)} ms)`))
      }, Math.max(0, timeoutMs))
      this.onClose = (err) => {
        clearTimeout(timer)
        reject(err)
      }
      this.waiter = (answer) => {
        clearTimeout(timer)
        this.waiter = undefined
        this.onClose = undefined
        resolve(answer)
      }
      this.drain()
    })
  }

  private receive(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk])
    this.drain()
  }

  /** Hands complete answers (one JSON object per line) to the waiter; before the sync's sentinel, drops bytes. */
  private drain(): void {
    while (this.waiter) {
      if (this.delimited) {
        const at = this.buffer.indexOf(SENTINEL)
        if (at < 0) {
          this.buffer = Buffer.alloc(0)
          return
        }
        this.buffer = this.buffer.subarray(at + 1)
        this.delimited = false
      }
      const end = this.buffer.indexOf(0x0a)
      if (end < 0) return
      const line = this.buffer.subarray(0, end).toString('utf8').trim()
      this.buffer = this.buffer.subarray(end + 1)
      if (!line) continue
      let answer: Answer
      try {
        answer = JSON.parse(line) as Answer
      } catch {
        continue
      }
      // Events and anything without an answer's shape are not answers.
      if (!('return' in answer) && !('error' in answer)) continue
      this.waiter(answer)
    }
  }

  private fail(err: Error): void {
    if (this.closed) return
    this.closed = err
    this.socket.destroy()
    this.onClose?.(err)
  }
}
