/**
 * What every server action handler shares: its context, and the one way an asynchronous action is accepted
 * (`accept`: task_state, instance action and task in one transaction) or recorded when the API completes it itself.
 */
import type { Static } from '@sinclair/typebox'
import { conflict } from '../../../contracts/errors.js'
import type { ACTION_BODIES, ActionBodyKey } from '../../../contracts/compute/server-action.params.js'
import type { ApiVersion } from '../../../contracts/compute/versions.js'
import type { ServerTable } from '../../storage/schema.js'
import type { Db } from '../../storage/store.js'
import type { TaskQueue } from '../../tasks/queue.js'
import { COMPUTE_TASK_KINDS, type ActionTaskPayload, type DeleteTaskPayload } from '../tasks.js'
import { SERVER_ACTIONS, type ServerActionName } from '../server-states.js'
import type { ImageLookup } from '../images.js'
import type { NetworkService } from '../../network/service.js'
import type { ComputeStorage } from '../storage.js'
import { insertAction } from '../instance-actions.js'
import type { Principal } from '../../auth/principal.js'
import type { Visibility } from '../../policy/rules.js'
import type { GuestQuiescing } from '../server-images.js'

export interface ActionCaller {
  /** Whose images and volumes the action may name (other_projects:use), decided by the route. */
  visibility: Visibility
  /** Private flavors without access, for resize (flavors:all_projects). */
  flavorVisibility: Visibility
  projectId: string
  userId: string
  /** For actions completed through another service with the caller's own rights (Nova's floating IP actions). */
  principal?: Principal
  /** May act on a locked server (servers:locked:override, checked by the route). */
  lockOverride: boolean
  /**
   * Checks a compute policy rule that depends on the action's body or the server's state (a host named for
   * unshelve, an admin's lock): the route passes the policy table's check, so the rule stays in the table while the
   * check keeps its place after the state checks (403 only for a request the server's state accepts).
   */
  authorize: (operation: ActionPolicy) => void
}

/** The compute policy rules an action checks on the way (compute.policy.ts). */
export type ActionPolicy = 'os-lock-server:unlock:unlock_override' | 'os-shelve:unshelve_to_host' | 'os-migrate-server:migrate:host'

export interface ActionOutcome {
  status: 200 | 202 | 204
  body?: unknown
  headers?: Record<string, string>
  /** The server row after the API's own changes (rebuild answers with it). */
  server?: ServerTable
  adminPass?: string
}

export interface ActionDeps {
  db: Db
  queue: TaskQueue
  images: ImageLookup
  /** The image and volume services: snapshot images of createImage and shelve, volume-backed servers. */
  storage: ComputeStorage
  imageUrl: string
  /** Whether a host's compute service is up (evacuate needs it down). */
  hostUp: (hostname: string) => Promise<boolean | undefined>
  /** The guest's console log from its hypervisor; undefined when the host or the guest cannot be reached. */
  consoleOutput: (serverId: string, lines?: number) => Promise<string | undefined>
  /** The server's guest on its host, quiesced around a volume-backed createImage's volume snapshots. */
  guest: GuestQuiescing
  /** Security groups live on the server's ports. */
  network: NetworkService
  /** A console URL for the server (console/remote-consoles.ts). */
  remoteConsoleUrl: (row: ServerTable, protocol: string, type: string) => Promise<string>
}

/** The body key of an action: reboot's two entries share `reboot`. */
type BodyKeyOf<A extends string> = A extends `${infer K}:${string}` ? K : A

/** What an action's value is once the route validated it: `Static` of its ACTION_BODIES schema, over every version. */
export type ActionValue<A extends ServerActionName> = Static<ReturnType<(typeof ACTION_BODIES)[BodyKeyOf<A> & ActionBodyKey]>>

/** One action on one server, after the route validated its value and the state checks let it through. */
export interface ActionContext<A extends ServerActionName = ServerActionName> {
  deps: ActionDeps
  api: ApiVersion
  caller: ActionCaller
  row: ServerTable
  action: A
  /** The action's value, as its schema (ACTION_BODIES) let it through. */
  value: ActionValue<A>
  /**
   * The value read as an object (`{}` when it is null or not an object), for the actions whose older
   * microversions accept any value (lock below 2.73, unshelve below 2.77, migrate below 2.56): their schema's type
   * is `unknown`, and the fields the newer versions name are read from it as they come.
   */
  v: Record<string, unknown>
  requestId: string
}

export type ActionHandler<A extends ServerActionName = ServerActionName> = (ctx: ActionContext<A>) => Promise<ActionOutcome>

/** Records an action the API completed itself (finished) in os-instance-actions. */
export async function recordAction(ctx: ActionContext, db: Db = ctx.deps.db): Promise<void> {
  const { row, caller } = ctx
  const action = SERVER_ACTIONS[ctx.action].instanceAction
  await insertAction(db, { serverId: row.id, action, requestId: ctx.requestId, userId: caller.userId, projectId: caller.projectId || row.project_id, finished: true })
}

/**
 * Accepts an asynchronous action: task_state, instance action and task in one transaction. `prepare` runs in that
 * transaction after the state moved and adds to the task's params (the snapshot image createImage and shelve make).
 */
export async function accept(
  ctx: ActionContext,
  params: Record<string, unknown>,
  changes: Partial<ServerTable> = {},
  prepare?: (tx: Db) => Promise<Record<string, unknown>>,
): Promise<ServerTable> {
  const { deps, row, action, requestId, caller } = ctx
  const rule = SERVER_ACTIONS[action]
  const now = Date.now()
  return deps.db.transaction().execute(async (tx) => {
    const set = { ...changes, task_state: rule.startTask, updated_at: now }
    let q = tx.updateTable('servers').set(set).where('id', '=', row.id).where('vm_state', '=', row.vm_state)
    q = row.task_state === null ? q.where('task_state', 'is', null) : q.where('task_state', '=', row.task_state)
    const result = await q.executeTakeFirst()
    if (Number(result.numUpdatedRows) !== 1) throw conflict(`Cannot '${rule.instanceAction}' instance ${row.id} while it is changing state`)
    if (prepare) params = { ...params, ...(await prepare(tx)) }
    await insertAction(tx, { serverId: row.id, action: rule.instanceAction, requestId, userId: caller.userId, projectId: caller.projectId || row.project_id, finished: false })
    if (action === 'forceDelete') {
      await deps.queue.enqueue<DeleteTaskPayload>({ kind: COMPUTE_TASK_KINDS.delete, payload: { serverId: row.id, requestId }, subjectId: row.id }, tx)
    } else {
      await deps.queue.enqueue<ActionTaskPayload>(
        { kind: COMPUTE_TASK_KINDS.action, payload: { serverId: row.id, action, params, requestId, before: { vmState: row.vm_state, powerState: row.power_state } }, subjectId: row.id },
        tx,
      )
    }
    return { ...row, ...set } as ServerTable
  })
}

/**
 * The actions the conductor carries out with nothing for the API to check beyond the state table (reboot, start,
 * stop, pause, suspend, …): accepted with their value as the task's params, answered with the table's status.
 */
export const queued: ActionHandler = async (ctx) => {
  await accept(ctx, ctx.v)
  return { status: SERVER_ACTIONS[ctx.action].success }
}
