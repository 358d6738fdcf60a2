/**
 * Agent heartbeats the control plane absorbs: 5,000 registered agent hosts (credentials in the store), each
 * heartbeat a real HTTP POST /resmgr/v1/hosts/{id}/heartbeat with its host credential, capacity and guest list
 * (steady state: unchanged). The server runs as its own process on SQLite so its CPU time (utime + stime from
 * /proc) is measured alone. Two figures: the CPU share at the target rate (5,000 hosts every 10 s = 500/s) and
 * the most heartbeats/s it takes with 16 connections. About 15 s in all.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { registerHost, setHostRole } from '../src/server/hosts/host-protocol.js'
import { sha256 } from '../src/server/onboarding/onboarding-service.js'
import { openStore } from '../src/server/storage/store.js'
import { freePort } from '../src/testkit/harness.js'
import type { BenchRow, BenchRun } from './harness.js'
import { spawnPcc } from './procs.js'

interface AutocannonRequest {
  method?: string
  path?: string
  headers?: Record<string, string>
  body?: string
  setupRequest?: (req: AutocannonRequest) => AutocannonRequest
}
interface AutocannonResult {
  requests: { average: number; total: number }
  latency: { p50: number; p99: number }
  non2xx: number
  errors: number
}
type Autocannon = (opts: { url: string; connections: number; duration: number; overallRate?: number; requests?: AutocannonRequest[] }) => Promise<AutocannonResult>

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon
const HOSTS = 5000
const TARGET_RATE = 500

function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  // utime and stime are fields 14 and 15 of the whole line (11 and 12 after the command name), in 1/100 s.
  return (Number(fields[11]) + Number(fields[12])) * 10
}

export const run: BenchRun = async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'pcc-bench-hb-'))
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const server = await spawnPcc({
    PCC_DATA_DIR: dataDir,
    PCC_LISTEN: `127.0.0.1:${port}`,
    PCC_PUBLIC_URL: url,
    PCC_ADMIN_PASSWORD: 'bench-password',
    PCC_SIMULATED_HOSTS: '0',
    PCC_RECONCILE_SECONDS: '0',
    PCC_LOG_LEVEL: 'warn',
  })
  const store = await openStore({ dataDir, databaseUrl: '' })
  try {
    const hosts: { id: string; credential: string }[] = []
    await store.db.transaction().execute(async (tx) => {
      for (let i = 0; i < HOSTS; i++) {
        const h = await registerHost(tx, { hostname: `bench-host-${i}`, kind: 'agent', driver: 'simulated', vcpus: 32, memoryMb: 131072, diskGb: 2000 })
        const credential = `pcch_${randomBytes(32).toString('base64url')}`
        await tx.insertInto('host_credentials').values({ host_id: h.id, credential_hash: sha256(credential), created_at: Date.now() }).execute()
        await tx.insertInto('agent_hosts').values({ host_id: h.id, agent_version: 'bench', guests: '[]', guests_at: Date.now(), message: null, registered_at: Date.now() }).execute()
        await setHostRole(tx, h.id, 'hypervisor', 'ok')
        hosts.push({ id: h.id, credential })
      }
    })
    let next = 0
    const body = JSON.stringify({ capacity: { vcpus: 32, memory_mb: 131072, disk_gb: 2000 }, guests: [] })
    const requests: AutocannonRequest[] = [
      {
        method: 'POST',
        setupRequest: (req) => {
          const h = hosts[next++ % hosts.length]
          return { ...req, path: `/resmgr/v1/hosts/${h.id}/heartbeat`, headers: { 'content-type': 'application/json', authorization: `Bearer ${h.credential}` }, body }
        },
      },
    ]
    // Full load first: it also warms the server (JIT, credential cache) as hosts heartbeating every 10 s keep it.
    const flat = await autocannon({ url, connections: 16, duration: 5, requests })

    const before = cpuMs(server.child.pid!)
    const started = Date.now()
    const paced = await autocannon({ url, connections: 16, duration: 8, overallRate: TARGET_RATE, requests })
    const spent = cpuMs(server.child.pid!) - before
    const cpuShare = spent / (Date.now() - started)
    // On a loaded machine the paced run may fall short of the rate: the CPU cost per heartbeat says what 500/s would take.
    const perBeat = spent / Math.max(1, paced.requests.total)
    const failed = (r: AutocannonResult) => r.non2xx + r.errors
    const rows: BenchRow[] = [
      {
        figure: `server CPU at ${TARGET_RATE} heartbeats/s (${HOSTS} hosts every 10 s), HTTP, SQLite`,
        value: Math.round(cpuShare * 1000) / 10,
        unit: '% of one core',
        target: '< 20 %',
        note: `${Math.round(paced.requests.average)} req/s achieved, p50 ${paced.latency.p50} ms, p99 ${paced.latency.p99} ms${failed(paced) ? `, ${failed(paced)} failed` : ''}`,
      },
      {
        figure: 'server CPU per heartbeat (paced run)',
        value: Math.round(perBeat * 1000) / 1000,
        unit: 'ms',
        target: '< 0.4 ms (20 % of a core at 500/s)',
        note: `${Math.round(perBeat * TARGET_RATE) / 10} % of one core at ${TARGET_RATE}/s`,
      },
      {
        figure: `heartbeats/s absorbed at full load, ${HOSTS} hosts, concurrency 16`,
        value: Math.round(flat.requests.average),
        unit: 'req/s',
        target: '>= 500 req/s',
        note: `p50 ${flat.latency.p50} ms, p99 ${flat.latency.p99} ms${failed(flat) ? `, ${failed(flat)} failed` : ''}`,
      },
    ]
    return rows
  } finally {
    await store.close()
    await server.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}
