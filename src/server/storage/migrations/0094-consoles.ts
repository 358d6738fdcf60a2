import type { Kysely } from 'kysely'

/** Remote consoles: console auth tokens (hashed, with an expiry) and sessions waiting for a host's stream. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('console_auth_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('server_id', 'text', (c) => c.notNull())
    .addColumn('host_id', 'text', (c) => c.notNull())
    .addColumn('protocol', 'text', (c) => c.notNull())
    .addColumn('console_type', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('console_auth_tokens_server').on('console_auth_tokens').columns(['server_id']).execute()
  await db.schema.createIndex('console_auth_tokens_expires').on('console_auth_tokens').columns(['expires_at']).execute()

  await db.schema
    .createTable('console_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('host_id', 'text', (c) => c.notNull())
    .addColumn('server_id', 'text', (c) => c.notNull())
    .addColumn('owner_url', 'text', (c) => c.notNull())
    .addColumn('relay_secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('console_sessions_expires').on('console_sessions').columns(['expires_at']).execute()
}
