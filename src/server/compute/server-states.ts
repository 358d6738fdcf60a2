/**
 * The server state machine, as Nova defines it: vm_state × task_state × power_state, the API status derived
 * from them, and for every action the states it is accepted from, the task state it starts, and where it ends.
 * The compute API checks requests against this table (409 otherwise); the conductor drives the sequences.
 * Described in docs/compute.md, "States and actions".
 */
import { POWER, type PowerState } from '../../contracts/host/compute-driver.js'

export const VM_STATES = [
  'active', 'building', 'paused', 'suspended', 'stopped', 'rescued', 'resized', 'soft-delete', 'deleted', 'error', 'shelved', 'shelved_offloaded',
] as const
export type VmState = (typeof VM_STATES)[number]

export const SERVER_STATUSES = [
  'ACTIVE', 'BUILD', 'DELETED', 'ERROR', 'HARD_REBOOT', 'MIGRATING', 'PASSWORD', 'PAUSED', 'REBOOT', 'REBUILD', 'RESCUE', 'RESIZE',
  'REVERT_RESIZE', 'SHELVED', 'SHELVED_OFFLOADED', 'SHUTOFF', 'SOFT_DELETED', 'SUSPENDED', 'UNKNOWN', 'VERIFY_RESIZE',
] as const
export type ServerStatus = (typeof SERVER_STATUSES)[number]


const REBOOT = ['rebooting', 'reboot_pending', 'reboot_started']
const HARD_REBOOT = ['rebooting_hard', 'reboot_pending_hard', 'reboot_started_hard']
const REBUILD = ['rebuilding', 'rebuild_block_device_mapping', 'rebuild_spawning']
const RESIZE = ['resize_prep', 'resize_migrating', 'resize_migrated', 'resize_finish']

/** Nova's _STATE_MAP: the default status of each vm_state and the task states that override it. */
const STATE_MAP: Record<VmState, { default: ServerStatus; tasks?: Record<string, ServerStatus> }> = {
  active: {
    default: 'ACTIVE',
    tasks: {
      ...Object.fromEntries(REBOOT.map((t) => [t, 'REBOOT'])),
      ...Object.fromEntries(HARD_REBOOT.map((t) => [t, 'HARD_REBOOT'])),
      updating_password: 'PASSWORD',
      ...Object.fromEntries(REBUILD.map((t) => [t, 'REBUILD'])),
      migrating: 'MIGRATING',
      ...Object.fromEntries(RESIZE.map((t) => [t, 'RESIZE'])),
    },
  },
  building: { default: 'BUILD' },
  stopped: { default: 'SHUTOFF', tasks: { ...Object.fromEntries(RESIZE.map((t) => [t, 'RESIZE'])), ...Object.fromEntries(REBUILD.map((t) => [t, 'REBUILD'])) } },
  resized: { default: 'VERIFY_RESIZE', tasks: { resize_reverting: 'REVERT_RESIZE' } },
  paused: { default: 'PAUSED', tasks: { migrating: 'MIGRATING' } },
  suspended: { default: 'SUSPENDED' },
  rescued: { default: 'RESCUE' },
  error: { default: 'ERROR', tasks: Object.fromEntries(REBUILD.map((t) => [t, 'REBUILD'])) },
  deleted: { default: 'DELETED' },
  'soft-delete': { default: 'SOFT_DELETED' },
  shelved: { default: 'SHELVED' },
  shelved_offloaded: { default: 'SHELVED_OFFLOADED' },
}

export function serverStatus(vmState: string, taskState: string | null, deleted = false): ServerStatus {
  if (deleted) return 'DELETED'
  const entry = STATE_MAP[vmState as VmState]
  if (!entry) return 'UNKNOWN'
  return (taskState && entry.tasks?.[taskState]) || entry.default
}

