import type { Kysely } from 'kysely'

/**
 * Cinder's quota classes (os-quota-class-sets): the class `default` holds the limits every project starts from,
 * so an admin changes the defaults without touching each project (docs/block-storage.md, "Quotas").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('volume_quota_classes')
    .addColumn('class_name', 'text', (c) => c.notNull())
    .addColumn('resource', 'text', (c) => c.notNull())
    .addColumn('hard_limit', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('volume_quota_classes_pk', ['class_name', 'resource'])
    .execute()
}
