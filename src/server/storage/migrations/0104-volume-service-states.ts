import type { Kysely } from 'kysely'

/**
 * What an admin set on a block storage service (os-services enable/disable/freeze/thaw): a disabled or frozen
 * volume service's backend gets no new volumes (docs/block-storage.md, "Volume services"). A service with no row
 * is enabled and not frozen; the services themselves are derived from the storage places, not stored.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('volume_service_states')
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('binary', 'text', (c) => c.notNull())
    .addColumn('disabled', 'integer', (c) => c.notNull())
    .addColumn('disabled_reason', 'text')
    .addColumn('frozen', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('volume_service_states_pk', ['host', 'binary'])
    .execute()
}
