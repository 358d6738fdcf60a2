/**
 * Agent heartbeats the control plane absorbs: 5,000 registered agent hosts (credentials in the store), each
 * heartbeat a real HTTP POST /resmgr/v1/hosts/{id}/heartbeat with its host credential, capacity and guest list
 * (steady state: unchanged). The server runs as its own process on SQLite so its CPU time (utime + stime from
 * /proc) is measured alone. Two figures: the CPU share at the target rate (5,000 hosts every 10 s = 500/s) and
 * the most heartbeats/s it takes with 16 connections. Then the same paced run with metrics samples in every
 * heartbeat (docs/metrics.md: the host's and GUESTS_PER_HOST guests', each guest a server placed on the host), for
 * the control plane's cost per sample. About 30 s in all.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { registerHost, setHostRole } from '../src/server/hosts/host-protocol.js'
import { sha256 } from '../src/server/onboarding/onboarding-service.js'
import { openStore, type Db } from '../src/server/storage/store.js'
import type { ServerTable } from '../src/server/storage/tables/compute.js'
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
const GUESTS_PER_HOST = 4

function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  // utime and stime are fields 14 and 15 of the whole line (11 and 12 after the command name), in 1/100 s.
  return (Number(fields[11]) + Number(fields[12])) * 10
}

const hostSample = (at: number) => ({ at, cpuBusy: at / 10, cpuTotal: at / 2.5, cpus: 32, memoryTotalKb: 134_217_728, memoryUsedKb: 10_000_000, diskUsedBytes: 1e11, diskTotalBytes: 2e12, guests: GUESTS_PER_HOST, accelerator: 'kvm' })
const guestSample = (serverId: string, at: number) => ({
  serverId, at, state: 'running', vcpus: 2, cpuNs: at * 1e5, uptimeS: 3600, memoryMaxKb: 2_097_152, memoryUsedKb: 1_048_576,
  disks: [{ name: 'vda', rdBytes: at, wrBytes: at / 2, rdReqs: at / 4096, wrReqs: at / 8192, errors: 0 }],
  nics: [{ mac: 'fa:16:3e:00:00:01', rxBytes: at / 8, txBytes: at / 16, rxPackets: at / 8000, txPackets: at / 16000, rxErrors: 0, txErrors: 0, rxDrop: 0, txDrop: 0 }],
})

/** A server row placed on `hostId`, as the conductor leaves an ACTIVE one: samples count only for placed guests. */
async function placeServer(db: Db, hostId: string, n: number): Promise<string> {
  const id = randomUUID()
  const now = Date.now()
  const row: ServerTable = {
    id, rev: 0, display_id: n + 1, name: `bench-${n}`, description: null, project_id: 'bench', user_id: 'bench', host_id: hostId, host: null, node: null,
    vm_state: 'active', task_state: null, power_state: 1, flavor: '{}', old_flavor: null, new_flavor: null, image_id: null, key_name: null, key_data: null,
    metadata: '{}', access_ip_v4: '', access_ip_v6: '', availability_zone: null, pinned_availability_zone: null, config_drive: 0, disk_config: 'MANUAL',
    user_data: null, hostname: null, locked: 0, locked_by: null, locked_reason: null, launch_index: 0, reservation_id: 'r-bench', root_device_name: '/dev/vda',
    kernel_id: null, ramdisk_id: null, progress: 0, trusted_image_certificates: null, scheduler_hints: null, security_groups: '[]', requested_networks: '"auto"',
    block_devices: '[]', created_at: now, updated_at: now, launched_at: now, terminated_at: null, deleted_at: null, deleted: 0,
  }
  await db.insertInto('servers').values(row).execute()
  return id
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
    const hosts: { id: string; credential: string; guests: string[] }[] = []
    await store.db.transaction().execute(async (tx) => {
      for (let i = 0; i < HOSTS; i++) {
        const h = await registerHost(tx, { hostname: `bench-host-${i}`, kind: 'agent', driver: 'simulated', vcpus: 32, memoryMb: 131072, diskGb: 2000 })
        const credential = `pcch_${randomBytes(32).toString('base64url')}`
        await tx.insertInto('host_credentials').values({ host_id: h.id, credential_hash: sha256(credential), created_at: Date.now() }).execute()
        await tx.insertInto('agent_hosts').values({ host_id: h.id, agent_version: 'bench', guests: '[]', guests_at: Date.now(), message: null, registered_at: Date.now() }).execute()
        await setHostRole(tx, h.id, 'hypervisor', 'ok')
        const guests: string[] = []
        for (let g = 0; g < GUESTS_PER_HOST; g++) guests.push(await placeServer(tx, h.id, i * GUESTS_PER_HOST + g))
        hosts.push({ id: h.id, credential, guests })
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
    // With samples: every heartbeat carries its host's sample and its guests' (each a rate and three ring slots, one upsert for the whole heartbeat).
    let sampledAt = Date.now()
    const sampledRequests: AutocannonRequest[] = [
      {
        method: 'POST',
        setupRequest: (req) => {
          const h = hosts[next++ % hosts.length]
          sampledAt += 10
          const samples = { host: hostSample(sampledAt), guests: h.guests.map((id) => guestSample(id, sampledAt)) }
          return { ...req, path: `/resmgr/v1/hosts/${h.id}/heartbeat`, headers: { 'content-type': 'application/json', authorization: `Bearer ${h.credential}` }, body: JSON.stringify({ capacity: { vcpus: 32, memory_mb: 131072, disk_gb: 2000 }, guests: [], samples }) }
        },
      },
    ]
    const beforeSampled = cpuMs(server.child.pid!)
    const sampled = await autocannon({ url, connections: 16, duration: 8, overallRate: TARGET_RATE, requests: sampledRequests })
    const perSampledBeat = (cpuMs(server.child.pid!) - beforeSampled) / Math.max(1, sampled.requests.total)
    const perSample = (perSampledBeat - perBeat) / (GUESTS_PER_HOST + 1)
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
      {
        figure: `server CPU per metrics sample (heartbeats with a host's and ${GUESTS_PER_HOST} guests' samples, paced run)`,
        value: Math.round(perSample * 1000) / 1000,
        unit: 'ms',
        note: `${Math.round(perSampledBeat * 1000) / 1000} ms per heartbeat with samples; ${Math.round(sampled.requests.average)} req/s achieved, p99 ${sampled.latency.p99} ms${failed(sampled) ? `, ${failed(sampled)} failed` : ''}`,
      },
    ]
    return rows
  } finally {
    await store.close()
    await server.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}
