import type { Kysely } from 'kysely'

/**
 * Keystone's OS-EP-FILTER: endpoint groups (filters over the catalog's endpoints) and the endpoints and endpoint
 * groups associated with projects, which narrow a project-scoped token's catalog (docs/identity.md, "Endpoint
 * filtering"). Associations go with their project, endpoint or group.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('endpoint_groups')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('filters', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createTable('project_endpoint_groups')
    .addColumn('endpoint_group_id', 'text', (c) => c.notNull().references('endpoint_groups.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addPrimaryKeyConstraint('project_endpoint_groups_pk', ['endpoint_group_id', 'project_id'])
    .execute()
  await db.schema
    .createTable('project_endpoints')
    .addColumn('endpoint_id', 'text', (c) => c.notNull().references('endpoints.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addPrimaryKeyConstraint('project_endpoints_pk', ['endpoint_id', 'project_id'])
    .execute()
}
