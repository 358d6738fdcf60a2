/**
 * compute.action: drives one accepted server action through the task states its row in SERVER_ACTIONS
 * lists, calls the driver, and lands in the action's final state. A run repeated after a crash starts only
 * if the server is still in one of the action's task states, and finds the claim it made before through the
 * allocations (a migration target is the host the server holds an allocation on besides its own).
 */
import { finalVmState, RESTING_POWER, SERVER_ACTIONS, type ServerActionName, type VmState } from '../compute/server-states.js'
import { POWER } from '../../contracts/host/compute-driver.js'
import type { ActionTaskPayload } from '../compute/tasks.js'
import { DriverError, isLiveMigrationCancelled, type ComputeDriver } from '../../contracts/host/compute-driver.js'
import { releaseAll, releasePart } from '../scheduler/claims.js'
import { flavorResources, NoValidHost, PlacementVoid } from '../scheduler/scheduler.js'
import { hostZones } from '../compute/aggregates.js'
import { imagesTypeOf } from '../scheduler/host-state.js'
import type { ServerTable } from '../storage/tables/compute.js'
import type { FlavorSnapshot } from '../../contracts/host/compute-driver.js'
import { driverFor, loadServer, moveServer, StepFailure, type ConductorContext } from './context.js'
import { specFor, usableImageRef, type SpecOptions } from './guest-specs.js'
import { runDelete } from './delete.js'
import { findAction, finishAction, finishEvent, startEvent } from '../compute/instance-actions.js'
import { recordFault } from './records.js'
import { bindServerNetwork } from '../compute/server-network.js'
import { createBackup, createImage, finishUnshelve, shelveToImage, unshelveImage, unshelveVolumes } from './snapshots.js'
import { attachedVolumes, fenceLostHost } from './volumes.js'
import { migrateLive } from './live-migration.js'
import { cancelMigration, endResizeMigration, MIGRATION_STATUS, MIGRATION_TYPES, RESIZE_END, startCopying, startMigration, STEP_STATUS, updateMigration } from '../compute/migrations.js'

/** The event Nova records for each action on the compute (or conductor) side. */
const EVENTS: Partial<Record<ServerActionName, string>> = {
  'reboot:SOFT': 'compute_reboot_instance',
  'reboot:HARD': 'compute_reboot_instance',
  rebuild: 'compute_rebuild_instance',
  resize: 'compute_prep_resize',
  migrate: 'compute_prep_resize',
  confirmResize: 'compute_confirm_resize',
  revertResize: 'compute_revert_resize',
  createImage: 'compute_snapshot_instance',
  createBackup: 'compute_backup_instance',
  changePassword: 'compute_set_admin_password',
  'os-start': 'compute_start_instance',
  'os-stop': 'compute_stop_instance',
  shelve: 'compute_shelve_instance',
  shelveOffload: 'compute_shelve_offload_instance',
  unshelve: 'compute_unshelve_instance',
  suspend: 'compute_suspend_instance',
  resume: 'compute_resume_instance',
  pause: 'compute_pause_instance',
  unpause: 'compute_unpause_instance',
  rescue: 'compute_rescue_instance',
  unrescue: 'compute_unrescue_instance',
  evacuate: 'compute_rebuild_instance',
  'os-migrateLive': 'compute_live_migration',
  restore: 'compute_restore_instance',
}

/** The run stopped because the server moved on (deleted, or another run finished it). */
class Abandoned extends Error {}

/** A live migration the API aborted (docs/compute.md, "Migrations"): the guest runs on at the source as before. */
class Cancelled extends Error {}

/** What an action implementation returns: extra columns for the final update, and overrides of the final state. */
type Outcome = Partial<ServerTable>

export class ActionRun {
  server: ServerTable
  constructor(
    readonly ctx: ConductorContext,
    server: ServerTable,
    readonly payload: ActionTaskPayload,
    readonly chain: string[],
  ) {
    this.server = server
  }

