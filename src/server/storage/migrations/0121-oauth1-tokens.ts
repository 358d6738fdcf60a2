import type { Kysely } from 'kysely'

/**
 * The token flow of Keystone's OS-OAUTH1 (docs/identity.md, "OAuth 1.0a delegation"): request tokens a consumer
 * asks for and a user authorizes, the access tokens they are exchanged for, and the nonces of signed requests seen
 * within the timestamp window (a nonce seen twice is a replay). Token secrets are sealed with the master key (the
 * server needs them to check signatures); a verifier is kept as a SHA-256 hash only.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('oauth_request_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('consumer_id', 'text', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('authorizing_user_id', 'text')
    .addColumn('role_ids', 'text')
    .addColumn('verifier_hash', 'text')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('oauth_request_tokens_consumer').on('oauth_request_tokens').column('consumer_id').execute()
  await db.schema
    .createTable('oauth_access_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('consumer_id', 'text', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('authorizing_user_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('role_ids', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('oauth_access_tokens_user').on('oauth_access_tokens').column('authorizing_user_id').execute()
  await db.schema.createIndex('oauth_access_tokens_consumer').on('oauth_access_tokens').column('consumer_id').execute()
  await db.schema
    .createTable('oauth_nonces')
    .addColumn('consumer_id', 'text', (c) => c.notNull())
    .addColumn('nonce', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('oauth_nonces_pk', ['consumer_id', 'nonce'])
    .execute()
  await db.schema.createIndex('oauth_nonces_expires').on('oauth_nonces').column('expires_at').execute()
}
