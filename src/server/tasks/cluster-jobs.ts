/**
 * Periodic jobs that run once per interval across every process sharing the store (purge, reconciliation…),
 * instead of once per process. Each job has a lease row in `cluster_jobs`:
 *
 * - A process claims a due job with one conditional UPDATE (`next_run_at <= now` and no live lease), so of
 *   several processes polling at once exactly one wins; the same code serves one process on SQLite.
 * - The winner sets `next_run_at = now + interval` in that UPDATE, heartbeats the lease while the job runs,
 *   and clears the lease when it ends. A process that dies mid-run stops heartbeating: once its lease
 *   expires, another process takes the job over at its next due time.
 * - The others sleep until the row's next due time plus a random jitter, so they do not all wake together.
 * - A job that throws is logged and recorded in `last_error`; the loop goes on.
 *
 * Wall clocks of the processes are compared through the lease times: keep them in sync (NTP) to well within
 * the lease (30 s by default).
 */
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { sql } from 'kysely'
import type { Logger } from 'pino'
import type { Store } from '../storage/store.js'

export interface ClusterJob {
  /** Unique across the cluster; the lease row's key. */
  name: string
  intervalMs: number
  /** The work. `signal` is aborted when the lease is lost or the process stops; long jobs should check it. */
  run(signal: AbortSignal): Promise<void>
}

export interface ClusterJobRunnerOptions {
  logger: Logger
  /** This process's name in the lease rows (default host:pid:random). */
  owner?: string
  /** How long a running job stays with a process that stopped heartbeating (default 30 s). */
  leaseMs?: number
  /** Largest random delay added to each wait (default a tenth of the job's interval, at most 2 s). */
  jitterMs?: number
  /** Longest sleep between two looks at a job's row (default 30 s), so a changed row is noticed. */
  maxWaitMs?: number
  now?: () => number
}

interface JobState {
  job: ClusterJob
  timer?: NodeJS.Timeout
  running?: { abort: AbortController; done: Promise<void> }
  rowReady: boolean
}

export class ClusterJobRunner {
  readonly owner: string
  private readonly jobs = new Map<string, JobState>()
  private stopped = true
  private readonly leaseMs: number
  private readonly now: () => number

  constructor(
    private readonly store: Store,
    private readonly options: ClusterJobRunnerOptions,
  ) {
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
    this.leaseMs = options.leaseMs ?? 30_000
    this.now = options.now ?? Date.now
  }

  /** Adds a job (before or after start). */
  add(job: ClusterJob): void {
    if (this.jobs.has(job.name)) throw new Error(`cluster job ${job.name} is already registered`)
    if (!(job.intervalMs > 0)) throw new Error(`cluster job ${job.name}: interval must be positive`)
    const state: JobState = { job, rowReady: false }
    this.jobs.set(job.name, state)
    if (!this.stopped) this.schedule(state, this.jitter(job))
  }

  start(): void {
    if (!this.stopped) return
    this.stopped = false
    for (const state of this.jobs.values()) this.schedule(state, this.jitter(state.job))
  }

  /** Stops claiming, aborts running jobs, waits up to `graceMs` for them, and hands their leases back. */
  async stop(graceMs = 5000): Promise<void> {
    this.stopped = true
    const running: Promise<void>[] = []
    for (const state of this.jobs.values()) {
      clearTimeout(state.timer)
      if (state.running) {
        state.running.abort.abort(new Error('cluster job runner stopping'))
        running.push(state.running.done)
      }
    }
    await Promise.race([Promise.all(running), new Promise((resolve) => setTimeout(resolve, graceMs).unref())])
    await this.store.db
      .updateTable('cluster_jobs')
      .set({ lease_owner: null, lease_expires_at: null })
      .where('lease_owner', '=', this.owner)
      .execute()
      .catch((err: unknown) => this.options.logger.warn({ err }, 'handing back cluster job leases failed'))
  }

  private jitter(job: ClusterJob): number {
    const max = this.options.jitterMs ?? Math.min(job.intervalMs / 10, 2000)
    return Math.floor(Math.random() * max)
  }

