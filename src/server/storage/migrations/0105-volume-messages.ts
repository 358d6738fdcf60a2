import type { Kysely } from 'kysely'

/**
 * Cinder's user messages (/messages, 3.3+): why a volume or snapshot operation failed, offered to its project
 * (docs/block-storage.md, "User messages"). Kept until `expires_at`, as Cinder keeps them for its message_ttl.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('volume_messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('resource_type', 'text', (c) => c.notNull())
    .addColumn('resource_uuid', 'text')
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('message_level', 'text', (c) => c.notNull())
    .addColumn('user_message', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('volume_messages_project').on('volume_messages').column('project_id').execute()
}
