/**
 * Test helpers that watch a server change. Through the API, as a user sees it: `traceServerApi` polls
 * `GET /servers/{id}` and records every distinct state (status, vm_state, task_state, power_state, progress),
 * `checkSequence` compares what was seen with the sequence an action must go through. Through the store, for
 * what the API does not show: the row's states, instance actions with events, faults, and the capacity
 * bookkeeping of every host (`capacityProblems`).
 */
import type { Db } from '../server/storage/store.js'
import type { ServerTable } from '../server/storage/tables/compute.js'
import type { ComputeClient } from './compute-api.js'

export interface StateSample {
  vm: string
  task: string | null
  power: number
}

export const label = (s: StateSample) => `${s.vm}/${s.task ?? '-'}`

/** Polls the row every few ms until `done` says so, and returns the distinct states seen in order. */
export async function traceServer(db: Db, serverId: string, done: (s: ServerTable) => boolean, timeoutMs = 20_000): Promise<{ states: StateSample[]; final: ServerTable }> {
  const states: StateSample[] = []
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const row = await db.selectFrom('servers').selectAll().where('id', '=', serverId).executeTakeFirstOrThrow()
    const sample = { vm: row.vm_state, task: row.task_state, power: row.power_state }
    const last = states[states.length - 1]
    if (!last || label(last) !== label(sample)) states.push(sample)
    if (done(row)) return { states, final: row }
    if (Date.now() > deadline) throw new Error(`server ${serverId} did not finish; states seen: ${states.map(label).join(' → ')}`)
    await new Promise((r) => setTimeout(r, 3))
  }
}

/** True when `expected` appears in `seen` in order (other states may sit between, none out of order). */
export function inOrder(seen: string[], expected: string[]): boolean {
  let i = 0
  for (const s of seen) if (i < expected.length && s === expected[i]) i++
  return i === expected.length
}

export async function actionsOf(db: Db, serverId: string) {
  const actions = await db.selectFrom('instance_actions').selectAll().where('server_id', '=', serverId).orderBy('start_time').execute()
  return Promise.all(
    actions.map(async (a) => ({
      ...a,
      events: await db.selectFrom('instance_action_events').selectAll().where('action_id', '=', a.id).orderBy('start_time').execute(),
    })),
  )
}

export async function faultsOf(db: Db, serverId: string) {
  return db.selectFrom('instance_faults').selectAll().where('server_id', '=', serverId).orderBy('created_at').execute()
}

/** Every host's *_used equals the sum of its allocations, and none exceeds capacity × ratio. Returns problems. */
export async function capacityProblems(db: Db): Promise<string[]> {
  const hosts = await db.selectFrom('hosts').selectAll().execute()
  const allocs = await db.selectFrom('allocations').selectAll().execute()
  const problems: string[] = []
  for (const h of hosts) {
    const mine = allocs.filter((a) => a.host_id === h.id)
    const sum = (k: 'vcpus' | 'memory_mb' | 'disk_gb') => mine.reduce((n, a) => n + a[k], 0)
    if (sum('vcpus') !== h.vcpus_used || sum('memory_mb') !== h.memory_mb_used || sum('disk_gb') !== h.disk_gb_used || mine.length !== h.running_vms) {
      problems.push(`${h.hostname}: used ${h.vcpus_used}/${h.memory_mb_used}/${h.disk_gb_used}/${h.running_vms} but allocations ${sum('vcpus')}/${sum('memory_mb')}/${sum('disk_gb')}/${mine.length}`)
    }
    if (h.vcpus_used > h.vcpus * h.cpu_allocation_ratio || h.memory_mb_used > h.memory_mb * h.ram_allocation_ratio || h.disk_gb_used > h.disk_gb * h.disk_allocation_ratio) {
      problems.push(`${h.hostname}: over capacity`)
    }
  }
  return problems
}

