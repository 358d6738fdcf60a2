import type { Kysely } from 'kysely'

/**
 * The attach mode of a volume attachment (Cinder's `attach_mode`, docs/image-volume.md, "The attachments API"):
 * an attachment made through the v3 attachments API names it (3.54 `mode`), and the connection info its consumer
 * gets carries it as `access_mode`. Attachments made before were all read-write.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('volume_attachments').addColumn('attach_mode', 'text', (c) => c.notNull().defaultTo('rw')).execute()
}
