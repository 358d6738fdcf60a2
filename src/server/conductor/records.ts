/**
 * What the conductor writes besides the server row: instance-action events (one per step, Nova's names),
 * the finish of the instance action, and faults. Every write is keyed so that a task run again after a
 * crash finds and reuses the records of the first run instead of duplicating them.
 */
import { randomUUID } from 'node:crypto'
import type { Db } from '../storage/store.js'

export async function findAction(db: Db, serverId: string, requestId: string): Promise<{ id: string } | undefined> {
  return db.selectFrom('instance_actions').select('id').where('server_id', '=', serverId).where('request_id', '=', requestId).executeTakeFirst()
}

/** Starts an event, or returns the one a previous run started. Undefined when there is no action to attach to. */
export async function startEvent(db: Db, actionId: string | undefined, event: string, host: string | null, now = Date.now()): Promise<string | undefined> {
  if (!actionId) return undefined
  const existing = await db.selectFrom('instance_action_events').select('id').where('action_id', '=', actionId).where('event', '=', event).executeTakeFirst()
  if (existing) {
    await db.updateTable('instance_action_events').set({ finish_time: null, result: null, traceback: null, host }).where('id', '=', existing.id).execute()
    return existing.id
  }
  const id = randomUUID()
  await db.insertInto('instance_action_events').values({ id, action_id: actionId, event, start_time: now, finish_time: null, result: null, traceback: null, host, details: null }).execute()
  return id
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
