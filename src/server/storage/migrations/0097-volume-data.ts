import type { Kysely } from 'kysely'

/**
 * Volumes with bytes: where each volume lives (its backend and storage place), the NBD exports of attached
 * volumes (port and generations per volume), the TLS-PSK keys that open them (one per attachment, or per copy
 * between places), what storage hosts report, and the images being uploaded from volumes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // `location` is 'controller' (the control plane's data dir) or a storage host's id; null until placed.
  await db.schema.alterTable('volumes').addColumn('backend', 'text', (c) => c.notNull().defaultTo('file')).execute()
  await db.schema.alterTable('volumes').addColumn('location', 'text').execute()
  await db.schema.alterTable('volumes').addColumn('status_reason', 'text').execute()
  await db.schema.alterTable('volumes').addColumn('multiattach', 'integer', (c) => c.notNull().defaultTo(0)).execute()
  await db.schema.alterTable('volume_attachments').addColumn('host_id', 'text').execute()
  await db.schema.alterTable('volume_attachments').addColumn('connection_info', 'text').execute()

  await db.schema
    .createTable('volume_exports')
    .addColumn('volume_id', 'text', (c) => c.primaryKey())
    .addColumn('location', 'text', (c) => c.notNull())
    .addColumn('address', 'text')
    .addColumn('port', 'integer', (c) => c.notNull())
    .addColumn('generations', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('volume_exports_port').on('volume_exports').columns(['location', 'port']).unique().execute()

  await db.schema
    .createTable('volume_export_keys')
    .addColumn('identity', 'text', (c) => c.primaryKey())
    .addColumn('volume_id', 'text', (c) => c.notNull())
    .addColumn('attachment_id', 'text')
    .addColumn('sealed_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('volume_export_keys_volume').on('volume_export_keys').columns(['volume_id']).execute()

  await db.schema
    .createTable('storage_hosts')
    .addColumn('host_id', 'text', (c) => c.primaryKey())
    .addColumn('export_address', 'text', (c) => c.notNull())
    .addColumn('backends', 'text', (c) => c.notNull())
    .addColumn('reported_at', 'bigint', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('volume_image_uploads')
    .addColumn('image_id', 'text', (c) => c.primaryKey())
    .addColumn('volume_id', 'text', (c) => c.notNull())
    .addColumn('disk_format', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
}
