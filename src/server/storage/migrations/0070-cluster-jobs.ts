import type { Kysely } from 'kysely'

/** Cluster-wide periodic jobs: a lease row per job name (see tasks/cluster-jobs.ts). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('cluster_jobs')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'bigint')
    .addColumn('next_run_at', 'bigint', (c) => c.notNull())
    .addColumn('last_started_at', 'bigint')
    .addColumn('last_finished_at', 'bigint')
    .addColumn('last_error', 'text')
    .addColumn('runs', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  // The purge job deletes finished tasks by age.
  await db.schema.createIndex('tasks_finished').on('tasks').columns(['status', 'finished_at']).execute()
}
