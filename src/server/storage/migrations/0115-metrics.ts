import type { Kysely } from 'kysely'

/**
 * Metrics history (docs/metrics.md): the latest sample of each guest and host (diagnostics and Prometheus read it,
 * and the next sample's rates are computed against it), and bounded rings of consolidated values like Proxmox's
 * RRD, a row per (subject, tier, slot) overwritten when its slot comes round again, so a server or host never holds
 * more than the tiers' slot count in rows.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('metric_latest')
    .addColumn('subject_id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('host_id', 'text', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('sample', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('metric_latest_host').on('metric_latest').column('host_id').execute()
  await db.schema
    .createTable('metric_slots')
    .addColumn('subject_id', 'text', (c) => c.notNull())
    .addColumn('tier', 'integer', (c) => c.notNull())
    .addColumn('slot', 'integer', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('samples', 'integer', (c) => c.notNull())
    .addColumn('cpu', 'double precision')
    .addColumn('memory', 'double precision')
    .addColumn('disk_read', 'double precision')
    .addColumn('disk_write', 'double precision')
    .addColumn('net_rx', 'double precision')
    .addColumn('net_tx', 'double precision')
    .addColumn('disk_used', 'double precision')
    .addColumn('guests', 'double precision')
    .addPrimaryKeyConstraint('metric_slots_pk', ['subject_id', 'tier', 'slot'])
    .execute()
}
