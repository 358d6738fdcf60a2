import type { Kysely } from 'kysely'

/**
 * Domain-specific configuration (Keystone's /v3/domains/{id}/config), stored and served: one row per configured
 * domain, gone with its domain (docs/identity.md, "Domain configuration").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('domain_configs')
    .addColumn('domain_id', 'text', (c) => c.primaryKey().references('domains.id').onDelete('cascade'))
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('sensitive', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
}