/** The vm_states whose servers show a `status` of the given value (for the `status` list filter). */
export function vmStatesForStatus(status: ServerStatus): { vmState: VmState; taskStates?: string[] }[] {
  const out: { vmState: VmState; taskStates?: string[] }[] = []
  for (const vmState of VM_STATES) {
    const entry = STATE_MAP[vmState]
    const overriding = Object.entries(entry.tasks ?? {}).filter(([, s]) => s === status).map(([t]) => t)
    if (entry.default === status) out.push({ vmState })
    else if (overriding.length) out.push({ vmState, taskStates: overriding })
  }
  return out
}

/** Where an action leaves the server: a fixed vm_state, the one it had, or active/stopped as it was powered. */
export type FinalState = VmState | 'unchanged' | 'as-powered'

export interface ActionRule {
  /** The name recorded in os-instance-actions. */
  instanceAction: string
  /** vm_states the action is accepted from ('any' = no check). */
  vmStates: readonly VmState[] | 'any'
  /** task_states accepted (default: only null, i.e. idle). */
  taskStates?: readonly (string | null)[] | 'any'
  /** The server must have booted once (launched_at set). Nova's default for check_instance_state. */
  requiresLaunched: boolean
  /** The server must be on a host (409 otherwise). */
  requiresHost?: boolean
  /** A locked server refuses the action to non-admins (409). */
  lockChecked: boolean
  /** task_state set when the API accepts the action; null when the API completes it itself. */
  startTask: string | null
  /** The task states the conductor walks through after startTask, in order. */
  steps: readonly string[]
  final: FinalState
  /** Success status code of the API. */
  success: 200 | 202 | 204
  /** Policy default is admin only. */
  adminOnly?: boolean
  /** First microversion where the action exists (404 below). */
  since?: string
  /** First microversion where the action no longer exists (404 from it on). */
  until?: string
}

const HARD_REBOOT_TASKS = [null, 'rebooting', 'reboot_pending', 'reboot_started', 'rebooting_hard', 'pausing', 'unpausing', 'suspending', 'resuming'] as const

