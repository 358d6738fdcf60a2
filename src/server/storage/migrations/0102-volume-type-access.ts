import type { Kysely } from 'kysely'

/**
 * Private volume types' project access (Cinder's os-volume-type-access): a private type is usable by the projects
 * listed here and by admins only (docs/block-storage.md, "Private volume types").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('volume_type_access')
    .addColumn('volume_type_id', 'text', (c) => c.notNull().references('volume_types.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('volume_type_access_pk', ['volume_type_id', 'project_id'])
    .execute()
}
