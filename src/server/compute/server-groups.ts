/** Server groups (os-server-groups): their rows and their members that are not deleted. */
import type { ServerGroupTable } from '../storage/schema.js'
import type { Db } from '../storage/store.js'

/** The live members of each group, as (group, server) pairs. */
export async function groupMembers(db: Db, groupIds: string[]): Promise<{ group_id: string; server_id: string }[]> {
  if (groupIds.length === 0) return []
  return db
    .selectFrom('server_group_members')
    .innerJoin('servers', 'servers.id', 'server_group_members.server_id')
    .select(['server_group_members.group_id', 'server_group_members.server_id'])
    .where('server_group_members.group_id', 'in', groupIds)
    .where('servers.deleted', '=', 0)
    .execute()
}

export async function findServerGroup(db: Db, id: string): Promise<ServerGroupTable | undefined> {
  return db.selectFrom('server_groups').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function countServerGroups(db: Db, projectId: string): Promise<number> {
  return Number((await db.selectFrom('server_groups').select((eb) => eb.fn.countAll().as('n')).where('project_id', '=', projectId).executeTakeFirst())?.n ?? 0)
}

export async function insertServerGroup(db: Db, row: ServerGroupTable): Promise<void> {
  await db.insertInto('server_groups').values(row).execute()
}

/** A page of server groups, oldest first; of one project, or of all when `projectId` is undefined. */
export async function listServerGroups(db: Db, projectId: string | undefined, page: { offset?: number; limit: number }): Promise<ServerGroupTable[]> {
  let query = db.selectFrom('server_groups').selectAll().orderBy('created_at').orderBy('id')
  if (projectId !== undefined) query = query.where('project_id', '=', projectId)
  if (page.offset) query = query.offset(page.offset)
  return query.limit(page.limit).execute()
}

export async function deleteServerGroup(db: Db, id: string): Promise<void> {
  await db.deleteFrom('server_groups').where('id', '=', id).execute()
}
