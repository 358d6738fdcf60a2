import type { Kysely } from 'kysely'

/**
 * Neutron's address scopes (extension address-scope; docs/network.md, "Subnet pools"): subnet pools of one
 * scope never overlap, so the addresses of their subnets are unique within the scope.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('address_scopes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('ip_version', 'integer', (c) => c.notNull())
    .addColumn('shared', 'integer', (c) => c.notNull())
    .addColumn('tags', 'text', (c) => c.notNull())
    .addColumn('revision_number', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.alterTable('subnet_pools').addColumn('address_scope_id', 'text').execute()
  await db.schema.createIndex('subnet_pools_address_scope').on('subnet_pools').column('address_scope_id').execute()
}
