/**
 * The identity generation: a counter in the store that every identity write bumps (in its own transaction).
 * Processes cache what token validation needs (users, projects, roles, assignments) and reload it when the
 * generation they hold is older than the store's, so a disabled user, a changed password or a removed role is
 * honoured by every process within the polling interval without a database read per validation.
 */
import { sql } from 'kysely'
import type { Db } from '../storage/store.js'

const KEY = 'identity_generation'

/** Call inside the transaction of every write to identity tables. */
export async function touchIdentity(db: Db): Promise<void> {
  await db
    .insertInto('pcc_meta')
    .values({ key: KEY, value: '1' })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value: sql`CAST(CAST(pcc_meta.value AS INTEGER) + 1 AS TEXT)` }))
    .execute()
}

export async function identityGeneration(db: Db): Promise<number> {
  const row = await db.selectFrom('pcc_meta').select('value').where('key', '=', KEY).executeTakeFirst()
  return row ? Number(row.value) : 0
}
