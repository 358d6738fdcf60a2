/** Tables of the foundation: store metadata, applied migrations, the durable task queue. */

export interface MetaTable {
  key: string
  value: string
}

export interface MigrationTable {
  id: string
  name: string
  applied_at: number
}

export type TaskStatus = 'queued' | 'running' | 'done' | 'failed'

export interface TaskTable {
  id: string
  kind: string
  /** What the task concerns (a server id, a host id…), for listing and for one-task-per-subject rules. */
  subject_id: string | null
  payload: string
  status: TaskStatus
  /** Claims so far, including the running one. */
  attempts: number
  max_attempts: number
  run_after: number
  lease_owner: string | null
  lease_expires_at: number | null
  last_error: string | null
  /** Enqueueing twice with one key yields one task. */
  idempotency_key: string | null
  created_at: number
  updated_at: number
  finished_at: number | null
}

/** The last integer id handed out for a table whose ids are never given twice (storage/sequences.ts). */
export interface IdSequenceTable {
  name: string
  last_id: number
}

/**
 * Raised by the database on every change of what a kept view of a resource shows (migration 0128): the resource's
 * row or another row its view reads. `kind` names the resource table's kind (network…).
 */
export interface ViewRevisionTable {
  kind: string
  id: string
  rev: number
}

export interface FoundationTables {
  view_revisions: ViewRevisionTable
  pcc_meta: MetaTable
  pcc_migrations: MigrationTable
  tasks: TaskTable
  id_sequences: IdSequenceTable
}