  get params(): Record<string, unknown> {
    return this.payload.params ?? {}
  }

  /** The kind of migration this action records, when it moves the server. */
  get migrationType() {
    return MIGRATION_TYPES[this.payload.action]
  }

  /** Moves this action's migration record on (nothing for actions that record none). */
  async migration(patch: { status?: string; dest_host?: string }): Promise<void> {
    if (this.migrationType) await updateMigration(this.ctx.store.db, this.server.id, this.payload.requestId, patch)
  }

  driver(hostId = this.server.host_id): ComputeDriver {
    return driverFor(this.ctx, hostId, this.server.host)
  }

  /** Moves to the next task state; stops the run if the server left the action's states. */
  async step(taskState: string): Promise<void> {
    const ok = await moveServer(this.ctx.store.db, this.server.id, { taskStates: this.chain }, { task_state: taskState })
    if (!ok) throw new Abandoned()
    const status = STEP_STATUS[taskState]
    if (status) await this.migration({ status })
    this.server = (await loadServer(this.ctx.store.db, this.server.id))!
    if (this.server.host_id) await this.ctx.drivers.get(this.server.host_id)?.beginStep(this.server.id, taskState)
  }

  /** The other host the server holds an allocation on (a migration's target before it finishes). */
  async otherAllocation(): Promise<string | undefined> {
    const rows = await this.ctx.store.db.selectFrom('allocations').select('host_id').where('server_id', '=', this.server.id).execute()
    return rows.find((r) => r.host_id !== this.server.host_id)?.host_id
  }

  /** Where the server's current host keeps its disks (null: no host, or one that does not say). */
  async sourceImagesType(): Promise<string | null> {
    if (!this.server.host_id) return null
    const host = await this.ctx.store.db.selectFrom('hosts').select('facts').where('id', '=', this.server.host_id).executeTakeFirst()
    return host ? imagesTypeOf(host.facts) : null
  }

  /** Schedules and claims a destination for the server (once: a repeated run finds the earlier claim). */
  async claimDestination(options: { flavor: FlavorSnapshot; sameHostAllowed: boolean; forcedHost: string | null; vmStateOnFailure: string | undefined; extra?: Partial<ServerTable> }): Promise<string> {
    const existing = await this.otherAllocation()
    if (existing) {
      await this.ctx.drivers.ensure([existing])
      await this.claimed(existing)
      return existing
    }
    const spec = await this.ctx.scheduler.specFor(this.server, {
      resources: flavorResources(options.flavor),
      extraSpecs: options.flavor.extra_specs ?? {},
      forcedHost: options.forcedHost,
      ignoreHosts: options.sameHostAllowed || !this.server.host_id ? [] : [this.server.host_id],
      imagesType: await this.sourceImagesType(),
      ...(options.forcedHost !== null && { availabilityZone: null }),
    })
    try {
      const placed = await this.ctx.scheduler.placeAll([spec], async (tx) => {
        if (!(await moveServer(tx, this.server.id, { taskStates: this.chain }, { ...options.extra }))) throw new PlacementVoid(this.server.id)
      })
      const host = placed.get(this.server.id)
      if (!host) throw new Abandoned()
      await this.ctx.drivers.ensure([host.id])
      await this.claimed(host.id)
      return host.id
    } catch (err) {
      if (err instanceof NoValidHost) throw new StepFailure(err.message, 500, err.details, options.vmStateOnFailure)
      throw err
    }
  }

  /** The migration record learns its destination. */
  private async claimed(hostId: string): Promise<void> {
    if (this.migrationType) await this.migration({ dest_host: await this.hostname(hostId), status: MIGRATION_STATUS[this.migrationType].claimed })
  }

  /**
   * The guest spec for the driver of `hostId` (details only for drivers that run real guests), with the server's
   * volumes connected for that host (a guest moving to another host takes its volumes along).
   */
  async spec(hostId: string | null, options: SpecOptions = {}) {
    const spec = await specFor(this.ctx, this.driver(hostId), this.server, options)
    return hostId && this.driver(hostId).guestDetails ? { ...spec, volumes: await attachedVolumes(this.ctx, this.server, hostId) } : spec
  }

