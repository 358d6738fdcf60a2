import type { Kysely } from 'kysely'

/**
 * Cinder's QoS specs (docs/block-storage.md, "QoS specs"): named sets of limits an admin associates with volume
 * types. A type has at most one (`volume_types.qos_specs_id`, as Cinder keeps it); front-end specs become the
 * throttling of the attached disk in the guest's hypervisor.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('volume_qos_specs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('consumer', 'text', (c) => c.notNull())
    .addColumn('specs', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.alterTable('volume_types').addColumn('qos_specs_id', 'text').execute()
  await db.schema.createIndex('volume_types_qos_specs').on('volume_types').column('qos_specs_id').execute()
}
