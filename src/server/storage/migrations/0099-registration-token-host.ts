import type { Kysely } from 'kysely'

/**
 * The host a registration token is issued for. Any token used to re-register an existing host id, which handed
 * that host's commands, image bytes and consoles to whoever held a token; re-registration now needs a token issued
 * for that host (docs/agent.md, "Onboarding in four steps"). Null: a token for a new host.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('registration_tokens').addColumn('host_id', 'text').execute()
}