  async hostname(hostId: string): Promise<string> {
    const row = await this.ctx.store.db.selectFrom('hosts').select('hostname').where('id', '=', hostId).executeTakeFirst()
    return row?.hostname ?? hostId
  }

  /** A server's host columns once it runs on this host, its zone the host's (Nova's conductor sets it on a move). */
  async placedOn(hostId: string): Promise<Pick<ServerTable, 'host_id' | 'host' | 'node' | 'availability_zone'>> {
    const name = await this.hostname(hostId)
    return { host_id: hostId, host: name, node: name, availability_zone: (await hostZones(this.ctx.store.db)).get(name) ?? null }
  }
}

function snapshotOf(json: string | null): FlavorSnapshot | undefined {
  return json ? (JSON.parse(json) as FlavorSnapshot) : undefined
}

async function flavorFromRef(run: ActionRun, ref: unknown): Promise<FlavorSnapshot> {
  const id = String(ref ?? '').split('/').pop() ?? ''
  const row = await run.ctx.store.db.selectFrom('flavors').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw new StepFailure(`Flavor ${id} could not be found.`, 400)
  return {
    id: row.id, name: row.name, vcpus: row.vcpus, ram: row.ram, disk: row.disk, ephemeral: row.ephemeral, swap: row.swap, rxtx_factor: row.rxtx_factor,
    extra_specs: JSON.parse(row.extra_specs || '{}') as Record<string, string>,
  }
}

const powerOf = (before: ActionTaskPayload['before']) => (before.vmState === 'stopped' || before.powerState === POWER.SHUTDOWN ? 'off' : 'on')

/** Resize and cold migrate: claim on the destination, copy, finish there; the source claim stays until confirm. */
async function migrateCold(run: ActionRun, resize: boolean): Promise<Outcome> {
  const current = JSON.parse(run.server.flavor) as FlavorSnapshot
  const target = resize ? (snapshotOf(run.server.new_flavor) ?? (await flavorFromRef(run, run.params.flavorRef))) : current
  const before = run.payload.before.vmState
  const dest = await run.claimDestination({
    flavor: target,
    sameHostAllowed: resize,
    forcedHost: (run.params.host as string | undefined) ?? null,
    vmStateOnFailure: before,
    extra: { old_flavor: JSON.stringify(current), new_flavor: JSON.stringify(target) },
  })
  await run.step('resize_migrating')
  // A repeated run may find the guest already gone from the source (the first run got past the copy).
  const onSource = dest === run.server.host_id || (await run.driver().info(run.server.id)) !== undefined
  if (onSource) await run.driver().migrateDiskAndPowerOff(run.server.id, target, dest === run.server.host_id)
  await run.step('resize_migrated')
  await run.step('resize_finish')
  // The source keeps its copy of the guest until the resize is confirmed (a revert starts it there again); so the
  // disks in transit go whatever happens here: a repeated run sends them again from the source.
  try {
    await run.driver(dest).finishMigration(await run.spec(dest, { flavor: target }), powerOf(run.payload.before) === 'on')
  } finally {
    await run.ctx.storage?.transfers?.removeTransfers(run.server.id)
  }
  return { vm_state: 'resized', flavor: JSON.stringify(target), ...(await run.placedOn(dest)), progress: 0 }
}

async function confirmResize(run: ActionRun): Promise<Outcome> {
  const old = snapshotOf(run.server.old_flavor)
  const source = await run.otherAllocation()
  // Cleaning the guest's copy off the source is the confirm's work on the hypervisor.
  await run.driver(source ?? run.server.host_id).beginStep(run.server.id, 'resize_confirming')
  if (source && source !== run.server.host_id) await run.driver(source).forget(run.server.id)
  await run.ctx.store.db.transaction().execute(async (tx) => {
    if (source) await releaseAll(tx, run.server.id, source)
    else if (old && run.server.host_id) await releasePart(tx, run.server.id, run.server.host_id, flavorResources(old))
  })
  return { old_flavor: null, new_flavor: null }
}

