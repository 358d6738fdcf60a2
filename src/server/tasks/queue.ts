/**
 * The durable task queue: the seam through which every long piece of work (a server create, an action, a
 * delete, a periodic job) passes. Guarantees every implementation keeps (the conformance suite checks them):
 *
 * - `enqueue` inside a caller's transaction commits or rolls back with the caller's rows.
 * - `claim` hands a task to one owner at a time: while its lease lasts, no other claim returns it, across
 *   every process sharing the store. A task whose lease expired (its owner died) is claimable again.
 * - `complete`, `fail` and `heartbeat` act only while the caller still holds the lease; they answer false when
 *   the lease was lost (expired and taken by another owner), and the caller must then drop its result.
 * - A failed task is retried with exponential backoff until `maxAttempts` claims were made, then it stays
 *   `failed` with the last reason recorded. Handlers must therefore be idempotent.
 */
import type { Db } from '../storage/store.js'

export interface TaskRecord<P = unknown> {
  id: string
  kind: string
  subjectId: string | null
  payload: P
  status: 'queued' | 'running' | 'done' | 'failed'
  attempts: number
  maxAttempts: number
  runAfter: number
  leaseOwner: string | null
  leaseExpiresAt: number | null
  lastError: string | null
  createdAt: number
  finishedAt: number | null
}

export interface EnqueueRequest<P = unknown> {
  kind: string
  payload: P
  subjectId?: string
  /** A second enqueue with the same key returns the first task instead of adding one. */
  idempotencyKey?: string
  /** Claims allowed before the task fails for good (default 5). */
  maxAttempts?: number
  /** Not claimable before this time (epoch ms; default now). */
  runAfter?: number
}

export interface TaskQueue {
  /** Adds a task. Pass `tx` to commit it with the caller's own writes. */
  enqueue<P>(request: EnqueueRequest<P>, tx?: Db): Promise<TaskRecord<P>>
  /** Claims up to `limit` due tasks (queued and due, or running with an expired lease) for `owner`; `kinds` limits which (none: nothing). */
  claim(owner: string, limit: number, kinds?: string[]): Promise<TaskRecord[]>
  /** Extends the lease; false when `owner` no longer holds it. */
  heartbeat(taskId: string, owner: string): Promise<boolean>
  /** Marks the task done; false when `owner` no longer holds it. */
  complete(taskId: string, owner: string): Promise<boolean>
  /** Records a failure; retries later unless attempts are used up or `permanent`. False when the lease was lost. */
  fail(taskId: string, owner: string, reason: string, options?: { permanent?: boolean }): Promise<boolean>
  /** Hands back every task `owner` holds, unclaimed and without counting the attempt (graceful shutdown). */
  releaseAll(owner: string): Promise<number>
  get(taskId: string): Promise<TaskRecord | undefined>
  /** Tasks waiting or running, for the queue-depth metric and readiness. */
  depth(): Promise<{ queued: number; running: number }>
}

/** Delay before the retry that follows `attempts` claims: 1 s, 2 s, 4 s … capped at 5 minutes. */
export function retryDelayMs(attempts: number): number {
  return Math.min(1000 * 2 ** Math.max(0, attempts - 1), 300_000)
}
