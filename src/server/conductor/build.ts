/**
 * compute.build: schedules every server of one create request together (all or nothing, as Nova's multiple
 * create), then builds each on its host through Nova's task states: scheduling → (null) → networking →
 * block_device_mapping → spawning → active. Every step is a conditional update, so a run repeated after a
 * crash resumes where the first stopped, and a delete that arrives meanwhile wins.
 */
import { POWER } from '../compute/server-states.js'
import type { BuildTaskPayload } from '../compute/tasks.js'
import { DriverError } from '../drivers/compute/driver.js'
import { releaseAll } from '../scheduler/claims.js'
import { NoValidHost, PlacementVoid } from '../scheduler/scheduler.js'
import type { ServerTable } from '../storage/tables/compute.js'
import { driverFor, guestSpec, loadServer, moveServer, type ConductorContext } from './context.js'
import { findAction, finishAction, finishEvent, recordFault, startEvent } from './records.js'

const SCHEDULE_EVENT = 'conductor_schedule_and_build_instances'
const BUILD_EVENT = 'compute__do_build_and_run_instance'
const BUILD_PROGRESS: Record<string, number> = { networking: 10, block_device_mapping: 30, spawning: 60 }

export async function runBuild(ctx: ConductorContext, payload: BuildTaskPayload, signal: AbortSignal): Promise<void> {
  const db = ctx.store.db
  const rows = payload.serverIds.length ? await db.selectFrom('servers').selectAll().where('id', 'in', payload.serverIds).execute() : []
  const byId = new Map(rows.map((r) => [r.id, r]))
  // Keep the request's order: launch_index order is the order Nova schedules in.
  const live = payload.serverIds.map((id) => byId.get(id)).filter((s): s is ServerTable => !!s && s.deleted === 0 && s.vm_state === 'building')
  if (live.length === 0) return
  const actions = new Map<string, string | undefined>()
  for (const s of live) actions.set(s.id, (await findAction(db, s.id, payload.requestId))?.id)

  const unplaced = live.filter((s) => s.host_id === null)
  if (unplaced.length > 0) {
    const events = new Map<string, string | undefined>()
    for (const s of unplaced) events.set(s.id, await startEvent(db, actions.get(s.id), SCHEDULE_EVENT, null))
    const specs = await Promise.all(unplaced.map((s) => ctx.scheduler.specFor(s)))
    try {
      await ctx.scheduler.placeAll(specs, async (tx, spec, host) => {
        const ok = await moveServer(
          tx,
          spec.serverId,
          { vmStates: ['building'] },
          { host_id: host.id, host: host.hostname, node: host.hostname, availability_zone: host.availabilityZone, task_state: null },
        )
        if (!ok) throw new PlacementVoid(spec.serverId)
      })
    } catch (err) {
      if (!(err instanceof NoValidHost)) throw err
      // All or nothing: the servers of this request already placed give their claims back.
      for (const s of live) {
        await db.transaction().execute(async (tx) => {
          const moved = await moveServer(tx, s.id, { vmStates: ['building'] }, { vm_state: 'error', task_state: null, host_id: null, host: null, node: null, progress: 0 })
          await releaseAll(tx, s.id)
          if (moved) await recordFault(tx, s.id, { code: 500, message: err.message, details: err.details })
          await finishEvent(tx, events.get(s.id), 'Error', { traceback: `NoValidHost: ${err.message}\n${err.details}` })
          await finishAction(tx, actions.get(s.id), true)
        })
      }
      return
    }
    for (const s of unplaced) await finishEvent(db, events.get(s.id), 'Success')
  }
  await Promise.all(live.map((s) => buildOne(ctx, s.id, actions.get(s.id), signal)))
}

async function buildOne(ctx: ConductorContext, serverId: string, actionId: string | undefined, signal: AbortSignal): Promise<void> {
  const db = ctx.store.db
  let server = await loadServer(db, serverId)
  if (!server || server.deleted || server.vm_state !== 'building' || !server.host_id) return
  const eventId = await startEvent(db, actionId, BUILD_EVENT, server.host)
  try {
    const driver = driverFor(ctx, server.host_id, server.host)
    for (const step of ['networking', 'block_device_mapping', 'spawning']) {
      if (signal.aborted) return
      if (!(await moveServer(db, serverId, { vmStates: ['building'] }, { task_state: step, progress: BUILD_PROGRESS[step] }))) return abandon(ctx, serverId, driver)
      if (step !== 'spawning') await driver.beginStep(serverId, step)
    }
    server = (await loadServer(db, serverId))!
    const guest = await driver.spawn(guestSpec(server))
    const now = Date.now()
    const done = await db.transaction().execute(async (tx) => {
      const moved = await moveServer(tx, serverId, { vmStates: ['building'] }, { vm_state: 'active', task_state: null, power_state: guest.powerState ?? POWER.RUNNING, progress: 100, launched_at: now, updated_at: now })
      if (!moved) return false
      await finishEvent(tx, eventId, 'Success')
      await finishAction(tx, actionId)
      return true
    })
    if (!done) return abandon(ctx, serverId, driver)
  } catch (err) {
    if (!(err instanceof DriverError)) throw err
    await db.transaction().execute(async (tx) => {
      const moved = await moveServer(tx, serverId, { vmStates: ['building'] }, { vm_state: 'error', task_state: null, power_state: POWER.NOSTATE, host_id: null, host: null, node: null })
      if (!moved) return
      // Nova gives up the claim of a build that failed for good; the server stays in ERROR with its fault.
      await releaseAll(tx, serverId)
      await recordFault(tx, serverId, { code: err.code, message: err.message, details: err.stack ?? '' })
      await finishEvent(tx, eventId, 'Error', { traceback: err.stack })
      await finishAction(tx, actionId, true)
    })
    const host = server?.host_id ? ctx.drivers.get(server.host_id) : undefined
    await host?.destroy(serverId).catch(() => {})
  }
}

/** The server was deleted (or moved on) while building: take down whatever guest this run made. */
async function abandon(ctx: ConductorContext, serverId: string, driver: { destroy(id: string): Promise<void> }): Promise<void> {
  const server = await loadServer(ctx.store.db, serverId)
  if (!server || server.deleted) await driver.destroy(serverId).catch(() => {})
}
