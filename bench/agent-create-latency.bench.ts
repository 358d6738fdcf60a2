/**
 * End-to-end create-to-ACTIVE latency through a real agent: a control plane (in this process, SQLite) and one
 * pcc-agent process with the simulated hypervisor and its default step timings, onboarded with a registration
 * token and given the hypervisor role. Each server is created through the compute API (POST /servers) and
 * polled every 10 ms until ACTIVE; one at a time, so the figure is latency, not throughput. About 15 s in all.
 */
import { rmSync } from 'node:fs'
import { startTestServer } from '../src/testkit/harness.js'
import { killAgent, scratchHost, spawnAgent } from '../src/testkit/agent.js'
import type { BenchRun } from './harness.js'

const SERVERS = 30
/** The simulated hypervisor's delay per step on the agent (ms): what a fast real host takes to answer. */
const AGENT_STEP_DELAY_MS = 20

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs: number, everyMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

export const run: BenchRun = async () => {
  const server = await startTestServer({ publicUrlFromListen: true, env: { PCC_HOST_HEARTBEAT_SECONDS: '1', PCC_RECONCILE_SECONDS: '0' } })
  const token = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'x-auth-token': token, 'openstack-api-version': 'compute 2.96', ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : undefined }
  }
  const { body: registration } = await call('POST', '/resmgr/v1/registration-tokens', { note: 'bench' })
  const host = scratchHost({ hostname: 'bench-agent', controller: server.url, registrationToken: registration.token, delayMs: AGENT_STEP_DELAY_MS, vcpus: 64, memoryMb: 256_000 })
  const agent = spawnAgent(host.root)
  try {
    await until(async () => ((await call('GET', `/resmgr/v1/hosts/${host.hostId}`)).status === 200 ? true : undefined), 20_000, 100)
    await call('PUT', `/resmgr/v1/hosts/${host.hostId}/roles/hypervisor`, {})
    await until(async () => ((await call('GET', `/resmgr/v1/hosts/${host.hostId}`)).body.role_status === 'ok' ? true : undefined), 20_000, 100)
    await call('PUT', `/compute/v2.1/os-quota-sets/${server.bootstrap.adminProjectId}`, { quota_set: { instances: -1, cores: -1, ram: -1 } })
    const flavor = (await call('GET', '/compute/v2.1/flavors')).body.flavors[0].id
    const image = (await call('GET', '/image/v2/images')).body.images[0].id

    const latencies: number[] = []
    for (let i = 0; i < SERVERS; i++) {
      const started = performance.now()
      const created = await call('POST', '/compute/v2.1/servers', { server: { name: `lat-${i}`, flavorRef: flavor, imageRef: image, networks: 'none' } })
      if (created.status !== 202) throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body)}`)
      const id = created.body.server.id as string
      const status = await until(async () => {
        const s = (await call('GET', `/compute/v2.1/servers/${id}`)).body.server.status as string
        return s === 'ACTIVE' || s === 'ERROR' ? s : undefined
      }, 30_000, 10)
      if (status !== 'ACTIVE') throw new Error(`server ${id} went to ${status}`)
      latencies.push(performance.now() - started)
    }
    latencies.sort((a, b) => a - b)
    const note = `${SERVERS} servers one at a time; agent's simulated steps ${AGENT_STEP_DELAY_MS} ms each; polled every 10 ms`
    return [
      { figure: 'create → ACTIVE through one agent, p50', value: Math.round(percentile(latencies, 50)), unit: 'ms', note },
      { figure: 'create → ACTIVE through one agent, p95', value: Math.round(percentile(latencies, 95)), unit: 'ms' },
    ]
  } finally {
    await killAgent(agent)
    await server.close()
    rmSync(host.root, { recursive: true, force: true })
  }
}
