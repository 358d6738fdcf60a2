/**
 * The actions the API completes itself, with no task for the conductor: lock and unlock, the console log and the
 * legacy console URLs, trigger_crash_dump, Nova-network's floating IP actions, os-resetState, and security groups.
 */
import { notFound } from '../../../contracts/errors.js'
import { LEGACY_CONSOLE_ACTIONS } from '../../../contracts/compute/remote-console.params.js'
import { changeServerSecurityGroup } from '../server-network.js'
import { associateServerFloatingIp, disassociateServerFloatingIp } from '../../network/floating-ips.js'
import { recordAction, type ActionHandler } from './common.js'

export const lock: ActionHandler<'lock'> = async (ctx) => {
  const { row, caller, v } = ctx
  if (row.locked === 1) return { status: 202 }
  // Below 2.73 lock takes any value (its schema's type is unknown): the reason is read as it comes.
  const reason = (v.locked_reason as string | undefined) ?? null
  await ctx.deps.db.updateTable('servers').set({ locked: 1, locked_by: caller.projectId === row.project_id ? 'owner' : 'admin', locked_reason: reason, updated_at: Date.now() }).where('id', '=', row.id).execute()
  await recordAction(ctx)
  return { status: 202 }
}

export const unlock: ActionHandler = async (ctx) => {
  const { row } = ctx
  if (row.locked_by === 'admin') ctx.caller.authorize('os-lock-server:unlock:unlock_override')
  await ctx.deps.db.updateTable('servers').set({ locked: 0, locked_by: null, locked_reason: null, updated_at: Date.now() }).where('id', '=', row.id).execute()
  await recordAction(ctx)
  return { status: 202 }
}

export const consoleOutput: ActionHandler<'os-getConsoleOutput'> = async ({ deps, row, value }) => {
  // Nova accepts the length as an integer or a numeric string; -1 or absent means the whole log.
  const length = value.length === undefined || value.length === null ? undefined : Number(value.length)
  const output = await deps.consoleOutput(row.id, length)
  if (output === undefined) throw notFound('Guest does not have a console available.')
  return { status: 200, body: { output } }
}

/** os-getVNCConsole, os-getSPICEConsole, os-getSerialConsole (below 2.6): a URL of the action's protocol. */
export const legacyConsole: ActionHandler<'os-getVNCConsole' | 'os-getSPICEConsole' | 'os-getSerialConsole'> = async ({ deps, row, action, value }) => {
  const { type } = value
  const url = await deps.remoteConsoleUrl(row, LEGACY_CONSOLE_ACTIONS[action].protocol, type)
  return { status: 200, body: { console: { type, url } } }
}

export const triggerCrashDump: ActionHandler = async (ctx) => {
  await recordAction(ctx)
  return { status: 202 }
}

export const addFloatingIp: ActionHandler<'addFloatingIp'> = async ({ deps, caller, row, value }) => {
  await deps.network.run(caller.principal!, (net, actor) => associateServerFloatingIp(net, actor, row.id, value.address, value.fixed_address))
  return { status: 202 }
}

export const removeFloatingIp: ActionHandler<'removeFloatingIp'> = async ({ deps, caller, row, value }) => {
  await deps.network.run(caller.principal!, (net, actor) => disassociateServerFloatingIp(net, actor, row.id, value.address))
  return { status: 202 }
}

/** Admins force a state; no instance action is recorded, as in Nova. */
export const resetState: ActionHandler<'os-resetState'> = async ({ deps, row, value }) => {
  await deps.db.updateTable('servers').set({ vm_state: value.state, task_state: null, updated_at: Date.now() }).where('id', '=', row.id).execute()
  return { status: 202 }
}

export const changeSecurityGroup: ActionHandler<'addSecurityGroup' | 'removeSecurityGroup'> = async (ctx) => {
  await changeServerSecurityGroup(ctx.deps.network, ctx.deps.db, ctx.row, ctx.action, ctx.value.name)
  await recordAction(ctx)
  return { status: 202 }
}
