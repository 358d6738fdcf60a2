import { sql, type Kysely } from 'kysely'

/**
 * Counters for the integer ids Nova hands out (aggregates, migrations), so that an id is never given twice: taking
 * the highest id plus one gave a deleted aggregate's id to the next one made, and a client still holding the old
 * id (Tempest's clean-ups run concurrently with other tests) then deleted or changed someone else's aggregate.
 * Each counter starts at the highest id its table holds.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('id_sequences')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('last_id', 'bigint', (c) => c.notNull())
    .execute()
  for (const table of ['aggregates', 'migrations']) {
    await sql`INSERT INTO id_sequences (name, last_id) SELECT ${table}, COALESCE(MAX(id), 0) FROM ${sql.table(table)}`.execute(db)
  }
}
