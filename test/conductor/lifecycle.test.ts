import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { seedAction, seedCreate, seedDelete, waitFor } from '../../src/testkit/compute-seed.js'
import { actionsOf, capacityProblems, faultsOf, inOrder, label, traceServer } from '../../src/testkit/compute-trace.js'
import type { ServerActionName } from '../../src/server/compute/server-states.js'
import type { ServerTable } from '../../src/server/storage/tables/compute.js'

const idle = (s: ServerTable) => s.task_state === null && s.vm_state !== 'building'

for (const dialect of DIALECTS) {
  describe(`server lifecycle on the simulated driver (${dialect})`, () => {
    let server: TestServer
    before(async () => {
      server = await startTestServer({ dialect, env: { PCC_SIMULATED_HOSTS: '2', PCC_SIMULATED_DELAY_MS: '25', PCC_RECONCILE_SECONDS: '0' } })
    })
    after(() => server.close())
    const db = () => server.deps.store.db

    async function boot(name = 'vm'): Promise<string> {
      const { serverIds } = await seedCreate(server.deps, { name })
      await traceServer(db(), serverIds[0], idle)
      return serverIds[0]
    }

    it('builds through scheduling, networking, block_device_mapping and spawning to ACTIVE', async () => {
      const { serverIds, requestId } = await seedCreate(server.deps, { name: 'web' })
      const id = serverIds[0]
      const { states, final } = await traceServer(db(), id, idle)
      const seen = states.map(label)
      assert.ok(inOrder(seen, ['building/networking', 'building/block_device_mapping', 'building/spawning', 'active/-']), seen.join(' → '))
      assert.ok(seen.every((s) => ['building/scheduling', 'building/-', 'building/networking', 'building/block_device_mapping', 'building/spawning', 'active/-'].includes(s)), seen.join(' → '))
      assert.equal(final.power_state, 1)
      assert.equal(final.progress, 100)
      assert.ok(final.launched_at && final.launched_at >= final.created_at)
      assert.match(final.host!, /^sim-host-\d$/)
      assert.equal(final.availability_zone, 'nova')
      const [create] = await actionsOf(db(), id)
      assert.equal(create.action, 'create')
      assert.equal(create.request_id, requestId)
      assert.ok(create.finish_time)
      assert.deepEqual(create.events.map((e) => [e.event, e.result]), [
        ['conductor_schedule_and_build_instances', 'Success'],
        ['compute__do_build_and_run_instance', 'Success'],
      ])
      const alloc = await db().selectFrom('allocations').selectAll().where('server_id', '=', id).execute()
      assert.deepEqual(alloc.map((a) => [a.host_id, a.vcpus, a.memory_mb, a.disk_gb]), [[final.host_id, 1, 512, 1]])
      assert.deepEqual(await capacityProblems(db()), [])
    })

    // Each action from its starting state: the task states it must pass through, and where it lands.
    const cases: { action: ServerActionName; params?: Record<string, unknown>; from?: ServerActionName[]; steps: string[]; final: string; power: number }[] = [
      { action: 'os-stop', steps: ['active/powering-off'], final: 'stopped', power: 4 },
      { action: 'os-start', from: ['os-stop'], steps: ['stopped/powering-on'], final: 'active', power: 1 },
      { action: 'reboot:SOFT', steps: ['active/reboot_pending', 'active/reboot_started'], final: 'active', power: 1 },
      { action: 'reboot:HARD', from: ['os-stop'], steps: ['stopped/reboot_pending_hard', 'stopped/reboot_started_hard'], final: 'active', power: 1 },
      { action: 'pause', steps: ['active/pausing'], final: 'paused', power: 3 },
      { action: 'unpause', from: ['pause'], steps: ['paused/unpausing'], final: 'active', power: 1 },
      { action: 'suspend', steps: ['active/suspending'], final: 'suspended', power: 7 },
      { action: 'resume', from: ['suspend'], steps: ['suspended/resuming'], final: 'active', power: 1 },
      { action: 'rescue', steps: ['active/rescuing'], final: 'rescued', power: 1 },
      { action: 'unrescue', from: ['rescue'], steps: ['rescued/unrescuing'], final: 'active', power: 1 },
      { action: 'rebuild', params: { imageRef: 'image-2' }, steps: ['active/rebuild_block_device_mapping', 'active/rebuild_spawning'], final: 'active', power: 1 },
      { action: 'rebuild', params: { imageRef: 'image-2' }, from: ['os-stop'], steps: ['stopped/rebuild_block_device_mapping', 'stopped/rebuild_spawning'], final: 'stopped', power: 4 },
      { action: 'createImage', params: { name: 'snap' }, steps: ['active/image_snapshot', 'active/image_pending_upload', 'active/image_uploading'], final: 'active', power: 1 },
      { action: 'changePassword', params: { adminPass: 'x' }, steps: ['active/updating_password'], final: 'active', power: 1 },
      { action: 'migrate', steps: ['active/resize_migrating', 'active/resize_migrated', 'active/resize_finish'], final: 'resized', power: 1 },
      { action: 'confirmResize', from: ['migrate'], steps: ['resized/resize_confirming'], final: 'active', power: 1 },
      { action: 'revertResize', from: ['migrate'], steps: ['resized/resize_reverting'], final: 'active', power: 1 },
      { action: 'os-migrateLive', params: { host: null }, steps: ['active/migrating'], final: 'active', power: 1 },
      { action: 'shelve', steps: ['active/shelving_image_pending_upload', 'active/shelving_image_uploading', 'active/shelving_offloading'], final: 'shelved_offloaded', power: 4 },
      { action: 'unshelve', from: ['shelve'], steps: ['shelved_offloaded/spawning'], final: 'active', power: 1 },
    ]
    for (const c of cases) {
      it(`${c.action}${c.from ? ` after ${c.from.join(', ')}` : ''}: ${c.steps.join(' → ')} → ${c.final}`, async () => {
        const id = await boot(c.action)
        for (const pre of c.from ?? []) {
          await seedAction(server.deps, id, pre, pre === 'os-migrateLive' ? { host: null } : {})
          await traceServer(db(), id, idle)
        }
        const hostBefore = (await db().selectFrom('servers').select('host_id').where('id', '=', id).executeTakeFirstOrThrow()).host_id
        const requestId = await seedAction(server.deps, id, c.action, c.params ?? {})
        const { states, final } = await traceServer(db(), id, (s) => s.task_state === null)
        const seen = states.map(label)
        assert.ok(inOrder(seen, [...c.steps, `${c.final}/-`]), `${c.action}: ${seen.join(' → ')}`)
        assert.equal(final.vm_state, c.final)
        assert.equal(final.power_state, c.power)
        assert.deepEqual(await faultsOf(db(), id), [])
        const action = (await actionsOf(db(), id)).find((a) => a.request_id === requestId)!
        assert.ok(action.finish_time, 'the instance action is finished')
        assert.equal(action.message, null)
        assert.ok(action.events.length >= 1 && action.events.every((e) => e.result === 'Success' && e.finish_time), JSON.stringify(action.events))
        if (c.action === 'migrate' || c.action === 'os-migrateLive') assert.notEqual(final.host_id, hostBefore, 'moved to the other host')
        if (c.action === 'revertResize') assert.notEqual(final.host_id, hostBefore, 'back on the source host')
        if (c.action === 'migrate') assert.equal((await db().selectFrom('allocations').select('host_id').where('server_id', '=', id).execute()).length, 2, 'source claim held until confirm')
        if (c.action === 'shelve') {
          assert.equal(final.host_id, null)
          assert.equal((await db().selectFrom('allocations').select('host_id').where('server_id', '=', id).execute()).length, 0)
        }
        if (c.action === 'rebuild') assert.equal(final.image_id, 'image-2')
        if (c.action !== 'migrate' && c.action !== 'shelve') {
          assert.equal((await db().selectFrom('allocations').select('host_id').where('server_id', '=', id).execute()).length, 1)
        }
        assert.deepEqual(await capacityProblems(db()), [])
      })
    }

    it('resizes to a bigger flavor, holds both claims while VERIFY_RESIZE, confirm frees the old one', async () => {
      await db()
        .insertInto('flavors')
        .values({ id: 'big', name: 'm1.big', vcpus: 4, ram: 4096, disk: 10, ephemeral: 0, swap: 0, rxtx_factor: 1, is_public: 1, disabled: 0, description: null, extra_specs: '{}', created_at: Date.now(), deleted: 0 })
        .execute()
      const id = await boot('grow')
      await seedAction(server.deps, id, 'resize', { flavorRef: 'big' })
      const { states, final } = await traceServer(db(), id, (s) => s.task_state === null)
      assert.ok(inOrder(states.map(label), ['active/resize_migrating', 'active/resize_migrated', 'active/resize_finish', 'resized/-']), states.map(label).join(' → '))
      assert.equal(JSON.parse(final.flavor).id, 'big')
      assert.equal(JSON.parse(final.old_flavor!).id, '1')
      const claims = await db().selectFrom('allocations').selectAll().where('server_id', '=', id).execute()
      assert.equal(claims.reduce((n, a) => n + a.vcpus, 0), 5, 'old 1 + new 4 vCPUs held')
      await seedAction(server.deps, id, 'confirmResize')
      const done = await traceServer(db(), id, (s) => s.task_state === null)
      assert.equal(done.final.vm_state, 'active')
      assert.equal(done.final.old_flavor, null)
      const left = await db().selectFrom('allocations').selectAll().where('server_id', '=', id).execute()
      assert.deepEqual(left.map((a) => [a.host_id, a.vcpus, a.memory_mb]), [[done.final.host_id, 4, 4096]])
      assert.deepEqual(await capacityProblems(db()), [])
    })

    it('evacuates a server from a host that is forced down, to the other host', async () => {
      const id = await boot('evac')
      const row = await db().selectFrom('servers').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
      await db().updateTable('hosts').set({ forced_down: 1 }).where('id', '=', row.host_id!).execute()
      try {
        await seedAction(server.deps, id, 'evacuate', {})
        const { states, final } = await traceServer(db(), id, (s) => s.task_state === null)
        assert.ok(inOrder(states.map(label), ['active/rebuild_block_device_mapping', 'active/rebuild_spawning', 'active/-']), states.map(label).join(' → '))
        assert.notEqual(final.host_id, row.host_id)
        const claims = await db().selectFrom('allocations').select('host_id').where('server_id', '=', id).execute()
        assert.deepEqual(claims.map((c) => c.host_id), [final.host_id])
      } finally {
        await db().updateTable('hosts').set({ forced_down: 0 }).where('id', '=', row.host_id!).execute()
      }
    })

    it('deletes: guest destroyed, claim released, group membership removed, row kept as deleted', async () => {
      const now = Date.now()
      await db().insertInto('server_groups').values({ id: 'grp-del', name: 'g', project_id: 'project-test', user_id: 'user-test', policy: 'anti-affinity', rules: '{}', created_at: now }).execute()
      const { serverIds } = await seedCreate(server.deps, { name: 'gone', groupId: 'grp-del' })
      const id = serverIds[0]
      const { final: built } = await traceServer(db(), id, idle)
      const driver = server.deps.conductor.drivers.get(built.host_id!)!
      assert.ok(await driver.info(id))
      const requestId = await seedDelete(server.deps, id)
      const { final } = await traceServer(db(), id, (s) => s.deleted === 1)
      assert.equal(final.vm_state, 'deleted')
      assert.equal(final.task_state, null)
      assert.ok(final.deleted_at && final.terminated_at)
      assert.equal(await driver.info(id), undefined)
      assert.equal((await db().selectFrom('allocations').select('host_id').where('server_id', '=', id).execute()).length, 0)
      assert.equal((await db().selectFrom('server_group_members').select('server_id').where('server_id', '=', id).execute()).length, 0)
      const del = (await actionsOf(db(), id)).find((a) => a.request_id === requestId)!
      assert.deepEqual(del.events.map((e) => [e.event, e.result]), [['compute_terminate_instance', 'Success']])
      assert.deepEqual(await capacityProblems(db()), [])
    })

    it('a delete that arrives during the build wins: no guest, no claim left', async () => {
      const { serverIds } = await seedCreate(server.deps, { name: 'racer' })
      const id = serverIds[0]
      await waitFor(async () => {
        const r = await db().selectFrom('servers').select('task_state').where('id', '=', id).executeTakeFirstOrThrow()
        return r.task_state === 'networking' || r.task_state === 'block_device_mapping' ? true : undefined
      })
      await seedDelete(server.deps, id)
      const { final } = await traceServer(db(), id, (s) => s.deleted === 1)
      assert.equal(final.vm_state, 'deleted')
      await new Promise((r) => setTimeout(r, 300))
      const after = await db().selectFrom('servers').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
      assert.equal(after.vm_state, 'deleted', 'the build did not bring it back')
      for (const [, driver] of server.deps.conductor.drivers.entries()) assert.equal((await driver.listGuests()).some((g) => g.serverId === id), false)
      assert.deepEqual(await capacityProblems(db()), [])
    })

    it('a spawn failure ends in ERROR with a fault, an Error event, and the claim released', async () => {
      for (const h of server.deps.conductor.simulatedHosts) h.driver.injectFailures(0, { spawn: 'Virtual Interface creation failed' })
      try {
        const { serverIds, requestId } = await seedCreate(server.deps, { name: 'doomed' })
        const id = serverIds[0]
        const { states, final } = await traceServer(db(), id, idle)
        assert.ok(inOrder(states.map(label), ['building/spawning', 'error/-']), states.map(label).join(' → '))
        assert.equal(final.vm_state, 'error')
        assert.equal(final.host_id, null)
        const [fault] = await faultsOf(db(), id)
        assert.equal(fault.code, 500)
        assert.equal(fault.message, 'Virtual Interface creation failed')
        const create = (await actionsOf(db(), id)).find((a) => a.request_id === requestId)!
        assert.equal(create.message, 'Error')
        assert.ok(create.finish_time)
        assert.deepEqual(create.events.map((e) => [e.event, e.result]), [
          ['conductor_schedule_and_build_instances', 'Success'],
          ['compute__do_build_and_run_instance', 'Error'],
        ])
        assert.equal((await db().selectFrom('allocations').select('host_id').where('server_id', '=', id).execute()).length, 0)
      } finally {
        for (const h of server.deps.conductor.simulatedHosts) h.driver.injectFailures(0, {})
      }
      assert.deepEqual(await capacityProblems(db()), [])
    })

    it('an action failure ends in ERROR with the fault and reverts task_state; a hard reboot recovers it', async () => {
      const id = await boot('flaky')
      for (const h of server.deps.conductor.simulatedHosts) h.driver.injectFailures(0, { pause: 'libvirt: operation failed' })
      try {
        await seedAction(server.deps, id, 'pause')
        const { final } = await traceServer(db(), id, (s) => s.task_state === null)
        assert.equal(final.vm_state, 'error')
        const [fault] = await faultsOf(db(), id)
        assert.equal(fault.message, 'libvirt: operation failed')
      } finally {
        for (const h of server.deps.conductor.simulatedHosts) h.driver.injectFailures(0, {})
      }
      await seedAction(server.deps, id, 'reboot:HARD')
      const { final } = await traceServer(db(), id, (s) => s.task_state === null)
      assert.equal(final.vm_state, 'active')
      assert.equal(final.power_state, 1)
    })

    it('a random failure rate fails some builds and never leaks a claim', async () => {
      for (const h of server.deps.conductor.simulatedHosts) {
        h.driver.injectFailures(0.3)
        h.driver.setDelay(0)
      }
      try {
        const created = await Promise.all(Array.from({ length: 20 }, (_, i) => seedCreate(server.deps, { name: `r${i}` })))
        const finals = await Promise.all(created.map((c) => traceServer(db(), c.serverIds[0], idle).then((t) => t.final)))
        for (const f of finals) {
          assert.ok(f.vm_state === 'active' || f.vm_state === 'error', f.vm_state)
          if (f.vm_state === 'error') assert.equal((await faultsOf(db(), f.id)).length, 1)
        }
        assert.ok(finals.some((f) => f.vm_state === 'error'), 'some failed at a 30% failure rate per operation')
      } finally {
        for (const h of server.deps.conductor.simulatedHosts) {
          h.driver.injectFailures(0)
          h.driver.setDelay(25)
        }
      }
      assert.deepEqual(await capacityProblems(db()), [])
    })

    it('a console log grows with each boot', async () => {
      const id = await boot('console')
      const row = await db().selectFrom('servers').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
      const driver = server.deps.conductor.drivers.get(row.host_id!)!
      const first = await driver.consoleOutput(id)
      assert.match(first, /boot 1/)
      await seedAction(server.deps, id, 'reboot:SOFT')
      await traceServer(db(), id, (s) => s.task_state === null)
      const second = await driver.consoleOutput(id)
      assert.match(second, /boot 2/)
      assert.ok(second.length > first.length)
      assert.equal((await driver.consoleOutput(id, 1)).trim().split('\n').length, 1)
      assert.equal(await server.deps.conductor.consoleOutput(id), second, 'what the API serves for os-getConsoleOutput')
      assert.equal(await server.deps.conductor.consoleOutput('no-such-server'), undefined)
      assert.equal(await server.deps.conductor.hostUp(row.host!), true)
    })
  })
}
