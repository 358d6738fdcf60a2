/**
 * The everyday reads (issue 30), each next to bare node:http answering the very same bytes in the same run:
 * GET /servers/{id}, /servers/detail?limit=1, /flavors/detail, /networks/{id}, /ports?network_id=,
 * /volumes/{id}, /images/{id}, and the detail list of 1,000 servers at 10,000. The pcc figure and its bare
 * ceiling are measured one right after the other, so their ratio holds on a loaded machine even when the
 * absolute figures do not. SQLite and PostgreSQL (BENCH_DIALECTS=sqlite,postgres; PostgreSQL from
 * PCC_TEST_PG_URL or a private embedded server). Load from wrk when installed (bench/load.ts), concurrency 8,
 * after a second of warm-up, in BENCH_ROUNDS rounds (3) of BENCH_DURATION_S seconds (2) of pcc then bare: each
 * row gives the median round, so a change of the machine's pace during one round does not decide the ratio.
 * About 4 minutes for both dialects.
 * Run alone: `node dist/bench/reads.bench.js`; BENCH_ONLY=REGEX keeps the figures whose path matches;
 * BENCH_VIEW_CACHE_MB=0 runs pcc keeping no rendered servers (PCC_VIEW_CACHE_MB), to see what the cache saves.
 */
import { pathToFileURL } from 'node:url'
import { startTestServer, type Dialect, type TestServer } from '../src/testkit/harness.js'
import { apiCall } from '../src/testkit/compute-api.js'
import { newId } from '../src/server/bootstrap/bootstrap.js'
import { defaultImageName } from '../src/server/image/default-image.js'
import type { BenchRow, BenchRun } from './harness.js'
import { runLoad, type LoadResult } from './load.js'
import { bareBodyServer } from './procs.js'
import { seedServers } from './seed-servers.js'

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 2)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const CONNECTIONS = 8
const DIALECTS = (process.env.BENCH_DIALECTS ?? 'sqlite,postgres').split(',') as Dialect[]
const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined

export interface Read {
  /** As the row shows it. */
  name: string
  path: string
  headers: Record<string, string>
  /** Ratio to reach, pcc / bare (req/s); for the big detail list, bare / pcc p50 latency. */
  goal: number
  latency?: boolean
}

function measure(url: string, headers: Record<string, string>): Promise<LoadResult> {
  return runLoad({ url, method: 'GET', connections: CONNECTIONS, durationS: DURATION_S, headers })
}

/** A project of 10,000 servers for the big detail list, and its member token. */
async function bigProject(server: TestServer): Promise<string> {
  const db = server.deps.store.db
  const projectId = newId()
  await db.insertInto('projects').values({ id: projectId, domain_id: 'default', parent_id: 'default', name: 'bench-reads', description: '', enabled: 1, options: '{}', extra: '{}', created_at: Date.now() }).execute()
  const userId = server.bootstrap.adminUserId
  const member = await db.selectFrom('roles').select('id').where('name', '=', 'member').executeTakeFirstOrThrow()
  await db.insertInto('role_assignments').values({ actor_type: 'user', actor_id: userId, target_type: 'project', target_id: projectId, role_id: member.id, inherited: 0 }).execute()
  await seedServers(db, projectId, userId, 10_000, 1)
  return (await server.deps.tokens.issue({ userId, methods: ['password'], scope: { p: projectId } })).token
}

