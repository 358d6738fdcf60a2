import type { Kysely } from 'kysely'

/**
 * Volume backups (docs/block-storage.md, "Backups"): a copy of a volume's bytes kept off its backend, in the blob
 * store, as 4 MiB chunks named by their SHA-256. `chunks` is the backup's ordered list of chunk digests ('' for a
 * chunk of zeros, which is not stored); `volume_backup_chunks` says which backups use which stored chunk, so
 * that deleting a backup removes exactly the chunks no other backup uses (an incremental backup shares its
 * parent's unchanged chunks, an imported record shares those of the backup it was exported from).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('volume_backups')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('volume_id', 'text', (c) => c.notNull())
    .addColumn('snapshot_id', 'text')
    .addColumn('parent_id', 'text')
    .addColumn('name', 'text')
    .addColumn('description', 'text')
    .addColumn('container', 'text')
    .addColumn('availability_zone', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('fail_reason', 'text')
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('object_count', 'integer', (c) => c.notNull())
    .addColumn('is_incremental', 'integer', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('chunks', 'text', (c) => c.notNull())
    .addColumn('volume_meta', 'text', (c) => c.notNull())
    .addColumn('data_timestamp', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('volume_backups_project').on('volume_backups').column('project_id').execute()
  await db.schema.createIndex('volume_backups_volume').on('volume_backups').column('volume_id').execute()
  await db.schema.createIndex('volume_backups_parent').on('volume_backups').column('parent_id').execute()
  await db.schema
    .createTable('volume_backup_chunks')
    .addColumn('backup_id', 'text', (c) => c.notNull())
    .addColumn('digest', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('volume_backup_chunks_pk', ['backup_id', 'digest'])
    .execute()
  await db.schema.createIndex('volume_backup_chunks_digest').on('volume_backup_chunks').column('digest').execute()
}
