import type { Kysely } from 'kysely'

/**
 * Compute's side of block storage: a server's block device mappings (Nova's table of that name: the root disk,
 * the volumes attached at boot or later, their device names, tags and delete_on_termination) and a small
 * key/value store per server for what Nova keeps in system metadata (the shelved image).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('block_device_mappings')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('server_id', 'text', (c) => c.notNull())
    .addColumn('boot_index', 'integer')
    .addColumn('source_type', 'text', (c) => c.notNull())
    .addColumn('destination_type', 'text', (c) => c.notNull())
    .addColumn('volume_id', 'text')
    .addColumn('image_id', 'text')
    .addColumn('snapshot_id', 'text')
    .addColumn('volume_size', 'integer')
    .addColumn('volume_type', 'text')
    .addColumn('device_name', 'text')
    .addColumn('device_type', 'text')
    .addColumn('disk_bus', 'text')
    .addColumn('guest_format', 'text')
    .addColumn('delete_on_termination', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('tag', 'text')
    .addColumn('attachment_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('block_device_mappings_server').on('block_device_mappings').columns(['server_id', 'created_at']).execute()
  await db.schema.createIndex('block_device_mappings_volume').on('block_device_mappings').columns(['volume_id']).execute()

  await db.schema
    .createTable('server_system_metadata')
    .addColumn('server_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('server_system_metadata_pk', ['server_id', 'key'])
    .execute()
}
