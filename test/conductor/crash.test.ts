/**
 * Issue 5's crash test: 300 creates accepted by a real `pcc-server` process on PostgreSQL (accepted = answered 202
 * by POST /servers), the process SIGKILLed in the middle of building them, started again on the same database:
 * every accepted server ends ACTIVE, or ERROR with a fault; none stays in BUILD; none is lost; no claim leaks.
 * Outcomes are read through the API; claims through os-hypervisors and the allocation table.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'
import { openStore, type Store } from '../../src/server/storage/store.js'
import { startCluster, type Cluster } from '../../src/testkit/cluster.js'
import { ComputeClient, inParallel, login, until } from '../../src/testkit/compute-api.js'
import { capacityProblems } from '../../src/testkit/compute-trace.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type View = Record<string, any>

describe('crash: the server process is SIGKILLed in the middle of 300 accepted creates', () => {
  let cluster: Cluster
  let store: Store
  before(async () => {
    cluster = await startCluster({
      size: 1,
      // Builds take about half a second each (three simulated steps of 100 ms, spawn three times that), 16 at
      // once: accepting 300 creates is much faster than building them, so the kill lands in the middle.
      env: { PCC_SIMULATED_HOSTS: '3', PCC_SIMULATED_DELAY_MS: '100', PCC_TASK_LEASE_SECONDS: '2', PCC_RECONCILE_SECONDS: '0' },
    })
    store = await openStore({ dataDir: tmpdir(), databaseUrl: cluster.databaseUrl, poolSize: 2 })
  })
  after(async () => {
    await store?.close()
    await cluster?.close({ keepLogs: !!process.env.PCC_TEST_KEEP_LOGS })
  })

  it('after a restart every accepted server is ACTIVE or ERROR with a fault, none in BUILD, none lost, no claim leaked', async () => {
    const node = cluster.nodes[0]
    const session = await login(node.url, cluster.adminPassword)
    const api = new ComputeClient(node.url, session.token)
    await api.unlimitedQuotas(session.projectId)
    const image = await api.bootImage()

    // Accepted: answered 202 by POST /servers (20 clients at once).
    const ids = await inParallel(Array.from({ length: 300 }, (_, i) => `crash-${i}`), 20, async (name) => (await api.create({ name, imageRef: image, flavorRef: '1', networks: 'none' })).id)
    assert.equal(new Set(ids).size, 300)

    // Kill it once part of the work is done and much of it is in flight.
    const activeAtKill = await until('30 servers ACTIVE and 30 still building', 120_000, async () => {
      const servers = await api.servers()
      const active = servers.filter((s) => s.status === 'ACTIVE')
      return active.length >= 30 && servers.filter((s) => s.status === 'BUILD').length >= 30 ? active : undefined
    }, 50)
    await cluster.kill(0)
    const midway = await store.db.selectFrom('servers').select('id').where('id', 'in', ids).where('vm_state', '=', 'building').execute()
    assert.ok(midway.length > 0, 'the kill left servers in BUILD')

    await cluster.restart(0)
    const servers = await until('every server ACTIVE or ERROR', 180_000, async () => {
      const all = await api.servers()
      return all.every((s) => s.status !== 'BUILD' && s['OS-EXT-STS:task_state'] === null) ? all : undefined
    }, 500).catch((err: Error) => assert.fail(`${err.message}\n${cluster.describe(15)}`))

    // None lost, none in BUILD: every accepted server is there, ACTIVE or ERROR with its fault.
    const byId = new Map(servers.map((s) => [s.id, s]))
    assert.deepEqual(ids.filter((id) => !byId.has(id)), [], 'no accepted server is lost')
    assert.equal(servers.length, 300, 'nothing but the accepted servers')
    const active = servers.filter((s) => s.status === 'ACTIVE')
    for (const s of servers) {
      assert.ok(s.status === 'ACTIVE' || s.status === 'ERROR', `${s.name}: ${s.status}`)
      if (s.status === 'ERROR') assert.ok(s.fault?.message, `${s.name} is in ERROR without a fault`)
    }
    // What was ACTIVE before the kill is still ACTIVE where it ran.
    for (const s of activeAtKill) {
      assert.equal(byId.get(s.id)!.status, 'ACTIVE', s.name)
      assert.equal(byId.get(s.id)!['OS-EXT-SRV-ATTR:host'], s['OS-EXT-SRV-ATTR:host'], s.name)
    }
    // Every create action finished, with both events (an ERROR server's last one failed).
    await inParallel(servers, 10, async (s: View) => {
      const [create] = (await api.instanceActions(s.id)).filter((a) => a.action === 'create')
      const action = await api.instanceAction(s.id, create.request_id)
      assert.ok(action.events.length >= 1 && action.events.every((e: View) => e.finish_time !== null), `${s.name}: ${JSON.stringify(action.events)}`)
      assert.equal(action.message, s.status === 'ACTIVE' ? null : 'Error', s.name)
    })

    // No claim leaked: the hypervisors hold exactly the ACTIVE servers, one claim each on its own host.
    const hypervisors = (await api.at('2.87').call('GET', '/os-hypervisors/detail')).body.hypervisors as View[]
    assert.equal(hypervisors.reduce((n, h) => n + h.running_vms, 0), active.length)
    assert.equal(hypervisors.reduce((n, h) => n + h.vcpus_used, 0), active.length, 'one m1.tiny vCPU per ACTIVE server')
    const claims = await store.db.selectFrom('allocations').innerJoin('hosts', 'hosts.id', 'allocations.host_id').select(['allocations.server_id', 'hosts.hostname']).execute()
    assert.deepEqual(
      claims.map((c) => `${c.server_id}@${c.hostname}`).sort(),
      active.map((s) => `${s.id}@${s['OS-EXT-SRV-ATTR:host']}`).sort(),
      'one claim per ACTIVE server, on its host; none for ERROR servers',
    )
    assert.deepEqual(await capacityProblems(store.db), [])
    const open = await store.db.selectFrom('tasks').select(['kind', 'status']).where('status', 'in', ['queued', 'running']).where('kind', 'like', 'compute.%').execute()
    assert.deepEqual(open, [], 'no compute task left behind')
  })
})
