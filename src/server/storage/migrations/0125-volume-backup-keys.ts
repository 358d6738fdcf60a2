import type { Kysely } from 'kysely'

/**
 * The key of a backup of an encrypted volume (docs/block-storage.md, "Backups"): the backup holds the volume's
 * LUKS container as it sits on the backend, so it keeps a copy of the volume's key (a row of
 * `volume_encryption_keys`, as Cinder clones the key into the backup's `encryption_key_id`) that outlives the
 * volume. A key row now goes when no volume and no backup names it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('volume_backups').addColumn('encryption_key_id', 'text').execute()
  await db.schema.createIndex('volume_backups_encryption_key').on('volume_backups').column('encryption_key_id').execute()
}
