import type { Kysely } from 'kysely'

/**
 * Glance's metadata definitions (metadefs): namespaces with their objects, properties and tags, resource types
 * and their associations with namespaces (docs/image-volume.md, "Metadata definitions"). What a namespace holds
 * goes with it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('metadef_namespaces')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('namespace', 'text', (c) => c.notNull().unique())
    .addColumn('display_name', 'text')
    .addColumn('description', 'text')
    .addColumn('visibility', 'text', (c) => c.notNull())
    .addColumn('protected', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('owner', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  for (const table of ['metadef_objects', 'metadef_properties', 'metadef_tags']) {
    await db.schema
      .createTable(table)
      .addColumn('namespace_id', 'text', (c) => c.notNull().references('metadef_namespaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint(`${table}_pk`, ['namespace_id', 'name'])
      .execute()
  }
  await db.schema
    .createTable('metadef_resource_types')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('protected', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createTable('metadef_namespace_resource_types')
    .addColumn('namespace_id', 'text', (c) => c.notNull().references('metadef_namespaces.id').onDelete('cascade'))
    .addColumn('resource_type', 'text', (c) => c.notNull().references('metadef_resource_types.name'))
    .addColumn('prefix', 'text')
    .addColumn('properties_target', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('metadef_namespace_resource_types_pk', ['namespace_id', 'resource_type'])
    .execute()
}
