/**
 * The durable command channel between the control plane and host agents (table host_commands). Any server
 * process enqueues work for a host; the agent long-polling any process receives it; the agent posts the result
 * to any process, and the process waiting for it finds it in the row. Waiting is one shared loop per process
 * that reads the table every `pollMs` while someone waits (two small indexed queries, whatever the number of
 * waiting agents); a command enqueued or finished in this process wakes its waiters at once.
 */
import { randomUUID } from 'node:crypto'
import type { Store } from '../storage/store.js'

export interface HostCommand {
  id: string
  op: string
  args: unknown
}

export type CommandOutcome = { ok: true; result: unknown } | { ok: false; error: { message: string; code?: number } }

const FINISHED = ['done', 'failed', 'expired']
const CHUNK = 500

export class CommandChannel {
  private readonly hostWaiters = new Map<string, Set<() => void>>()
  private readonly resultWaiters = new Map<string, Set<(o: CommandOutcome) => void>>()
  private timer: NodeJS.Timeout | undefined
  private ticking = false
  private stopped = false

  constructor(
    private readonly store: Store,
    private readonly options: { pollMs: number } = { pollMs: 100 },
  ) {}

  /**
   * Queues `op` for the host; an unfinished command with the same dedupe key (the same operation asked again by a
   * retried task) is reused instead, so a control-plane restart does not make the agent do the work twice.
   */
  async enqueue(hostId: string, op: string, args: unknown, dedupeKey = `${op}:${JSON.stringify(args)}`): Promise<string> {
    const db = this.store.db
    const existing = await db
      .selectFrom('host_commands')
      .select('id')
      .where('host_id', '=', hostId)
      .where('dedupe_key', '=', dedupeKey)
      .where('status', 'in', ['queued', 'delivered'])
      .executeTakeFirst()
    if (existing) return existing.id
    const id = randomUUID()
    await db
      .insertInto('host_commands')
      .values({ id, host_id: hostId, op, args: JSON.stringify(args ?? null), dedupe_key: dedupeKey, status: 'queued', result: null, created_at: Date.now(), delivered_at: null, finished_at: null })
      .execute()
    this.wakeHost(hostId)
    return id
  }

  /** Resolves with the command's outcome, or an expiry error after `timeoutMs` (a queued command is then withdrawn). */
  async waitResult(commandId: string, timeoutMs: number): Promise<CommandOutcome> {
    const done = await this.readOutcome(commandId)
    if (done) return done
    return new Promise<CommandOutcome>((resolve) => {
      const waiters = this.resultWaiters.get(commandId) ?? new Set()
      this.resultWaiters.set(commandId, waiters)
      const finish = (o: CommandOutcome) => {
        clearTimeout(timeout)
        waiters.delete(finish)
        if (waiters.size === 0) this.resultWaiters.delete(commandId)
        resolve(o)
      }
      const timeout = setTimeout(() => {
        void this.expire(commandId).then(async (expired) => {
          // The agent may have finished it just now; its result wins over the timeout.
          const late = expired ? undefined : await this.readOutcome(commandId).catch(() => undefined)
          finish(late ?? { ok: false, error: { message: `the host agent did not answer within ${Math.round(timeoutMs / 1000)} s`, code: 504 } })
        })
      }, timeoutMs)
      waiters.add(finish)
      this.schedule()
    })
  }

  /**
   * The agent's long-poll: queued commands for the host (marked delivered), waiting up to `waitMs` for one.
   * With `redeliver`, commands delivered earlier and not finished come too (an agent that restarted).
   */
  async take(hostId: string, waitMs: number, redeliver = false, signal?: AbortSignal): Promise<HostCommand[]> {
    const deadline = Date.now() + waitMs
    for (;;) {
      const got = await this.claim(hostId, redeliver)
      if (got.length > 0 || Date.now() >= deadline || this.stopped || signal?.aborted) return got
      await new Promise<void>((resolve) => {
        const waiters = this.hostWaiters.get(hostId) ?? new Set()
        this.hostWaiters.set(hostId, waiters)
        const wake = () => {
          clearTimeout(timeout)
          signal?.removeEventListener('abort', wake)
          waiters.delete(wake)
          if (waiters.size === 0) this.hostWaiters.delete(hostId)
          resolve()
        }
        const timeout = setTimeout(wake, Math.max(0, deadline - Date.now()))
        signal?.addEventListener('abort', wake)
        waiters.add(wake)
        this.schedule()
      })
    }
  }

