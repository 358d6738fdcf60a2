import { SqliteAdapter, sql, type Kysely } from 'kysely'

/**
 * `ports.rev` and `flavors.rev`, raised by the database on every UPDATE of the row, whichever writer or process
 * made it (as 0128's for networks, volumes and images): the stamps of kept port and flavor lists (issue 30,
 * network/ports.ts and api/compute/flavors.ts). What else those lists show (a port's addresses and groups, the
 * flavors a project was given) is read with the rows, not counted here: no other row is locked by these triggers
 * and no writer's lock order changes.
 */
const TABLES = [
  { table: 'ports', trigger: 'port_rev' },
  { table: 'flavors', trigger: 'flavor_rev' },
]

export async function up(db: Kysely<unknown>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter
  for (const { table, trigger } of TABLES) {
    await db.schema.alterTable(table).addColumn('rev', 'integer', (c) => c.notNull().defaultTo(0)).execute()
    // SQLite triggers cannot change NEW: a second update of the row does (triggers are not recursive). PostgreSQL:
    // 0080's function, the row's own rev raised before the row is written.
    const text = sqlite
      ? `CREATE TRIGGER ${trigger} AFTER UPDATE ON ${table} FOR EACH ROW WHEN NEW.rev = OLD.rev BEGIN UPDATE ${table} SET rev = OLD.rev + 1 WHERE rowid = NEW.rowid; END`
      : `CREATE TRIGGER ${trigger} BEFORE UPDATE ON ${table} FOR EACH ROW EXECUTE FUNCTION pcc_raise_rev()`
    await sql.raw(text).execute(db)
  }
}
