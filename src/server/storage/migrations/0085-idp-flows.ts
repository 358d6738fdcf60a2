import type { Kysely } from 'kysely'

/**
 * The IdP's browser and device flows (docs/idp.md): clients gain a name, redirect URIs and a public flag;
 * pending browser logins, authorization codes, device requests and access tokens get tables. Every code and
 * token is stored as a SHA-256 hash only.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('idp_clients').addColumn('name', 'text', (c) => c.notNull().defaultTo('')).execute()
  await db.schema.alterTable('idp_clients').addColumn('redirect_uris', 'text', (c) => c.notNull().defaultTo('[]')).execute()
  await db.schema.alterTable('idp_clients').addColumn('public', 'integer', (c) => c.notNull().defaultTo(0)).execute()
  // The built-in client of an existing installation gets what a new one is created with (clients.ts).
  await (db as Kysely<{ idp_clients: { id: string; name: string; redirect_uris: string } }>)
    .updateTable('idp_clients')
    .set({ name: 'Kubernetes', redirect_uris: JSON.stringify(['http://localhost', 'http://127.0.0.1', 'http://[::1]', 'urn:ietf:wg:oauth:2.0:oob']) })
    .where('id', '=', 'kubernetes')
    .execute()

  await db.schema
    .createTable('idp_auth_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('browser_hash', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('state', 'text')
    .addColumn('nonce', 'text')
    .addColumn('code_challenge', 'text')
    .addColumn('device_request_id', 'text')
    .addColumn('stage', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text')
    .addColumn('auth_time', 'bigint')
    .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('idp_auth_requests_expires').on('idp_auth_requests').columns(['expires_at']).execute()

  await db.schema
    .createTable('idp_auth_codes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('code_hash', 'text', (c) => c.notNull().unique())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('nonce', 'text')
    .addColumn('code_challenge', 'text', (c) => c.notNull())
    .addColumn('auth_time', 'bigint', (c) => c.notNull())
    .addColumn('password_stamp', 'bigint')
    .addColumn('family_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addColumn('replayed_at', 'bigint')
    .execute()

  await db.schema
    .createTable('idp_device_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('device_code_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_code_hash', 'text', (c) => c.notNull().unique())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text')
    .addColumn('auth_time', 'bigint')
    .addColumn('password_stamp', 'bigint')
    .addColumn('interval_seconds', 'integer', (c) => c.notNull())
    .addColumn('last_polled_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('idp_access_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('family_id', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('idp_access_tokens_family').on('idp_access_tokens').columns(['family_id']).execute()
  await db.schema.createIndex('idp_access_tokens_expires').on('idp_access_tokens').columns(['expires_at']).execute()
}
