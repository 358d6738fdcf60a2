/**
 * compute.delete: takes the guest down on its host (skipped when the host is unreachable: Nova's local
 * delete), then in one transaction marks the server deleted, gives its claims back, releases its ports, removes it
 * from its server group, detaches its volumes (deleting those with delete_on_termination) and drops its shelved image. The server row update comes first so that a claim racing with the delete either commits
 * before it (and is released here) or sees the row deleted and rolls back.
 */
import { deleteHistory } from '../metrics/metric-history.js'
import { POWER } from '../../contracts/host/compute-driver.js'
import type { DeleteTaskPayload } from '../compute/tasks.js'
import { DriverError } from '../../contracts/host/compute-driver.js'
import { isUp } from '../hosts/host-status.js'
import { releaseAll } from '../scheduler/claims.js'
import type { Db } from '../storage/store.js'
import { loadServer, moveServer, type ConductorContext } from './context.js'
import { findAction, finishAction, finishEvent, startEvent } from '../compute/instance-actions.js'
import { recordFault } from './records.js'
import { releaseServerNetwork } from '../compute/server-network.js'
import { releaseShelvedImage } from './snapshots.js'
import { releaseVolumes } from './volumes.js'
import { ConsoleTokens } from '../remote-consoles/console-tokens.js'

const DELETE_EVENT = 'compute_terminate_instance'

export async function runDelete(ctx: ConductorContext, payload: DeleteTaskPayload): Promise<void> {
  const db = ctx.store.db
  const server = await loadServer(db, payload.serverId)
  const actionId = (await findAction(db, payload.serverId, payload.requestId))?.id
  if (!server || server.deleted) {
    await finishAction(db, actionId)
    return
  }
  const eventId = await startEvent(db, actionId, DELETE_EVENT, server.host)
  const driver = server.host_id ? await ctx.drivers.find(server.host_id) : undefined
  if (driver && server.host_id) {
    const host = await db.selectFrom('hosts').select(['forced_down', 'last_heartbeat_at', 'service_status']).where('id', '=', server.host_id).executeTakeFirst()
    if (host && isUp(host, Date.now(), ctx.config.hostDownAfterSeconds * 1000)) {
      try {
        await driver.destroy(server.id)
      } catch (err) {
        if (!(err instanceof DriverError)) throw err
        await db.transaction().execute(async (tx) => {
          if (!(await moveServer(tx, server.id, {}, { vm_state: 'error', task_state: null }))) return
          await recordFault(tx, server.id, { code: err.code, message: err.message, details: err.stack ?? '' })
          await finishEvent(tx, eventId, 'Error', { traceback: err.stack })
          await finishAction(tx, actionId, true)
        })
        return
      }
    }
  }
  await markDeleted(ctx, server.id, async (tx) => {
    await finishEvent(tx, eventId, 'Success')
    await finishAction(tx, actionId)
  })
}

export async function markDeleted(ctx: ConductorContext, serverId: string, alsoInTx?: (tx: Db) => Promise<void>): Promise<void> {
  const now = Date.now()
  // Disks of a cold migration still in transit (a move that failed or was cut short): dropped first, so that a
  // crash between the two steps cannot leave them behind a server already gone (the task's retry drops them again).
  await ctx.storage?.transfers?.removeTransfers(serverId)
  const blob = await ctx.store.db.transaction().execute(async (tx) => {
    await alsoInTx?.(tx)
    await tx
      .updateTable('servers')
      .set({ deleted: 1, vm_state: 'deleted', task_state: null, power_state: POWER.NOSTATE, deleted_at: now, terminated_at: now, updated_at: now })
      .where('id', '=', serverId)
      .where('deleted', '=', 0)
      .execute()
    await releaseAll(tx, serverId)
    await releaseServerNetwork(ctx.store, tx, serverId)
    await tx.deleteFrom('server_group_members').where('server_id', '=', serverId).execute()
    await ConsoleTokens.deleteForServer(tx, serverId)
    await deleteHistory(tx, serverId)
    await releaseVolumes(ctx, tx, serverId)
    return releaseShelvedImage(ctx, tx, serverId)
  })
  await ctx.storage?.images.removeBlob(blob)
}