export const SERVER_ACTIONS = {
  'reboot:SOFT': { instanceAction: 'reboot', vmStates: ['active'], requiresLaunched: true, lockChecked: true, startTask: 'rebooting', steps: ['reboot_pending', 'reboot_started'], final: 'active', success: 202 },
  'reboot:HARD': { instanceAction: 'reboot', vmStates: ['active', 'stopped', 'paused', 'suspended', 'error'], taskStates: HARD_REBOOT_TASKS, requiresLaunched: true, lockChecked: true, startTask: 'rebooting_hard', steps: ['reboot_pending_hard', 'reboot_started_hard'], final: 'active', success: 202 },
  rebuild: { instanceAction: 'rebuild', vmStates: ['active', 'stopped', 'error'], requiresLaunched: false, lockChecked: true, startTask: 'rebuilding', steps: ['rebuild_block_device_mapping', 'rebuild_spawning'], final: 'as-powered', success: 202 },
  resize: { instanceAction: 'resize', vmStates: ['active', 'stopped'], requiresLaunched: true, requiresHost: true, lockChecked: true, startTask: 'resize_prep', steps: ['resize_migrating', 'resize_migrated', 'resize_finish'], final: 'resized', success: 202 },
  confirmResize: { instanceAction: 'confirmResize', vmStates: ['resized'], requiresLaunched: true, lockChecked: true, startTask: 'resize_confirming', steps: [], final: 'as-powered', success: 204 },
  revertResize: { instanceAction: 'revertResize', vmStates: ['resized'], requiresLaunched: true, lockChecked: true, startTask: 'resize_reverting', steps: [], final: 'as-powered', success: 202 },
  createImage: { instanceAction: 'createImage', vmStates: ['active', 'stopped', 'paused', 'suspended'], requiresLaunched: true, lockChecked: false, startTask: 'image_snapshot_pending', steps: ['image_snapshot', 'image_pending_upload', 'image_uploading'], final: 'unchanged', success: 202 },
  createBackup: { instanceAction: 'createBackup', vmStates: ['active', 'stopped', 'paused', 'suspended'], requiresLaunched: true, lockChecked: true, startTask: 'image_backup', steps: ['image_pending_upload', 'image_uploading'], final: 'unchanged', success: 202 },
  changePassword: { instanceAction: 'changePassword', vmStates: ['active'], requiresLaunched: true, lockChecked: true, startTask: 'updating_password', steps: [], final: 'unchanged', success: 202 },
  'os-start': { instanceAction: 'start', vmStates: ['stopped'], requiresLaunched: true, requiresHost: true, lockChecked: true, startTask: 'powering-on', steps: [], final: 'active', success: 202 },
  'os-stop': { instanceAction: 'stop', vmStates: ['active', 'error'], requiresLaunched: true, requiresHost: true, lockChecked: true, startTask: 'powering-off', steps: [], final: 'stopped', success: 202 },
  shelve: { instanceAction: 'shelve', vmStates: ['active', 'stopped', 'paused', 'suspended'], requiresLaunched: true, lockChecked: true, startTask: 'shelving', steps: ['shelving_image_pending_upload', 'shelving_image_uploading', 'shelving_offloading'], final: 'shelved_offloaded', success: 202 },
  shelveOffload: { instanceAction: 'shelveOffload', vmStates: ['shelved'], requiresLaunched: true, lockChecked: true, startTask: 'shelving_offloading', steps: [], final: 'shelved_offloaded', success: 202, adminOnly: true },
  unshelve: { instanceAction: 'unshelve', vmStates: ['shelved', 'shelved_offloaded'], requiresLaunched: true, lockChecked: true, startTask: 'unshelving', steps: ['spawning'], final: 'active', success: 202 },
  suspend: { instanceAction: 'suspend', vmStates: ['active'], requiresLaunched: true, lockChecked: true, startTask: 'suspending', steps: [], final: 'suspended', success: 202 },
  resume: { instanceAction: 'resume', vmStates: ['suspended'], requiresLaunched: true, lockChecked: true, startTask: 'resuming', steps: [], final: 'active', success: 202 },
  pause: { instanceAction: 'pause', vmStates: ['active'], requiresLaunched: true, lockChecked: true, startTask: 'pausing', steps: [], final: 'paused', success: 202 },
  unpause: { instanceAction: 'unpause', vmStates: ['paused'], requiresLaunched: true, lockChecked: true, startTask: 'unpausing', steps: [], final: 'active', success: 202 },
  lock: { instanceAction: 'lock', vmStates: 'any', taskStates: 'any', requiresLaunched: false, lockChecked: false, startTask: null, steps: [], final: 'unchanged', success: 202 },
  unlock: { instanceAction: 'unlock', vmStates: 'any', taskStates: 'any', requiresLaunched: false, lockChecked: false, startTask: null, steps: [], final: 'unchanged', success: 202 },
  rescue: { instanceAction: 'rescue', vmStates: ['active', 'stopped', 'error'], requiresLaunched: true, lockChecked: true, startTask: 'rescuing', steps: [], final: 'rescued', success: 200 },
  unrescue: { instanceAction: 'unrescue', vmStates: ['rescued'], requiresLaunched: true, lockChecked: true, startTask: 'unrescuing', steps: [], final: 'active', success: 202 },
  evacuate: { instanceAction: 'evacuate', vmStates: ['active', 'stopped', 'error'], taskStates: 'any', requiresLaunched: true, lockChecked: false, startTask: 'rebuilding', steps: ['rebuild_block_device_mapping', 'rebuild_spawning'], final: 'as-powered', success: 200, adminOnly: true },
  migrate: { instanceAction: 'migrate', vmStates: ['active', 'stopped'], requiresLaunched: true, requiresHost: true, lockChecked: true, startTask: 'resize_prep', steps: ['resize_migrating', 'resize_migrated', 'resize_finish'], final: 'resized', success: 202, adminOnly: true },
  'os-migrateLive': { instanceAction: 'live-migration', vmStates: ['active', 'paused'], requiresLaunched: true, requiresHost: true, lockChecked: true, startTask: 'migrating', steps: [], final: 'unchanged', success: 202, adminOnly: true },
  // Console URLs (2.1–2.5; POST /servers/{id}/remote-consoles from 2.6): their own rules in remote-consoles/remote-consoles.ts.
  'os-getVNCConsole': { instanceAction: 'getVNCConsole', vmStates: 'any', taskStates: 'any', requiresLaunched: false, lockChecked: false, startTask: null, steps: [], final: 'unchanged', success: 200, until: '2.6' },
  'os-getSPICEConsole': { instanceAction: 'getSPICEConsole', vmStates: 'any', taskStates: 'any', requiresLaunched: false, lockChecked: false, startTask: null, steps: [], final: 'unchanged', success: 200, until: '2.6' },
  'os-getSerialConsole': { instanceAction: 'getSerialConsole', vmStates: 'any', taskStates: 'any', requiresLaunched: false, lockChecked: false, startTask: null, steps: [], final: 'unchanged', success: 200, until: '2.6' },
  'os-getConsoleOutput': { instanceAction: 'getConsoleOutput', vmStates: 'any', taskStates: 'any', requiresLaunched: false, requiresHost: true, lockChecked: false, startTask: null, steps: [], final: 'unchanged', success: 200 },
  forceDelete: { instanceAction: 'forceDelete', vmStates: 'any', taskStates: 'any', requiresLaunched: false, lockChecked: true, startTask: 'deleting', steps: [], final: 'deleted', success: 202 },
  restore: { instanceAction: 'restore', vmStates: ['soft-delete'], requiresLaunched: true, lockChecked: true, startTask: 'restoring', steps: [], final: 'active', success: 202 },
  trigger_crash_dump: { instanceAction: 'trigger_crash_dump', vmStates: ['active', 'paused', 'rescued', 'resized', 'error'], requiresLaunched: true, requiresHost: true, lockChecked: true, startTask: null, steps: [], final: 'unchanged', success: 202, since: '2.17' },
  // Nova-network's floating IP actions, proxied to the network service until 2.44.
  addFloatingIp: { instanceAction: 'addFloatingIp', vmStates: 'any', taskStates: 'any', requiresLaunched: false, lockChecked: false, startTask: null, steps: [], final: 'unchanged', success: 202, until: '2.44' },
  removeFloatingIp: { instanceAction: 'removeFloatingIp', vmStates: 'any', taskStates: 'any', requiresLaunched: false, lockChecked: false, startTask: null, steps: [], final: 'unchanged', success: 202, until: '2.44' },
  // Admins force a state (Nova's os-resetState): no instance action is recorded, as in Nova.
  'os-resetState': { instanceAction: 'resetState', vmStates: 'any', taskStates: 'any', requiresLaunched: false, lockChecked: false, startTask: null, steps: [], final: 'unchanged', success: 202, adminOnly: true },
  addSecurityGroup: { instanceAction: 'addSecurityGroup', vmStates: 'any', taskStates: 'any', requiresLaunched: false, lockChecked: false, startTask: null, steps: [], final: 'unchanged', success: 202 },
  removeSecurityGroup: { instanceAction: 'removeSecurityGroup', vmStates: 'any', taskStates: 'any', requiresLaunched: false, lockChecked: false, startTask: null, steps: [], final: 'unchanged', success: 202 },
} as const satisfies Record<string, ActionRule>

