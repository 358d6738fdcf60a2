import type { Kysely } from 'kysely'

/**
 * Nova's host aggregates (docs/compute.md, "Host aggregates and availability zones"): named groups of hosts with
 * metadata, whose `availability_zone` key puts their hosts in a zone and whose other keys the scheduler matches
 * against flavor extra specs. Migrations: one row per move of a server (live, cold, resize, evacuation) with its
 * status as it runs, for os-migrations and /servers/{id}/migrations. Quota classes: the `default` class's limits
 * are the defaults every project without its own limit gets.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('aggregates')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint')
    .execute()
  await db.schema
    .createTable('aggregate_hosts')
    .addColumn('aggregate_id', 'integer', (c) => c.notNull().references('aggregates.id').onDelete('cascade'))
    .addColumn('host', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('aggregate_hosts_pk', ['aggregate_id', 'host'])
    .execute()
  await db.schema
    .createTable('aggregate_metadata')
    .addColumn('aggregate_id', 'integer', (c) => c.notNull().references('aggregates.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('aggregate_metadata_pk', ['aggregate_id', 'key'])
    .execute()

  await db.schema
    .createTable('migrations')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('server_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('migration_type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('source_host', 'text')
    .addColumn('dest_host', 'text')
    .addColumn('old_flavor_id', 'text')
    .addColumn('new_flavor_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint')
    .execute()
  await db.schema.createIndex('migrations_server').on('migrations').columns(['server_id', 'request_id']).unique().execute()

  await db.schema
    .createTable('quota_classes')
    .addColumn('class_name', 'text', (c) => c.notNull())
    .addColumn('resource', 'text', (c) => c.notNull())
    .addColumn('hard_limit', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('quota_classes_pk', ['class_name', 'resource'])
    .execute()
}
