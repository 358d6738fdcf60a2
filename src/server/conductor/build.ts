/**
 * compute.build: schedules every server of one create request together (all or nothing, as Nova's multiple
 * create), then builds each on its host through Nova's task states: scheduling → (null) → networking →
 * block_device_mapping → spawning → active. Every step is a conditional update, so a run repeated after a
 * crash resumes where the first stopped, and a delete that arrives meanwhile wins.
 */
import { BUILD_STEPS } from '../compute/server-states.js'
import { POWER } from '../../contracts/host/compute-driver.js'
import type { BuildTaskPayload } from '../compute/tasks.js'
import { DriverError, type ComputeDriver, type VolumeConnection } from '../../contracts/host/compute-driver.js'
import type { Db } from '../storage/store.js'
import { releaseAll } from '../scheduler/claims.js'
import { NoValidHost, PlacementVoid } from '../scheduler/scheduler.js'
import type { ServerTable } from '../storage/tables/compute.js'
import { driverFor, loadServer, moveServer, type ConductorContext } from './context.js'
import { specFor } from './guest-specs.js'
import { eventId, findActions, finishAction, finishActionsWithEvent, finishEvent, startEvents } from '../compute/instance-actions.js'
import { recordFault } from './records.js'
import { bindServerNetwork, releaseServerNetwork } from '../compute/server-network.js'
import { prepareBlockDevices, releaseVolumes } from './volumes.js'

const SCHEDULE_EVENT = 'conductor_schedule_and_build_instances'
const BUILD_EVENT = 'compute__do_build_and_run_instance'
/**
 * The task states a build moves a server from. A delete accepted during the build sets `deleting`: the build
 * must not move the server out of it (the delete wins, and the user never sees a build step after deleting).
 */
const BUILD_TASK_STATES: (string | null)[] = [null, ...BUILD_STEPS]

export async function runBuild(ctx: ConductorContext, payload: BuildTaskPayload, signal: AbortSignal): Promise<void> {
  const db = ctx.store.db
  const rows = payload.serverIds.length ? await db.selectFrom('servers').selectAll().where('id', 'in', payload.serverIds).execute() : []
  const byId = new Map(rows.map((r) => [r.id, r]))
  // Keep the request's order: launch_index order is the order Nova schedules in.
  const live = payload.serverIds.map((id) => byId.get(id)).filter((s): s is ServerTable => !!s && s.deleted === 0 && s.vm_state === 'building')
  if (live.length === 0) return
  const actions = await findActions(db, live.map((s) => s.id), payload.requestId)

  const unplaced = live.filter((s) => s.host_id === null)
  if (unplaced.length > 0) {
    await startEvents(db, unplaced.map((s) => actions.get(s.id)), SCHEDULE_EVENT)
    const specs = await Promise.all(unplaced.map((s) => ctx.scheduler.specFor(s)))
    try {
      await ctx.scheduler.placeAll(specs, async (tx, spec, host) => {
        const ok = await moveServer(
          tx,
          spec.serverId,
          { vmStates: ['building'], taskStates: BUILD_TASK_STATES },
          { host_id: host.id, host: host.hostname, node: host.hostname, availability_zone: host.availabilityZone, task_state: null },
        )
        if (!ok) throw new PlacementVoid(spec.serverId)
        await bindServerNetwork(ctx.store, tx, spec.serverId, host.hostname)
        const actionId = actions.get(spec.serverId)
        if (actionId) await finishEvent(tx, eventId(actionId, SCHEDULE_EVENT), 'Success')
      })
    } catch (err) {
      if (!(err instanceof NoValidHost)) throw err
      // All or nothing: the servers of this request already placed give their claims back.
      for (const s of live) {
        await db.transaction().execute(async (tx) => {
          const moved = await moveServer(tx, s.id, { vmStates: ['building'], taskStates: BUILD_TASK_STATES }, { vm_state: 'error', task_state: null, host_id: null, host: null, node: null, progress: 0 })
          await releaseAll(tx, s.id)
          if (!moved) return
          const actionId = actions.get(s.id)
          await recordFault(tx, s.id, { code: 500, message: err.message, details: err.details })
          if (actionId) await finishEvent(tx, eventId(actionId, SCHEDULE_EVENT), 'Error', { traceback: `NoValidHost: ${err.message}\n${err.details}` })
          await finishAction(tx, actionId, true)
        })
      }
      return
    }
  }
  // The rows as placed (host columns set by the claim), still building.
  const placed = await db.selectFrom('servers').selectAll().where('id', 'in', live.map((s) => s.id)).where('deleted', '=', 0).where('vm_state', '=', 'building').where('host_id', 'is not', null).execute()
  await buildTogether(ctx, placed, actions, signal, payload.adminPass)
}

/**
 * Builds the placed servers of one request through the task states together: one statement moves them all
 * to each step (the servers a delete took meanwhile drop out), the hypervisors work in parallel, and the
 * ones that spawned become ACTIVE in one transaction with their events and actions.
 */
