/**
 * The high-availability mixed workload: token validation, server list, server show and server create in equal
 * parts (each connection cycles through the four), sent round-robin to one, two and three pcc-server processes
 * on one PostgreSQL, and to one process on SQLite. Every process is a real `node dist/src/server/main.js`
 * (src/testkit/cluster.ts) with 10 instant simulated hosts; autocannon runs one instance per process at once,
 * and the figure is the sum of their 2xx answers per second.
 * On the 2-core development machine the processes and the load generator share the same two cores, so more
 * processes mostly show the coordination cost, not a speed-up; on separate machines each adds its own cores.
 * Run alone: `node dist/bench/ha-mixed.bench.js`.
 */
import { pathToFileURL } from 'node:url'
import autocannon from 'autocannon'
import { startCluster, type Cluster } from '../src/testkit/cluster.js'
import { bootImage, call, compute, createBody, issueToken, liftQuotas, smallestFlavor } from '../test/ha/helpers.js'
import type { BenchRow, BenchRun } from './harness.js'

const DURATION_S = Math.min(Number(process.env.BENCH_DURATION_S ?? 6), 10)
const CONNECTIONS = 12

async function measure(cluster: Cluster): Promise<{ rps: number; errors: number; p50: number }> {
  const first = cluster.nodes[0]
  const { token, projectId } = await issueToken(first, cluster.adminPassword)
  const flavor = await smallestFlavor(first, token)
  const image = await bootImage(cluster, token)
  await liftQuotas(first, token, projectId)
  const seed = await call(compute(first), 'POST', '/servers', { token, body: createBody('bench-seed', flavor, image) })
  if (seed.status !== 202) throw new Error(`seed create: ${seed.status} ${JSON.stringify(seed.body)}`)
  const serverId = seed.body.server.id as string
  const nova = { 'x-auth-token': token, 'openstack-api-version': 'compute 2.60' }
  const requests: { method: string; path: string; headers: Record<string, string>; body?: string }[] = [
    { method: 'GET', path: '/identity/v3/auth/tokens', headers: { 'x-auth-token': token, 'x-subject-token': token } },
    { method: 'GET', path: '/compute/v2.1/servers?limit=50', headers: nova },
    { method: 'GET', path: `/compute/v2.1/servers/${serverId}`, headers: nova },
    { method: 'POST', path: '/compute/v2.1/servers', headers: { ...nova, 'content-type': 'application/json' }, body: JSON.stringify(createBody('bench', flavor, image)) },
  ]
  const perNode = Math.max(1, Math.round(CONNECTIONS / cluster.nodes.length))
  const results = await Promise.all(
    cluster.nodes.map((node) => autocannon({ url: node.url, connections: perNode, duration: DURATION_S, workers: 1, requests })),
  )
  const ok = results.reduce((n, r) => n + r['2xx'], 0)
  const errors = results.reduce((n, r) => n + r.non2xx + r.errors + r.timeouts, 0)
  const p50 = Math.max(...results.map((r) => r.latency.p50))
  return { rps: ok / DURATION_S, errors, p50 }
}

export const run: BenchRun = async () => {
  const rows: BenchRow[] = []
  const configs: { label: string; size: number; dialect: 'postgres' | 'sqlite' }[] = [
    { label: 'SQLite, 1 process', size: 1, dialect: 'sqlite' },
    { label: 'PostgreSQL, 1 process', size: 1, dialect: 'postgres' },
    { label: 'PostgreSQL, 2 processes', size: 2, dialect: 'postgres' },
    { label: 'PostgreSQL, 3 processes', size: 3, dialect: 'postgres' },
  ]
  for (const config of configs) {
    const cluster = await startCluster({
      size: config.size,
      dialect: config.dialect,
      env: { PCC_SIMULATED_HOSTS: '10', PCC_SIMULATED_DELAY_MS: '0', PCC_LOG_LEVEL: 'error' },
    })
    try {
      const r = await measure(cluster)
      rows.push({
        figure: `mixed validate/list/show/create, ${config.label}, concurrency ${CONNECTIONS}`,
        value: Math.round(r.rps),
        unit: 'req/s',
        note: `${DURATION_S} s; worst p50 ${r.p50} ms; ${r.errors} errors`,
      })
    } finally {
      await cluster.close()
    }
  }
  return rows
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const row of await run()) console.log(`${row.figure}: ${row.value} ${row.unit} (${row.note})`)
}
