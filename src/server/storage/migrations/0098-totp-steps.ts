import type { Kysely } from 'kysely'

/** The last TOTP time step each credential accepted, so that a code is accepted once (identity/totp-factor.ts). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('credentials').addColumn('totp_last_step', 'bigint').execute()
}
