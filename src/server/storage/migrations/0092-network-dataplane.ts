import { SqliteAdapter, sql, type Kysely } from 'kysely'

/**
 * Guest networking on real hosts:
 *
 * - Networks get Neutron's provider attributes: `network_type` (`vxlan` for tenant networks, `flat` for a
 *   network mapped to a host interface), `physical_network` (flat) and `segmentation_id` (the VXLAN VNI). The
 *   existing networks become VXLAN networks with VNIs 1, 2, 3… in creation order. A VNI serves one network
 *   and a physical network one flat network (unique indexes; NULLs never collide).
 * - `network_dataplane_revision` is one counter the database raises with every change of a table a host's
 *   data plane is built from (ports, addresses, security groups and rules, subnets, networks, routers,
 *   floating IPs, host roles, host facts). Agents long-poll on it (network/dataplane/revision.ts); it is kept by
 *   triggers, so every writer (the conductor binding ports, a process of an older release) raises it.
 */

/** Tables whose changes a host's data plane depends on, and the columns that matter (all when absent). */
const DATAPLANE_SOURCES: { table: string; columns?: string[] }[] = [
  { table: 'networks' },
  { table: 'subnets' },
  { table: 'ports' },
  { table: 'ip_allocations' },
  { table: 'port_security_groups' },
  { table: 'security_groups' },
  { table: 'security_group_rules' },
  { table: 'routers' },
  { table: 'floating_ips' },
  { table: 'host_roles' },
  // Heartbeats write last_heartbeat_at every second: only the facts (tunnel address, back end) matter.
  { table: 'hosts', columns: ['facts', 'hostname'] },
]

const BUMP = 'UPDATE network_dataplane_revision SET rev = rev + 1 WHERE id = 1'

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('networks').addColumn('network_type', 'text', (c) => c.notNull().defaultTo('vxlan')).execute()
  await db.schema.alterTable('networks').addColumn('physical_network', 'text').execute()
  await db.schema.alterTable('networks').addColumn('segmentation_id', 'integer').execute()
  const existing = await db.selectFrom('networks' as never).select(['id' as never]).orderBy('created_at' as never).orderBy('id' as never).execute()
  let vni = 0
  for (const row of existing as { id: string }[]) {
    await db
      .updateTable('networks' as never)
      .set({ segmentation_id: ++vni } as never)
      .where('id' as never, '=', row.id as never)
      .execute()
  }
  await db.schema.createIndex('networks_segment').unique().on('networks').columns(['network_type', 'segmentation_id']).execute()
  await db.schema.createIndex('networks_flat_physnet').unique().on('networks').column('physical_network').where(sql.ref('network_type'), '=', 'flat').execute()

  await db.schema
    .createTable('network_dataplane_revision')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('rev', 'bigint', (c) => c.notNull())
    .execute()
  await db.insertInto('network_dataplane_revision' as never).values({ id: 1, rev: 1 } as never).execute()
  if (db.getExecutor().adapter instanceof SqliteAdapter) await sqliteTriggers(db)
  else await postgresTriggers(db)
}

async function sqliteTriggers(db: Kysely<unknown>): Promise<void> {
  for (const source of DATAPLANE_SOURCES) {
    const update = source.columns ? `UPDATE OF ${source.columns.join(', ')}` : 'UPDATE'
    for (const event of ['INSERT', update, 'DELETE']) {
      const name = `${source.table}_${event.split(' ')[0].toLowerCase()}_dataplane_rev`
      // SQLite has row triggers only; one bump per row written is one UPDATE of a one-row table.
      await sql.raw(`CREATE TRIGGER ${name} AFTER ${event} ON ${source.table} FOR EACH ROW BEGIN ${BUMP}; END`).execute(db)
    }
  }
}

async function postgresTriggers(db: Kysely<unknown>): Promise<void> {
  await sql.raw(`CREATE FUNCTION pcc_dataplane_rev() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${BUMP}; RETURN NULL; END $$`).execute(db)
  for (const source of DATAPLANE_SOURCES) {
    const update = source.columns ? `UPDATE OF ${source.columns.join(', ')}` : 'UPDATE'
    // Statement triggers: a statement writing 500 rows raises the counter once, not 500 times.
    await sql.raw(`CREATE TRIGGER ${source.table}_dataplane_rev AFTER INSERT OR ${update} OR DELETE ON ${source.table} FOR EACH STATEMENT EXECUTE FUNCTION pcc_dataplane_rev()`).execute(db)
  }
}
