import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { ComputeClient } from '../../src/testkit/compute-api.js'
import { actionsOf, capacityProblems, faultsOf, traceServer } from '../../src/testkit/compute-trace.js'
import type { ServerTable } from '../../src/server/storage/tables/compute.js'
import { DriverError } from '../../src/contracts/host/compute-driver.js'

const idle = (s: ServerTable) => s.task_state === null && s.vm_state !== 'building'

/** A server created through the API and built: its row, which the tests then take apart as a crash would. */
async function activeServer(server: TestServer): Promise<ServerTable> {
  const { token } = await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })
  const api = new ComputeClient(server.url, token)
  const { id } = await api.create({ name: 'reconciled', imageRef: await api.bootImage(), flavorRef: '1', networks: 'none' })
  return (await traceServer(server.deps.store.db, id, idle)).final
}

for (const dialect of DIALECTS) {
  describe(`reconciliation with the hosts (${dialect})`, () => {
    let server: TestServer
    before(async () => {
      server = await startTestServer({ dialect, env: { PCC_SIMULATED_HOSTS: '2', PCC_SIMULATED_DELAY_MS: '0', PCC_RECONCILE_SECONDS: '0' } })
    })
    after(() => server.close())
    const db = () => server.deps.store.db

    const active = () => activeServer(server)

    it('a guest its host no longer has: ERROR with a fault', async () => {
      const s = await active()
      server.deps.conductor.simulatedHosts.find((h) => h.hostId === s.host_id)!.driver.loseGuest(s.id)
      const report = await server.deps.conductor.reconcile()
      assert.equal(report.erroredLostHost, 1)
      const row = await db().selectFrom('servers').selectAll().where('id', '=', s.id).executeTakeFirstOrThrow()
      assert.equal(row.vm_state, 'error')
      const [fault] = await faultsOf(db(), s.id)
      assert.match(fault.message, /no longer on host sim-host-/)
    })

    it('a guest that shut down from inside: the server becomes SHUTOFF (stopped, power 4)', async () => {
      const s = await active()
      server.deps.conductor.simulatedHosts.find((h) => h.hostId === s.host_id)!.driver.setGuestPower(s.id, 4)
      const report = await server.deps.conductor.reconcile()
      assert.equal(report.powerSynced, 1)
      const row = await db().selectFrom('servers').selectAll().where('id', '=', s.id).executeTakeFirstOrThrow()
      assert.equal(row.vm_state, 'stopped')
      assert.equal(row.power_state, 4)
      assert.deepEqual(await faultsOf(db(), s.id), [])
    })

    it('a host that does not answer about one guest holds back neither it nor the other servers', async () => {
      const silent = await active()
      const other = await active()
      const driverOf = (s: ServerTable) => server.deps.conductor.simulatedHosts.find((h) => h.hostId === s.host_id)!.driver
      driverOf(other).setGuestPower(other.id, 4)
      const hung = driverOf(silent)
      const info = hung.info.bind(hung)
      // What AgentDriver gives after QUICK_COMMAND_MS when an agent has just died.
      hung.info = async (id: string) => (id === silent.id ? Promise.reject(new DriverError('the host agent did not answer within 15 s')) : info(id))
      try {
        const report = await server.deps.conductor.reconcile()
        assert.equal(report.powerSynced, 1, 'the other server was reconciled in the same pass')
        assert.equal(report.erroredLostHost, 0)
      } finally {
        hung.info = info
      }
      const row = await db().selectFrom('servers').selectAll().where('id', '=', silent.id).executeTakeFirstOrThrow()
      assert.equal(row.vm_state, 'active', 'left as it was, to be asked again')
      assert.deepEqual(await faultsOf(db(), silent.id), [])
      assert.equal((await db().selectFrom('servers').select('vm_state').where('id', '=', other.id).executeTakeFirstOrThrow()).vm_state, 'stopped')
    })

    it('a server stuck in BUILD whose task is gone: ERROR with a fault, its claim released', async () => {
      const s = await active()
      // What a task that used up its attempts leaves: a building row holding a claim, and no live task.
      await db().updateTable('servers').set({ vm_state: 'building', task_state: 'spawning', updated_at: Date.now() - 3_600_000 }).where('id', '=', s.id).execute()
      await db().updateTable('tasks').set({ status: 'failed' }).where('payload', 'like', `%${s.id}%`).execute()
      const report = await server.deps.conductor.reconcile()
      assert.equal(report.stuckErrored, 1)
      const row = await db().selectFrom('servers').selectAll().where('id', '=', s.id).executeTakeFirstOrThrow()
      assert.equal(row.vm_state, 'error')
      assert.equal(row.task_state, null)
      assert.match((await faultsOf(db(), s.id))[0].message, /did not finish/)
      assert.equal((await db().selectFrom('allocations').select('host_id').where('server_id', '=', s.id).execute()).length, 0)
      assert.deepEqual(await capacityProblems(db()), [])
    })

    it('a claim nobody owns is released', async () => {
      const host = await db().selectFrom('hosts').selectAll().where('hostname', '=', 'sim-host-1').executeTakeFirstOrThrow()
      await db().insertInto('allocations').values({ server_id: randomUUID(), host_id: host.id, vcpus: 3, memory_mb: 300, disk_gb: 3, created_at: Date.now() }).execute()
      await db()
        .updateTable('hosts')
        .set({ vcpus_used: sql<number>`vcpus_used + 3`, memory_mb_used: sql<number>`memory_mb_used + 300`, disk_gb_used: sql<number>`disk_gb_used + 3`, running_vms: sql<number>`running_vms + 1` })
        .where('id', '=', host.id)
        .execute()
      const report = await server.deps.conductor.reconcile()
      assert.equal(report.allocationsReleased, 1)
      assert.deepEqual(await capacityProblems(db()), [])
    })

    it('a second pass finds nothing more to repair', async () => {
      const report = await server.deps.conductor.reconcile()
      assert.deepEqual(Object.values(report).filter((n) => n > 0), [])
    })
  })
}

describe('reconciliation with the evacuate policy', () => {
  let server: TestServer
  before(async () => {
    server = await startTestServer({ env: { PCC_SIMULATED_HOSTS: '2', PCC_SIMULATED_DELAY_MS: '0', PCC_RECONCILE_SECONDS: '0', PCC_LOST_HOST_POLICY: 'evacuate' } })
  })
  after(() => server.close())

  it('rebuilds the servers of a host that is down on another host, recorded as an evacuate action', async () => {
    const db = server.deps.store.db
    const s = await activeServer(server)
    await db.updateTable('hosts').set({ forced_down: 1 }).where('id', '=', s.host_id!).execute()
    const report = await server.deps.conductor.reconcile()
    assert.equal(report.evacuated, 1)
    const { final } = await traceServer(db, s.id, idle)
    assert.equal(final.vm_state, 'active')
    assert.notEqual(final.host_id, s.host_id)
    const evac = (await actionsOf(db, s.id)).find((a) => a.action === 'evacuate')!
    assert.ok(evac.finish_time)
    assert.deepEqual(evac.events.map((e) => e.result), ['Success'])
    assert.deepEqual(await capacityProblems(db), [])
  })
})
