import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { Db, Store } from '../storage/store.js'
import type { TaskTable } from '../storage/schema.js'
import { retryDelayMs, type EnqueueRequest, type TaskQueue, type TaskRecord } from './queue.js'

const DEFAULT_MAX_ATTEMPTS = 5

function toRecord(row: TaskTable): TaskRecord {
  return {
    id: row.id,
    kind: row.kind,
    subjectId: row.subject_id,
    payload: JSON.parse(row.payload) as unknown,
    status: row.status,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    runAfter: row.run_after,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    lastError: row.last_error,
    createdAt: row.created_at,
    finishedAt: row.finished_at,
  }
}

export interface SqlQueueOptions {
  leaseMs: number
  now?: () => number
}

/** The task queue kept in the store's `tasks` table; one implementation for SQLite and PostgreSQL. */
export class SqlTaskQueue implements TaskQueue {
  private readonly now: () => number
  private readonly listeners: (() => void)[] = []

  constructor(
    private readonly store: Store,
    private readonly options: SqlQueueOptions,
  ) {
    this.now = options.now ?? Date.now
  }

  async enqueue<P>(request: EnqueueRequest<P>, tx: Db = this.store.db): Promise<TaskRecord<P>> {
    const now = this.now()
    const row: TaskTable = {
      id: randomUUID(),
      kind: request.kind,
      subject_id: request.subjectId ?? null,
      payload: JSON.stringify(request.payload ?? null),
      status: 'queued',
      attempts: 0,
      max_attempts: request.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      run_after: request.runAfter ?? now,
      lease_owner: null,
      lease_expires_at: null,
      last_error: null,
      idempotency_key: request.idempotencyKey ?? null,
      created_at: now,
      updated_at: now,
      finished_at: null,
    }
    // ON CONFLICT instead of look-then-insert: two callers racing with one key get one task, and neither
    // caller's transaction is aborted by a unique violation.
    const inserted = await tx
      .insertInto('tasks')
      .values(row)
      .$if(request.idempotencyKey !== undefined, (q) => q.onConflict((oc) => oc.column('idempotency_key').doNothing()))
      .returning('id')
      .execute()
    if (inserted.length === 0) {
      const existing = await tx.selectFrom('tasks').selectAll().where('idempotency_key', '=', request.idempotencyKey!).executeTakeFirstOrThrow()
      return toRecord(existing) as TaskRecord<P>
    }
    for (const listener of this.listeners) listener()
    return toRecord(row) as TaskRecord<P>
  }

  /** Called after every enqueue of a new task (the runtime wakes this process's runner with it). */
  onEnqueue(listener: () => void): void {
    this.listeners.push(listener)
  }

  async claim(owner: string, limit: number, kinds?: string[]): Promise<TaskRecord[]> {
    if (kinds !== undefined && kinds.length === 0) return []
    const now = this.now()
    const db = this.store.db
    const due = db
      .selectFrom('tasks')
      .select('id')
      .where((eb) =>
        eb.or([
          eb.and([eb('status', '=', 'queued'), eb('run_after', '<=', now)]),
          eb.and([eb('status', '=', 'running'), eb('lease_expires_at', '<', now)]),
        ]),
      )
      .$if(kinds !== undefined && kinds.length > 0, (q) => q.where('kind', 'in', kinds!))
      .orderBy('run_after')
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      // Other processes skip rows this one is claiming instead of waiting for it (SQLite has one writer anyway).
      .$if(this.store.capabilities.skipLocked, (q) => q.forUpdate().skipLocked())
    const rows = await db
      .updateTable('tasks')
      .set({
        status: 'running',
        lease_owner: owner,
        lease_expires_at: now + this.options.leaseMs,
        attempts: sql<number>`attempts + 1`,
        updated_at: now,
      })
      .where('id', 'in', due)
      .returningAll()
      .execute()
    return rows.map(toRecord).sort((a, b) => a.runAfter - b.runAfter || a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  }

  async heartbeat(taskId: string, owner: string): Promise<boolean> {
    const now = this.now()
    const result = await this.store.db
      .updateTable('tasks')
      .set({ lease_expires_at: now + this.options.leaseMs, updated_at: now })
      .where('id', '=', taskId)
      .where('lease_owner', '=', owner)
      .where('status', '=', 'running')
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  async complete(taskId: string, owner: string): Promise<boolean> {
    const now = this.now()
    const result = await this.store.db
      .updateTable('tasks')
      .set({ status: 'done', lease_owner: null, lease_expires_at: null, updated_at: now, finished_at: now })
      .where('id', '=', taskId)
      .where('lease_owner', '=', owner)
      .where('status', '=', 'running')
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  async fail(taskId: string, owner: string, reason: string, options: { permanent?: boolean } = {}): Promise<boolean> {
    const now = this.now()
    return this.store.db.transaction().execute(async (tx) => {
      const task = await tx
        .selectFrom('tasks')
        .select(['attempts', 'max_attempts', 'run_after'])
        .where('id', '=', taskId)
        .where('lease_owner', '=', owner)
        .where('status', '=', 'running')
        .executeTakeFirst()
      if (!task) return false
      const final = options.permanent || task.attempts >= task.max_attempts
      // The owner check is repeated here: another process may have claimed the task (lease expired) since the
      // read, and PostgreSQL re-evaluates this condition on the row it waited for.
      const result = await tx
        .updateTable('tasks')
        .set({
          status: final ? 'failed' : 'queued',
          lease_owner: null,
          lease_expires_at: null,
          last_error: reason.slice(0, 4000),
          run_after: final ? task.run_after : now + retryDelayMs(task.attempts),
          updated_at: now,
          finished_at: final ? now : null,
        })
        .where('id', '=', taskId)
        .where('lease_owner', '=', owner)
        .where('status', '=', 'running')
        .executeTakeFirst()
      return result.numUpdatedRows > 0n
    })
  }

  async releaseAll(owner: string): Promise<number> {
    const now = this.now()
    const result = await this.store.db
      .updateTable('tasks')
      .set({ status: 'queued', lease_owner: null, lease_expires_at: null, attempts: sql<number>`attempts - 1`, run_after: now, updated_at: now })
      .where('lease_owner', '=', owner)
      .where('status', '=', 'running')
      .executeTakeFirst()
    return Number(result.numUpdatedRows)
  }

  async get(taskId: string): Promise<TaskRecord | undefined> {
    const row = await this.store.db.selectFrom('tasks').selectAll().where('id', '=', taskId).executeTakeFirst()
    return row && toRecord(row)
  }

  async depth(): Promise<{ queued: number; running: number }> {
    const rows = await this.store.db
      .selectFrom('tasks')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .where('status', 'in', ['queued', 'running'])
      .groupBy('status')
      .execute()
    const count = (status: string) => Number(rows.find((r) => r.status === status)?.n ?? 0)
    return { queued: count('queued'), running: count('running') }
  }
}
