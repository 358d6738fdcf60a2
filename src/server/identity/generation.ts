/**
 * The identity generation: a counter in the store that every identity write bumps (in its own transaction).
 * Processes cache what token validation needs (users, projects, roles, assignments) and reload it when the
 * generation they hold is older than the store's, so a disabled user, a changed password or a removed role is
 * honoured by every process within the polling interval without a database read per validation.
 */
import { sql } from 'kysely'
import type { Db } from '../storage/store.js'

const KEY = 'identity_generation'

/**
 * This process's identity writes, counted (with the time of the last one). A token service whose snapshot was
 * loaded before the latest local write checks the store's generation on the next request instead of waiting for
 * the poll, so a process sees its own writes at once. Process-wide on purpose: writers call touchIdentity with a
 * transaction, not with a service.
 */
let localWrites = { seq: 0, at: 0 }

export function localIdentityWrites(): { seq: number; at: number } {
  return localWrites
}

/** Call inside the transaction of every write to identity tables. */
export async function touchIdentity(db: Db): Promise<void> {
  await db
    .insertInto('pcc_meta')
    .values({ key: KEY, value: '1' })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value: sql`CAST(CAST(pcc_meta.value AS INTEGER) + 1 AS TEXT)` }))
    .execute()
  localWrites = { seq: localWrites.seq + 1, at: Date.now() }
}

export async function identityGeneration(db: Db): Promise<number> {
  const row = await db.selectFrom('pcc_meta').select('value').where('key', '=', KEY).executeTakeFirst()
  return row ? Number(row.value) : 0
}
