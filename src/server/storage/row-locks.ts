import type { Capabilities } from './capabilities.js'
import type { Db } from './store.js'

/** Resources whose kept views are stamped by their row's `rev` and by a view_revisions row (migration 0128). */
type KeptViewTable = 'volumes' | 'images'

/**
 * Locks a resource's row for the rest of the transaction, as an UPDATE of it does (FOR NO KEY UPDATE: a new row
 * that only references it, an attachment's foreign key check, is not held up). A writer that changes another row
 * the resource's view shows (an attachment, a tag) and the resource's row in one transaction calls this first:
 * the other row's trigger locks the resource's view_revisions row, so every such transaction then takes the locks
 * in one order, the resource's row before its view_revisions row, and none waits for another that waits for it
 * (no 40P01 on PostgreSQL). SQLite has no row locks: one writer at a time.
 */
export async function lockRowFirst(tx: Db, capabilities: Capabilities, table: KeptViewTable, id: string): Promise<void> {
  if (!capabilities.rowLocks) return
  await tx.selectFrom(table).select('id').where('id', '=', id).forNoKeyUpdate().execute()
}
