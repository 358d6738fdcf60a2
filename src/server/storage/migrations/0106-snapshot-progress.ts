import type { Kysely } from 'kysely'

/**
 * A snapshot's progress as its creator reported it (os-update_snapshot_status, Nova-assisted snapshots); null
 * means derived from the status (docs/block-storage.md, "Snapshot status updates").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('volume_snapshots').addColumn('progress', 'text').execute()
}
