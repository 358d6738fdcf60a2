/**
 * Conductor throughput: servers reaching ACTIVE per second with the simulated driver at zero delay (every
 * task state, event and claim still written), and scheduler decisions per second over 1,000 hosts.
 * `PCC_BENCH_DIALECT=postgres` runs the first figure on PostgreSQL (needs PCC_TEST_PG_URL).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BenchRow, BenchRun } from './harness.js'
import { freshDatabase } from '../src/testkit/postgres.js'
import { openStore } from '../src/server/storage/store.js'
import { migrate } from '../src/server/storage/migrations/index.js'
import { SqlTaskQueue } from '../src/server/tasks/sql-queue.js'
import type { AppDeps } from '../src/server/deps.js'
import { startTestServer } from '../src/testkit/harness.js'
import { seedCreate, waitFor } from '../src/testkit/compute-seed.js'
import { Scheduler } from '../src/server/scheduler/scheduler.js'
import type { HostState } from '../src/server/scheduler/host-state.js'
import type { RequestSpec } from '../src/server/scheduler/request-spec.js'
import type { Store } from '../src/server/storage/store.js'

async function activePerSecond(total: number): Promise<BenchRow[]> {
  const dialect = process.env.PCC_BENCH_DIALECT === 'postgres' ? 'postgres' : 'sqlite'
  const dataDir = mkdtempSync(join(tmpdir(), 'pcc-bench-'))
  const databaseUrl = dialect === 'postgres' ? await freshDatabase() : ''
  // Accept every create first (rows, actions and build tasks committed, as the API does), in requests of 10,
  // so the figure measures the conductor and not the cost of accepting.
  const store = await openStore({ dataDir, databaseUrl })
  await migrate(store)
  const seedDeps = { store, queue: new SqlTaskQueue(store, { leaseMs: 30_000 }), runner: { wake() {} } } as unknown as AppDeps
  for (let i = 0; i < total / 10; i++) await seedCreate(seedDeps, { count: 10, name: `b${i}` })
  await store.close()

  const server = await startTestServer({ dataDir, databaseUrl, env: { PCC_SIMULATED_HOSTS: '20', PCC_SIMULATED_DELAY_MS: '0', PCC_RECONCILE_SECONDS: '0', PCC_TASK_WORKERS: '32' } })
  try {
    const db = server.deps.store.db
    const count = async (vm: string) => Number((await db.selectFrom('servers').select((eb) => eb.fn.countAll<number>().as('n')).where('vm_state', '=', vm).executeTakeFirstOrThrow()).n)
    const started = Date.now()
    const cpuStart = process.cpuUsage()
    const activeAtStart = await count('active')
    await waitFor(async () => ((await count('building')) === 0 ? true : undefined), 20_000, 20)
    const seconds = (Date.now() - started) / 1000
    const cpu = process.cpuUsage(cpuStart)
    const cpuSeconds = (cpu.user + cpu.system) / 1e6
    const active = (await count('active')) - activeAtStart
    // The machine is shared: the CPU time this process used tells what one idle core would do.
    return [
      { figure: `servers reaching ACTIVE, ${total} accepted creates (requests of 10), zero driver delay, ${dialect}`, value: Math.round(active / seconds), unit: 'servers/s', target: '>= 300 servers/s' },
      { figure: `same, per CPU-second of the server process (${dialect})`, value: Math.round(active / cpuSeconds), unit: 'servers/CPU-s', note: 'wall-clock figure depends on the load of the shared machine' },
    ]
  } finally {
    await server.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

function syntheticHosts(n: number): HostState[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `host-${i}`, hostname: `host-${i}`, availabilityZone: i % 3 === 0 ? 'az1' : 'nova', cell: `cell${i % 4}`, ips: [`10.${i >> 8}.${i & 255}.1`],
    vcpus: 64, memoryMb: 262144, diskGb: 4000, cpuRatio: 4, ramRatio: 1.5, diskRatio: 1,
    vcpusUsed: (i * 7) % 200, memoryMbUsed: (i * 4099) % 300000, diskGbUsed: (i * 13) % 3000, runningVms: i % 50,
    up: i % 97 !== 0, enabled: i % 89 !== 0, hypervisor: true, hypervisorType: 'QEMU', aggregateMetadata: {}, facts: '{}',
  }))
}

function decisionsPerSecond(hosts: HostState[], withQuery: boolean): BenchRow {
  const scheduler = new Scheduler({} as Store, { downAfterMs: 60_000, weigher: 'spread' })
  const spec: RequestSpec = {
    serverId: 's', projectId: 'p', resources: { vcpus: 2, memoryMb: 4096, diskGb: 40 }, extraSpecs: {}, availabilityZone: 'nova', forcedHost: null, forcedNode: null,
    hints: withQuery ? { query: JSON.stringify(['and', ['>=', '$free_ram_mb', 8192], ['<', '$num_instances', 40]]), different_cell: 'cell3' } : {},
    group: null, instanceHosts: new Map(), ignoreHosts: new Set(), imagesType: null,
  }
  let decisions = 0
  const started = process.hrtime.bigint()
  const deadline = started + 2_000_000_000n
  while (process.hrtime.bigint() < deadline) {
    for (let i = 0; i < 20; i++) {
      const chosen = scheduler.select(hosts, spec).hosts[0]
      if (!chosen) throw new Error('no host chosen')
      decisions++
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  return { figure: `scheduler decisions (filter + weigh), 1,000 hosts${withQuery ? ', JSON query + cell hints' : ''}`, value: Math.round(decisions / seconds), unit: 'decisions/s' }
}

async function placementsPerSecond(): Promise<BenchRow> {
  // Placement with the claim transaction, against 1,000 host rows in the store.
  const server = await startTestServer({ env: { PCC_SIMULATED_HOSTS: '0', PCC_RECONCILE_SECONDS: '0' } })
  try {
    const { registerHost } = await import('../src/server/hosts/host-protocol.js')
    const db = server.deps.store.db
    for (let i = 0; i < 1000; i++) {
      await registerHost(db, { hostname: `bench-${i}`, kind: 'simulated', driver: 'simulated', vcpus: 64, memoryMb: 262144, diskGb: 4000, roles: { hypervisor: 'ok' } })
    }
    const scheduler = server.deps.conductor.scheduler
    const hosts = await scheduler.loadHosts()
    let n = 0
    const started = Date.now()
    while (Date.now() - started < 2000) {
      const spec: RequestSpec = {
        serverId: `srv-${n}`, projectId: 'p', resources: { vcpus: 1, memoryMb: 512, diskGb: 1 }, extraSpecs: {}, availabilityZone: null, forcedHost: null, forcedNode: null,
        hints: {}, group: null, instanceHosts: new Map(), ignoreHosts: new Set(), imagesType: null,
      }
      await scheduler.placeAll([spec], async () => {}, hosts)
      n++
    }
    return { figure: 'scheduler placements with claim transaction, 1,000 hosts, sqlite', value: Math.round(n / ((Date.now() - started) / 1000)), unit: 'placements/s' }
  } finally {
    await server.close()
  }
}

export const run: BenchRun = async () => {
  const hosts = syntheticHosts(1000)
  return [...(await activePerSecond(Number(process.env.PCC_BENCH_SERVERS ?? 1000))), decisionsPerSecond(hosts, false), decisionsPerSecond(hosts, true), await placementsPerSecond()]
}

// Run directly: node dist/bench/conductor.bench.js
if (import.meta.url === `file://${process.argv[1]}`) {
  run().then((rows) => console.table(rows), (err) => {
    console.error(err)
    process.exit(1)
  })
}