async function revertResize(run: ActionRun): Promise<Outcome> {
  const old = snapshotOf(run.server.old_flavor) ?? (JSON.parse(run.server.flavor) as FlavorSnapshot)
  const neu = snapshotOf(run.server.new_flavor)
  const source = await run.otherAllocation()
  const back = source ?? run.server.host_id
  if (source) await run.driver().forget(run.server.id).catch(() => {})
  await run.driver(back).finishMigration(await run.spec(back, { flavor: old }), powerOf(run.payload.before) === 'on')
  await run.ctx.store.db.transaction().execute(async (tx) => {
    if (source) await releaseAll(tx, run.server.id, run.server.host_id!)
    else if (neu && run.server.host_id) await releasePart(tx, run.server.id, run.server.host_id, flavorResources(neu))
  })
  const placed = back ? await run.placedOn(back) : { host_id: null, host: null, node: null }
  return { flavor: JSON.stringify(old), old_flavor: null, new_flavor: null, ...placed }
}

/** Moves the server's claim to `dest` and lets the source one go, with the final update. */
async function moveClaim(run: ActionRun, dest: string): Promise<Outcome> {
  const from = run.server.host_id
  if (from && from !== dest) await run.ctx.store.db.transaction().execute((tx) => releaseAll(tx, run.server.id, from).then(() => undefined))
  return run.placedOn(dest)
}

async function evacuate(run: ActionRun): Promise<Outcome> {
  const dest = await run.claimDestination({ flavor: JSON.parse(run.server.flavor) as FlavorSnapshot, sameHostAllowed: false, forcedHost: (run.params.host as string | undefined) ?? null, vmStateOnFailure: 'error' })
  await run.step('rebuild_block_device_mapping')
  // The lost host may still run the guest: it is cut off its disks before another host opens them (a repeated run
  // that finds the guest already there must not cut off the destination's own QEMU).
  if ((await run.driver(dest).info(run.server.id)) === undefined) await fenceLostHost(run.ctx, run.server)
  await run.step('rebuild_spawning')
  await run.driver(dest).evacuateTo(await run.spec(dest, { adminPass: run.params.adminPass as string | undefined }), powerOf(run.payload.before) === 'on')
  return { ...(await moveClaim(run, dest)), launched_at: Date.now(), progress: 0 }
}

async function liveMigrate(run: ActionRun): Promise<Outcome> {
  const dest = await run.claimDestination({ flavor: JSON.parse(run.server.flavor) as FlavorSnapshot, sameHostAllowed: false, forcedHost: (run.params.host as string | null | undefined) ?? null, vmStateOnFailure: run.payload.before.vmState })
  // A repeated run may find the guest already on the destination.
  const arrived = (await run.driver().info(run.server.id)) === undefined && (await run.driver(dest).info(run.server.id)) !== undefined
  try {
    if (!arrived) {
      await migrateLive(run.driver(), run.driver(dest), await run.spec(dest), async () => {
        if (!(await startCopying(run.ctx.store.db, run.server.id, run.payload.requestId))) throw new Cancelled()
      })
    }
  } catch (err) {
    // Cancelled while queued (the API marked it) or while copying (the source's copy stopped, the guest there).
    if (err instanceof Cancelled || isLiveMigrationCancelled(err)) throw new Cancelled()
    // Nova's _rollback_live_migration: the guest still runs on the source, so the server keeps its state there.
    const onSource = err instanceof DriverError && (await run.driver().info(run.server.id)) !== undefined
    if (onSource) throw new StepFailure(err.message, err.code, err.stack ?? '', run.payload.before.vmState)
    throw err
  }
  return moveClaim(run, dest)
}

