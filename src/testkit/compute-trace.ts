/**
 * Test helpers that watch a server row change: the states it went through (polled), its instance actions
 * with events, its faults, and the capacity bookkeeping of every host.
 */
import type { Db } from '../server/storage/store.js'
import type { ServerTable } from '../server/storage/tables/compute.js'

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
