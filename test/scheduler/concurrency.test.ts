import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { freshDatabase } from '../../src/testkit/postgres.js'
import { seedCreate, waitFor } from '../../src/testkit/compute-seed.js'
import { capacityProblems } from '../../src/testkit/compute-trace.js'

// Three hosts of 50 vCPUs (ratio 1) and plenty of RAM and disk: exactly 150 one-vCPU servers fit.
const HOSTS = ['cc-host-1', 'cc-host-2', 'cc-host-3']

describe('concurrent schedulers in two processes on one PostgreSQL', () => {
  let a: TestServer
  let b: TestServer
  before(async () => {
    const databaseUrl = await freshDatabase()
    // One cloud, two processes: they share the database and the master key.
    const env = { PCC_MASTER_KEY: Buffer.alloc(32, 7).toString('base64'), PCC_SIMULATED_HOSTS: '0', PCC_SIMULATED_DELAY_MS: '0', PCC_RECONCILE_SECONDS: '0', PCC_TASK_WORKERS: '16' }
    a = await startTestServer({ databaseUrl, env })
    b = await startTestServer({ databaseUrl, env })
    // Both processes serve the same simulated hosts (registration is idempotent by hostname).
    for (const server of [a, b]) {
      for (const hostname of HOSTS) {
        await server.deps.conductor.addSimulatedHost({ hostname, vcpus: 50, memoryMb: 1_000_000, diskGb: 100_000, cpuAllocationRatio: 1, ramAllocationRatio: 1, diskAllocationRatio: 1 })
      }
    }
  })
  after(async () => {
    await a?.close()
    await b?.close()
  })

  it('200 creates at once against room for 150: exactly 150 ACTIVE, 50 ERROR with no valid host, no host over capacity', async () => {
    const creates = await Promise.all(Array.from({ length: 200 }, (_, i) => seedCreate(i % 2 === 0 ? a.deps : b.deps, { name: `c${i}` })))
    const ids = creates.map((c) => c.serverIds[0])
    const db = a.deps.store.db
    await waitFor(async () => {
      const left = await db.selectFrom('servers').select('id').where('id', 'in', ids).where((eb) => eb.or([eb('vm_state', '=', 'building'), eb('task_state', 'is not', null)])).execute()
      return left.length === 0 ? true : undefined
    }, 120_000, 100)
    const rows = await db.selectFrom('servers').selectAll().where('id', 'in', ids).execute()
    const active = rows.filter((r) => r.vm_state === 'active')
    const errored = rows.filter((r) => r.vm_state === 'error')
    assert.equal(active.length, 150)
    assert.equal(errored.length, 50)
    const faults = await db.selectFrom('instance_faults').selectAll().where('server_id', 'in', errored.map((r) => r.id)).execute()
    assert.equal(faults.length, 50)
    for (const f of faults) {
      assert.match(f.message, /^No valid host was found/)
      assert.equal(f.code, 500)
    }
    const hosts = await db.selectFrom('hosts').selectAll().where('hostname', 'in', HOSTS).execute()
    for (const h of hosts) assert.equal(h.vcpus_used, 50, `${h.hostname} is full and not over`)
    assert.deepEqual(await capacityProblems(db), [])
    // Both processes did part of the work.
    const owners = await db.selectFrom('instance_action_events').select('host').where('event', '=', 'compute__do_build_and_run_instance').execute()
    assert.ok(owners.length >= 150)
  })

  it('an anti-affinity group placed from both processes at once never shares a host', async () => {
    for (const server of [a, b]) {
      for (const hostname of ['grp-host-1', 'grp-host-2', 'grp-host-3']) {
        await server.deps.conductor.addSimulatedHost({ hostname, availabilityZone: 'grp', vcpus: 16, memoryMb: 65536, diskGb: 1000 })
      }
    }
    const db = a.deps.store.db
    await db.insertInto('server_groups').values({ id: 'race-group', name: 'race', project_id: 'project-test', user_id: 'user-test', policy: 'anti-affinity', rules: '{}', created_at: Date.now() }).execute()
    const creates = await Promise.all(Array.from({ length: 8 }, (_, i) => seedCreate(i % 2 === 0 ? a.deps : b.deps, { name: `g${i}`, groupId: 'race-group', availabilityZone: 'grp' })))
    const ids = creates.map((c) => c.serverIds[0])
    await waitFor(async () => {
      const left = await db.selectFrom('servers').select('id').where('id', 'in', ids).where('vm_state', '=', 'building').execute()
      return left.length === 0 ? true : undefined
    }, 60_000, 50)
    const rows = await db.selectFrom('servers').selectAll().where('id', 'in', ids).execute()
    const active = rows.filter((r) => r.vm_state === 'active')
    assert.equal(active.length, 3)
    assert.equal(new Set(active.map((r) => r.host)).size, 3, 'one member per host')
    assert.equal(rows.filter((r) => r.vm_state === 'error').length, 5)
    assert.deepEqual(await capacityProblems(db), [])
  })

  it('multiple creates from both processes at once are each all or nothing, and never over-commit', async () => {
    for (const server of [a, b]) {
      for (const [hostname, vcpus] of [['mc-host-1', 34], ['mc-host-2', 33], ['mc-host-3', 33]] as const) {
        await server.deps.conductor.addSimulatedHost({ hostname, availabilityZone: 'mc', vcpus, memoryMb: 1_000_000, diskGb: 100_000, cpuAllocationRatio: 1 })
      }
    }
    const db = a.deps.store.db
    // 40 requests of 5 servers for 100 vCPUs: at most 20 requests fit. (Claims of a request that fails are
    // given back, so two requests racing for the last slots may both fail: "at most", not "exactly".)
    const creates = await Promise.all(Array.from({ length: 40 }, (_, i) => seedCreate(i % 2 === 0 ? a.deps : b.deps, { name: `mc${i}`, count: 5, availabilityZone: 'mc' })))
    const ids = creates.flatMap((c) => c.serverIds)
    await waitFor(async () => {
      const left = await db.selectFrom('servers').select('id').where('id', 'in', ids).where('vm_state', '=', 'building').execute()
      return left.length === 0 ? true : undefined
    }, 120_000, 100)
    const rows = await db.selectFrom('servers').selectAll().where('id', 'in', ids).execute()
    const state = new Map(rows.map((r) => [r.id, r.vm_state]))
    let fullRequests = 0
    for (const c of creates) {
      const states = new Set(c.serverIds.map((id) => state.get(id)))
      assert.equal(states.size, 1, `request ${c.requestId} is all or nothing: ${[...states].join(', ')}`)
      if (states.has('active')) fullRequests++
    }
    assert.ok(fullRequests >= 15 && fullRequests <= 20, `${fullRequests} requests placed`)
    const hosts = await db.selectFrom('hosts').selectAll().where('availability_zone', '=', 'mc').execute()
    assert.equal(hosts.reduce((n, h) => n + h.vcpus_used, 0), fullRequests * 5)
    const errored = rows.filter((r) => r.vm_state === 'error')
    const faults = await db.selectFrom('instance_faults').select('message').where('server_id', 'in', errored.map((r) => r.id)).execute()
    assert.equal(faults.length, errored.length)
    for (const f of faults) assert.match(f.message, /^No valid host was found/)
    assert.deepEqual(await capacityProblems(db), [])
  })
})
