/**
 * The server rows the compute API reads and writes outside create and the actions: lookups, the update of a
 * server's own fields, its metadata and tags, and the acceptance of a delete.
 */
import type { HostTable, ServerTable } from '../storage/tables/compute.js'
import type { Db } from '../storage/store.js'
import { prepared } from '../storage/prepared.js'
import type { TaskQueue } from '../tasks/queue.js'
import { insertAction } from './instance-actions.js'
import { checkMetadataQuota } from './quotas.js'
import { COMPUTE_TASK_KINDS, type DeleteTaskPayload } from './tasks.js'

/** A server that is not deleted. */
export async function findLiveServer(db: Db, id: string): Promise<ServerTable | undefined> {
  return db.selectFrom('servers').selectAll().where('id', '=', id).where('deleted', '=', 0).executeTakeFirst()
}

/** What the show path reads before the view cache says whether it must render the server again. */
export type LiveServerStamp = Pick<ServerTable, 'id' | 'project_id' | 'rev' | 'host'> & {
  view_rev: number
  /** Its host's record (undefined when unplaced or the host is unknown): `host_status` follows the clock, not a revision. */
  hostRecord?: Pick<HostTable, 'service_status' | 'forced_down' | 'last_heartbeat_at'>
  /** The server groups it is a member of: no revision follows membership either. */
  groupIds: string[]
}

/**
 * The live server's owner, host and view stamp (its row revision and view revision), with the two things a kept
 * show view leaves open (its host's state, its groups), in one statement: a poll of a kept server reads nothing else.
 */
export async function findLiveServerStamp(db: Db, id: string): Promise<LiveServerStamp | undefined> {
  const rows = await liveServerStamp(db, id)
  if (rows.length === 0) return undefined
  const [r] = rows
  return {
    id: r.id,
    project_id: r.project_id,
    rev: r.rev,
    host: r.host,
    view_rev: r.view_rev,
    hostRecord: r.service_status === null ? undefined : { service_status: r.service_status, forced_down: r.forced_down!, last_heartbeat_at: r.last_heartbeat_at },
    // One row per group (a left join): none when the server is in no group.
    groupIds: rows.flatMap((g) => (g.group_id === null ? [] : [g.group_id])),
  }
}

// Compiled once: every poll of a server's show reads it (storage/prepared.ts).
const liveServerStamp = prepared((db: Db, id: string) =>
  db
    .selectFrom('servers')
    .leftJoin('hosts', 'hosts.hostname', 'servers.host')
    .leftJoin('server_group_members', 'server_group_members.server_id', 'servers.id')
    .select(['servers.id', 'servers.project_id', 'servers.rev', 'servers.host', 'hosts.service_status', 'hosts.forced_down', 'hosts.last_heartbeat_at', 'server_group_members.group_id'])
    .select((eb) => eb.fn.coalesce(eb.selectFrom('server_view_revisions').select('rev').whereRef('server_id', '=', 'servers.id'), eb.lit(0)).as('view_rev'))
    .where('servers.id', '=', id)
    .where('servers.deleted', '=', 0),
  { keepWhileUnchanged: true },
)

/** What os-instance-actions needs of a server, deleted or not (its actions outlive it from 2.21). */
export type ServerOfActions = Pick<ServerTable, 'id' | 'project_id' | 'deleted' | 'host'>

export async function findServerOfActions(db: Db, id: string): Promise<ServerOfActions | undefined> {
  return db.selectFrom('servers').select(['id', 'project_id', 'deleted', 'host']).where('id', '=', id).executeTakeFirst()
}

/** The servers that existed at some time in [start, end], oldest first; of one project or of all. */
export async function serversLivingIn(db: Db, start: number, end: number, projectId?: string): Promise<ServerTable[]> {
  let q = db
    .selectFrom('servers')
    .selectAll()
    .where('created_at', '<=', end)
    .where((eb) => eb.or([eb('deleted_at', 'is', null), eb('deleted_at', '>=', start)]))
  if (projectId) q = q.where('project_id', '=', projectId)
  return q.orderBy('created_at').execute()
}

/** Full rows of the given servers, in no particular order. */
/** Where each of these live servers is placed (host null: not yet, or shelved). */
export async function serverHosts(db: Db, ids: string[]): Promise<Pick<ServerTable, 'id' | 'host'>[]> {
  return ids.length === 0 ? [] : db.selectFrom('servers').select(['id', 'host']).where('id', 'in', ids).where('deleted', '=', 0).execute()
}

