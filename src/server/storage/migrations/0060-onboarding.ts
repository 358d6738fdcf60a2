import type { Kysely } from 'kysely'

/** Host onboarding: registration tokens, host credentials, the agent command channel and agent reports. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('registration_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('note', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addColumn('used_by_host', 'text')
    .execute()

  await db.schema
    .createTable('host_credentials')
    .addColumn('host_id', 'text', (c) => c.primaryKey())
    .addColumn('credential_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('host_commands')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('host_id', 'text', (c) => c.notNull())
    .addColumn('op', 'text', (c) => c.notNull())
    .addColumn('args', 'text', (c) => c.notNull())
    .addColumn('dedupe_key', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('result', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .execute()
  await db.schema.createIndex('host_commands_host_status').on('host_commands').columns(['host_id', 'status']).execute()
  await db.schema.createIndex('host_commands_status').on('host_commands').columns(['status']).execute()

  await db.schema
    .createTable('agent_hosts')
    .addColumn('host_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_version', 'text', (c) => c.notNull())
    .addColumn('guests', 'text', (c) => c.notNull())
    .addColumn('guests_at', 'bigint', (c) => c.notNull())
    .addColumn('message', 'text')
    .addColumn('registered_at', 'bigint', (c) => c.notNull())
    .execute()
}