async function shelveOffload(run: ActionRun): Promise<Outcome> {
  if (run.server.host_id) await run.driver().destroy(run.server.id)
  await run.ctx.store.db.transaction().execute((tx) => releaseAll(tx, run.server.id).then(() => undefined))
  return { host_id: null, host: null, node: null, power_state: POWER.SHUTDOWN }
}

async function unshelve(run: ActionRun): Promise<Outcome> {
  let hostId = run.server.host_id
  if (!hostId) {
    // The API passes {availabilityZone, host}; null unpins the zone.
    const raw = 'availabilityZone' in run.params ? run.params.availabilityZone : run.params.availability_zone
    const az = raw === undefined ? undefined : ((raw as string | null) ?? null)
    const spec = await run.ctx.scheduler.specFor(run.server, { forcedHost: (run.params.host as string | undefined) ?? null, ...(az !== undefined && { availabilityZone: az }) })
    try {
      const placed = await run.ctx.scheduler.placeAll([spec], async (tx, _s, host) => {
        if (!(await moveServer(tx, run.server.id, { taskStates: run.chain }, { host_id: host.id, host: host.hostname, node: host.hostname, availability_zone: host.availabilityZone }))) throw new PlacementVoid(run.server.id)
      })
      hostId = placed.get(run.server.id)?.id ?? null
    } catch (err) {
      if (err instanceof NoValidHost) throw new StepFailure(err.message, 500, err.details, run.payload.before.vmState)
      throw err
    }
    if (!hostId) throw new Abandoned()
    run.server = (await loadServer(run.ctx.store.db, run.server.id))!
  }
  const imageId = await unshelveImage(run)
  await run.step('spawning')
  await run.driver().spawn({ ...(await run.spec(run.server.host_id, { imageId })), volumes: await unshelveVolumes(run) })
  await finishUnshelve(run)
  return { progress: 0 }
}

/** Drives one action's steps on the driver and answers the final update (runAction writes it with the records). */
type ActionHandler = (run: ActionRun) => Promise<Outcome>

/**
 * One handler per action. null: the API answers the action itself (no task comes here), or, for forceDelete,
 * the task is a delete under an action's name and runDelete takes it whole.
 */
