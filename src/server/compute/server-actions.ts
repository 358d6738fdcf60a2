/**
 * Server actions after the body was validated: the state check (server-states.ts `refusal`, 409), then the
 * action's handler (one per action, in ACTION_HANDLERS): its own rules, then either one transaction that sets the
 * starting task_state, records the instance action and enqueues the work (`accept`), or — for actions the API
 * completes itself — the change and a finished action. The handlers live in server-actions/, by family.
 */
import { conflict } from '../../contracts/errors.js'
import type { ApiVersion } from '../../contracts/compute/versions.js'
import type { ServerTable } from '../storage/schema.js'
import { refusal, SERVER_ACTIONS, type ServerActionName } from './server-states.js'
import { queued, type ActionCaller, type ActionDeps, type ActionHandler, type ActionOutcome } from './server-actions/common.js'
import * as immediate from './server-actions/completed-by-api.js'
import { evacuate, rebuild, rescue } from './server-actions/rebuild.js'
import { confirmResize, liveMigrate, migrate, resize } from './server-actions/resize-migrate.js'
import { createBackup, createImage, shelve, unshelve } from './server-actions/snapshots.js'

export type { ActionCaller, ActionDeps, ActionOutcome, ActionPolicy } from './server-actions/common.js'

/**
 * Every action's handler; the compiler checks each action of SERVER_ACTIONS has one. `queued` is the plain case
 * (nothing to check beyond the state table, the conductor does the work); `immediate` the ones the API completes.
 */
const ACTION_HANDLERS: { [A in ServerActionName]: ActionHandler<A> } = {
  'reboot:SOFT': queued,
  'reboot:HARD': queued,
  rebuild,
  resize,
  confirmResize,
  revertResize: queued,
  createImage,
  createBackup,
  changePassword: queued,
  'os-start': queued,
  'os-stop': queued,
  shelve,
  shelveOffload: queued,
  unshelve,
  suspend: queued,
  resume: queued,
  pause: queued,
  unpause: queued,
  lock: immediate.lock,
  unlock: immediate.unlock,
  rescue,
  unrescue: queued,
  evacuate,
  migrate,
  'os-migrateLive': liveMigrate,
  'os-getVNCConsole': immediate.legacyConsole,
  'os-getSPICEConsole': immediate.legacyConsole,
  'os-getSerialConsole': immediate.legacyConsole,
  'os-getConsoleOutput': immediate.consoleOutput,
  forceDelete: queued,
  restore: queued,
  trigger_crash_dump: immediate.triggerCrashDump,
  addFloatingIp: immediate.addFloatingIp,
  removeFloatingIp: immediate.removeFloatingIp,
  'os-resetState': immediate.resetState,
  addSecurityGroup: immediate.changeSecurityGroup,
  removeSecurityGroup: immediate.changeSecurityGroup,
}

/** Maps the body key (and reboot's type) to the table entry. */
export function actionNameOf(key: string, value: unknown): ServerActionName | undefined {
  if (key === 'reboot') {
    const type = String((value as { type?: string } | null)?.type ?? '').toUpperCase()
    return type === 'HARD' ? 'reboot:HARD' : 'reboot:SOFT'
  }
  // Own keys only: `constructor` or `toString` name no action.
  return Object.hasOwn(SERVER_ACTIONS, key) && !key.includes(':') ? (key as ServerActionName) : undefined
}

export function stateView(row: ServerTable) {
  return { id: row.id, vmState: row.vm_state, taskState: row.task_state, powerState: row.power_state, launchedAt: row.launched_at, host: row.host, locked: row.locked === 1 }
}

/** Runs `action` with its (validated) value on the server `row`: 409 when its state refuses it, else its handler. */
export async function runAction<A extends ServerActionName>(deps: ActionDeps, api: ApiVersion, caller: ActionCaller, row: ServerTable, action: A, value: unknown, requestId: string): Promise<ActionOutcome> {
  const why = refusal(action, stateView(row), caller.lockOverride)
  if (why) throw conflict(why)
  const v = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
  const handler: ActionHandler<A> = ACTION_HANDLERS[action]
  return handler({ deps, api, caller, row, action, value, v, requestId })
}
