/**
 * Debian's Prometheus scrapes a real pcc (docs/metrics.md, "Prometheus"): the test starts a prometheus of its own on
 * 127.0.0.1 with a 1 s scrape of pcc's /metrics and the metrics token, waits for a scrape, and asks prometheus's
 * query API for the guest's series, labelled with the server, its project and its host. Skipped only without the
 * `prometheus` binary (the `prometheus` package, in .ci/run). A second job without the token sees no guest.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { call, computeTestbed, createBody, type ComputeTestbed } from '../compute/helpers.js'
import { until } from '../../src/testkit/compute-api.js'
import { freePort } from '../../src/testkit/harness.js'

const METRICS_TOKEN = 'prometheus-scrape-token-0123456789'
const PROMETHEUS = process.env.PCC_TEST_PROMETHEUS ?? 'prometheus'

function prometheusMissing(): string | undefined {
  const probe = spawnSync(PROMETHEUS, ['--version'], { stdio: 'ignore' })
  return probe.error || probe.status !== 0 ? `no ${PROMETHEUS} binary (Debian's prometheus package)` : undefined
}

describe('Prometheus scrapes pcc', { skip: prometheusMissing(), timeout: 180_000 }, () => {
  let tb: ComputeTestbed
  let dir: string
  let prometheus: ChildProcess | undefined
  let promUrl: string
  let id: string
  let log = ''

  before(async () => {
    tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0', PCC_METRICS_TOKEN: METRICS_TOKEN }, true)
    const created = await call(tb, tb.member, 'POST', '/servers', createBody('scraped'), '2.96')
    assert.equal(created.status, 202, JSON.stringify(created.body))
    id = created.body.server.id
    await until('the server ACTIVE', 30_000, async () => ((await call(tb, tb.member, 'GET', `/servers/${id}`)).body.server.status === 'ACTIVE' ? true : undefined))
    // The guest is on /metrics from its host's first sample (every 10 s).
    await until('the guest on /metrics', 30_000, async () => {
      const text = await (await fetch(`${tb.server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()
      return text.includes(`server_id="${id}"`) ? true : undefined
    }, 500)

    dir = mkdtempSync(join(tmpdir(), 'pcc-prometheus-test-'))
    const pcc = new URL(tb.server.url)
    // Two jobs on the same pcc: one with the metrics token, one without (it sees only the process's own metrics).
    const job = (name: string, auth: string[]) => [
      `  - job_name: ${name}`,
      `    metrics_path: ${JSON.stringify(`${pcc.pathname.replace(/\/$/, '')}/metrics`)}`,
      ...auth,
      '    static_configs:',
      `      - targets: [${JSON.stringify(pcc.host)}]`,
    ]
    const config = [
      'global: { scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s }',
      'scrape_configs:',
      ...job('pcc', ['    authorization:', `      credentials: ${JSON.stringify(METRICS_TOKEN)}`]),
      ...job('pcc-anonymous', []),
    ].join('\n')
    writeFileSync(join(dir, 'prometheus.yml'), config)
    const port = await freePort()
    promUrl = `http://127.0.0.1:${port}`
    prometheus = spawn(PROMETHEUS, [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: ['ignore', 'pipe', 'pipe'] })
    prometheus.stdout!.on('data', (d: Buffer) => (log += d.toString()))
    prometheus.stderr!.on('data', (d: Buffer) => (log += d.toString()))
  })

  after(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((resolve) => prometheus!.once('exit', resolve))
      prometheus.kill('SIGTERM')
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))])
      if (prometheus.exitCode === null) prometheus.kill('SIGKILL')
    }
    if (dir) rmSync(dir, { recursive: true, force: true })
    await tb?.close()
  })

  /** A prometheus instant query's result vector. */
  const query = async (expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> => {
    const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`)
    const body = (await res.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } }
    assert.equal(body.status, 'success', JSON.stringify(body))
    return body.data.result
  }

  it("scrapes pcc with the metrics token and has the guest's series labelled with server, project and host", async () => {
    const up = await until('a successful scrape of pcc', 60_000, async () => {
      const r = await query('up{job="pcc"}').catch(() => [])
      return r.length > 0 && r[0].value[1] === '1' ? r : undefined
    }, 500).catch((err: Error) => assert.fail(`${err.message}\nprometheus said:\n${log.slice(-4000)}`))
    assert.equal(up[0].metric.job, 'pcc')
    // The guest's counters start at its first sample: wait for the scrape after its second (10 s later).
    const guest = await until("the guest's CPU seconds above 0 in prometheus", 40_000, async () => {
      const r = await query(`pcc_guest_cpu_seconds_total{server_id="${id}"}`)
      return r.length === 1 && Number(r[0].value[1]) > 0 ? r : undefined
    }, 500)
    assert.equal(guest[0].metric.project_id, tb.member.projectId)
    assert.equal(guest[0].metric.host, 'sim-host-1')
    const memory = await query(`pcc_guest_memory_used_bytes{server_id="${id}"}`)
    assert.equal(Number(memory[0].value[1]), 256 * 1024 * 1024, 'half of m1.tiny, as the simulated guest uses')
    const hosts = await query('pcc_host_guests{host="sim-host-1"}')
    assert.equal(hosts[0].value[1], '1')
  })

  it('sees no guest or host series from the job without the token, only the process metrics', async () => {
    await until('a scrape of the anonymous job', 30_000, async () => {
      const r = await query('up{job="pcc-anonymous"}').catch(() => [])
      return r.length > 0 && r[0].value[1] === '1' ? true : undefined
    }, 500)
    assert.ok((await query('count by (job) ({job="pcc-anonymous"})')).length === 1, 'the anonymous job has series')
    assert.deepEqual(await query('{job="pcc-anonymous", __name__=~"pcc_guest_.*|pcc_host_.*"}'), [])
  })
})
