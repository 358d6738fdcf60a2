/**
 * User messages (Cinder's /messages, 3.3+): when backend work on a volume or snapshot fails, its project is told
 * why in a message (the volume keeps the same reason in status_reason for admins). Messages are listed, shown and
 * deleted by the project; admins see every project's. They last MESSAGE_TTL_MS, as Cinder's message_ttl.
 */
import { randomUUID } from 'node:crypto'
import { notFound } from '../../contracts/errors.js'
import type { Visibility } from '../policy/rules.js'
import type { Db } from '../storage/store.js'

const MESSAGE_TTL_MS = 30 * 24 * 3600 * 1000

/** The operations whose failure leaves a message: resource type, action id and words, in Cinder's event id format. */
export const MESSAGE_ACTIONS = {
  allocate_volume: { resourceType: 'VOLUME', id: '001', text: 'schedule allocate volume' },
  delete_volume: { resourceType: 'VOLUME', id: '012', text: 'delete volume' },
  extend_volume: { resourceType: 'VOLUME', id: '007', text: 'extend volume' },
  retype_volume: { resourceType: 'VOLUME', id: '013', text: 'retype volume' },
  create_snapshot: { resourceType: 'VOLUME_SNAPSHOT', id: '009', text: 'create snapshot' },
  delete_snapshot: { resourceType: 'VOLUME_SNAPSHOT', id: '010', text: 'delete snapshot' },
} as const
export type MessageAction = keyof typeof MESSAGE_ACTIONS

/** Why, as a detail id: the scheduler found no backend, or the backend failed. */
function detailOf(reason: string): string {
  return /^No valid backend was found/.test(reason) ? '002' : '001'
}

export interface MessageRecord {
  id: string
  projectId: string
  requestId: string
  resourceType: string
  resourceUuid: string | null
  eventId: string
  level: string
  userMessage: string
  createdAt: number
  expiresAt: number
}

/** Records a failure for the resource's project; call in the transaction that sets the error status. */
export async function recordFailure(db: Db, failure: { action: MessageAction; projectId: string; resourceId: string; reason: string; requestId?: string }, now = Date.now()): Promise<void> {
  const action = MESSAGE_ACTIONS[failure.action]
  await db
    .insertInto('volume_messages')
    .values({
      id: randomUUID(),
      project_id: failure.projectId,
      request_id: failure.requestId ?? `req-${randomUUID()}`,
      resource_type: action.resourceType,
      resource_uuid: failure.resourceId,
      event_id: `VOLUME_${action.resourceType}_${action.id}_${detailOf(failure.reason)}`,
      message_level: 'ERROR',
      user_message: `${action.text}: ${failure.reason}`,
      created_at: now,
      expires_at: now + MESSAGE_TTL_MS,
    })
    .execute()
  // Expired messages go when new ones come, so the table holds at most a TTL's worth.
  await db.deleteFrom('volume_messages').where('expires_at', '<', now).execute()
}

function rowToMessage(row: { id: string; project_id: string; request_id: string; resource_type: string; resource_uuid: string | null; event_id: string; message_level: string; user_message: string; created_at: number; expires_at: number }): MessageRecord {
  return {
    id: row.id,
    projectId: row.project_id,
    requestId: row.request_id,
    resourceType: row.resource_type,
    resourceUuid: row.resource_uuid,
    eventId: row.event_id,
    level: row.message_level,
    userMessage: row.user_message,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
  }
}

export interface MessageReader {
  projectId: string
  visibility: Visibility
}

/** The unexpired messages the reader may see, newest first. */
export async function listMessages(db: Db, reader: MessageReader, now = Date.now()): Promise<MessageRecord[]> {
  let q = db.selectFrom('volume_messages').selectAll().where('expires_at', '>=', now)
  if (reader.visibility !== 'all_projects') q = q.where('project_id', '=', reader.projectId)
  return (await q.orderBy('created_at', 'desc').orderBy('id').execute()).map(rowToMessage)
}

/** One message; another project's (for a reader who sees only theirs) or an expired one is 404. */
export async function getMessage(db: Db, reader: MessageReader, id: string, now = Date.now()): Promise<MessageRecord> {
  const row = await db.selectFrom('volume_messages').selectAll().where('id', '=', id).where('expires_at', '>=', now).executeTakeFirst()
  if (!row || (reader.visibility !== 'all_projects' && row.project_id !== reader.projectId)) throw notFound(`Message ${id} could not be found.`)
  return rowToMessage(row)
}

export async function deleteMessage(db: Db, reader: MessageReader, id: string): Promise<void> {
  const message = await getMessage(db, reader, id)
  await db.deleteFrom('volume_messages').where('id', '=', message.id).execute()
}