const ACTION_HANDLERS: Record<ServerActionName, ActionHandler | null> = {
  'reboot:SOFT': async (run) => {
    await run.step('reboot_pending')
    await run.step('reboot_started')
    await run.driver().reboot(run.server.id, 'SOFT')
    return {}
  },
  'reboot:HARD': async (run) => {
    await run.step('reboot_pending_hard')
    await run.step('reboot_started_hard')
    await run.driver().reboot(run.server.id, 'HARD')
    return {}
  },
  rebuild: async (run) => {
    const imageId = typeof run.params.imageRef === 'string' ? run.params.imageRef.split('/').pop()! : run.server.image_id
    await run.step('rebuild_block_device_mapping')
    await run.step('rebuild_spawning')
    await run.driver().rebuild(await run.spec(run.server.host_id, { imageId, adminPass: run.params.adminPass as string | undefined }))
    if (powerOf(run.payload.before) === 'off') await run.driver().powerOff(run.server.id)
    // A volume-backed server's new image goes to its root volume; the server itself shows none.
    return { ...(!run.params.volumeBacked && { image_id: imageId }), launched_at: Date.now(), progress: 0 }
  },
  resize: (run) => migrateCold(run, true),
  migrate: (run) => migrateCold(run, false),
  confirmResize,
  revertResize,
  createImage,
  createBackup,
  changePassword: async (run) => {
    try {
      await run.driver().setAdminPassword(run.server.id, String(run.params.adminPass ?? ''))
    } catch (err) {
      // Nova's InstancePasswordSetFailed: a guest that cannot take a password (no guest agent) keeps its state.
      if (err instanceof DriverError && err.code < 500) throw new StepFailure(err.message, err.code, err.stack ?? '', run.payload.before.vmState)
      throw err
    }
    return {}
  },
  'os-start': async (run) => {
    await run.driver().powerOn(run.server.id)
    return {}
  },
  'os-stop': async (run) => {
    await run.driver().powerOff(run.server.id)
    return {}
  },
  shelve: async (run) => {
    await shelveToImage(run)
    await run.step('shelving_offloading')
    return shelveOffload(run)
  },
  shelveOffload,
  unshelve,
  suspend: async (run) => {
    await run.driver().suspend(run.server.id)
    return {}
  },
  resume: async (run) => {
    await run.driver().resume(run.server.id)
    return {}
  },
  pause: async (run) => {
    await run.driver().pause(run.server.id)
    return {}
  },
  unpause: async (run) => {
    await run.driver().unpause(run.server.id)
    return {}
  },
  rescue: async (run) => {
    const rescueImage = ((run.params.rescueImageRef ?? run.params.rescue_image_ref) as string | null | undefined) ?? null
    const image = rescueImage ? await usableImageRef(run.ctx, run.server, rescueImage) : null
    if (rescueImage && !image) throw new StepFailure(`Rescue image ${rescueImage} could not be found.`, 400, '', run.payload.before.vmState)
    await run.driver().rescue(run.server.id, image)
    return {}
  },
  unrescue: async (run) => {
    await run.driver().unrescue(run.server.id)
    return {}
  },
  evacuate,
  'os-migrateLive': liveMigrate,
  restore: async (run) => {
    await run.driver().powerOn(run.server.id)
    return {}
  },
  forceDelete: null,
  lock: null,
  unlock: null,
  'os-getVNCConsole': null,
  'os-getSPICEConsole': null,
  'os-getSerialConsole': null,
  'os-getConsoleOutput': null,
  addFloatingIp: null,
  removeFloatingIp: null,
  'os-resetState': null,
  trigger_crash_dump: null,
  addSecurityGroup: null,
  removeSecurityGroup: null,
}

/** The records one run writes its end to. */
interface RunRecords {
  actionId: string | undefined
  eventId: string | undefined
}

/** The actions that move the server to another host: a failure gives the destination's claim back. */
const MOVING_ACTIONS: ReadonlySet<ServerActionName> = new Set(['resize', 'migrate', 'os-migrateLive', 'evacuate'])

export async function runAction(ctx: ConductorContext, payload: ActionTaskPayload): Promise<void> {
  const db = ctx.store.db
  const rule = SERVER_ACTIONS[payload.action]
  if (!rule) return
  if (payload.action === 'forceDelete') return runDelete(ctx, { serverId: payload.serverId, requestId: payload.requestId })
  const server = await loadServer(db, payload.serverId)
  const actionId = (await findAction(db, payload.serverId, payload.requestId))?.id
  const handler = ACTION_HANDLERS[payload.action]
  const chain: string[] = rule.startTask ? [rule.startTask, ...rule.steps] : []
  // Gone, not an asynchronous action, or already finished by an earlier run of this task.
  if (!server || server.deleted || !handler || !chain.includes(server.task_state ?? '')) {
    await finishAction(db, actionId)
    return
  }
  const eventId = await startEvent(db, actionId, EVENTS[payload.action] ?? `compute_${rule.instanceAction}`, server.host)
  await ctx.drivers.ensure([server.host_id])
  const run = new ActionRun(ctx, server, payload, chain)
  const records: RunRecords = { actionId, eventId }
  if (run.migrationType) await startMigration(db, server, run.migrationType, payload.requestId, payload.action === 'resize' ? String(payload.params.flavorRef ?? '').split('/').pop() || null : null)
  try {
    await succeed(run, await handler(run), records)
  } catch (err) {
    if (err instanceof Abandoned) return
    if (err instanceof Cancelled) return cancelled(run, records)
    if (!(err instanceof DriverError) && !(err instanceof StepFailure)) throw err
    await fail(run, err, records)
  }
}

