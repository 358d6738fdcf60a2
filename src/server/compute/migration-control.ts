/**
 * Abort (DELETE /servers/{id}/migrations/{mid}, 2.24) and force-complete (POST …/{mid}/action, 2.22) of a live
 * migration, as Nova's compute API checks them (docs/compute.md, "Migrations"): the server must be ACTIVE and
 * migrating; the migration must be copying (`running`), or for an abort from 2.65 still `queued`/`preparing`.
 * A queued one is cancelled here, before any host acts (the conductor finds it so); a running one is the source
 * host's to stop or converge (`Conductor.controlLiveMigration`). Each records its instance action with one event.
 */
import { AppError, badRequest, conflict, notFound } from '../../contracts/errors.js'
import { DriverError } from '../../contracts/host/compute-driver.js'
import type { Db } from '../storage/store.js'
import type { ServerTable } from '../storage/tables/compute.js'
import { eventId, insertAction } from './instance-actions.js'
import { cancelQueued, findServerMigration, QUEUED } from './migrations.js'

/** What an abort and a force-complete ask a live migration's source. */
export type CopyControl = 'cancel' | 'forceComplete'

interface ControlRule {
  /** Nova's names of the operation in its messages: of a migration in the wrong state, of a server in the wrong state. */
  method: string
  stateName: string
  /** The instance action and its event, as Nova records them. */
  action: string
  event: string
  /** The statuses it acts on (`inQueue`: the caller's version lets an abort cancel a queued migration). */
  allowed: (inQueue: boolean) => string[]
  /** Nova answers an unknown migration of the server 404 for an abort and 400 for a force-complete. */
  unknown: (message: string) => AppError
}

const RULES: Record<CopyControl, ControlRule> = {
  cancel: { method: 'abort live migration', stateName: 'abort live migration', action: 'live_migration_cancel', event: 'compute_live_migration_abort', allowed: (inQueue) => (inQueue ? ['running', ...QUEUED] : ['running']), unknown: notFound },
  forceComplete: { method: 'force complete', stateName: 'force_complete', action: 'live_migration_force_complete', event: 'compute_live_migration_force_complete', allowed: () => ['running'], unknown: badRequest },
}

/**
 * The source sends nothing yet for a moment after the migration became `running` (its command is on its way):
 * asked then, it answers that it runs no copy, so it is asked again for this long while the migration still runs.
 */
const SOURCE_START_MS = 10_000
const ASK_AGAIN_MS = 200

export interface ControlContext {
  db: Db
  /** Asks the source host (Conductor.controlLiveMigration): false when it sends no copy of the guest now. */
  askSource: (serverId: string, control: CopyControl) => Promise<boolean>
  caller: { userId: string; projectId: string }
  requestId: string
}

/** Aborts or force-completes the server's live migration `migrationId`; throws the API's refusal otherwise. */
export async function controlLiveMigration(ctx: ControlContext, server: ServerTable, migrationId: string, control: CopyControl, options: { inQueue: boolean }): Promise<void> {
  const rule = RULES[control]
  if (server.vm_state !== 'active' || server.task_state !== 'migrating') {
    const [attr, state] = server.vm_state !== 'active' ? ['vm_state', server.vm_state] : ['task_state', server.task_state ?? 'None']
    throw conflict(`Cannot '${rule.stateName}' instance ${server.id} while it is in ${attr} ${state}`)
  }
  const migration = await findServerMigration(ctx.db, server.id, migrationId)
  if (!migration) throw rule.unknown(`Migration ${migrationId} not found for instance ${server.id}`)
  const invalid = (status: string) => badRequest(`Migration ${migrationId} state of instance ${server.id} is ${status}. Cannot ${rule.method} while the migration is in this state.`)
  if (migration.migration_type !== 'live-migration' || !rule.allowed(options.inQueue).includes(migration.status)) throw invalid(migration.status)

  if (control === 'cancel' && QUEUED.includes(migration.status) && (await cancelQueued(ctx.db, migration.id))) {
    await record(ctx, server, rule, 'Success')
    return
  }
  const deadline = Date.now() + SOURCE_START_MS
  for (;;) {
    let acted: boolean
    try {
      acted = await ctx.askSource(server.id, control)
    } catch (err) {
      if (!(err instanceof DriverError)) throw err
      await record(ctx, server, rule, 'Error', err.message)
      throw conflict(`Cannot ${rule.method} migration ${migrationId} of instance ${server.id}: ${err.message}`)
    }
    if (acted) {
      await record(ctx, server, rule, 'Success')
      return
    }
    const now = await findServerMigration(ctx.db, server.id, migrationId)
    if (!now || now.status !== 'running') throw invalid(now?.status ?? 'gone')
    if (Date.now() > deadline) throw conflict(`The source host of migration ${migrationId} of instance ${server.id} sends no copy of it; try again.`)
    await new Promise((resolve) => setTimeout(resolve, ASK_AGAIN_MS))
  }
}

/** The instance action with its one event, both finished (the event failed when the host could not be asked). */
async function record(ctx: ControlContext, server: ServerTable, rule: ControlRule, result: 'Success' | 'Error', details?: string): Promise<void> {
  const now = Date.now()
  await ctx.db.transaction().execute(async (tx) => {
    const actionId = await insertAction(tx, { serverId: server.id, action: rule.action, requestId: ctx.requestId, userId: ctx.caller.userId, projectId: ctx.caller.projectId || server.project_id, finished: true }, now)
    await tx
      .insertInto('instance_action_events')
      .values({ id: eventId(actionId, rule.event), action_id: actionId, event: rule.event, start_time: now, finish_time: now, result, traceback: null, host: server.host, details: details ?? null })
      .execute()
    if (result === 'Error') await tx.updateTable('instance_actions').set({ message: 'Error' }).where('id', '=', actionId).execute()
  })
}
