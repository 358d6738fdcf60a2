import { SqliteAdapter, sql, type Kysely } from 'kysely'

/**
 * Revisions that tell a process whether a kept view of a network, volume or image (http/view-cache.ts, issue 30) is still current,
 * raised by the database itself for every writer, as 0080's are for servers, and split the same way:
 *
 * - `networks.rev`, `volumes.rev`, `images.rev` rise with every UPDATE of the resource's own row (0080's
 *   `pcc_raise_rev` on PostgreSQL, a second update of the row on SQLite).
 * - `view_revisions (kind, id) → rev` rises with every change of another row the view shows (a network's subnets, a
 *   volume's attachments, its type's name, its host's name, an image's tags), raised in the writer's own transaction.
 *
 * Why two counters and not one: lock order on PostgreSQL. Were the own row's update to raise the view_revisions row
 * too, a writer that updates a volume and then inserts an attachment would lock (volume, view_revisions) while one
 * that updates an attachment and then the volume would lock them the other way round: a deadlock (40P01) between
 * them. With the column, an update of the row alone locks only the row. A writer that changes both the row and
 * another source locks the row first (storage/row-locks.ts), so every transaction takes them in one order. A
 * committed change always leaves one of the two higher than before, so a view rendered after reading both is at
 * least as new as they say. Names of triggers and functions begin with the kind (0080's begin with the table).
 * The view_revisions row goes with the resource's row; a resource id is never reused (UUIDs).
 */

/** A table a view reads, and the ids of the resources one of its rows concerns (`$` = NEW or OLD). */
interface ViewSource {
  table: string
  ids: string
  /** Only a change of this column's value matters (a name shown in the view): no insert, no delete, no other update. */
  column?: string
}

interface ViewKind {
  /** The kind's name in view_revisions, and the table of its resources (by `id`). */
  kind: string
  table: string
  /** Other tables its view shows (the resource's own row raises its `rev` column instead). */
  sources: ViewSource[]
}

/** Each kind's sources, read from its view builder. */
export const VIEW_KINDS: ViewKind[] = [
  // network/views.ts networkView: the row (tags included) and its subnets' ids.
  { kind: 'network', table: 'networks', sources: [{ table: 'subnets', ids: '$.network_id' }] },
  // volume/view.ts volumeDetail from volume/repo.ts hydrate: the row (metadata, image metadata included), its
  // attachments, its type's name and its storage host's hostname.
  {
    kind: 'volume',
    table: 'volumes',
    sources: [
      { table: 'volume_attachments', ids: '$.volume_id' },
      { table: 'volume_types', ids: 'SELECT id FROM volumes WHERE volume_type_id = $.id', column: 'name' },
      { table: 'hosts', ids: 'SELECT id FROM volumes WHERE location = $.id', column: 'hostname' },
    ],
  },
  // image/view.ts imageView from image/model.ts rowToImage: the row (properties included) and its tags.
  { kind: 'image', table: 'images', sources: [{ table: 'image_tags', ids: '$.image_id' }] },
]

/** Raises the view revision of the `kind` resources `ids` selects (ids of no such resource are skipped). */
function bump(kind: ViewKind, ids: string): string {
  return `INSERT INTO view_revisions (kind, id, rev) SELECT '${kind.kind}', id, 1 FROM ${kind.table} WHERE id IN (${ids})
    ON CONFLICT (kind, id) DO UPDATE SET rev = view_revisions.rev + 1`
}

const forget = (kind: ViewKind) => `DELETE FROM view_revisions WHERE kind = '${kind.kind}' AND id = OLD.id`

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const kind of VIEW_KINDS) await db.schema.alterTable(kind.table).addColumn('rev', 'integer', (c) => c.notNull().defaultTo(0)).execute()
  await db.schema
    .createTable('view_revisions')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('rev', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('view_revisions_pk', ['kind', 'id'])
    .execute()
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter
  for (const kind of VIEW_KINDS) await (sqlite ? sqliteTriggers(db, kind) : postgresTriggers(db, kind))
}

async function sqliteTriggers(db: Kysely<unknown>, kind: ViewKind): Promise<void> {
  const run = (text: string) => sql.raw(text).execute(db)
  // As 0080's servers_rev: SQLite triggers cannot change NEW, a second update of the row does (not recursive).
  await run(`CREATE TRIGGER ${kind.kind}_rev AFTER UPDATE ON ${kind.table} FOR EACH ROW WHEN NEW.rev = OLD.rev
    BEGIN UPDATE ${kind.table} SET rev = OLD.rev + 1 WHERE rowid = NEW.rowid; END`)
  await run(`CREATE TRIGGER ${kind.kind}_view_rev_own_delete AFTER DELETE ON ${kind.table} FOR EACH ROW BEGIN ${forget(kind)}; END`)
  for (const source of kind.sources) {
    const events: [string, string, string[]][] = source.column
      ? [['update', `UPDATE OF ${source.column} ON ${source.table} FOR EACH ROW WHEN OLD.${source.column} IS NOT NEW.${source.column}`, ['NEW']]]
      : [
          ['insert', `INSERT ON ${source.table} FOR EACH ROW`, ['NEW']],
          ['update', `UPDATE ON ${source.table} FOR EACH ROW`, ['NEW', 'OLD']],
          ['delete', `DELETE ON ${source.table} FOR EACH ROW`, ['OLD']],
        ]
    for (const [name, event, rows] of events) {
      const body = rows.map((row) => bump(kind, source.ids.replaceAll('$', row))).join(';\n')
      await run(`CREATE TRIGGER ${kind.kind}_view_rev_${source.table}_${name} AFTER ${event} BEGIN ${body}; END`)
    }
  }
}

async function postgresTriggers(db: Kysely<unknown>, kind: ViewKind): Promise<void> {
  const run = (text: string) => sql.raw(text).execute(db)
  // 0080's function: the row's own rev, raised before the row is written (no other row locked).
  await run(`CREATE TRIGGER ${kind.kind}_rev BEFORE UPDATE ON ${kind.table} FOR EACH ROW EXECUTE FUNCTION pcc_raise_rev()`)
  const own = `pcc_${kind.kind}_view_rev_own`
  await run(`CREATE FUNCTION ${own}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${forget(kind)}; RETURN NULL; END $$`)
  await run(`CREATE TRIGGER ${kind.kind}_view_rev_own AFTER DELETE ON ${kind.table} FOR EACH ROW EXECUTE FUNCTION ${own}()`)
  for (const source of kind.sources) {
    const fn = `pcc_${kind.kind}_view_rev_${source.table}`
    await run(
      `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
        IF TG_OP <> 'DELETE' THEN ${bump(kind, source.ids.replaceAll('$', 'NEW'))}; END IF;
        IF TG_OP <> 'INSERT' THEN ${bump(kind, source.ids.replaceAll('$', 'OLD'))}; END IF;
        RETURN NULL; END $$`,
    )
    const event = source.column
      ? `UPDATE OF ${source.column} ON ${source.table} FOR EACH ROW WHEN (OLD.${source.column} IS DISTINCT FROM NEW.${source.column})`
      : `INSERT OR UPDATE OR DELETE ON ${source.table} FOR EACH ROW`
    await run(`CREATE TRIGGER ${kind.kind}_view_rev_${source.table} AFTER ${event} EXECUTE FUNCTION ${fn}()`)
  }
}