async function buildTogether(ctx: ConductorContext, servers: ServerTable[], actions: Map<string, string>, signal: AbortSignal, adminPass: string | undefined): Promise<void> {
  const db = ctx.store.db
  if (servers.length === 0) return
  let ids = servers.map((s) => s.id)
  const byId = new Map(servers.map((s) => [s.id, s]))
  const drivers = new Map<string, ComputeDriver>()
  const failures = new Map<string, DriverError>()
  const bootVolumes = new Map<string, VolumeConnection[]>()
  await ctx.drivers.ensure(servers.map((s) => s.host_id))
  for (const s of servers) {
    try {
      drivers.set(s.id, driverFor(ctx, s.host_id, s.host))
    } catch (err) {
      failures.set(s.id, err as DriverError)
    }
  }
  ids = ids.filter((id) => !failures.has(id))
  await startEvents(db, ids.map((id) => actions.get(id)), BUILD_EVENT)
  for (const step of ['networking', 'block_device_mapping', 'spawning']) {
    // Aborted: the task's lease is gone and its next owner carries on from the row's state.
    if (signal.aborted) return
    if (ids.length === 0) break
    // progress stays 0 while building, as in Nova: clients print any other value (`openstack … --wait`).
    const moved = await moveMany(db, ids, { task_state: step })
    for (const id of ids) if (!moved.has(id)) await abandon(ctx, id, drivers.get(id)!)
    ids = ids.filter((id) => moved.has(id))
    if (step === 'spawning') break
    await Promise.all(
      ids.map((id) =>
        drivers
          .get(id)!
          .beginStep(id, step)
          .then(async () => {
            if (step === 'block_device_mapping') bootVolumes.set(id, await prepareBlockDevices(ctx, byId.get(id)!))
          })
          .catch((err: unknown) => {
            if (!(err instanceof DriverError)) throw err
            failures.set(id, err)
          }),
      ),
    )
    ids = ids.filter((id) => !failures.has(id))
  }
  const spawned: string[] = []
  await Promise.all(
    ids.map(async (id) => {
      try {
        const driver = drivers.get(id)!
        const spec = await specFor(ctx, driver, byId.get(id)!, { adminPass })
        const guest = await driver.spawn({ ...spec, volumes: bootVolumes.get(id) })
        if (guest.powerState === POWER.RUNNING) spawned.push(id)
        else failures.set(id, new DriverError(`Instance ${id} did not start (power state ${guest.powerState}).`))
      } catch (err) {
        if (!(err instanceof DriverError)) throw err
        failures.set(id, err)
      }
    }),
  )
  if (spawned.length > 0) {
    const now = Date.now()
    const done = await db.transaction().execute(async (tx) => {
      const rows = await tx
        .updateTable('servers')
        .set({ vm_state: 'active', task_state: null, power_state: POWER.RUNNING, progress: 0, launched_at: now, updated_at: now })
        .where('id', 'in', spawned)
        .where('deleted', '=', 0)
        .where('vm_state', '=', 'building')
        .where((eb) => eb.or([eb('task_state', 'is', null), eb('task_state', 'in', BUILD_STEPS)]))
        .returning('id')
        .execute()
      const ok = rows.map((r) => r.id)
      const actionIds = ok.map((id) => actions.get(id)).filter((a): a is string => !!a)
      await finishActionsWithEvent(tx, actionIds, BUILD_EVENT, now)
      return new Set(ok)
    })
    for (const id of spawned) if (!done.has(id)) await abandon(ctx, id, drivers.get(id)!)
  }
  for (const [id, err] of failures) await failBuild(ctx, byId.get(id)!, actions.get(id), err)
}

/** Moves live building servers to a task state in one statement; returns those it moved. */
async function moveMany(db: Db, ids: string[], set: Partial<ServerTable>): Promise<Set<string>> {
  const rows = await db
    .updateTable('servers')
    .set({ ...set, updated_at: Date.now() })
    .where('id', 'in', ids)
    .where('deleted', '=', 0)
    .where('vm_state', '=', 'building')
    .where((eb) => eb.or([eb('task_state', 'is', null), eb('task_state', 'in', BUILD_STEPS)]))
    .returning('id')
    .execute()
  return new Set(rows.map((r) => r.id))
}

/** A build that failed for good: ERROR with the fault, the claim, the volumes and the ports given back (as Nova does), the guest removed. */
async function failBuild(ctx: ConductorContext, server: ServerTable, actionId: string | undefined, err: DriverError): Promise<void> {
  await ctx.store.db.transaction().execute(async (tx) => {
    const moved = await moveServer(tx, server.id, { vmStates: ['building'], taskStates: BUILD_TASK_STATES }, { vm_state: 'error', task_state: null, power_state: POWER.NOSTATE, host_id: null, host: null, node: null })
    if (!moved) return
    await releaseAll(tx, server.id)
    await releaseVolumes(ctx, tx, server.id)
    await releaseServerNetwork(ctx.store, tx, server.id)
    await recordFault(tx, server.id, { code: err.code, message: err.message, details: err.stack ?? '' })
    if (actionId) await finishEvent(tx, eventId(actionId, BUILD_EVENT), 'Error', { traceback: err.stack })
    await finishAction(tx, actionId, true)
  })
  const driver = server.host_id ? await ctx.drivers.find(server.host_id) : undefined
  await driver?.destroy(server.id).catch(() => {})
}

/**
 * The server was deleted, or is being deleted, while building: take down whatever guest this run made (the
 * delete may have destroyed the guest before this run's spawn made it).
 */
async function abandon(ctx: ConductorContext, serverId: string, driver: { destroy(id: string): Promise<void> }): Promise<void> {
  const server = await loadServer(ctx.store.db, serverId)
  if (!server || server.deleted || server.task_state === 'deleting') await driver.destroy(serverId).catch(() => {})
}
