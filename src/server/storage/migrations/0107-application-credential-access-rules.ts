import type { Kysely } from 'kysely'

/**
 * Application credentials as Keystone keeps them: the microseconds of `expires_at` (clients compare the text they
 * sent with the one answered), and access rules, the requests a credential's tokens may make. Rules belong to
 * the user and outlive the credentials that name them (docs/identity.md, "Application credentials").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('application_credentials').addColumn('expires_at_us', 'integer').execute()
  await db.schema.alterTable('application_credentials').addColumn('access_rule_ids', 'text').execute()
  await db.schema
    .createTable('access_rules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('service', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('access_rules_user_rule', ['user_id', 'service', 'method', 'path'])
    .execute()
}
