import type { Kysely } from 'kysely'

/**
 * Volume transfers (docs/image-volume.md, "Volume transfers"): a volume offered by its project to whoever holds
 * the transfer's auth key. Only the key's salted hash is kept; the key itself is shown once, at creation.
 * `volume_attachments.attached_by` tells an attachment Cinder's os-attach recorded (`cinder`) from one compute
 * made and connected (`compute`), so Cinder's os-detach never takes a disk away from under a running guest.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('volume_transfers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('volume_id', 'text', (c) => c.notNull().unique())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('salt', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull())
    .addColumn('no_snapshots', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('volume_transfers_project').on('volume_transfers').column('project_id').execute()
  await db.schema.alterTable('volume_attachments').addColumn('attached_by', 'text', (c) => c.notNull().defaultTo('compute')).execute()
}
