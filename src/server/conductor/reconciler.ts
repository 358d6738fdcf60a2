/**
 * Reconciliation: on start and periodically, the conductor compares the store with what the hosts report
 * and repairs what a crash or a lost host left behind.
 *
 * - A server whose host record is gone, or whose guest its host no longer has, goes to ERROR with a fault
 *   (policy `error`), or is evacuated to another host (policy `evacuate`, which also applies to hosts DOWN
 *   for longer than the down timeout).
 * - A guest whose power state changed on its own (shut down from inside) updates the server (Nova's
 *   power-state sync: an active server found shut down becomes stopped).
 * - A guest the host still runs for a deleted server is let go.
 * - A server stuck in a task state whose task is gone for good (attempts used up) goes to ERROR with a fault.
 * - An allocation of a deleted or unknown server is released.
 */
import { randomUUID } from 'node:crypto'
import { POWER } from '../../contracts/host/compute-driver.js'
import { COMPUTE_TASK_KINDS, type ActionTaskPayload } from '../compute/tasks.js'
import { isUp } from '../hosts/host-status.js'
import { releaseAll } from '../scheduler/claims.js'
import type { TaskQueue } from '../tasks/queue.js'
import { moveServer, type ConductorContext } from './context.js'
import { recordFault } from './records.js'
import { insertAction } from '../compute/instance-actions.js'

export interface ReconcileReport {
  erroredLostHost: number
  evacuated: number
  powerSynced: number
  guestsReleased: number
  stuckErrored: number
  allocationsReleased: number
}

