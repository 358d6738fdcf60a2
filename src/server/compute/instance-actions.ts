/**
 * Nova's instance actions (os-instance-actions): the one module that writes instance_actions and
 * instance_action_events. The API starts an action when it accepts a request, the conductor adds one event per
 * step (Nova's names) and finishes both. Event ids are derived from the action and the event name so that a task
 * run again after a crash finds and reuses the records of the first run instead of duplicating them.
 */
import { createHash, randomUUID } from 'node:crypto'
import type { Db } from '../storage/store.js'
import type { InstanceActionEventTable, InstanceActionTable } from '../storage/tables/compute.js'

/** Who started which action on which server, for which request. */
export interface NewAction {
  serverId: string
  action: string
  requestId: string
  userId: string
  projectId: string
  /** An action completed at once (a synchronous API action) is written finished. */
  finished?: boolean
}

/** Inserts instance actions in one statement; answers their ids in the order given. */
export async function insertActions(db: Db, actions: NewAction[], now = Date.now()): Promise<string[]> {
  if (actions.length === 0) return []
  const rows = actions.map((a) => ({
    id: randomUUID(),
    server_id: a.serverId,
    action: a.action,
    request_id: a.requestId,
    user_id: a.userId,
    project_id: a.projectId,
    message: null,
    start_time: now,
    finish_time: a.finished ? now : null,
    updated_at: now,
  }))
  await db.insertInto('instance_actions').values(rows).execute()
  return rows.map((r) => r.id)
}

/** Inserts one instance action; answers its id. */
export async function insertAction(db: Db, action: NewAction, now = Date.now()): Promise<string> {
  const [id] = await insertActions(db, [action], now)
  return id
}

export async function findAction(db: Db, serverId: string, requestId: string): Promise<{ id: string } | undefined> {
  return db.selectFrom('instance_actions').select('id').where('server_id', '=', serverId).where('request_id', '=', requestId).executeTakeFirst()
}

/** The action of each server for one request (a multiple create shares its request id). */
export async function findActions(db: Db, serverIds: string[], requestId: string): Promise<Map<string, string>> {
  if (serverIds.length === 0) return new Map()
  const rows = await db.selectFrom('instance_actions').select(['id', 'server_id']).where('request_id', '=', requestId).where('server_id', 'in', serverIds).execute()
  return new Map(rows.map((r) => [r.server_id, r.id]))
}

/** Starts an instance action the conductor begins itself (not from a compute API request); answers its id. */
export async function startAction(db: Db, server: { id: string; project_id: string }, by: { requestId: string; userId: string }, action: string, now = Date.now()): Promise<string> {
  return insertAction(db, { serverId: server.id, action, requestId: by.requestId, userId: by.userId, projectId: server.project_id }, now)
}

/**
 * Starts an event, or takes over the one a previous run started: the event's id is derived from the action
 * and the event name, so a repeated run inserts nothing new (one statement either way).
 */
export async function startEvent(db: Db, actionId: string | undefined, event: string, host: string | null, now = Date.now()): Promise<string | undefined> {
  if (!actionId) return undefined
  const id = eventId(actionId, event)
  await db
    .insertInto('instance_action_events')
    .values({ id, action_id: actionId, event, start_time: now, finish_time: null, result: null, traceback: null, host, details: null })
    .onConflict((oc) => oc.column('id').doUpdateSet({ finish_time: null, result: null, traceback: null, host }))
    .execute()
  return id
}

/** Starts the same event for many actions in one statement (the servers of one multiple create). */
export async function startEvents(db: Db, actionIds: (string | undefined)[], event: string, now = Date.now()): Promise<void> {
  const rows = actionIds
    .filter((a): a is string => !!a)
    .map((actionId) => ({ id: eventId(actionId, event), action_id: actionId, event, start_time: now, finish_time: null, result: null, traceback: null, host: null, details: null }))
  if (rows.length === 0) return
  await db.insertInto('instance_action_events').values(rows).onConflict((oc) => oc.column('id').doNothing()).execute()
}

/** A uuid-shaped id, stable for one (action, event) pair. */
export function eventId(actionId: string, event: string): string {
  const h = createHash('sha256').update(`${actionId}/${event}`).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`
}

export async function finishEvent(db: Db, eventId: string | undefined, result: 'Success' | 'Error', failure?: { traceback?: string; details?: string }, now = Date.now()): Promise<void> {
  if (!eventId) return
  await db
    .updateTable('instance_action_events')
    .set({ finish_time: now, result, traceback: failure?.traceback ?? null, details: failure?.details ?? null })
    .where('id', '=', eventId)
    .execute()
}

/** Nova marks a failed action with the message "Error". */
export async function finishAction(db: Db, actionId: string | undefined, failed = false, now = Date.now()): Promise<void> {
  if (!actionId) return
  await db
    .updateTable('instance_actions')
    .set({ finish_time: now, updated_at: now, ...(failed && { message: 'Error' }) })
    .where('id', '=', actionId)
    .execute()
}

/** Finishes, successfully, the event `event` of many actions and the actions themselves (the servers of one multiple create). */
export async function finishActionsWithEvent(db: Db, actionIds: string[], event: string, now = Date.now()): Promise<void> {
  if (actionIds.length === 0) return
  await db
    .updateTable('instance_action_events')
    .set({ finish_time: now, result: 'Success' })
    .where('id', 'in', actionIds.map((a) => eventId(a, event)))
    .execute()
  await db.updateTable('instance_actions').set({ finish_time: now, updated_at: now }).where('id', 'in', actionIds).execute()
}

/** An instance action the API completes itself (createImage, attach_interface …), with its one event, both finished. */
export async function recordFinishedAction(
  db: Db,
  server: { id: string; project_id: string; host: string | null },
  caller: { userId: string; projectId: string },
  requestId: string,
  action: string,
  event: string,
): Promise<void> {
  const now = Date.now()
  const actionId = await insertAction(db, { serverId: server.id, action, requestId, userId: caller.userId, projectId: caller.projectId || server.project_id, finished: true }, now)
  await db
    .insertInto('instance_action_events')
    .values({ id: eventId(actionId, event), action_id: actionId, event, start_time: now, finish_time: now, result: 'Success', traceback: null, host: server.host, details: null })
    .execute()
}

/** The time bounds of os-instance-actions' list (changes-since, changes-before on updated_at). */
export interface ActionWindow {
  since?: number
  before?: number
}

/** A server's instance actions, newest first. */
export async function listActions(db: Db, serverId: string, window: ActionWindow): Promise<InstanceActionTable[]> {
  let query = db.selectFrom('instance_actions').selectAll().where('server_id', '=', serverId)
  if (window.since !== undefined) query = query.where('updated_at', '>=', window.since)
  if (window.before !== undefined) query = query.where('updated_at', '<=', window.before)
  return query.orderBy('start_time', 'desc').orderBy('id', 'desc').execute()
}

/** The action a request started on a server. */
export async function findActionOfRequest(db: Db, serverId: string, requestId: string): Promise<InstanceActionTable | undefined> {
  return db.selectFrom('instance_actions').selectAll().where('server_id', '=', serverId).where('request_id', '=', requestId).executeTakeFirst()
}

/** An action's events, oldest first. */
export async function actionEvents(db: Db, actionId: string): Promise<InstanceActionEventTable[]> {
  return db.selectFrom('instance_action_events').selectAll().where('action_id', '=', actionId).orderBy('start_time').execute()
}