  private schedule(state: JobState, delayMs: number): void {
    if (this.stopped) return
    clearTimeout(state.timer)
    state.timer = setTimeout(() => void this.tick(state), Math.max(0, delayMs))
    state.timer.unref()
  }

  private async tick(state: JobState): Promise<void> {
    if (this.stopped || state.running) return
    const { job } = state
    let waitMs: number
    try {
      waitMs = await this.tryRun(state)
    } catch (err) {
      // The store is unreachable or similar: keep the loop alive and look again soon.
      this.options.logger.error({ err, job: job.name }, 'cluster job scheduling failed')
      waitMs = Math.min(job.intervalMs, 5000)
    }
    this.schedule(state, Math.min(waitMs, this.options.maxWaitMs ?? 30_000) + this.jitter(job))
  }

  /** Runs the job if it is due and free; answers how long to wait before looking again. */
  private async tryRun(state: JobState): Promise<number> {
    const { job } = state
    const db = this.store.db
    if (!state.rowReady) {
      await db
        .insertInto('cluster_jobs')
        .values({ name: job.name, lease_owner: null, lease_expires_at: null, next_run_at: 0, last_started_at: null, last_finished_at: null, last_error: null, runs: 0 })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute()
      state.rowReady = true
    }
    const now = this.now()
    const claimed = await db
      .updateTable('cluster_jobs')
      .set({ lease_owner: this.owner, lease_expires_at: now + this.leaseMs, next_run_at: now + job.intervalMs, last_started_at: now })
      .where('name', '=', job.name)
      .where('next_run_at', '<=', now)
      .where((eb) => eb.or([eb('lease_owner', 'is', null), eb('lease_expires_at', '<', now)]))
      .executeTakeFirst()
    if (claimed.numUpdatedRows > 0n) {
      await this.execute(state)
      return Math.max(0, now + job.intervalMs - this.now())
    }
    const row = await db.selectFrom('cluster_jobs').select(['next_run_at', 'lease_owner', 'lease_expires_at']).where('name', '=', job.name).executeTakeFirst()
    if (!row) {
      state.rowReady = false
      return 0
    }
    const after = this.now()
    const held = row.lease_owner !== null && row.lease_expires_at !== null && row.lease_expires_at >= after
    // Held by a live owner that overran its interval: look again when its lease could have expired.
    const due = held ? Math.max(row.next_run_at, Math.min(row.lease_expires_at!, after + job.intervalMs)) : row.next_run_at
    return Math.max(0, due - after)
  }

  private async execute(state: JobState): Promise<void> {
    const { job } = state
    const db = this.store.db
    const abort = new AbortController()
    const beat = setInterval(() => {
      db.updateTable('cluster_jobs')
        .set({ lease_expires_at: this.now() + this.leaseMs })
        .where('name', '=', job.name)
        .where('lease_owner', '=', this.owner)
        .executeTakeFirst()
        .then(
          (r) => {
            if (r.numUpdatedRows === 0n) abort.abort(new Error('cluster job lease lost'))
          },
          (err: unknown) => this.options.logger.warn({ err, job: job.name }, 'cluster job heartbeat failed'),
        )
    }, Math.max(50, Math.floor(this.leaseMs / 3)))
    beat.unref()
    let error: string | null = null
    const done = (async () => {
      try {
        await job.run(abort.signal)
      } catch (err) {
        error = ((err as Error)?.message ?? String(err)).slice(0, 4000)
        if (!abort.signal.aborted) this.options.logger.error({ err, job: job.name }, 'cluster job failed')
      } finally {
        clearInterval(beat)
      }
      // Guarded by the owner: a run whose lease was lost (taken over) records nothing.
      await db
        .updateTable('cluster_jobs')
        .set({ lease_owner: null, lease_expires_at: null, last_finished_at: this.now(), last_error: error, runs: sql<number>`runs + 1` })
        .where('name', '=', job.name)
        .where('lease_owner', '=', this.owner)
        .execute()
        .catch((err: unknown) => this.options.logger.warn({ err, job: job.name }, 'recording the end of a cluster job failed'))
    })()
    state.running = { abort, done }
    try {
      await done
    } finally {
      state.running = undefined
    }
  }
}
