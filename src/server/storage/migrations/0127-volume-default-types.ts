import type { Kysely } from 'kysely'

/**
 * Projects' default volume types (Cinder's default-types API, microversion 3.62; docs/block-storage.md, "Default
 * volume types"): a volume a project creates without a type is of its default type, before the configured one. One
 * row a project; a type that is some project's default cannot be deleted (the service checks, as Cinder does).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('volume_default_types')
    .addColumn('project_id', 'text', (c) => c.primaryKey())
    .addColumn('volume_type_id', 'text', (c) => c.notNull().references('volume_types.id'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('volume_default_types_type').on('volume_default_types').column('volume_type_id').execute()
}
