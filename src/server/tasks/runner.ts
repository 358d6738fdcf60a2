/**
 * Runs claimed tasks in this process. It polls the queue (and is woken at once when this process enqueues),
 * keeps each lease alive while its handler runs, and records the outcome. A handler that loses its lease is
 * told through its abort signal and its result is dropped, because another owner now has the task.
 */
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { Logger } from 'pino'
import type { TaskQueue, TaskRecord } from './queue.js'

export interface TaskContext {
  /** Aborted when the lease is lost or the runner stops; long handlers should check it between steps. */
  signal: AbortSignal
  owner: string
}

export type TaskHandler = (task: TaskRecord, context: TaskContext) => Promise<void>

/** Thrown by a handler for a failure that retrying cannot fix (bad payload, missing subject). */
export class PermanentTaskError extends Error {
  override name = 'PermanentTaskError'
}

const FAILED_CLAIM_RETRY_MS = 2000

export interface RunnerOptions {
  concurrency: number
  leaseMs: number
  /** Longest wait between polls when idle. */
  idlePollMs?: number
  logger: Logger
  owner?: string
}

export class TaskRunner {
  readonly owner: string
  private readonly running = new Map<string, { abort: AbortController; done: Promise<void> }>()
  private stopped = true
  private timer: NodeJS.Timeout | undefined
  private polling = false
  private pollAgain = false
  /** The poll in progress: stop waits for it, so a claim that lands during stop is run or released, never orphaned. */
  private currentPoll: Promise<void> = Promise.resolve()

  constructor(
    private readonly queue: TaskQueue,
    private readonly handlers: ReadonlyMap<string, TaskHandler>,
    private readonly options: RunnerOptions,
  ) {
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
  }

  start(): void {
    this.stopped = false
    this.wake()
  }

  /** Polls now instead of at the next interval (called after this process enqueues). */
  wake(): void {
    if (this.stopped) return
    if (this.polling) {
      this.pollAgain = true
      return
    }
    clearTimeout(this.timer)
    this.currentPoll = this.poll()
  }

  /** Stops claiming, waits up to `graceMs` for running handlers, then hands back every lease still held. */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.currentPoll
    const all = Promise.all([...this.running.values()].map((r) => r.done))
    // A referenced timer: while handlers wait on nothing else, it is what keeps the process alive to release.
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))
    await Promise.race([all, timeout])
    clearTimeout(timer)
    for (const r of this.running.values()) r.abort.abort(new Error('runner stopping'))
    const released = await this.queue.releaseAll(this.owner)
    if (released > 0) this.options.logger.info({ released }, 'released task leases on shutdown')
  }

  get busy(): number {
    return this.running.size
  }

  private async poll(): Promise<void> {
    this.polling = true
    let claimed = 0
    let failed = false
    try {
      const free = this.options.concurrency - this.running.size
      if (free > 0) {
        const tasks = await this.queue.claim(this.owner, free, [...this.handlers.keys()])
        claimed = tasks.length
        for (const task of tasks) this.launch(task)
      }
    } catch (err) {
      failed = true
      this.options.logger.error({ err }, 'claiming tasks failed')
    } finally {
      this.polling = false
    }
    if (this.stopped) return
    // Claim again at once when the batch was full or someone woke us meanwhile; otherwise sleep.
    const again = this.pollAgain || (claimed > 0 && this.running.size < this.options.concurrency)
    this.pollAgain = false
    // After a failed claim (the database is away) wait longer, so an outage is not a flood of errors.
    this.timer = setTimeout(() => (this.currentPoll = this.poll()), failed ? FAILED_CLAIM_RETRY_MS : again ? 0 : (this.options.idlePollMs ?? 250))
    this.timer.unref()
  }

  private launch(task: TaskRecord): void {
    const abort = new AbortController()
    const beat = setInterval(() => {
      this.queue.heartbeat(task.id, this.owner).then(
        (held) => {
          if (!held) abort.abort(new Error('task lease lost'))
        },
        (err) => this.options.logger.warn({ err, task: task.id }, 'task heartbeat failed'),
      )
    }, Math.max(50, Math.floor(this.options.leaseMs / 3)))
    beat.unref()
    // A failure to record the outcome (the store is gone) is logged, never left as an unhandled rejection.
    const done = this.execute(task, abort.signal).catch((err: Error) => this.options.logger.error({ err, task: task.id }, 'recording the task outcome failed')).finally(() => {
      clearInterval(beat)
      this.running.delete(task.id)
      this.wake()
    })
    this.running.set(task.id, { abort, done })
  }

  private async execute(task: TaskRecord, signal: AbortSignal): Promise<void> {
    const log = this.options.logger.child({ task: task.id, kind: task.kind, attempt: task.attempts })
    // A task re-claimed after its owner died may have used up its attempts while nobody could record a failure.
    if (task.attempts > task.maxAttempts) {
      await this.queue.fail(task.id, this.owner, `gave up after ${task.maxAttempts} attempts whose leases expired`, { permanent: true })
      log.warn('task failed: attempts used up by expired leases')
      return
    }
    const handler = this.handlers.get(task.kind)!
    try {
      await handler(task, { signal, owner: this.owner })
      if (signal.aborted) return
      if (!(await this.queue.complete(task.id, this.owner))) log.warn('task finished after its lease was lost; result dropped')
    } catch (err) {
      if (signal.aborted) return
      const permanent = err instanceof PermanentTaskError
      log.warn({ err, permanent }, 'task failed')
      await this.queue.fail(task.id, this.owner, (err as Error).message ?? String(err), { permanent })
    }
  }
}