export type ServerActionName = keyof typeof SERVER_ACTIONS

/** The part of a server row the state checks read. */
export interface ServerStateView {
  id: string
  vmState: string
  taskState: string | null
  powerState: number
  launchedAt: number | null
  host: string | null
  locked: boolean
}

/** Why an action is refused, in Nova's words; undefined when it is allowed. */
export function refusal(action: ServerActionName, server: ServerStateView, lockOverride: boolean): string | undefined {
  return ruleRefusal(SERVER_ACTIONS[action], server, lockOverride)
}

type StateRule = Pick<ActionRule, 'instanceAction' | 'vmStates' | 'taskStates' | 'requiresLaunched' | 'requiresHost' | 'lockChecked'>

function ruleRefusal(rule: StateRule, server: ServerStateView, lockOverride: boolean): string | undefined {
  const name = rule.instanceAction
  if (rule.lockChecked && server.locked && !lockOverride) return `Instance ${server.id} is locked`
  if (rule.vmStates !== 'any' && !rule.vmStates.includes(server.vmState as VmState)) {
    return `Cannot '${name}' instance ${server.id} while it is in vm_state ${server.vmState}`
  }
  const taskStates = rule.taskStates ?? [null]
  if (taskStates !== 'any' && !taskStates.includes(server.taskState)) {
    return `Cannot '${name}' instance ${server.id} while it is in task_state ${server.taskState}`
  }
  if (rule.requiresLaunched && server.launchedAt === null) return `Cannot '${name}' instance ${server.id} while it is in launched_at None`
  if (rule.requiresHost && !server.host) return `Cannot '${name}' instance ${server.id} while it is in host None`
  return undefined
}

