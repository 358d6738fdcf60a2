import type { Kysely } from 'kysely'

/** Identity authentication: TOTP and other credentials, application credentials, revocation events, key retirement time. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('credentials')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('project_id', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('blob', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('credentials_user').on('credentials').columns(['user_id', 'type']).execute()

  await db.schema
    .createTable('application_credentials')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('roles', 'text', (c) => c.notNull())
    .addColumn('unrestricted', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('expires_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('application_credentials_user_name', ['user_id', 'name'])
    .execute()

  await db.schema
    .createTable('revocation_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('audit_id', 'text')
    .addColumn('user_id', 'text')
    .addColumn('project_id', 'text')
    .addColumn('issued_before', 'bigint', (c) => c.notNull())
    .addColumn('prune_after', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint', (c) => c.notNull())
    .execute()
}
