/**
 * What the conductor writes besides the server row: instance-action events (one per step, Nova's names),
 * the finish of the instance action, and faults. Every write is keyed so that a task run again after a
 * crash finds and reuses the records of the first run instead of duplicating them.
 */
import { createHash, randomUUID } from 'node:crypto'
import type { Db } from '../storage/store.js'

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
  const id = randomUUID()
  await db
    .insertInto('instance_actions')
    .values({ id, server_id: server.id, action, request_id: by.requestId, user_id: by.userId, project_id: server.project_id, message: null, start_time: now, finish_time: null, updated_at: now })
    .execute()
  return id
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

export interface Fault {
  code: number
  message: string
  details: string
}

export async function recordFault(db: Db, serverId: string, fault: Fault, now = Date.now()): Promise<void> {
  await db.insertInto('instance_faults').values({ id: randomUUID(), server_id: serverId, code: fault.code, message: fault.message.slice(0, 255), details: fault.details, created_at: now }).execute()
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
  const actionId = randomUUID()
  await db
    .insertInto('instance_actions')
    .values({ id: actionId, server_id: server.id, action, request_id: requestId, user_id: caller.userId, project_id: caller.projectId || server.project_id, message: null, start_time: now, finish_time: now, updated_at: now })
    .execute()
  await db
    .insertInto('instance_action_events')
    .values({ id: eventId(actionId, event), action_id: actionId, event, start_time: now, finish_time: now, result: 'Success', traceback: null, host: server.host, details: null })
    .execute()
}
