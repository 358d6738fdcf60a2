import { SqliteAdapter, sql, type Kysely } from 'kysely'

/**
 * Revisions that tell a process whether a kept view of a network, volume or image (http/view-cache.ts, issue 30) is still current,
 * raised by the database itself for every writer, as 0080's are for servers.
 *
 * One counter per resource, `view_revisions (kind, id) → rev`, raised in the writer's own transaction by every
 * change of the row or of another row its view shows. A table of its own rather than a column of the resource:
 * a subnet's insert then never locks its network's row (no lock-order deadlock on PostgreSQL with a writer that
 * updates the network and then its subnets), and one trigger body serves every source. A committed change always
 * leaves the counter higher than before it, so a view rendered after reading the counter is at least as new as
 * the counter says. Names of triggers and functions begin with the kind (0080's begin with the table). The counter's row goes with the resource's row; a resource id is never reused (UUIDs).
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
  /** Other tables its view shows. The resource's own row is a source too (every UPDATE). */
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
  await run(`CREATE TRIGGER ${kind.kind}_view_rev_own_update AFTER UPDATE ON ${kind.table} FOR EACH ROW BEGIN ${bump(kind, 'NEW.id')}; END`)
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
  const own = `pcc_${kind.kind}_view_rev_own`
  await run(
    `CREATE FUNCTION ${own}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      IF TG_OP = 'UPDATE' THEN ${bump(kind, 'NEW.id')}; ELSE ${forget(kind)}; END IF;
      RETURN NULL; END $$`,
  )
  await run(`CREATE TRIGGER ${kind.kind}_view_rev_own AFTER UPDATE OR DELETE ON ${kind.table} FOR EACH ROW EXECUTE FUNCTION ${own}()`)
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
