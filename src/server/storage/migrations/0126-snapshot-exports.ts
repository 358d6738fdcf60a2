import type { Kysely } from 'kysely'

/**
 * Exports of snapshots (docs/block-storage.md, "Backups"): a backup of a snapshot of a storage host's volume reads
 * the snapshot over NBD. Such an export's row is keyed by the snapshot's id (an export of the volume itself may
 * exist at the same time) and names the volume it was taken of in `snapshot_of`; null for an export of a volume.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('volume_exports').addColumn('snapshot_of', 'text').execute()
}
