/** OS-EP-FILTER's records: endpoint groups and the project ↔ endpoint and project ↔ endpoint group associations. */
import { notFound } from '../../../contracts/errors.js'
import type { EndpointGroupTable } from '../../storage/tables/identity.js'
import type { Db } from '../../storage/store.js'
import type { EndpointFilters } from '../endpoint-filter.js'
import { newIdentityId, parseJson } from './write.js'

export type EndpointGroupRow = EndpointGroupTable

export const groupFilters = (row: EndpointGroupRow): EndpointFilters => parseJson<EndpointFilters>(row.filters, {})

/** The endpoints associated with a project directly (not through an endpoint group). */
export async function directEndpointIds(db: Db, projectId: string): Promise<string[]> {
  return (await db.selectFrom('project_endpoints').select('endpoint_id').where('project_id', '=', projectId).execute()).map((r) => r.endpoint_id)
}

export async function listEndpointGroups(db: Db, filter: { name?: string } = {}): Promise<EndpointGroupRow[]> {
  let q = db.selectFrom('endpoint_groups').selectAll()
  if (filter.name !== undefined) q = q.where('name', '=', filter.name)
  return q.orderBy('created_at', 'asc').orderBy('id', 'asc').execute()
}

export async function getEndpointGroup(db: Db, id: string): Promise<EndpointGroupRow> {
  const row = await db.selectFrom('endpoint_groups').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw notFound(`Could not find endpoint group: ${id}.`)
  return row
}

export async function createEndpointGroup(db: Db, input: { name: string; description: string | null; filters: EndpointFilters }, now: number): Promise<EndpointGroupRow> {
  const row: EndpointGroupRow = { id: newIdentityId(), name: input.name, description: input.description, filters: JSON.stringify(input.filters), created_at: now }
  await db.insertInto('endpoint_groups').values(row).execute()
  return row
}

export async function updateEndpointGroup(db: Db, id: string, input: { name?: string; description?: string | null; filters?: EndpointFilters }): Promise<EndpointGroupRow> {
  const row = await getEndpointGroup(db, id)
  const next: EndpointGroupRow = {
    ...row,
    name: input.name ?? row.name,
    description: input.description === undefined ? row.description : input.description,
    filters: input.filters === undefined ? row.filters : JSON.stringify(input.filters),
  }
  await db.updateTable('endpoint_groups').set(next).where('id', '=', id).execute()
  return next
}

/** Deletes the group; its project associations go with it (foreign key cascade). */
export async function deleteEndpointGroup(db: Db, id: string): Promise<void> {
  await getEndpointGroup(db, id)
  await db.deleteFrom('endpoint_groups').where('id', '=', id).execute()
}

export async function associateEndpointGroup(db: Db, groupId: string, projectId: string): Promise<void> {
  const found = await db.selectFrom('project_endpoint_groups').select('project_id').where('endpoint_group_id', '=', groupId).where('project_id', '=', projectId).executeTakeFirst()
  if (!found) await db.insertInto('project_endpoint_groups').values({ endpoint_group_id: groupId, project_id: projectId }).execute()
}

export async function isEndpointGroupAssociated(db: Db, groupId: string, projectId: string): Promise<boolean> {
  return (await db.selectFrom('project_endpoint_groups').select('project_id').where('endpoint_group_id', '=', groupId).where('project_id', '=', projectId).executeTakeFirst()) !== undefined
}

export async function dissociateEndpointGroup(db: Db, groupId: string, projectId: string): Promise<void> {
  if (!(await isEndpointGroupAssociated(db, groupId, projectId))) throw notFound(`The endpoint group ${groupId} is not associated with the project ${projectId}.`)
  await db.deleteFrom('project_endpoint_groups').where('endpoint_group_id', '=', groupId).where('project_id', '=', projectId).execute()
}

export async function projectsOfEndpointGroup(db: Db, groupId: string): Promise<string[]> {
  return (await db.selectFrom('project_endpoint_groups').select('project_id').where('endpoint_group_id', '=', groupId).orderBy('project_id').execute()).map((r) => r.project_id)
}

export async function endpointGroupsOfProject(db: Db, projectId: string): Promise<EndpointGroupRow[]> {
  return db
    .selectFrom('endpoint_groups')
    .innerJoin('project_endpoint_groups', 'project_endpoint_groups.endpoint_group_id', 'endpoint_groups.id')
    .selectAll('endpoint_groups')
    .where('project_endpoint_groups.project_id', '=', projectId)
    .orderBy('endpoint_groups.created_at')
    .execute()
}

export async function associateEndpoint(db: Db, endpointId: string, projectId: string): Promise<void> {
  if (!(await isEndpointAssociated(db, endpointId, projectId))) await db.insertInto('project_endpoints').values({ endpoint_id: endpointId, project_id: projectId }).execute()
}

export async function isEndpointAssociated(db: Db, endpointId: string, projectId: string): Promise<boolean> {
  return (await db.selectFrom('project_endpoints').select('project_id').where('endpoint_id', '=', endpointId).where('project_id', '=', projectId).executeTakeFirst()) !== undefined
}

export async function dissociateEndpoint(db: Db, endpointId: string, projectId: string): Promise<void> {
  if (!(await isEndpointAssociated(db, endpointId, projectId))) throw notFound(`The endpoint ${endpointId} is not associated with the project ${projectId}.`)
  await db.deleteFrom('project_endpoints').where('endpoint_id', '=', endpointId).where('project_id', '=', projectId).execute()
}

export async function projectsOfEndpoint(db: Db, endpointId: string): Promise<string[]> {
  return (await db.selectFrom('project_endpoints').select('project_id').where('endpoint_id', '=', endpointId).orderBy('project_id').execute()).map((r) => r.project_id)
}

/** Everything the identity snapshot needs to narrow catalogs. */
export async function loadEndpointFilter(db: Db) {
  const [groups, groupAssociations, endpointAssociations] = await Promise.all([
    db.selectFrom('endpoint_groups').selectAll().execute(),
    db.selectFrom('project_endpoint_groups').selectAll().execute(),
    db.selectFrom('project_endpoints').selectAll().execute(),
  ])
  return { groups: groups.map((g) => ({ id: g.id, filters: groupFilters(g) })), groupAssociations, endpointAssociations }
}
