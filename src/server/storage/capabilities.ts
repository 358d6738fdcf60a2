/**
 * What differs between the two dialects, declared once. Repositories branch on these flags, never on the
 * dialect's name, so adding a dialect means filling in one more row.
 */
export interface Capabilities {
  /** `SELECT … FOR UPDATE SKIP LOCKED`, so several processes can claim work from one table without blocking. */
  skipLocked: boolean
  /** Row locks (`SELECT … FOR UPDATE`): writers that touch several rows lock them in one order (SQLite: one writer at a time). */
  rowLocks: boolean
  /** Session advisory locks (`pg_advisory_lock`), used to run migrations and cluster-wide jobs once. */
  advisoryLocks: boolean
  /** Several processes may share the store (false: one process owns the SQLite file). */
  multiProcess: boolean
}

export const SQLITE_CAPABILITIES: Capabilities = { skipLocked: false, rowLocks: false, advisoryLocks: false, multiProcess: false }
export const POSTGRES_CAPABILITIES: Capabilities = { skipLocked: true, rowLocks: true, advisoryLocks: true, multiProcess: true }