export async function reconcile(ctx: ConductorContext, queue: TaskQueue, now = Date.now()): Promise<ReconcileReport> {
  const db = ctx.store.db
  const report: ReconcileReport = { erroredLostHost: 0, evacuated: 0, powerSynced: 0, guestsReleased: 0, stuckErrored: 0, allocationsReleased: 0 }
  const downAfterMs = ctx.config.hostDownAfterSeconds * 1000
  const hosts = await db.selectFrom('hosts').selectAll().execute()
  const hostById = new Map(hosts.map((h) => [h.id, h]))

  // Servers on hosts that vanished (or, with the evacuate policy, that have been DOWN for two timeouts).
  const placed = await db.selectFrom('servers').selectAll().where('deleted', '=', 0).where('host_id', 'is not', null).execute()
  for (const s of placed) {
    const host = hostById.get(s.host_id!)
    const longDown = host && !host.forced_down ? host.last_heartbeat_at !== null && now - host.last_heartbeat_at > 2 * downAfterMs : !!host?.forced_down
    let lost: string | undefined
    if (!host) lost = `Compute host ${s.host ?? s.host_id} is gone; the server's guest cannot be reached.`
    else if (s.task_state === null && s.launched_at !== null && ['active', 'stopped', 'paused', 'suspended', 'rescued'].includes(s.vm_state)) {
      const driver = ctx.drivers.get(host.id)
      if (driver && isUp(host, now, downAfterMs)) {
        // null: the host did not answer (it may have just died). It is asked again at the next pass, when it may be
        // DOWN; the other servers of this pass go on meanwhile. (undefined: it answered that the guest is gone.)
        const guest = await driver.info(s.id).catch(() => null)
        if (guest === null) continue
        if (!guest) lost = `The guest of server ${s.id} is no longer on host ${host.hostname}.`
        else if (guest.powerState === POWER.CRASHED && s.power_state !== POWER.CRASHED) {
          // The guest crashed (a kernel panic QEMU saw through pvpanic): ERROR with a fault saying so.
          await db.transaction().execute(async (tx) => {
            if (!(await moveServer(tx, s.id, { vmStates: [s.vm_state], taskStates: [null] }, { vm_state: 'error', power_state: POWER.CRASHED }))) return
            await recordFault(tx, s.id, { code: 500, message: `The guest of server ${s.id} crashed (its hypervisor reports a guest panic).`, details: 'found by the conductor reconciliation' })
            report.powerSynced++
          })
        } else if (guest.powerState !== s.power_state) {
          const stoppedInside = s.vm_state === 'active' && guest.powerState === POWER.SHUTDOWN
          if (await moveServer(db, s.id, { vmStates: [s.vm_state], taskStates: [null] }, { power_state: guest.powerState, ...(stoppedInside && { vm_state: 'stopped' }) })) report.powerSynced++
        }
      } else if (ctx.config.lostHostPolicy === 'evacuate' && longDown) {
        if (await enqueueEvacuate(ctx, queue, s.id, s.vm_state, s.power_state, s.project_id, s.user_id)) report.evacuated++
        continue
      }
    }
    if (!lost) continue
    if (ctx.config.lostHostPolicy === 'evacuate' && host === undefined && s.task_state === null) {
      // The host row is gone: nothing to evacuate from, but the server can be rebuilt elsewhere.
      if (await enqueueEvacuate(ctx, queue, s.id, s.vm_state, s.power_state, s.project_id, s.user_id)) report.evacuated++
      continue
    }
    await db.transaction().execute(async (tx) => {
      if (!(await moveServer(tx, s.id, { vmStates: [s.vm_state], taskStates: [s.task_state] }, { vm_state: 'error', task_state: null, power_state: POWER.NOSTATE }))) return
      await recordFault(tx, s.id, { code: 500, message: lost!, details: 'found by the conductor reconciliation' })
      report.erroredLostHost++
    })
  }

  // Guests of deleted servers that a host still holds (or of servers now elsewhere, unless the host still holds a
  // claim for them: the source of a resize keeps its copy until the resize is confirmed).
  for (const [hostId, driver] of ctx.drivers.entries()) {
    const guests = await driver.listGuests()
    if (guests.length === 0) continue
    const ids = guests.map((g) => g.serverId)
    const live = new Set<string>()
    for (let i = 0; i < ids.length; i += 500) {
      const part = ids.slice(i, i + 500)
      const rows = await db
        .selectFrom('servers')
        .select('id')
        .where('id', 'in', part)
        .where('deleted', '=', 0)
        .where((eb) => eb.or([eb('host_id', '=', hostId), eb('id', 'in', eb.selectFrom('allocations').select('server_id').where('host_id', '=', hostId).where('server_id', 'in', part))]))
        .execute()
      for (const r of rows) live.add(r.id)
    }
    for (const g of guests) {
      if (live.has(g.serverId)) continue
      await driver.forget(g.serverId)
      report.guestsReleased++
    }
  }

  // Servers in a task state with no task left to finish it (its attempts ran out while leases expired).
  const staleBefore = now - Math.max(2 * ctx.config.taskLeaseSeconds * 1000, 60_000)
  const stuck = await db
    .selectFrom('servers')
    .selectAll()
    .where('deleted', '=', 0)
    .where((eb) => eb.or([eb('task_state', 'is not', null), eb('vm_state', '=', 'building')]))
    .where('updated_at', '<', staleBefore)
    .execute()
  for (const s of stuck) {
    const pending = await db
      .selectFrom('tasks')
      .select('id')
      .where('status', 'in', ['queued', 'running'])
      .where('kind', 'in', Object.values(COMPUTE_TASK_KINDS))
      .where('payload', 'like', `%${s.id}%`)
      .executeTakeFirst()
    if (pending) continue
    await db.transaction().execute(async (tx) => {
      const building = s.vm_state === 'building'
      if (!(await moveServer(tx, s.id, { vmStates: [s.vm_state], taskStates: [s.task_state] }, { vm_state: 'error', task_state: null, ...(building && { host_id: null, host: null, node: null }) }))) return
      if (building) await releaseAll(tx, s.id)
      await recordFault(tx, s.id, { code: 500, message: `The ${building ? 'build' : (s.task_state ?? 'task')} of server ${s.id} did not finish: its task was abandoned.`, details: 'found by the conductor reconciliation' })
      report.stuckErrored++
    })
  }

  // Allocations nobody owns.
  const orphans = await db
    .selectFrom('allocations')
    .leftJoin('servers', 'servers.id', 'allocations.server_id')
    .select(['allocations.server_id', 'allocations.host_id'])
    .where((eb) => eb.or([eb('servers.id', 'is', null), eb('servers.deleted', '=', 1)]))
    .execute()
  for (const o of orphans) {
    report.allocationsReleased += await db.transaction().execute((tx) => releaseAll(tx, o.server_id, o.host_id))
  }
  return report
}

/** Starts an evacuation the way the API would: instance action, task_state rebuilding and the task, together. */
async function enqueueEvacuate(ctx: ConductorContext, queue: TaskQueue, serverId: string, vmState: string, powerState: number, projectId: string, userId: string): Promise<boolean> {
  const now = Date.now()
  const requestId = `req-${randomUUID()}`
  return ctx.store.db.transaction().execute(async (tx) => {
    if (!(await moveServer(tx, serverId, { vmStates: ['active', 'stopped', 'error'], taskStates: [null] }, { task_state: 'rebuilding' }))) return false
    await insertAction(tx, { serverId, action: 'evacuate', requestId, userId, projectId }, now)
    const payload: ActionTaskPayload = { serverId, action: 'evacuate', params: {}, requestId, before: { vmState, powerState } }
    await queue.enqueue({ kind: COMPUTE_TASK_KINDS.action, payload, subjectId: serverId }, tx)
    return true
  })
}