/** The final state, the event and the action's finish commit together: whoever sees the server idle sees the action done. */
async function succeed(run: ActionRun, outcome: Outcome, records: RunRecords): Promise<void> {
  const { ctx, payload, chain } = run
  const vmState: VmState = (outcome.vm_state as VmState | undefined) ?? finalVmState(payload.action, payload.before)
  const hostId = outcome.host_id !== undefined ? outcome.host_id : run.server.host_id
  const guest = hostId ? await ctx.drivers.get(hostId)?.info(run.server.id) : undefined
  const power = outcome.power_state ?? guest?.powerState ?? RESTING_POWER[vmState]
  await ctx.store.db.transaction().execute(async (tx) => {
    if (!(await moveServer(tx, run.server.id, { taskStates: chain }, { ...outcome, vm_state: vmState, task_state: null, power_state: power }))) return
    // The ports follow the server to its new host (or are unbound when it left every host).
    if (outcome.host !== undefined || payload.action === 'unshelve') await bindServerNetwork(ctx.store, tx, run.server.id, (outcome.host !== undefined ? outcome.host : run.server.host) ?? '')
    if (run.migrationType) await updateMigration(tx, run.server.id, payload.requestId, { status: MIGRATION_STATUS[run.migrationType].done })
    const resizeEnd = RESIZE_END[payload.action as keyof typeof RESIZE_END]
    if (resizeEnd) await endResizeMigration(tx, run.server.id, resizeEnd)
    await finishEvent(tx, records.eventId, 'Success')
    await finishAction(tx, records.actionId)
  })
}

/**
 * An aborted live migration (Nova's rollback with the migration `cancelled`): the server stays on its source in
 * the state it had, without a fault; the destination's claim goes back; the live-migration action itself did not
 * fail (the abort is an action of its own, recorded by the API).
 */
async function cancelled(run: ActionRun, records: RunRecords): Promise<void> {
  await run.ctx.store.db.transaction().execute(async (tx) => {
    if (!(await moveServer(tx, run.server.id, { taskStates: run.chain }, { vm_state: run.payload.before.vmState, task_state: null }))) return
    const others = await tx.selectFrom('allocations').select('host_id').where('server_id', '=', run.server.id).execute()
    for (const o of others) if (o.host_id !== run.server.host_id) await releaseAll(tx, run.server.id, o.host_id)
    await cancelMigration(tx, run.server.id, run.payload.requestId)
    await finishEvent(tx, records.eventId, 'Success')
    await finishAction(tx, records.actionId)
  })
}

/** The server lands in the failure's state (error unless the step said otherwise), with a fault and the records marked failed. */
async function fail(run: ActionRun, err: DriverError | StepFailure, records: RunRecords): Promise<void> {
  const vmState = err instanceof StepFailure && err.vmState ? err.vmState : 'error'
  const details = err instanceof StepFailure ? err.details : (err.stack ?? '')
  const moving = MOVING_ACTIONS.has(run.payload.action)
  await run.ctx.store.db.transaction().execute(async (tx) => {
    if (!(await moveServer(tx, run.server.id, { taskStates: run.chain }, { vm_state: vmState, task_state: null, ...(moving && { old_flavor: null, new_flavor: null }) }))) return
    // A move that failed gives back the destination's claim; the server stays where it was.
    if (moving) {
      const others = await tx.selectFrom('allocations').select('host_id').where('server_id', '=', run.server.id).execute()
      for (const o of others) if (o.host_id !== run.server.host_id) await releaseAll(tx, run.server.id, o.host_id)
    }
    if (run.migrationType) await updateMigration(tx, run.server.id, run.payload.requestId, { status: MIGRATION_STATUS[run.migrationType].failed })
    await recordFault(tx, run.server.id, { code: err.code, message: err.message, details })
    await finishEvent(tx, records.eventId, 'Error', { traceback: err.stack })
    await finishAction(tx, records.actionId, true)
  })
}