/** One server, network, port and volume in the admin project, made through the API; answers the reads (a profile script uses them too). */
export async function reads(server: TestServer): Promise<Read[]> {
  const db = server.deps.store.db
  const userId = server.bootstrap.adminUserId
  const project = server.bootstrap.adminProjectId
  const token = (await server.deps.tokens.issue({ userId, methods: ['password'], scope: { p: project } })).token
  const auth = { 'x-auth-token': token }
  const make = async (path: string, body: unknown, key: string): Promise<string> => {
    const r = await apiCall(`${server.url}${path}`, 'POST', { token, body })
    if (r.status >= 300) throw new Error(`POST ${path}: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body[key].id as string
  }
  const serverId = await seedServers(db, project, userId, 20, 50_000)
  const networkId = await make('/network/v2.0/networks', { network: { name: 'bench-reads' } }, 'network')
  await make('/network/v2.0/subnets', { subnet: { network_id: networkId, cidr: '10.77.0.0/24', ip_version: 4 } }, 'subnet')
  for (let i = 0; i < 3; i++) await make('/network/v2.0/ports', { port: { network_id: networkId, name: `bench-${i}` } }, 'port')
  const volumeId = await make(`/volume/v3/${project}/volumes`, { volume: { size: 1, name: 'bench-reads' } }, 'volume')
  const image = await db.selectFrom('images').select('id').where('name', '=', defaultImageName()).executeTakeFirstOrThrow()
  const compute = { ...auth, 'openstack-api-version': 'compute 2.96' }
  // 10,000 servers take a while to write: only when that figure is wanted.
  const bigToken = ONLY && !ONLY.test('/compute/v2.1/servers/detail?limit=1000') ? '' : await bigProject(server)
  return [
    { name: 'GET /compute/v2.1/servers/{id} (2.96)', path: `/compute/v2.1/servers/${serverId}`, headers: compute, goal: 0.4 },
    { name: 'GET /compute/v2.1/servers/detail?limit=1', path: '/compute/v2.1/servers/detail?limit=1', headers: compute, goal: 0.4 },
    { name: 'GET /compute/v2.1/flavors/detail', path: '/compute/v2.1/flavors/detail', headers: compute, goal: 0.4 },
    { name: 'GET /network/v2.0/networks/{id}', path: `/network/v2.0/networks/${networkId}`, headers: auth, goal: 0.4 },
    { name: 'GET /network/v2.0/ports?network_id= (3 ports)', path: `/network/v2.0/ports?network_id=${networkId}`, headers: auth, goal: 0.4 },
    { name: 'GET /volume/v3/{project}/volumes/{id}', path: `/volume/v3/${project}/volumes/${volumeId}`, headers: auth, goal: 0.4 },
    { name: 'GET /image/v2/images/{id}', path: `/image/v2/images/${image.id}`, headers: auth, goal: 0.4 },
    {
      name: 'GET /compute/v2.1/servers/detail?limit=1000, 10,000 servers',
      path: '/compute/v2.1/servers/detail?limit=1000',
      headers: { 'x-auth-token': bigToken, 'openstack-api-version': 'compute 2.96' },
      goal: 0.5,
      latency: true,
    },
  ]
}

async function measureRead(server: TestServer, dialect: Dialect, read: Read): Promise<BenchRow[]> {
  const url = `${server.url}${read.path}`
  // Once before measuring: the answer for the bare server, and any cache warm as it is after the first poll.
  const first = await fetch(url, { headers: read.headers })
  const body = await first.text()
  if (first.status !== 200) throw new Error(`${read.name}: ${first.status} ${body}`)
  // A second of load first: the figure is of a warm process (compiled code, statements prepared, the WAL of the
  // seeding checkpointed), as a server polled all day is, not of its first second.
  await runLoad({ url, method: 'GET', connections: CONNECTIONS, durationS: 1, headers: read.headers })
  // pcc and bare alternate, the bare server up throughout: what slows the machine for a while falls on both.
  const bare = await bareBodyServer(body)
  const rounds: { pcc: LoadResult; ceiling: LoadResult; ratio: number }[] = []
  try {
    for (let i = 0; i < ROUNDS; i++) {
      const pcc = await measure(url, read.headers)
      const ceiling = await measure(bare.url, {})
      rounds.push({ pcc, ceiling, ratio: read.latency ? ceiling.p50Ms / Math.max(pcc.p50Ms, 0.001) : pcc.rps / Math.max(ceiling.rps, 1) })
    }
  } finally {
    await bare.close()
  }
  const { pcc, ceiling, ratio } = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor(rounds.length / 2)]
  const spread = rounds.map((r) => r.ratio.toFixed(2)).join(', ')
  const size = body.length >= 1048576 ? `${(body.length / 1048576).toFixed(1)} MiB` : `${(body.length / 1024).toFixed(1)} KiB`
  const figure = `${read.name}, ${dialect}`
  const errors = pcc.errors ? `; ${pcc.errors} errors` : ''
  return [
    { figure, value: Math.round(pcc.rps), unit: 'req/s', note: `p50 ${pcc.p50Ms} ms${errors}; body ${size}; load: ${pcc.generator}` },
    { figure: `bare node:http, same body (${size})`, value: Math.round(ceiling.rps), unit: 'req/s', note: `p50 ${ceiling.p50Ms} ms` },
    {
      figure: read.latency ? `${read.name}, ${dialect}: bare p50 / pcc p50` : `${read.name}, ${dialect}: pcc / bare`,
      value: Math.round(ratio * 1000) / 1000,
      unit: 'ratio',
      target: `>= ${read.goal}`,
      note: `median of ${ROUNDS} rounds: ${spread}`,
    },
  ]
}

export const run: BenchRun = async () => {
  const rows: BenchRow[] = []
  for (const dialect of DIALECTS) {
    const viewCache: Record<string, string> = process.env.BENCH_VIEW_CACHE_MB === undefined ? {} : { PCC_VIEW_CACHE_MB: process.env.BENCH_VIEW_CACHE_MB }
    const server = await startTestServer({ dialect, env: { PCC_RECONCILE_SECONDS: '0', ...viewCache } })
    try {
      await server.deps.runner.stop(0)
      server.deps.conductor.stop()
      for (const read of await reads(server)) if (!ONLY || ONLY.test(read.path)) rows.push(...(await measureRead(server, dialect, read)))
    } finally {
      await server.close()
    }
  }
  return rows
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rows = await run()
  for (const row of rows) console.log(`${row.figure}: ${row.value} ${row.unit}${row.target ? ` (target ${row.target})` : ''}${row.note ? ` — ${row.note}` : ''}`)
  process.exit(0)
}