/** One state of a server as `GET /servers/{id}` shows it (at a microversion with the OS-EXT-STS fields). */
export interface ApiState {
  status: string
  vm: string
  task: string | null
  power: number
  /** Absent where Nova does not show it (statuses other than ACTIVE, BUILD, REBUILD, RESIZE, VERIFY_RESIZE, MIGRATING). */
  progress?: number
}

export const apiLabel = (s: ApiState) => `${s.status}(${s.vm}/${s.task ?? '-'} power ${s.power}${s.progress === undefined ? '' : ` ${s.progress}%`})`

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type View = Record<string, any>

export function apiState(view: View): ApiState {
  return {
    status: view.status,
    vm: view['OS-EXT-STS:vm_state'],
    task: view['OS-EXT-STS:task_state'],
    power: view['OS-EXT-STS:power_state'],
    ...(view.progress !== undefined && { progress: view.progress }),
  }
}

/**
 * Polls `GET /servers/{id}` back to back until `done` says so (it gets undefined once the server is gone: 404),
 * and returns the distinct states seen in order with the last view. The simulated driver must make each step
 * last well longer than one GET (PCC_SIMULATED_DELAY_MS) for every intermediate state to be seen.
 */
export async function traceServerApi(
  api: ComputeClient,
  serverId: string,
  done: (view: View | undefined) => boolean,
  timeoutMs = 60_000,
): Promise<{ states: ApiState[]; final: View | undefined }> {
  const states: ApiState[] = []
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const view = await api.server(serverId)
    if (view) {
      const sample = apiState(view)
      const last = states[states.length - 1]
      if (!last || apiLabel(last) !== apiLabel(sample)) states.push(sample)
    }
    if (done(view)) return { states, final: view }
    if (Date.now() > deadline) throw new Error(`server ${serverId} did not finish within ${timeoutMs} ms; states seen: ${states.map(apiLabel).join(' → ')}`)
    await new Promise((r) => setTimeout(r, 2))
  }
}

/** A state an action must (or, when `optional`, may) pass through; progress and power are checked when given. */
export interface ExpectedState {
  status: string
  vm: string
  task: string | null
  power?: number
  progress?: number
  /** Too brief to be seen reliably (no hypervisor work happens in it): may be missed. */
  optional?: boolean
}

const matches = (s: ApiState, e: ExpectedState) =>
  s.status === e.status && s.vm === e.vm && s.task === e.task && (e.power === undefined || s.power === e.power) && (e.progress === undefined || s.progress === e.progress)

/**
 * Checks what was seen against the expected sequence: every state seen is one of the expected ones, in order
 * (never back to an earlier one), every state that is not optional was seen, and the last one seen is the
 * sequence's end. Returns what is wrong, with both sequences, or undefined when it all fits.
 */
export function checkSequence(seen: ApiState[], expected: ExpectedState[]): string | undefined {
  const describe = () => `\n  seen:     ${seen.map(apiLabel).join(' → ')}\n  expected: ${expected.map((e) => `${e.status}(${e.vm}/${e.task ?? '-'}${e.power === undefined ? '' : ` power ${e.power}`}${e.progress === undefined ? '' : ` ${e.progress}%`})${e.optional ? '?' : ''}`).join(' → ')}`
  let at = 0
  const hit = new Set<number>()
  for (const s of seen) {
    let i = at
    while (i < expected.length && !matches(s, expected[i])) i++
    if (i === expected.length) return `unexpected state ${apiLabel(s)}${describe()}`
    hit.add(i)
    at = i
  }
  const missed = expected.findIndex((e, i) => !e.optional && !hit.has(i))
  if (missed >= 0) return `state ${expected[missed].status}(${expected[missed].vm}/${expected[missed].task ?? '-'}) was never seen${describe()}`
  if (!hit.has(expected.length - 1) || at !== expected.length - 1) return `did not end in the last expected state${describe()}`
  return undefined
}
