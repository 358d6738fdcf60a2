/**
 * Issue 10: the control plane is restarted while an agent runs work: nothing is lost, nothing is done twice. A
 * real `pcc-server` process on PostgreSQL and a real agent; 12 servers created through the API; the server
 * process SIGKILLed while commands are in flight on the agent, then started again on the same port and database.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { killAgent, onboardAgent, type ScratchHost } from '../../src/testkit/agent.js'
import { startCluster, type Cluster } from '../../src/testkit/cluster.js'
import { ComputeClient, login, until } from '../../src/testkit/compute-api.js'
import { openStore, type Store } from '../../src/server/storage/store.js'
import type { GuestInfo } from '../../src/contracts/host/compute-driver.js'

describe('control-plane restart while an agent works: nothing lost, nothing done twice', () => {
  let cluster: Cluster
  let store: Store
  let agent: ChildProcess | undefined
  let host: ScratchHost
  before(async () => {
    cluster = await startCluster({
      size: 1,
      env: { PCC_SIMULATED_HOSTS: '0', PCC_TASK_LEASE_SECONDS: '2', PCC_RECONCILE_SECONDS: '0', PCC_HOST_DOWN_AFTER_SECONDS: '30' },
    })
    store = await openStore({ dataDir: tmpdir(), databaseUrl: cluster.databaseUrl, poolSize: 2 })
  })
  after(async () => {
    if (agent) await killAgent(agent)
    await store?.close()
    await cluster?.close({ keepLogs: !!process.env.PCC_TEST_KEEP_LOGS })
    if (host) rmSync(host.root, { recursive: true, force: true })
  })

  it('SIGKILLs the control plane in the middle of 12 builds on the agent host; after the restart all are ACTIVE with one guest each, booted once', async () => {
    const node = cluster.nodes[0]
    const session = await login(node.url, cluster.adminPassword)
    const api = new ComputeClient(node.url, session.token)
    ;({ host, agent } = await onboardAgent(api, 'restart-host', node.url, { delayMs: 150, vcpus: 64, memoryMb: 64000 }))
    const db = store.db

    await api.unlimitedQuotas(session.projectId)
    const image = await api.bootImage()
    const ids: string[] = []
    for (let i = 0; i < 12; i++) ids.push((await api.create({ name: `restart-${i}`, imageRef: image, flavorRef: '1', networks: 'none' })).id)
    await until('builds in flight on the agent', 60_000, async () => {
      const n = await db.selectFrom('servers').select('id').where('id', 'in', ids).where('vm_state', '=', 'active').execute()
      const inFlight = await db.selectFrom('host_commands').select('id').where('status', '=', 'delivered').execute()
      return n.length >= 2 && inFlight.length > 0 ? true : undefined
    }, 10)
    await cluster.kill(0)
    // The agent keeps working and keeps trying to report while nobody listens.
    await new Promise((r) => setTimeout(r, 1500))
    await cluster.restart(0)

    const finals = await until('every server settled', 90_000, async () => {
      const all = await Promise.all(ids.map((id) => api.server(id)))
      return all.every((s) => s && s.status !== 'BUILD' && s['OS-EXT-STS:task_state'] === null) ? all : undefined
    }, 250)
    assert.deepEqual(
      finals.filter((s) => s!.status !== 'ACTIVE').map((s) => `${s!.name}: ${s!.status} ${JSON.stringify(s!.fault)}`),
      [],
      'every server is ACTIVE',
    )
    assert.ok(finals.every((s) => s!['OS-EXT-SRV-ATTR:host'] === 'restart-host'))
    // The agent's truth: one guest per server, each booted once.
    const guests = await until('every outcome posted', 20_000, async () => {
      const state = JSON.parse(readFileSync(join(host.root, 'var/lib/pcc/agent-state.json'), 'utf8')) as { guests: GuestInfo[]; done: Record<string, { posted: boolean }> }
      return state.guests.length === ids.length && Object.values(state.done).every((d) => d.posted) ? state.guests : undefined
    })
    assert.deepEqual(guests.map((g) => g.serverId).sort(), [...ids].sort())
    assert.ok(guests.every((g) => g.boots === 1), `boots: ${guests.map((g) => g.boots).join(',')}`)
    // No command left behind undelivered or unanswered.
    const open = await db.selectFrom('host_commands').select(['op', 'status']).where('status', 'in', ['queued', 'delivered']).execute()
    assert.deepEqual(open, [])
    const usage = await db.selectFrom('hosts').select(['vcpus_used', 'running_vms']).where('id', '=', host.hostId).executeTakeFirstOrThrow()
    assert.equal(usage.vcpus_used, ids.length)
  })
})

describe('a control plane back from an outage longer than hosts may stay silent', () => {
  let cluster: Cluster
  let store: Store
  let agent: ChildProcess | undefined
  let host: ScratchHost
  before(async () => {
    cluster = await startCluster({ size: 1, env: { PCC_SIMULATED_HOSTS: '0', PCC_TASK_LEASE_SECONDS: '2', PCC_RECONCILE_SECONDS: '0', PCC_HOST_DOWN_AFTER_SECONDS: '5' } })
    store = await openStore({ dataDir: tmpdir(), databaseUrl: cluster.databaseUrl, poolSize: 2 })
  })
  after(async () => {
    if (agent) {
      agent.kill('SIGCONT')
      await killAgent(agent)
    }
    await store?.close()
    await cluster?.close()
    if (host) rmSync(host.root, { recursive: true, force: true })
  })

  it('waits for its hosts to report again instead of failing their work as DOWN at once', async () => {
    const node = cluster.nodes[0]
    const session = await login(node.url, cluster.adminPassword)
    const api = new ComputeClient(node.url, session.token)
    ;({ host, agent } = await onboardAgent(api, 'outage-host', node.url, { delayMs: 300, heartbeatSeconds: 1, vcpus: 64, memoryMb: 64000 }))
    await api.unlimitedQuotas(session.projectId)
    const image = await api.bootImage()
    const ids: string[] = []
    for (let i = 0; i < 4; i++) ids.push((await api.create({ name: `outage-${i}`, imageRef: image, flavorRef: '1', networks: 'none' })).id)
    // Every server placed (the scheduler does not place on a silent host), some of their spawns on the agent.
    await until('builds placed and in flight on the agent', 60_000, async () => {
      const placed = await store.db.selectFrom('servers').select('id').where('id', 'in', ids).where('host_id', 'is not', null).execute()
      const inFlight = await store.db.selectFrom('host_commands').select('id').where('status', 'in', ['queued', 'delivered']).execute()
      return placed.length === ids.length && inFlight.length > 0 ? true : undefined
    }, 10)

    // The host falls silent, the control plane dies, and stays away longer than PCC_HOST_DOWN_AFTER_SECONDS.
    agent.kill('SIGSTOP')
    await cluster.kill(0)
    await new Promise((r) => setTimeout(r, 6000))
    await cluster.restart(0)
    // The agent comes back a moment after the control plane: its work was waiting for it, not failed.
    await new Promise((r) => setTimeout(r, 1000))
    agent.kill('SIGCONT')
    const finals = await until('every server settled', 90_000, async () => {
      const all = await Promise.all(ids.map((id) => api.server(id)))
      return all.every((s) => s && s.status !== 'BUILD' && s['OS-EXT-STS:task_state'] === null) ? all : undefined
    }, 250)
    assert.deepEqual(finals.filter((s) => s!.status !== 'ACTIVE').map((s) => `${s!.name}: ${s!.status} ${JSON.stringify(s!.fault)}`), [])
  })
})
