/**
 * Migrations as the conductor records them (resize, cold migration, live migration) and the APIs that show them;
 * quota classes feeding the defaults; server external events; the usage audit log; the legacy extension list.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS } from '../../src/testkit/harness.js'
import { call, computeTestbed, createBody, type ComputeTestbed } from './helpers.js'

async function waitStatus(tb: ComputeTestbed, id: string, status: string, timeoutMs = 60_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs
  let last: Record<string, unknown> = {}
  while (Date.now() < deadline) {
    last = (await call(tb, tb.admin, 'GET', `/servers/${id}`, undefined, '2.96')).body?.server ?? {}
    if (last.status === status && last['OS-EXT-STS:task_state'] === null) return last
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  assert.fail(`${id} did not reach ${status}: ${JSON.stringify(last)}`)
}

const act = async (tb: ComputeTestbed, id: string, body: unknown, status: string) => {
  const r = await call(tb, tb.admin, 'POST', `/servers/${id}/action`, body, '2.96')
  assert.ok(r.status === 202 || r.status === 204, JSON.stringify(r.body))
  return waitStatus(tb, id, status)
}

test('migrations: each move is recorded with its statuses; os-migrations filters; a server shows its live ones in progress', { timeout: 180_000 }, async () => {
  const tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '3' }, true)
  try {
    const created = await call(tb, tb.member, 'POST', '/servers', createBody('mover'), '2.96')
    const id = created.body.server.id
    const first = (await waitStatus(tb, id, 'ACTIVE'))['OS-EXT-SRV-ATTR:host']
    await act(tb, id, { resize: { flavorRef: '2' } }, 'VERIFY_RESIZE')
    let list = (await call(tb, tb.admin, 'GET', `/os-migrations?instance_uuid=${id}`, undefined, '2.80')).body.migrations
    assert.equal(list.length, 1)
    assert.equal(list[0].status, 'finished')
    assert.equal(list[0].migration_type, 'resize')
    assert.equal(list[0].source_compute, first)
    assert.equal(list[0].old_instance_type_id, 1)
    assert.equal(list[0].new_instance_type_id, 2)
    assert.equal(list[0].project_id, tb.member.projectId)
    await act(tb, id, { confirmResize: null }, 'ACTIVE')
    await act(tb, id, { migrate: null }, 'VERIFY_RESIZE')
    await act(tb, id, { revertResize: null }, 'ACTIVE')
    await act(tb, id, { 'os-migrateLive': { host: null, block_migration: 'auto' } }, 'ACTIVE')
    list = (await call(tb, tb.admin, 'GET', `/os-migrations?instance_uuid=${id}`, undefined, '2.59')).body.migrations
    assert.deepEqual(
      list.map((m: { migration_type: string; status: string }) => [m.migration_type, m.status]),
      [['live-migration', 'completed'], ['migration', 'reverted'], ['resize', 'confirmed']],
      'newest first, each in its final status',
    )
    assert.ok(list.every((m: { dest_compute: string | null; uuid: string }) => m.dest_compute && m.uuid))
    assert.equal((await call(tb, tb.admin, 'GET', `/os-migrations?migration_type=resize&instance_uuid=${id}`)).body.migrations.length, 1)
    assert.equal((await call(tb, tb.admin, 'GET', '/os-migrations?status=confirmed')).body.migrations.length, 1)
    const page = (await call(tb, tb.admin, 'GET', `/os-migrations?limit=1&marker=${list[0].uuid}`, undefined, '2.59')).body.migrations
    assert.deepEqual(page.map((m: { uuid: string }) => m.uuid), [list[1].uuid])
    assert.equal((await call(tb, tb.admin, 'GET', '/os-migrations?marker=nope', undefined, '2.59')).status, 400)
    assert.equal((await call(tb, tb.admin, 'GET', '/os-migrations?changes-since=yesterday', undefined, '2.59')).status, 400)
    assert.ok(!('migration_type' in (await call(tb, tb.admin, 'GET', '/os-migrations', undefined, '2.22')).body.migrations[0]))
    assert.equal((await call(tb, tb.member, 'GET', '/os-migrations')).status, 403)

    // A server's migrations in progress: none now (the live one completed); admins only; another project's is 404.
    assert.deepEqual((await call(tb, tb.admin, 'GET', `/servers/${id}/migrations`, undefined, '2.23')).body, { migrations: [] })
    assert.equal((await call(tb, tb.admin, 'GET', `/servers/${id}/migrations`, undefined, '2.22')).status, 404)
    assert.equal((await call(tb, tb.member, 'GET', `/servers/${id}/migrations`, undefined, '2.23')).status, 403)
    assert.equal((await call(tb, tb.other, 'GET', `/servers/${id}/migrations`, undefined, '2.23')).status, 404)
    assert.equal((await call(tb, tb.admin, 'GET', `/servers/${id}/migrations/${list[0].id}`, undefined, '2.23')).status, 404, 'a completed one is not in progress')
    // One caught in progress (as the conductor leaves it while the guest's memory is copied) is shown.
    await tb.server.deps.store.db.updateTable('migrations').set({ status: 'running' }).where('uuid', '=', list[0].uuid).execute()
    const running = (await call(tb, tb.admin, 'GET', `/servers/${id}/migrations/${list[0].id}`, undefined, '2.80')).body.migration
    assert.equal(running.server_uuid, id)
    assert.equal(running.status, 'running')
    assert.equal(running.user_id, tb.member.userId)
    const links = (await call(tb, tb.admin, 'GET', `/os-migrations?instance_uuid=${id}&migration_type=live-migration`, undefined, '2.23')).body.migrations[0].links
    assert.match(links[0].href, new RegExp(`/servers/${id}/migrations/${list[0].id}$`))
  } finally {
    await tb.close()
  }
})

for (const dialect of DIALECTS) {
  test(`quota classes, external events, usage audit log, extensions (${dialect})`, { timeout: 120_000 }, async () => {
    const tb = await computeTestbed(dialect, { PCC_SIMULATED_HOSTS: '2' })
    try {
      // The default class feeds every project's defaults, and the quota check of create.
      const shown = (await call(tb, tb.admin, 'GET', '/os-quota-class-sets/default')).body.quota_class_set
      assert.equal(shown.id, 'default')
      assert.equal(shown.instances, 10)
      assert.equal(shown.fixed_ips, -1, 'nova-network resources below 2.50')
      const updated = await call(tb, tb.admin, 'PUT', '/os-quota-class-sets/default', { quota_class_set: { instances: 1, fixed_ips: 99 } })
      assert.equal(updated.status, 200)
      assert.equal(updated.body.quota_class_set.instances, 1)
      assert.equal(updated.body.quota_class_set.fixed_ips, 99)
      assert.equal((await call(tb, tb.member, 'GET', `/os-quota-sets/${tb.member.projectId}`)).body.quota_set.instances, 1)
      assert.equal((await call(tb, tb.member, 'GET', `/os-quota-sets/${tb.member.projectId}/defaults`)).body.quota_set.instances, 1)
      assert.equal((await call(tb, tb.member, 'POST', '/servers', createBody('one'), '2.96')).status, 202)
      assert.equal((await call(tb, tb.member, 'POST', '/servers', createBody('two'), '2.96')).status, 403, 'over the default class limit')
      const v257 = (await call(tb, tb.admin, 'GET', '/os-quota-class-sets/default', undefined, '2.57')).body.quota_class_set
      assert.ok(!('injected_files' in v257) && !('fixed_ips' in v257))
      assert.equal((await call(tb, tb.admin, 'PUT', '/os-quota-class-sets/default', { quota_class_set: { injected_files: 1 } }, '2.57')).status, 400)
      assert.equal((await call(tb, tb.admin, 'PUT', '/os-quota-class-sets/default', { quota_class_set: { instances: -2 } })).status, 400)
      assert.equal((await call(tb, tb.admin, 'PUT', '/os-quota-class-sets/default', { quota_class_set: { instances: 'many' } })).status, 400)
      assert.equal((await call(tb, tb.member, 'GET', '/os-quota-class-sets/default')).status, 403)
      assert.equal((await call(tb, tb.member, 'PUT', '/os-quota-class-sets/default', { quota_class_set: { instances: 50 } })).status, 403)
      assert.equal((await call(tb, tb.admin, 'GET', '/os-quota-class-sets/default')).body.quota_class_set.instances, 1, 'refusals changed nothing')
      // Another class does not touch the defaults.
      await call(tb, tb.admin, 'PUT', '/os-quota-class-sets/gold', { quota_class_set: { instances: 50 } })
      assert.equal((await call(tb, tb.admin, 'GET', '/os-quota-class-sets/gold')).body.quota_class_set.instances, 50)
      assert.equal((await call(tb, tb.member, 'GET', `/os-quota-sets/${tb.member.projectId}`)).body.quota_set.instances, 1)

      // External events: per server, in Nova's 200/207/404 shape.
      const server = (await tb.server.deps.store.db.selectFrom('servers').select('id').executeTakeFirstOrThrow()).id
      const unknown = '3b1e6f9e-0000-4000-8000-000000000000'
      const onNoHost = await call(tb, tb.admin, 'POST', '/os-server-external-events', { events: [{ name: 'network-changed', server_uuid: server }] })
      assert.equal(onNoHost.status, 207, 'a server not yet on a host')
      assert.equal(onNoHost.body.events[0].code, 422)
      await tb.server.deps.store.db.updateTable('servers').set({ host: 'sim-host-1', node: 'sim-host-1' }).where('id', '=', server).execute()
      const ok = await call(tb, tb.admin, 'POST', '/os-server-external-events', { events: [{ name: 'network-vif-plugged', server_uuid: server, tag: 'port-1' }] })
      assert.equal(ok.status, 200)
      assert.deepEqual(ok.body.events, [{ name: 'network-vif-plugged', server_uuid: server, tag: 'port-1', status: 'completed', code: 200 }])
      const mixed = await call(tb, tb.admin, 'POST', '/os-server-external-events', { events: [{ name: 'network-changed', server_uuid: server }, { name: 'network-changed', server_uuid: unknown }] })
      assert.equal(mixed.status, 207)
      assert.deepEqual(mixed.body.events.map((e: { code: number }) => e.code), [200, 404])
      assert.equal((await call(tb, tb.admin, 'POST', '/os-server-external-events', { events: [{ name: 'network-changed', server_uuid: unknown }] })).status, 404)
      assert.equal((await call(tb, tb.admin, 'POST', '/os-server-external-events', { events: [{ name: 'volume-extended', server_uuid: server }] }, '2.50')).status, 400)
      assert.equal((await call(tb, tb.admin, 'POST', '/os-server-external-events', { events: [] })).status, 400)
      assert.equal((await call(tb, tb.member, 'POST', '/os-server-external-events', { events: [{ name: 'network-changed', server_uuid: server }] })).status, 403)

      // The usage audit log: the last whole month, every compute host not run.
      const audit = (await call(tb, tb.admin, 'GET', '/os-instance_usage_audit_log/2026-03-15%2010:00:00')).body.instance_usage_audit_log
      assert.equal(audit.period_beginning, '2026-02-01 00:00:00')
      assert.equal(audit.period_ending, '2026-03-01 00:00:00')
      assert.deepEqual(audit.hosts_not_run.sort(), ['sim-host-1', 'sim-host-2'])
      assert.equal(audit.overall_status, '0 of 2 hosts done. 0 errors.')
      assert.equal((await call(tb, tb.admin, 'GET', '/os-instance_usage_audit_log')).status, 200)
      assert.equal((await call(tb, tb.admin, 'GET', '/os-instance_usage_audit_log/invalid_time')).status, 400)
      assert.equal((await call(tb, tb.member, 'GET', '/os-instance_usage_audit_log')).status, 403)

      // Nova's extension list, for any token.
      const extensions = (await call(tb, tb.member, 'GET', '/extensions')).body.extensions
      assert.ok(extensions.some((e: { name: string }) => e.name === 'Hosts'))
      assert.equal((await call(tb, tb.member, 'GET', '/extensions/os-consoles')).body.extension.alias, 'os-consoles')
      assert.equal((await call(tb, tb.member, 'GET', '/extensions/nope')).status, 404)
    } finally {
      await tb.close()
    }
  })
}