/**
 * Volume operations on a server (os-volume_attachments): Nova's check_instance_state of attach, detach and swap.
 * They set no task state; the conductor connects or disconnects the volume on the host (docs/compute.md).
 * Shelved servers accept attach and detach from 2.20 (`shelvedSince`).
 */
export const VOLUME_OPERATIONS = {
  attach_volume: { instanceAction: 'attach_volume', vmStates: ['active', 'paused', 'stopped', 'resized', 'soft-delete', 'shelved', 'shelved_offloaded'], requiresLaunched: true, lockChecked: true, shelvedSince: '2.20' },
  detach_volume: { instanceAction: 'detach_volume', vmStates: ['active', 'paused', 'stopped', 'resized', 'soft-delete', 'shelved', 'shelved_offloaded'], requiresLaunched: true, lockChecked: true, shelvedSince: '2.20' },
  swap_volume: { instanceAction: 'swap_volume', vmStates: ['active', 'paused', 'resized'], requiresLaunched: true, lockChecked: true },
} as const satisfies Record<string, StateRule & { shelvedSince?: string }>

export type VolumeOperation = keyof typeof VOLUME_OPERATIONS

/** Why a volume operation is refused (409), in Nova's words; `shelvedAllowed` is whether the request's version allows shelved servers. */
export function volumeOperationRefusal(operation: VolumeOperation, server: ServerStateView, lockOverride: boolean, shelvedAllowed: boolean): string | undefined {
  const rule = VOLUME_OPERATIONS[operation]
  const vmStates: readonly VmState[] = 'shelvedSince' in rule && !shelvedAllowed ? rule.vmStates.filter((s) => !s.startsWith('shelved')) : rule.vmStates
  return ruleRefusal({ ...rule, vmStates }, server, lockOverride)
}

/** The vm_state an action ends in, given the state the server was in when it started. */
export function finalVmState(action: ServerActionName, before: { vmState: string; powerState: number }): VmState {
  const final: FinalState = SERVER_ACTIONS[action].final
  if (final === 'unchanged') return before.vmState as VmState
  if (final === 'as-powered') return before.vmState === 'stopped' || before.powerState === POWER.SHUTDOWN ? 'stopped' : 'active'
  return final
}

/** The power state that goes with a resting vm_state. */
export const RESTING_POWER: Record<VmState, PowerState> = {
  active: POWER.RUNNING,
  building: POWER.NOSTATE,
  paused: POWER.PAUSED,
  suspended: POWER.SUSPENDED,
  stopped: POWER.SHUTDOWN,
  rescued: POWER.RUNNING,
  resized: POWER.RUNNING,
  'soft-delete': POWER.SHUTDOWN,
  deleted: POWER.NOSTATE,
  error: POWER.NOSTATE,
  shelved: POWER.SHUTDOWN,
  shelved_offloaded: POWER.SHUTDOWN,
}

/** The create sequence: vm_state building with these task states, then active with task_state null. */
export const BUILD_STEPS = ['scheduling', 'networking', 'block_device_mapping', 'spawning'] as const
