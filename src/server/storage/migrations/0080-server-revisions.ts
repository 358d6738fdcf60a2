import { SqliteAdapter, sql, type Kysely } from 'kysely'

/**
 * A revision per server row that the database itself raises on every UPDATE of the row, whoever writes it (a
 * process of an older release during an upgrade included). Readers that keep something derived from a row,
 * such as the rendered server views of compute/server-view-cache.ts, compare revisions; `updated_at` cannot
 * serve, two changes can share a millisecond.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('servers').addColumn('rev', 'integer', (c) => c.notNull().defaultTo(0)).execute()
  if (db.getExecutor().adapter instanceof SqliteAdapter) {
    // SQLite triggers cannot change NEW; a second update of the row does it (not recursive: recursive_triggers is off).
    await sql`CREATE TRIGGER servers_rev AFTER UPDATE ON servers FOR EACH ROW WHEN NEW.rev = OLD.rev
      BEGIN UPDATE servers SET rev = OLD.rev + 1 WHERE rowid = NEW.rowid; END`.execute(db)
  } else {
    await sql`CREATE FUNCTION pcc_raise_rev() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.rev := OLD.rev + 1; RETURN NEW; END $$`.execute(db)
    await sql`CREATE TRIGGER servers_rev BEFORE UPDATE ON servers FOR EACH ROW EXECUTE FUNCTION pcc_raise_rev()`.execute(db)
  }
}
