import type { Kysely } from 'kysely'
import type { Database } from './schema.js'

/** The tables whose integer ids come from a counter (migration 0124). */
export type SequenceName = 'aggregates' | 'migrations'

/**
 * The next id of `name`, never one handed out before, even if its row was deleted since. One upsert, so
 * concurrent callers each get their own; inside a transaction the counter's row stays locked until it ends.
 */
export async function nextId(db: Kysely<Database>, name: SequenceName): Promise<number> {
  const row = await db
    .insertInto('id_sequences')
    .values({ name, last_id: 1 })
    .onConflict((oc) => oc.column('name').doUpdateSet((eb) => ({ last_id: eb('id_sequences.last_id', '+', 1) })))
    .returning('last_id')
    .executeTakeFirstOrThrow()
  return Number(row.last_id)
}
