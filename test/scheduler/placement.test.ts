import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { seedCreate } from '../../src/testkit/compute-seed.js'
import { capacityProblems, faultsOf, traceServer } from '../../src/testkit/compute-trace.js'
import type { ServerTable } from '../../src/server/storage/tables/compute.js'

const settled = (s: ServerTable) => s.vm_state !== 'building'

for (const dialect of DIALECTS) {
  describe(`placement through the store (${dialect})`, () => {
    let server: TestServer
    before(async () => {
      server = await startTestServer({ dialect, env: { PCC_SIMULATED_HOSTS: '0', PCC_SIMULATED_DELAY_MS: '0', PCC_RECONCILE_SECONDS: '0' } })
      const c = server.deps.conductor
      await c.addSimulatedHost({ hostname: 'p-a1', availabilityZone: 'az-a', cell: 'cell1', ipAddresses: ['10.1.0.10'], vcpus: 8, memoryMb: 16384, diskGb: 200 })
      await c.addSimulatedHost({ hostname: 'p-a2', availabilityZone: 'az-a', cell: 'cell2', ipAddresses: ['10.1.0.11'], vcpus: 8, memoryMb: 16384, diskGb: 200 })
      await c.addSimulatedHost({ hostname: 'p-b1', availabilityZone: 'az-b', cell: 'cell2', ipAddresses: ['10.2.0.10'], vcpus: 8, memoryMb: 16384, diskGb: 200 })
    })
    after(() => server.close())
    const db = () => server.deps.store.db

    async function create(options: Parameters<typeof seedCreate>[1]): Promise<ServerTable[]> {
      const { serverIds } = await seedCreate(server.deps, options)
      return Promise.all(serverIds.map(async (id) => (await traceServer(db(), id, settled)).final))
    }

    async function group(policy: string, rules = '{}'): Promise<string> {
      const id = `grp-${policy}-${Math.random().toString(16).slice(2, 8)}`
      await db().insertInto('server_groups').values({ id, name: id, project_id: 'project-test', user_id: 'user-test', policy, rules, created_at: Date.now() }).execute()
      return id
    }

    it('places in the requested availability zone, and on the forced host of az:host', async () => {
      for (const s of await create({ count: 3, availabilityZone: 'az-b' })) assert.equal(s.host, 'p-b1')
      for (const s of await create({ count: 2, availabilityZone: 'az-a:p-a2' })) assert.equal(s.host, 'p-a2')
      for (const s of await create({ availabilityZone: 'az-a::p-a1' })) assert.equal(s.host, 'p-a1')
      // The API's host / hypervisor_hostname fields (2.74) arrive as force_host / force_node hints.
      for (const s of await create({ hints: { force_host: 'p-b1' } })) assert.equal(s.host, 'p-b1')
      for (const s of await create({ hints: { force_node: 'p-a2' } })) assert.equal(s.host, 'p-a2')
      const [wrong] = await create({ availabilityZone: 'az-b:p-a1' })
      assert.equal(wrong.vm_state, 'error', 'a forced host outside the zone')
    })

    it('a multiple create in an anti-affinity group lands on distinct hosts; one more than hosts fails them all', async () => {
      const g = await group('anti-affinity')
      const servers = await create({ count: 3, groupId: g })
      assert.equal(new Set(servers.map((s) => s.host)).size, 3)
      const g2 = await group('anti-affinity')
      const four = await create({ count: 4, groupId: g2 })
      for (const s of four) {
        assert.equal(s.vm_state, 'error')
        assert.equal(s.host_id, null)
        assert.match((await faultsOf(db(), s.id))[0].message, /^No valid host was found/)
      }
      assert.equal((await db().selectFrom('allocations').select('host_id').where('server_id', 'in', four.map((s) => s.id)).execute()).length, 0, 'all or nothing')
      assert.deepEqual(await capacityProblems(db()), [])
    })

    it('anti-affinity with max_server_per_host 2 allows two per host', async () => {
      const g = await group('anti-affinity', '{"max_server_per_host": 2}')
      const servers = await create({ count: 6, groupId: g })
      const perHost = new Map<string, number>()
      for (const s of servers) perHost.set(s.host!, (perHost.get(s.host!) ?? 0) + 1)
      assert.deepEqual([...perHost.values()], [2, 2, 2])
    })

    it('affinity keeps a group on one host, soft-affinity prefers it, soft-anti-affinity spreads', async () => {
      const hard = await create({ count: 3, groupId: await group('affinity') })
      assert.equal(new Set(hard.map((s) => s.host)).size, 1)
      const soft = await create({ count: 3, groupId: await group('soft-affinity') })
      assert.equal(new Set(soft.map((s) => s.host)).size, 1)
      const spread = await create({ count: 3, groupId: await group('soft-anti-affinity') })
      assert.equal(new Set(spread.map((s) => s.host)).size, 3)
    })

    it('same_host and different_host follow existing servers', async () => {
      const [anchor] = await create({ availabilityZone: 'az-a' })
      const [same] = await create({ hints: { same_host: anchor.id } })
      assert.equal(same.host, anchor.host)
      const [diff] = await create({ hints: { different_host: [anchor.id] }, availabilityZone: 'az-a' })
      assert.equal(diff.vm_state, 'active')
      assert.notEqual(diff.host, anchor.host)
    })

    it('query (JSON filter), build_near_host_ip with cidr, different_cell and target_cell', async () => {
      const [q] = await create({ hints: { query: JSON.stringify(['=', '$hypervisor_hostname', 'p-a2']) } })
      assert.equal(q.host, 'p-a2')
      const [near] = await create({ hints: { build_near_host_ip: '10.2.0.1', cidr: '/24' } })
      assert.equal(near.host, 'p-b1')
      const [cell] = await create({ hints: { different_cell: 'cell2' } })
      assert.equal(cell.host, 'p-a1')
      const [target] = await create({ hints: { target_cell: 'cell2' }, availabilityZone: 'az-b' })
      assert.equal(target.host, 'p-b1')
      const [none] = await create({ hints: { query: '["=", "$host", "nowhere"]' } })
      assert.equal(none.vm_state, 'error')
      const [fault] = await faultsOf(db(), none.id)
      assert.match(fault.message, /^No valid host was found/)
      assert.match(fault.details, /JsonFilter/)
    })

    it('a flavor larger than any host: ERROR with the no-valid-host fault naming the resource filter', async () => {
      const [big] = await create({ flavor: { vcpus: 64, ram: 1024, disk: 1 } })
      assert.equal(big.vm_state, 'error')
      const [fault] = await faultsOf(db(), big.id)
      assert.equal(fault.code, 500)
      assert.equal(fault.message, 'No valid host was found. There are not enough hosts available.')
      assert.match(fault.details, /ResourcesFilter/)
      assert.deepEqual(await capacityProblems(db()), [])
    })
  })
}
