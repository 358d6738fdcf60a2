/**
 * GET /healthz through the whole pcc-server (Fastify, hooks, request ids, metrics, logging at the default
 * level) against a bare node:http hello-world on the same machine: the ratio is the framework's overhead.
 * Both servers run in their own process; autocannon (concurrency 8, 3 alternating rounds of 2 s each) runs
 * here, on loopback.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import type { BenchRun } from './harness.js'
import { spawnBareHttp, spawnPcc, untilReady } from './procs.js'

const CONNECTIONS = 8
/** Both servers run side by side and are loaded in alternating rounds, so a busy neighbour on a shared machine
 * slows both alike and the ratio stays meaningful. */
const ROUNDS = 3
const ROUND_S = 2

interface Totals {
  requests: number
  seconds: number
  p50: number[]
  p99: number[]
}

async function round(url: string, totals: Totals): Promise<void> {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: ROUND_S })
  if (result.errors > 0 || result.non2xx > 0) throw new Error(`${url}: ${result.errors} errors, ${result.non2xx} non-2xx answers`)
  totals.requests += result.requests.total
  totals.seconds += result.duration
  totals.p50.push(result.latency.p50)
  totals.p99.push(result.latency.p99)
}

const perSecond = (t: Totals) => Math.round(t.requests / t.seconds)
const worst = (values: number[]) => Math.max(...values)
const middle = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

export const run: BenchRun = async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'pcc-bench-'))
  const pcc = await spawnPcc({ PCC_DATA_DIR: dataDir, PCC_ADMIN_PASSWORD: 'bench-admin-password' })
  const bare = await spawnBareHttp()
  const full: Totals = { requests: 0, seconds: 0, p50: [], p99: [] }
  const base: Totals = { requests: 0, seconds: 0, p50: [], p99: [] }
  try {
    await untilReady(pcc.url, Date.now())
    // Warm-up, so the JIT and connection set-up are not in the figures.
    await autocannon({ url: `${pcc.url}/healthz`, connections: CONNECTIONS, duration: 1 })
    await autocannon({ url: `${bare.url}/`, connections: CONNECTIONS, duration: 1 })
    for (let i = 0; i < ROUNDS; i++) {
      await round(`${pcc.url}/healthz`, full)
      await round(`${bare.url}/`, base)
    }
  } finally {
    await pcc.stop()
    await bare.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
  const where = `concurrency ${CONNECTIONS}, ${ROUNDS}×${ROUND_S} s`
  return [
    { figure: `GET /healthz, full stack, ${where}`, value: perSecond(full), unit: 'req/s' },
    { figure: 'GET /healthz, full stack, latency p50 (median round)', value: middle(full.p50), unit: 'ms' },
    { figure: 'GET /healthz, full stack, latency p99 (worst round)', value: worst(full.p99), unit: 'ms' },
    { figure: `bare node:http hello-world, ${where}`, value: perSecond(base), unit: 'req/s' },
    { figure: 'bare node:http hello-world, latency p99 (worst round)', value: worst(base.p99), unit: 'ms' },
    {
      figure: 'full stack / bare node:http throughput',
      value: Math.round((perSecond(full) / perSecond(base)) * 100) / 100,
      unit: 'ratio',
      note: 'share of bare node:http throughput left after Fastify, hooks, metrics and request logging',
    },
  ]
}
