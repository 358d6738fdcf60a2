import type { Kysely } from 'kysely'

/** The OIDC identity provider: client secrets, signing keys, refresh tokens. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('idp_clients')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('sealed_secret', 'text', (c) => c.notNull())
    .addColumn('previous_sealed_secret', 'text')
    .addColumn('previous_valid_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('rotated_at', 'bigint')
    .execute()

  await db.schema
    .createTable('idp_signing_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('sealed_private_key', 'text', (c) => c.notNull())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('idp_refresh_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('family_id', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('password_stamp', 'bigint')
    .addColumn('family_created_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addColumn('next_sealed', 'text')
    .addColumn('revoked_at', 'bigint')
    .execute()
  await db.schema.createIndex('idp_refresh_tokens_family').on('idp_refresh_tokens').columns(['family_id']).execute()
  await db.schema.createIndex('idp_refresh_tokens_user').on('idp_refresh_tokens').columns(['user_id']).execute()
}
