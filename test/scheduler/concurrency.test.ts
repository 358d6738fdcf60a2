/**
 * Schedulers racing in two real `pcc-server` processes on one PostgreSQL (testkit/cluster.ts), every request
 * sent through the compute API of one process or the other. The hosts are the embedded simulated hypervisors
 * every process serves (PCC_SIMULATED_HOSTS=3: 32 vCPUs × 4, 128 GiB, 2000 GB of disk at ratio 1 each), and a
 * flavor with a 40 GB disk made through the API: exactly 50 fit on a host, 150 on the three.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'
import { openStore, type Store } from '../../src/server/storage/store.js'
import { startCluster, watchTaskOwners, type Cluster } from '../../src/testkit/cluster.js'
import { ComputeClient, inParallel, login, until } from '../../src/testkit/compute-api.js'
import { capacityProblems } from '../../src/testkit/compute-trace.js'

const HOSTS = ['sim-host-1', 'sim-host-2', 'sim-host-3']
const FLAVOR_DISK_GB = 40
const PER_HOST = 2000 / FLAVOR_DISK_GB

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type View = Record<string, any>

describe('concurrent schedulers in two pcc-server processes on one PostgreSQL', () => {
  let cluster: Cluster
  let store: Store
  /** The same admin through each process. */
  let apis: ComputeClient[]
  let image: string
  let flavor: string
  before(async () => {
    cluster = await startCluster({
      size: 2,
      env: { PCC_SIMULATED_HOSTS: '3', PCC_SIMULATED_DELAY_MS: '20', PCC_RECONCILE_SECONDS: '0', PCC_TASK_WORKERS: '16' },
    })
    store = await openStore({ dataDir: tmpdir(), databaseUrl: cluster.databaseUrl, poolSize: 2 })
    const session = await login(cluster.nodes[0].url, cluster.adminPassword)
    apis = cluster.nodes.map((node) => new ComputeClient(node.url, session.token))
    await apis[0].unlimitedQuotas(session.projectId)
    image = await apis[1].bootImage()
    flavor = await apis[1].createFlavor({ name: 'disk-40', vcpus: 1, ram: 512, disk: FLAVOR_DISK_GB })
  })
  after(async () => {
    await store?.close()
    await cluster?.close({ keepLogs: !!process.env.PCC_TEST_KEEP_LOGS })
  })

  /** Every server of the admin project once none is building or in a task state, as process `i % 2` lists them. */
  async function settled(ids: string[], timeoutMs = 180_000): Promise<View[]> {
    let poll = 0
    return until(`${ids.length} servers to settle`, timeoutMs, async () => {
      const wanted = new Set(ids)
      const mine = (await apis[poll++ % 2].servers()).filter((s) => wanted.has(s.id))
      const busy = mine.filter((s) => s.status === 'BUILD' || s['OS-EXT-STS:task_state'] !== null)
      return mine.length === ids.length && busy.length === 0 ? mine : undefined
    }, 250)
  }

  /** Usage of the three hosts as os-hypervisors (2.87, the last version with the usage fields) shows it. */
  async function hypervisors(): Promise<View[]> {
    const r = await apis[0].at('2.87').call('GET', '/os-hypervisors/detail')
    assert.equal(r.status, 200, JSON.stringify(r.body))
    return (r.body.hypervisors as View[]).filter((h) => HOSTS.includes(h.hypervisor_hostname)).sort((x, y) => x.hypervisor_hostname.localeCompare(y.hypervisor_hostname))
  }

  /** Deletes every server of the project through both processes and waits until the hosts are empty again. */
  async function deleteAll(): Promise<void> {
    const all = await apis[0].servers()
    await inParallel(all, 16, async (s, i) => {
      const r = await apis[i % 2].call('DELETE', `/servers/${s.id}`)
      assert.equal(r.status, 204, JSON.stringify(r.body))
    })
    await until('every server deleted', 120_000, async () => ((await apis[1].servers()).length === 0 ? true : undefined), 250)
    // Deletes in two processes gave every claim back.
    for (const h of await hypervisors()) assert.deepEqual([h.running_vms, h.vcpus_used, h.local_gb_used], [0, 0, 0], `${h.hypervisor_hostname} is empty`)
    assert.deepEqual(await capacityProblems(store.db), [])
  }

  function assertNoValidHost(view: View): void {
    assert.equal(view.status, 'ERROR')
    assert.equal(view.fault?.code, 500, `${view.name}: ${JSON.stringify(view.fault)}`)
    assert.match(view.fault.message, /^No valid host was found/)
  }

  it('200 creates at once through both processes for room for 150: exactly 150 ACTIVE, 50 ERROR with no valid host, no host over capacity, builds in both processes', async () => {
    const hosts = await hypervisors()
    assert.deepEqual(hosts.map((h) => [h.local_gb, h.local_gb_used]), HOSTS.map(() => [2000, 0]), 'three empty hosts of 2000 GB')
    const owners = watchTaskOwners(store.db, 'compute.build')
    let ran = new Map<number, Set<string>>()
    let servers: View[]
    try {
      // All at once, every other one to the other process.
      const ids = (await Promise.all(Array.from({ length: 200 }, (_, i) => apis[i % 2].create({ name: `c${i}`, imageRef: image, flavorRef: flavor, networks: 'none' })))).map((c) => c.id)
      servers = await settled(ids)
    } finally {
      ran = await owners.stop()
    }
    const active = servers.filter((s) => s.status === 'ACTIVE')
    const errored = servers.filter((s) => s.status !== 'ACTIVE')
    assert.equal(active.length, 3 * PER_HOST, `ACTIVE: ${active.length}`)
    assert.equal(errored.length, 200 - 3 * PER_HOST)
    for (const s of errored) assertNoValidHost(s)
    const perHost = new Map<string, number>()
    for (const s of active) perHost.set(s['OS-EXT-SRV-ATTR:host'], (perHost.get(s['OS-EXT-SRV-ATTR:host']) ?? 0) + 1)
    assert.deepEqual([...perHost.entries()].sort(), HOSTS.map((h) => [h, PER_HOST]))
    // Every host exactly full, none over: as the hypervisors report it, and as the claims add up in the store.
    for (const h of await hypervisors()) {
      assert.deepEqual([h.running_vms, h.local_gb_used, h.vcpus_used, h.memory_mb_used], [PER_HOST, 2000, PER_HOST, PER_HOST * 512], h.hypervisor_hostname)
    }
    assert.deepEqual(await capacityProblems(store.db), [])
    // Both processes built servers: each was seen holding build tasks.
    const pids = cluster.nodes.map((n) => n.process!.pid!)
    for (const pid of pids) {
      const count = ran.get(pid)?.size ?? 0
      assert.ok(count >= 20, `process ${pid} was seen running ${count} build tasks (all: ${[...ran.entries()].map(([p, t]) => `${p}: ${t.size}`).join(', ')})`)
    }
    assert.deepEqual([...ran.keys()].filter((pid) => !pids.includes(pid)), [], 'no other owner')
    await deleteAll()
  })

  it('an anti-affinity group placed from both processes at once never shares a host', async () => {
    const group = (await apis[0].call('POST', '/os-server-groups', { server_group: { name: 'race', policy: 'anti-affinity' } })).body.server_group.id
    const ids = (await Promise.all(Array.from({ length: 8 }, (_, i) => apis[i % 2].create({ name: `g${i}`, imageRef: image, flavorRef: flavor, networks: 'none' }, { group })))).map((c) => c.id)
    const servers = await settled(ids)
    const active = servers.filter((s) => s.status === 'ACTIVE')
    assert.equal(active.length, 3)
    assert.deepEqual(active.map((s) => s['OS-EXT-SRV-ATTR:host']).sort(), HOSTS, 'one member per host')
    const errored = servers.filter((s) => s.status !== 'ACTIVE')
    assert.equal(errored.length, 5)
    for (const s of errored) assertNoValidHost(s)
    assert.deepEqual(await capacityProblems(store.db), [])
    await deleteAll()
  })

  it('multiple creates from both processes at once are each all or nothing, and never over-commit', async () => {
    // 40 requests of 5 servers for 150 slots: at most 30 requests fit. Claims of a request that fails are given
    // back, so two requests racing for the last slots may both fail: "at most", not "exactly".
    const created = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const r = await apis[i % 2].call('POST', '/servers', { server: { name: `mc${i}`, imageRef: image, flavorRef: flavor, networks: 'none', min_count: 5, max_count: 5, return_reservation_id: true } })
        assert.equal(r.status, 202, JSON.stringify(r.body))
        return r.body.reservation_id as string
      }),
    )
    // A multiple create writes all its servers before it answers.
    const all = await apis[0].servers()
    assert.equal(all.length, 200)
    const servers = await settled(all.map((s) => s.id))
    const byRequest = new Map<string, View[]>()
    for (const s of servers) byRequest.set(s['OS-EXT-SRV-ATTR:reservation_id'], [...(byRequest.get(s['OS-EXT-SRV-ATTR:reservation_id']) ?? []), s])
    assert.deepEqual([...byRequest.keys()].sort(), [...created].sort(), 'each request made its own servers')
    let placed = 0
    for (const [reservation, members] of byRequest) {
      assert.equal(members.length, 5)
      const statuses = new Set(members.map((s) => s.status))
      assert.equal(statuses.size, 1, `request ${reservation} is all or nothing: ${[...statuses].join(', ')}`)
      if (statuses.has('ACTIVE')) placed++
      else for (const s of members) assertNoValidHost(s)
    }
    assert.ok(placed >= 20 && placed <= 3 * PER_HOST / 5, `${placed} requests placed`)
    const used = (await hypervisors()).reduce((n, h) => n + h.running_vms, 0)
    assert.equal(used, placed * 5, 'the hosts hold exactly the placed requests')
    for (const h of await hypervisors()) assert.ok(h.local_gb_used <= h.local_gb, `${h.hypervisor_hostname} over capacity`)
    assert.deepEqual(await capacityProblems(store.db), [])
  })
})
