import type { Kysely } from 'kysely'

/**
 * Cinder's generic volume groups (docs/block-storage.md, "Groups"): group types with their group specs, groups of
 * volumes of the group's volume types (a volume's `group_id`), and group snapshots, a snapshot of every member
 * taken together (each member snapshot's `group_snapshot_id`). A group's volume types are kept as JSON text, in
 * the order they were given, as Cinder answers them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('volume_group_types')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('description', 'text')
    .addColumn('is_public', 'integer', (c) => c.notNull())
    .addColumn('group_specs', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createTable('volume_groups')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('description', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('group_type_id', 'text', (c) => c.notNull())
    .addColumn('volume_type_ids', 'text', (c) => c.notNull())
    .addColumn('availability_zone', 'text', (c) => c.notNull())
    .addColumn('group_snapshot_id', 'text')
    .addColumn('source_group_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('volume_groups_project').on('volume_groups').column('project_id').execute()
  await db.schema.createIndex('volume_groups_group_type').on('volume_groups').column('group_type_id').execute()
  await db.schema
    .createTable('volume_group_snapshots')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('group_id', 'text', (c) => c.notNull())
    .addColumn('group_type_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('description', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('volume_group_snapshots_group').on('volume_group_snapshots').column('group_id').execute()
  await db.schema.alterTable('volumes').addColumn('group_id', 'text').execute()
  await db.schema.createIndex('volumes_group').on('volumes').column('group_id').execute()
  await db.schema.alterTable('volume_snapshots').addColumn('group_snapshot_id', 'text').execute()
  await db.schema.createIndex('volume_snapshots_group_snapshot').on('volume_snapshots').column('group_snapshot_id').execute()
}
