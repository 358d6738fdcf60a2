import type { Kysely } from 'kysely'

/**
 * Each host's own cephx user (docs/ceph.md, "cephx users and caps"): made by the control plane the first time the
 * host asks, its key sealed with the master key, so hosts never get a key copied by hand.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('host_ceph_users')
    .addColumn('host_id', 'text', (c) => c.primaryKey())
    .addColumn('ceph_user', 'text', (c) => c.notNull())
    .addColumn('key_sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
}