  /** Records the agent's outcome. False when the host has no such command (not its own, or purged). */
  async complete(hostId: string, commandId: string, outcome: CommandOutcome): Promise<boolean> {
    const row = await this.store.db.selectFrom('host_commands').select(['status']).where('id', '=', commandId).where('host_id', '=', hostId).executeTakeFirst()
    if (!row) return false
    if (FINISHED.includes(row.status) && row.status !== 'expired') return true // a re-posted result: already recorded
    await this.store.db
      .updateTable('host_commands')
      // The arguments are dropped once answered: they may carry a secret (setAdminPassword) nobody needs any more.
      .set({ status: outcome.ok ? 'done' : 'failed', result: JSON.stringify(outcome.ok ? (outcome.result ?? null) : outcome.error), args: 'null', finished_at: Date.now() })
      .where('id', '=', commandId)
      .where('status', 'in', ['queued', 'delivered', 'expired'])
      .execute()
    const final = await this.readOutcome(commandId)
    if (final) for (const w of [...(this.resultWaiters.get(commandId) ?? [])]) w(final)
    return true
  }

  /** Withdraws a command nobody delivered yet; true when it was withdrawn. */
  async expire(commandId: string): Promise<boolean> {
    const r = await this.store.db
      .updateTable('host_commands')
      .set({ status: 'expired', result: JSON.stringify({ message: 'expired before the agent took it' }), args: 'null', finished_at: Date.now() })
      .where('id', '=', commandId)
      .where('status', '=', 'queued')
      .executeTakeFirst()
      .catch(() => ({ numUpdatedRows: 0n }))
    return r.numUpdatedRows > 0n
  }

  /** Drops finished commands older than `olderThanMs` (housekeeping). */
  async purge(olderThanMs: number): Promise<void> {
    await this.store.db.deleteFrom('host_commands').where('status', 'in', FINISHED).where('finished_at', '<', Date.now() - olderThanMs).execute()
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.timer)
    for (const ws of this.hostWaiters.values()) for (const w of [...ws]) w()
  }

  private async claim(hostId: string, redeliver: boolean): Promise<HostCommand[]> {
    const db = this.store.db
    const rows = await db
      .selectFrom('host_commands')
      .select(['id', 'op', 'args', 'status'])
      .where('host_id', '=', hostId)
      .where('status', 'in', redeliver ? ['queued', 'delivered'] : ['queued'])
      .orderBy('created_at')
      .limit(100)
      .execute()
    if (rows.length === 0) return []
    const queued = rows.filter((r) => r.status === 'queued').map((r) => r.id)
    if (queued.length > 0) await db.updateTable('host_commands').set({ status: 'delivered', delivered_at: Date.now() }).where('id', 'in', queued).where('status', '=', 'queued').execute()
    return rows.map((r) => ({ id: r.id, op: r.op, args: JSON.parse(r.args) as unknown }))
  }

  private async readOutcome(commandId: string): Promise<CommandOutcome | undefined> {
    const row = await this.store.db.selectFrom('host_commands').select(['status', 'result']).where('id', '=', commandId).executeTakeFirst()
    if (!row) return { ok: false, error: { message: 'the command was withdrawn (its host was removed)', code: 404 } }
    return toOutcome(row.status, row.result)
  }

  private wakeHost(hostId: string): void {
    for (const w of [...(this.hostWaiters.get(hostId) ?? [])]) w()
  }

  private schedule(): void {
    if (this.timer || this.stopped) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      void this.tick().finally(() => {
        if (this.hostWaiters.size > 0 || this.resultWaiters.size > 0) this.schedule()
      })
    }, this.options.pollMs)
    this.timer.unref()
  }

  private async tick(): Promise<void> {
    if (this.ticking) return
    this.ticking = true
    try {
      const db = this.store.db
      if (this.hostWaiters.size > 0) {
        // Queued commands are few at any moment: read them all and wake the hosts waiting here, rather than
        // asking about every waiting host (thousands of idle agents long-poll at once).
        const rows = await db.selectFrom('host_commands').select('host_id').distinct().where('status', '=', 'queued').execute()
        for (const r of rows) if (this.hostWaiters.has(r.host_id)) this.wakeHost(r.host_id)
      }
      const ids = [...this.resultWaiters.keys()]
      for (let i = 0; i < ids.length; i += CHUNK) {
        const rows = await db.selectFrom('host_commands').select(['id', 'status', 'result']).where('id', 'in', ids.slice(i, i + CHUNK)).where('status', 'in', ['done', 'failed']).execute()
        for (const r of rows) {
          const o = toOutcome(r.status, r.result)
          if (o) for (const w of [...(this.resultWaiters.get(r.id) ?? [])]) w(o)
        }
      }
    } catch {
      // The store hiccuped: the next tick tries again.
    } finally {
      this.ticking = false
    }
  }
}

function toOutcome(status: string, result: string | null): CommandOutcome | undefined {
  if (status === 'done') return { ok: true, result: result === null ? null : (JSON.parse(result) as unknown) }
  if (status === 'failed' || status === 'expired') {
    const error = (result ? JSON.parse(result) : { message: 'failed' }) as { message: string; code?: number }
    return { ok: false, error }
  }
  return undefined
}
