/**
 * What the conductor writes besides the server row and the instance actions (those are written by
 * compute/instance-actions.ts): faults.
 */
import { randomUUID } from 'node:crypto'
import type { Db } from '../storage/store.js'

export interface Fault {
  code: number
  message: string
  details: string
}

export async function recordFault(db: Db, serverId: string, fault: Fault, now = Date.now()): Promise<void> {
  await db.insertInto('instance_faults').values({ id: randomUUID(), server_id: serverId, code: fault.code, message: fault.message.slice(0, 255), details: fault.details, created_at: now }).execute()
}