export async function serverRowsByIds(db: Db, ids: string[]): Promise<ServerTable[]> {
  return db.selectFrom('servers').selectAll().where('id', 'in', ids).execute()
}

/** Writes a server's own fields (PUT /servers/{id}); answers the row as it is now. */
export async function updateServerFields(db: Db, row: ServerTable, changes: Partial<ServerTable>): Promise<ServerTable> {
  if (Object.keys(changes).length === 0) return row
  const now = Date.now()
  await db.updateTable('servers').set({ ...changes, updated_at: now }).where('id', '=', row.id).execute()
  return { ...row, ...changes, updated_at: now }
}

/** Replaces a server's metadata, within the project's metadata quota. */
export async function saveServerMetadata(db: Db, row: Pick<ServerTable, 'id' | 'project_id'>, metadata: Record<string, string>): Promise<void> {
  await checkMetadataQuota(db, row.project_id, Object.keys(metadata).length)
  await db.updateTable('servers').set({ metadata: JSON.stringify(metadata), updated_at: Date.now() }).where('id', '=', row.id).execute()
}

/** A server's tags, sorted. */
export async function serverTags(db: Db, serverId: string): Promise<string[]> {
  return (await db.selectFrom('server_tags').select('tag').where('server_id', '=', serverId).orderBy('tag').execute()).map((t) => t.tag)
}

export async function hasServerTag(db: Db, serverId: string, tag: string): Promise<boolean> {
  return (await db.selectFrom('server_tags').select('tag').where('server_id', '=', serverId).where('tag', '=', tag).executeTakeFirst()) !== undefined
}

/** A tag change is a change of the server: its updated_at moves. */
async function touchServer(db: Db, serverId: string): Promise<void> {
  await db.updateTable('servers').set({ updated_at: Date.now() }).where('id', '=', serverId).execute()
}

export async function replaceServerTags(db: Db, serverId: string, tags: string[]): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('server_tags').where('server_id', '=', serverId).execute()
    if (tags.length) await tx.insertInto('server_tags').values(tags.map((tag) => ({ server_id: serverId, tag }))).execute()
    await touchServer(tx, serverId)
  })
}

export async function deleteServerTags(db: Db, serverId: string): Promise<void> {
  await db.deleteFrom('server_tags').where('server_id', '=', serverId).execute()
  await touchServer(db, serverId)
}

export async function addServerTag(db: Db, serverId: string, tag: string): Promise<void> {
  await db.insertInto('server_tags').values({ server_id: serverId, tag }).execute()
  await touchServer(db, serverId)
}

/** Answers false when the server did not have the tag. */
export async function deleteServerTag(db: Db, serverId: string, tag: string): Promise<boolean> {
  const result = await db.deleteFrom('server_tags').where('server_id', '=', serverId).where('tag', '=', tag).executeTakeFirst()
  if (Number(result.numDeletedRows) === 0) return false
  await touchServer(db, serverId)
  return true
}

/** Accepts a delete: task_state deleting, the instance action and the delete task in one transaction. */
export async function acceptServerDelete(deps: { db: Db; queue: TaskQueue }, row: Pick<ServerTable, 'id' | 'project_id'>, caller: { userId: string }, requestId: string): Promise<void> {
  const now = Date.now()
  await deps.db.transaction().execute(async (tx) => {
    await tx.updateTable('servers').set({ task_state: 'deleting', updated_at: now }).where('id', '=', row.id).execute()
    await insertAction(tx, { serverId: row.id, action: 'delete', requestId, userId: caller.userId, projectId: row.project_id }, now)
    await deps.queue.enqueue<DeleteTaskPayload>({ kind: COMPUTE_TASK_KINDS.delete, payload: { serverId: row.id, requestId }, subjectId: row.id }, tx)
  })
}

/** Which of these servers are not deleted (the view cache drops the others' entries). */
export async function liveServerIds(db: Db, ids: string[]): Promise<Set<string>> {
  const rows = await db.selectFrom('servers').select('id').where('id', 'in', ids).where('deleted', '=', 0).execute()
  return new Set(rows.map((r) => r.id))
}
