/**
 * Compute API on one SQLite server, concurrency 8, loopback: GET /servers/detail?limit=1000 with 10,000 servers
 * in the project, GET /servers?limit=100 with 100,000 servers in the project, GET /servers/{id}, and accepted
 * creates/s (POST /servers answered 202: rows, instance action and build task committed; no conductor runs).
 * Rows are seeded in bulk straight into the store. About 20 s in all.
 */
import { createRequire } from 'node:module'
import { startTestServer } from '../src/testkit/harness.js'
import { newId } from '../src/server/bootstrap/bootstrap.js'
import { defaultImageName } from '../src/server/image/default-image.js'
import type { BenchRow, BenchRun } from './harness.js'
import { bareBodyServer } from './procs.js'
import { seedServers } from './seed-servers.js'

interface AutocannonResult {
  requests: { average: number }
  latency: { p50: number; p99: number }
  non2xx: number
  errors: number
}
type Autocannon = (opts: { url: string; connections: number; duration: number; workers?: number; method?: string; headers?: Record<string, string>; body?: string }) => Promise<AutocannonResult>

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon
const CONNECTIONS = 8
const SECONDS = 4
/** autocannon in a worker thread, so the load generator does not share the server's event loop. */
const WORKERS = 1

function row(figure: string, result: AutocannonResult, unit: 'ms p50' | 'req/s', target?: string): BenchRow {
  const failed = result.non2xx + result.errors
  return {
    figure: `${figure}, concurrency ${CONNECTIONS}`,
    value: unit === 'ms p50' ? result.latency.p50 : Math.round(result.requests.average),
    unit,
    target,
    note: `${Math.round(result.requests.average)} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms${failed ? `, ${failed} failed` : ''}`,
  }
}

export const run: BenchRun = async () => {
  const server = await startTestServer({ env: { PCC_RECONCILE_SECONDS: '0' } })
  try {
    // Accepted creates are the API's figure: the conductor's builds are measured by its own bench.
    await server.deps.runner.stop(0)
    server.deps.conductor.stop()
    const db = server.deps.store.db
    const projectId = newId()
    await db.insertInto('projects').values({ id: projectId, domain_id: 'default', parent_id: 'default', name: 'bench-detail', description: '', enabled: 1, options: '{}', extra: '{}', created_at: Date.now() }).execute()
    for (const p of [projectId, server.bootstrap.adminProjectId]) {
      for (const resource of ['instances', 'cores', 'ram']) await db.insertInto('quotas').values({ project_id: p, resource, hard_limit: -1 }).execute()
    }
    const userId = server.bootstrap.adminUserId
    const member = await db.selectFrom('roles').select('id').where('name', '=', 'member').executeTakeFirstOrThrow()
    await db.insertInto('role_assignments').values({ actor_type: 'user', actor_id: userId, target_type: 'project', target_id: projectId, role_id: member.id, inherited: 0 }).execute()
    await seedServers(db, projectId, userId, 10_000, 1)
    const oneId = await seedServers(db, server.bootstrap.adminProjectId, userId, 100_000, 20_000)
    const tokenFor = async (p: string) => (await server.deps.tokens.issue({ userId, methods: ['password'], scope: { p } })).token
    const detailHeaders = { 'x-auth-token': await tokenFor(projectId), 'openstack-api-version': 'compute 2.96' }
    const listHeaders = { 'x-auth-token': await tokenFor(server.bootstrap.adminProjectId), 'openstack-api-version': 'compute 2.96' }
    const compute = `${server.url}/compute/v2.1`
    const rows: BenchRow[] = []
    rows.push(row('GET /servers/detail?limit=1000, 10,000 servers', await autocannon({ url: `${compute}/servers/detail?limit=1000`, connections: CONNECTIONS, duration: SECONDS, workers: WORKERS, headers: detailHeaders }), 'ms p50', '< 60 ms p50'))
    // The machine's ceiling for that figure: the same 1,000-server answer from bare node:http, measured the same way.
    const detailBody = await (await fetch(`${compute}/servers/detail?limit=1000`, { headers: detailHeaders })).text()
    const bare = await bareBodyServer(detailBody)
    try {
      const ceiling = row(`bare node:http answering the same detail body (${(detailBody.length / 1048576).toFixed(1)} MiB)`, await autocannon({ url: bare.url, connections: CONNECTIONS, duration: SECONDS, workers: WORKERS }), 'ms p50')
      rows.push({ ...ceiling, note: `the ceiling of this machine for that answer; ${ceiling.note}` })
    } finally {
      await bare.close()
    }
    rows.push(row('GET /servers?limit=100, 100,000 servers', await autocannon({ url: `${compute}/servers?limit=100`, connections: CONNECTIONS, duration: SECONDS, workers: WORKERS, headers: listHeaders }), 'ms p50', '< 5 ms p50'))
    rows.push(row('GET /servers/{id}', await autocannon({ url: `${compute}/servers/${oneId}`, connections: CONNECTIONS, duration: SECONDS, workers: WORKERS, headers: listHeaders }), 'ms p50'))
    const image = await db.selectFrom('images').select('id').where('name', '=', defaultImageName()).executeTakeFirstOrThrow()
    const body = JSON.stringify({ server: { name: 'bench-new', imageRef: image.id, flavorRef: '1', networks: 'none' } })
    const creates = await autocannon({ url: `${compute}/servers`, method: 'POST', connections: CONNECTIONS, duration: SECONDS, workers: WORKERS, headers: { ...listHeaders, 'content-type': 'application/json' }, body })
    rows.push(row('POST /servers accepted (202)', creates, 'req/s', '>= 1000 creates/s'))
    return rows
  } finally {
    await server.close()
  }
}
