/**
 * GET /healthz through the whole pcc-server (Fastify, hooks, request ids, metrics, logging at the default
 * level) against a bare node:http hello-world on the same machine: the ratio is the framework's overhead.
 * Both servers run in their own process; autocannon (concurrency 8, 5 s each) runs here, on loopback.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import type { BenchRun } from './harness.js'
import { spawnBareHttp, spawnPcc, untilReady } from './procs.js'

const CONNECTIONS = 8
const DURATION_S = 5

async function load(url: string) {
  // A short warm-up first, so the JIT and connection set-up are not in the figure.
  await autocannon({ url, connections: CONNECTIONS, duration: 1 })
  const result = await autocannon({ url, connections: CONNECTIONS, duration: DURATION_S })
  if (result.errors > 0 || result.non2xx > 0) throw new Error(`${url}: ${result.errors} errors, ${result.non2xx} non-2xx answers`)
  return result
}

export const run: BenchRun = async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'pcc-bench-'))
  const pcc = await spawnPcc({ PCC_DATA_DIR: dataDir, PCC_ADMIN_PASSWORD: 'bench-admin-password' })
  let full
  try {
    await untilReady(pcc.url, Date.now())
    full = await load(`${pcc.url}/healthz`)
  } finally {
    await pcc.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
  const bareServer = await spawnBareHttp()
  let bare
  try {
    bare = await load(`${bareServer.url}/`)
  } finally {
    await bareServer.stop()
  }
  const where = `concurrency ${CONNECTIONS}, ${DURATION_S} s`
  return [
    { figure: `GET /healthz, full stack, ${where}`, value: Math.round(full.requests.average), unit: 'req/s' },
    { figure: 'GET /healthz, full stack, latency p50', value: full.latency.p50, unit: 'ms' },
    { figure: 'GET /healthz, full stack, latency p99', value: full.latency.p99, unit: 'ms' },
    { figure: `bare node:http hello-world, ${where}`, value: Math.round(bare.requests.average), unit: 'req/s' },
    { figure: 'bare node:http hello-world, latency p99', value: bare.latency.p99, unit: 'ms' },
    {
      figure: 'full stack / bare node:http throughput',
      value: Math.round((full.requests.average / bare.requests.average) * 100) / 100,
      unit: 'ratio',
      note: 'the share of bare node:http throughput left after Fastify, hooks, metrics and request logging',
    },
  ]
}
