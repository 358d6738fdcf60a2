import type { Kysely } from 'kysely'

/**
 * Keystone's policy blobs (/v3/policies: stored and served, pcc's own policy is its tables in code) and OAuth
 * 1.0a consumers (/v3/OS-OAUTH1/consumers), whose secret is sealed with the master key (docs/identity.md).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('policies')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('blob', 'text', (c) => c.notNull())
    .addColumn('extra', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createTable('oauth_consumers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('description', 'text')
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('extra', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
}
