import { SqliteAdapter, sql, type Kysely } from 'kysely'

/**
 * Revisions that tell a process whether a server's rendered view (http/view-cache.ts) is still
 * current, kept by the database itself for every writer (a process of an older release during an upgrade
 * included); `updated_at` cannot serve, two changes can share a millisecond.
 *
 * - `servers.rev` rises with every UPDATE of the server's row.
 * - `server_view_revisions.rev` rises with every change of another table the view shows: tags, faults,
 *   volumes, ports, their addresses, floating IPs and security groups, and the names of their networks and
 *   groups. It is a table of its own, not `servers.rev`, so a port or floating IP change never locks the
 *   server row that the conductor may hold while it locks ports (no lock-order deadlock on PostgreSQL).
 */

/** A table the server view reads, and the ids of the servers one of its rows concerns (`$` = NEW or OLD). */
interface ViewSource {
  table: string
  servers: string
  /** Only changes of this column matter (names shown in the view). */
  column?: string
}

const VIEW_SOURCES: ViewSource[] = [
  { table: 'server_tags', servers: '$.server_id' },
  { table: 'instance_faults', servers: '$.server_id' },
  { table: 'block_device_mappings', servers: '$.server_id' },
  { table: 'ports', servers: '$.device_id' },
  { table: 'ip_allocations', servers: 'SELECT device_id FROM ports WHERE id = $.port_id' },
  { table: 'floating_ips', servers: 'SELECT device_id FROM ports WHERE id = $.fixed_port_id' },
  { table: 'port_security_groups', servers: 'SELECT device_id FROM ports WHERE id = $.port_id' },
  { table: 'networks', servers: 'SELECT device_id FROM ports WHERE network_id = $.id', column: 'name' },
  {
    table: 'security_groups',
    servers: 'SELECT p.device_id FROM ports p JOIN port_security_groups b ON b.port_id = p.id WHERE b.security_group_id = $.id',
    column: 'name',
  },
]

/** Raises the view revision of the servers `ids` selects (rows that are no server are skipped). */
function bump(ids: string): string {
  return `INSERT INTO server_view_revisions (server_id, rev) SELECT id, 1 FROM servers WHERE id IN (${ids})
    ON CONFLICT (server_id) DO UPDATE SET rev = server_view_revisions.rev + 1`
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('servers').addColumn('rev', 'integer', (c) => c.notNull().defaultTo(0)).execute()
  await db.schema
    .createTable('server_view_revisions')
    // No foreign key: a cascade from a deleted server would fire the triggers above into this table during the
    // delete itself. The purge job removes the rows of the servers it removes.
    .addColumn('server_id', 'text', (c) => c.primaryKey())
    .addColumn('rev', 'integer', (c) => c.notNull())
    .execute()
  if (db.getExecutor().adapter instanceof SqliteAdapter) await sqliteTriggers(db)
  else await postgresTriggers(db)
}

async function sqliteTriggers(db: Kysely<unknown>): Promise<void> {
  // SQLite triggers cannot change NEW; a second update of the row does it (not recursive: recursive_triggers is off).
  await sql`CREATE TRIGGER servers_rev AFTER UPDATE ON servers FOR EACH ROW WHEN NEW.rev = OLD.rev
    BEGIN UPDATE servers SET rev = OLD.rev + 1 WHERE rowid = NEW.rowid; END`.execute(db)
  for (const source of VIEW_SOURCES) {
    const events: [string, string[]][] = source.column
      ? [[`UPDATE OF ${source.column}`, ['NEW', 'OLD']]]
      : [['INSERT', ['NEW']], ['UPDATE', ['NEW', 'OLD']], ['DELETE', ['OLD']]]
    for (const [event, rows] of events) {
      const body = rows.map((row) => bump(source.servers.replaceAll('$', row))).join(';\n')
      const name = `${source.table}_${event.split(' ')[0].toLowerCase()}_view_rev`
      await sql.raw(`CREATE TRIGGER ${name} AFTER ${event} ON ${source.table} FOR EACH ROW BEGIN ${body}; END`).execute(db)
    }
  }
}

async function postgresTriggers(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE FUNCTION pcc_raise_rev() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.rev := OLD.rev + 1; RETURN NEW; END $$`.execute(db)
  await sql`CREATE TRIGGER servers_rev BEFORE UPDATE ON servers FOR EACH ROW EXECUTE FUNCTION pcc_raise_rev()`.execute(db)
  for (const source of VIEW_SOURCES) {
    const fn = `pcc_view_rev_${source.table}`
    await sql
      .raw(
        `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
          IF TG_OP <> 'DELETE' THEN ${bump(source.servers.replaceAll('$', 'NEW'))}; END IF;
          IF TG_OP <> 'INSERT' THEN ${bump(source.servers.replaceAll('$', 'OLD'))}; END IF;
          RETURN NULL; END $$`,
      )
      .execute(db)
    const events = source.column ? `UPDATE OF ${source.column}` : 'INSERT OR UPDATE OR DELETE'
    await sql.raw(`CREATE TRIGGER ${source.table}_view_rev AFTER ${events} ON ${source.table} FOR EACH ROW EXECUTE FUNCTION ${fn}()`).execute(db)
  }
}
