import type { Kysely } from 'kysely'

/**
 * Neutron's subnet pools (extensions subnet_allocation, default-subnetpools; docs/network.md, "Subnet pools"):
 * prefixes a subnet's CIDR is allocated from, and the pool a subnet came from (`subnets.subnetpool_id`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('subnet_pools')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('ip_version', 'integer', (c) => c.notNull())
    .addColumn('prefixes', 'text', (c) => c.notNull())
    .addColumn('default_prefixlen', 'integer', (c) => c.notNull())
    .addColumn('min_prefixlen', 'integer', (c) => c.notNull())
    .addColumn('max_prefixlen', 'integer', (c) => c.notNull())
    .addColumn('default_quota', 'bigint')
    .addColumn('shared', 'integer', (c) => c.notNull())
    .addColumn('is_default', 'integer', (c) => c.notNull())
    .addColumn('tags', 'text', (c) => c.notNull())
    .addColumn('revision_number', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.alterTable('subnets').addColumn('subnetpool_id', 'text').execute()
  await db.schema.createIndex('subnets_subnetpool').on('subnets').column('subnetpool_id').execute()
}
