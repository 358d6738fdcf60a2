/**
 * `server list` as a user runs it, one cold process per call: pcctl (the installed bundle, dist/release/pcctl.mjs,
 * and the unbundled dist/src/cli/main.js) against `openstack server list`, with the same OS_* environment, on a
 * server with 50 ACTIVE servers (simulated hypervisor without delays, SQLite, in this process). Runs alternate
 * between the clients so a busy machine slows them alike; medians of RUNS calls each. About 30 s in all.
 * pcctl reuses the token of its previous run (as kubectl does) unless PCCTL_TOKEN_CACHE=off; openstack logs in on
 * every call. Both are measured: the default, and pcctl logging in every time as a user's first call does.
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../src/testkit/harness.js'
import { adminEnv } from '../src/testkit/openstack.js'
import type { BenchRow, BenchRun } from './harness.js'
import { median } from './procs.js'

const SERVERS = 50
const RUNS = 7
const BUNDLE = fileURLToPath(new URL('../release/pcctl.mjs', import.meta.url))
const MAIN = fileURLToPath(new URL('../src/cli/main.js', import.meta.url))

interface Client {
  figure: string
  command: string
  args: string[]
  times: number[]
  env?: Record<string, string>
}

/** Milliseconds from spawn to exit; fails unless the list printed every server. */
function timeOnce(client: Client, env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(client.command, client.args, { env: { ...env, ...client.env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d))
    child.stderr.on('data', (d: Buffer) => (err += d))
    child.on('error', reject)
    child.on('exit', (code) => {
      const elapsed = performance.now() - started
      const rows = out.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| ID ')).length
      if (code !== 0 || rows !== SERVERS) reject(new Error(`${client.figure}: exit ${code}, ${rows} rows: ${err.slice(0, 300)}`))
      else resolve(elapsed)
    })
  })
}

async function seed(server: TestServer): Promise<void> {
  const token = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'x-auth-token': token, 'openstack-api-version': 'compute 2.96', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${await res.text()}`)
    return res.json() as Promise<Record<string, unknown>>
  }
  await call('PUT', `/compute/v2.1/os-quota-sets/${server.bootstrap.adminProjectId}`, { quota_set: { instances: -1, cores: -1, ram: -1 } })
  const images = (await call('GET', '/image/v2/images')).images as { id: string }[]
  for (let i = 0; i < SERVERS; i++) {
    await call('POST', '/compute/v2.1/servers', { server: { name: `bench-${i}`, imageRef: images[0].id, flavorRef: '1', networks: 'none' } })
  }
  // Wait for the builds, so both clients list the same 50 ACTIVE servers.
  for (const deadline = Date.now() + 60_000; ; ) {
    const { servers } = (await call('GET', '/compute/v2.1/servers/detail')) as { servers: { status: string }[] }
    if (servers.filter((s) => s.status === 'ACTIVE').length === SERVERS) break
    if (Date.now() > deadline) throw new Error('servers did not become ACTIVE')
    await new Promise((r) => setTimeout(r, 200))
  }
}

/** The password login as the server answers it (scrypt), median of RUNS: the part of every call no client can skip. */
async function loginTime(server: TestServer): Promise<number> {
  const body = JSON.stringify({
    auth: {
      identity: { methods: ['password'], password: { user: { name: 'admin', domain: { id: 'default' }, password: ADMIN_PASSWORD } } },
      scope: { project: { name: 'admin', domain: { id: 'default' } } },
    },
  })
  const times: number[] = []
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now()
    const res = await fetch(`${server.url}/identity/v3/auth/tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    await res.text()
    if (res.status !== 201) throw new Error(`login answered ${res.status}`)
    times.push(performance.now() - started)
  }
  return median(times)
}

export const run: BenchRun = async () => {
  const server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '3', PCC_SIMULATED_DELAY_MS: '0', PCC_RECONCILE_SECONDS: '0' } })
  const home = mkdtempSync(join(tmpdir(), 'pcctl-bench-'))
  try {
    await seed(server)
    // A scratch home: pcctl's log and openstack's caches stay out of the user's.
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...adminEnv(server) }
    const bundle: Client = { figure: 'pcctl server list (bundle, dist/release/pcctl.mjs; token of the previous run)', command: process.execPath, args: [BUNDLE, 'server', 'list'], times: [] }
    const loggingIn: Client = { ...bundle, figure: 'pcctl server list (bundle, logging in: PCCTL_TOKEN_CACHE=off)', times: [], env: { PCCTL_TOKEN_CACHE: 'off' } }
    const unbundled: Client = { figure: 'pcctl server list (dist/src/cli/main.js)', command: process.execPath, args: [MAIN, 'server', 'list'], times: [] }
    const osc: Client = { figure: 'openstack server list', command: 'openstack', args: ['server', 'list'], times: [] }
    const baseline: Client = { figure: 'node -e 0 (Node start-up alone)', command: process.execPath, args: ['-e', '0'], times: [] }
    const installed = !spawnSync('openstack', ['--version'], { env }).error
    const clients = installed ? [bundle, loggingIn, unbundled, osc] : [bundle, loggingIn, unbundled]
    // One untimed call each: the first start reads the files from disk, later ones from the page cache.
    for (const client of clients) await timeOnce(client, env)
    for (let i = 0; i < RUNS; i++) {
      for (const client of clients) client.times.push(await timeOnce(client, env))
      const started = performance.now()
      await new Promise((resolve) => spawn(baseline.command, baseline.args).on('exit', resolve))
      baseline.times.push(performance.now() - started)
    }
    const note = `${SERVERS} servers, ${RUNS} cold processes each, median`
    const rows: BenchRow[] = [bundle, loggingIn, unbundled, baseline].map((c) => ({ figure: c.figure, value: Math.round(median(c.times)), unit: 'ms', note }))
    rows.push({ figure: 'server side of every call: POST /auth/tokens (scrypt password check)', value: Math.round(await loginTime(server)), unit: 'ms', note: 'openstack logs in on every call; pcctl on its first' })
    if (!installed) {
      rows.push({ figure: 'openstack server list', value: 0, unit: 'ms', note: 'openstack is not installed (apt-get install python3-openstackclient): no comparison' })
      return rows
    }
    rows.push({ figure: osc.figure, value: Math.round(median(osc.times)), unit: 'ms', note })
    rows.push({
      figure: 'pcctl bundle time / openstack time',
      value: Math.round((median(bundle.times) / median(osc.times)) * 100) / 100,
      unit: 'ratio',
      target: '<= 0.2',
      note: `pcctl ${Math.round(median(bundle.times))} ms vs openstack ${Math.round(median(osc.times))} ms`,
    })
    rows.push({
      figure: 'pcctl bundle time, logging in / openstack time',
      value: Math.round((median(loggingIn.times) / median(osc.times)) * 100) / 100,
      unit: 'ratio',
      note: `a first call: pcctl ${Math.round(median(loggingIn.times))} ms vs openstack ${Math.round(median(osc.times))} ms`,
    })
    return rows
  } finally {
    await server.close()
    rmSync(home, { recursive: true, force: true })
  }
}
