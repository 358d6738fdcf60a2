/**
 * Host aggregates with the conductor running (simulated hosts): CRUD and actions with their refusals, zones from
 * aggregate metadata (os-availability-zone, scheduling with --availability-zone), the extra-specs filter, os-hosts.
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

for (const dialect of DIALECTS) {
  test(`aggregates: CRUD, hosts, metadata and their refusals (${dialect})`, { timeout: 120_000 }, async () => {
    const tb = await computeTestbed(dialect, { PCC_SIMULATED_HOSTS: '2' })
    try {
      const created = await call(tb, tb.admin, 'POST', '/os-aggregates', { aggregate: { name: 'rack1' } }, '2.41')
      assert.equal(created.status, 200, JSON.stringify(created.body))
      const agg = created.body.aggregate
      assert.equal(agg.availability_zone, null)
      assert.ok(agg.uuid && Number.isInteger(agg.id))
      assert.ok(!('hosts' in agg) && !('metadata' in agg), 'create answers without hosts and metadata')
      assert.ok(!('uuid' in (await call(tb, tb.admin, 'GET', `/os-aggregates/${agg.id}`, undefined, '2.40')).body.aggregate), 'uuid from 2.41')

      // Refusals: who, what, and a duplicate name; none changes anything.
      assert.equal((await call(tb, tb.member, 'GET', '/os-aggregates')).status, 403)
      assert.equal((await call(tb, tb.member, 'POST', '/os-aggregates', { aggregate: { name: 'x' } })).status, 403)
      assert.equal((await call(tb, tb.member, 'POST', `/os-aggregates/${agg.id}/action`, { add_host: { host: 'sim-host-1' } })).status, 403)
      assert.equal((await call(tb, tb.admin, 'POST', '/os-aggregates', { aggregate: { name: '' } })).status, 400)
      assert.equal((await call(tb, tb.admin, 'POST', '/os-aggregates', { aggregate: { name: 'x'.repeat(256) } })).status, 400)
      assert.equal((await call(tb, tb.admin, 'POST', '/os-aggregates', { aggregate: { name: 'x', extra: 1 } })).status, 400)
      const dup = await call(tb, tb.admin, 'POST', '/os-aggregates', { aggregate: { name: 'rack1' } })
      assert.equal(dup.status, 409)
      assert.match(dup.body.conflictingRequest.message, /rack1 already exists/)
      assert.equal((await call(tb, tb.admin, 'GET', '/os-aggregates/999')).status, 404)
      assert.equal((await call(tb, tb.admin, 'GET', '/os-aggregates/abc')).status, 404)
      assert.equal((await call(tb, tb.admin, 'PUT', `/os-aggregates/${agg.id}`, { aggregate: {} })).status, 400)
      assert.equal((await call(tb, tb.admin, 'POST', `/os-aggregates/${agg.id}/action`, { add_host: { host: 'nowhere' } })).status, 404)
      assert.equal((await call(tb, tb.admin, 'POST', `/os-aggregates/${agg.id}/action`, { remove_host: { host: 'sim-host-1' } })).status, 404)
      assert.equal((await call(tb, tb.admin, 'POST', `/os-aggregates/${agg.id}/action`, { reboot: {} })).status, 400)
      assert.equal((await call(tb, tb.admin, 'GET', '/os-aggregates')).body.aggregates.length, 1)

      // Hosts and metadata.
      const added = await call(tb, tb.admin, 'POST', `/os-aggregates/${agg.id}/action`, { add_host: { host: 'sim-host-1' } })
      assert.deepEqual(added.body.aggregate.hosts, ['sim-host-1'])
      assert.equal((await call(tb, tb.admin, 'POST', `/os-aggregates/${agg.id}/action`, { add_host: { host: 'sim-host-1' } })).status, 409)
      const meta = await call(tb, tb.admin, 'POST', `/os-aggregates/${agg.id}/action`, { set_metadata: { metadata: { disk: 'ssd', gone: 'x' } } })
      assert.deepEqual(meta.body.aggregate.metadata, { disk: 'ssd', gone: 'x' })
      const unset = await call(tb, tb.admin, 'POST', `/os-aggregates/${agg.id}/action`, { set_metadata: { metadata: { gone: null } } })
      assert.deepEqual(unset.body.aggregate.metadata, { disk: 'ssd' })
      assert.ok(unset.body.aggregate.updated_at)
      const deleteBusy = await call(tb, tb.admin, 'DELETE', `/os-aggregates/${agg.id}`)
      assert.equal(deleteBusy.status, 400, 'an aggregate with hosts is not deleted')

      // A zone: the host moves into it, and a second zone for the same host is refused.
      const renamed = await call(tb, tb.admin, 'PUT', `/os-aggregates/${agg.id}`, { aggregate: { name: 'rack1b', availability_zone: 'az-a' } })
      assert.equal(renamed.status, 200)
      assert.equal(renamed.body.aggregate.availability_zone, 'az-a')
      assert.equal(renamed.body.aggregate.metadata.availability_zone, 'az-a')
      const zones = (await call(tb, tb.admin, 'GET', '/os-availability-zone/detail')).body.availabilityZoneInfo
      assert.deepEqual(zones.map((z: { zoneName: string }) => z.zoneName).sort(), ['az-a', 'nova'])
      assert.deepEqual(Object.keys(zones.find((z: { zoneName: string }) => z.zoneName === 'az-a').hosts), ['sim-host-1'])
      const other = (await call(tb, tb.admin, 'POST', '/os-aggregates', { aggregate: { name: 'rack2', availability_zone: 'az-b' } })).body.aggregate
      const clash = await call(tb, tb.admin, 'POST', `/os-aggregates/${other.id}/action`, { add_host: { host: 'sim-host-1' } })
      assert.equal(clash.status, 400)
      assert.match(clash.body.badRequest.message, /already in availability zone/)
      assert.equal((await call(tb, tb.admin, 'PUT', `/os-aggregates/${other.id}`, { aggregate: { availability_zone: 'internal' } })).status, 400)

      // os-hosts shows the zone; it is gone at 2.43.
      const hosts = (await call(tb, tb.admin, 'GET', '/os-hosts?zone=az-a', undefined, '2.42')).body.hosts
      assert.deepEqual(hosts, [{ host_name: 'sim-host-1', service: 'compute', zone: 'az-a' }])
      assert.equal((await call(tb, tb.admin, 'GET', '/os-hosts', undefined, '2.42')).body.hosts.length, 2)
      assert.equal((await call(tb, tb.admin, 'GET', '/os-hosts', undefined, '2.43')).status, 404)
      assert.equal((await call(tb, tb.member, 'GET', '/os-hosts', undefined, '2.42')).status, 403)
      const show = (await call(tb, tb.admin, 'GET', '/os-hosts/sim-host-1', undefined, '2.42')).body.host
      assert.deepEqual(show.slice(0, 3).map((r: { resource: { project: string } }) => r.resource.project), ['(total)', '(used_now)', '(used_max)'])
      assert.equal((await call(tb, tb.admin, 'GET', '/os-hosts/nowhere', undefined, '2.42')).status, 404)
      assert.equal((await call(tb, tb.admin, 'PUT', '/os-hosts/sim-host-1', { status: 'invalid' }, '2.42')).status, 400)
      assert.equal((await call(tb, tb.admin, 'PUT', '/os-hosts/sim-host-1', {}, '2.42')).status, 400)
      assert.equal((await call(tb, tb.admin, 'PUT', '/os-hosts/sim-host-1', { status: 'enable', maintenance_mode: 'enable' }, '2.42')).status, 400)
      assert.equal((await call(tb, tb.admin, 'GET', '/os-hosts/sim-host-1/reboot', undefined, '2.42')).status, 409)
      const disabled = await call(tb, tb.admin, 'PUT', '/os-hosts/sim-host-2', { status: 'disable' }, '2.42')
      assert.deepEqual(disabled.body, { host: 'sim-host-2', status: 'disabled' })
      const service = (await call(tb, tb.admin, 'GET', '/os-services?host=sim-host-2')).body.services[0]
      assert.equal(service.status, 'disabled', 'os-hosts disables the compute service')

      // Emptied, the aggregate goes.
      await call(tb, tb.admin, 'POST', `/os-aggregates/${agg.id}/action`, { remove_host: { host: 'sim-host-1' } })
      assert.equal((await call(tb, tb.admin, 'DELETE', `/os-aggregates/${agg.id}`)).status, 200)
      assert.equal((await call(tb, tb.admin, 'GET', `/os-aggregates/${agg.id}`)).status, 404)

      // An id is never handed out twice, so a client still holding a deleted aggregate's id cannot reach a newer one.
      assert.equal((await call(tb, tb.admin, 'DELETE', `/os-aggregates/${other.id}`)).status, 200)
      const made = await Promise.all(['n1', 'n2', 'n3'].map((name) => call(tb, tb.admin, 'POST', '/os-aggregates', { aggregate: { name } })))
      const ids = made.map((r) => r.body.aggregate.id as number)
      assert.equal(new Set(ids).size, 3, `concurrent creates get ids of their own: ${ids}`)
      assert.ok(Math.min(...ids) > other.id, `ids after the deleted ones: ${ids} after ${other.id}`)
    } finally {
      await tb.close()
    }
  })
}

test('zones and aggregate metadata place servers: --availability-zone and aggregate_instance_extra_specs', { timeout: 180_000 }, async () => {
  const tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '3' }, true)
  try {
    const zone = (await call(tb, tb.admin, 'POST', '/os-aggregates', { aggregate: { name: 'edge', availability_zone: 'edge' } })).body.aggregate
    await call(tb, tb.admin, 'POST', `/os-aggregates/${zone.id}/action`, { add_host: { host: 'sim-host-3' } })
    const fast = (await call(tb, tb.admin, 'POST', '/os-aggregates', { aggregate: { name: 'fast' } })).body.aggregate
    await call(tb, tb.admin, 'POST', `/os-aggregates/${fast.id}/action`, { add_host: { host: 'sim-host-2' } })
    await call(tb, tb.admin, 'POST', `/os-aggregates/${fast.id}/action`, { set_metadata: { metadata: { disk: 'ssd' } } })
    assert.equal((await call(tb, tb.admin, 'POST', '/flavors', { flavor: { name: 'ssd.tiny', id: 'ssd', ram: 512, vcpus: 1, disk: 1 } })).status, 200)
    await call(tb, tb.admin, 'POST', '/flavors/ssd/os-extra_specs', { extra_specs: { 'aggregate_instance_extra_specs:disk': 'ssd' } })
    assert.equal((await call(tb, tb.admin, 'POST', '/flavors', { flavor: { name: 'nvme.tiny', id: 'nvme', ram: 512, vcpus: 1, disk: 1 } })).status, 200)
    await call(tb, tb.admin, 'POST', '/flavors/nvme/os-extra_specs', { extra_specs: { 'aggregate_instance_extra_specs:disk': 'nvme' } })

    const host = async (body: unknown) => {
      const r = await call(tb, tb.member, 'POST', '/servers', body, '2.96')
      assert.equal(r.status, 202, JSON.stringify(r.body))
      const s = await waitStatus(tb, r.body.server.id, 'ACTIVE')
      return [s['OS-EXT-SRV-ATTR:host'], s['OS-EXT-AZ:availability_zone']]
    }
    for (let i = 0; i < 2; i++) assert.deepEqual(await host(createBody(`e${i}`, { availability_zone: 'edge' })), ['sim-host-3', 'edge'])
    for (let i = 0; i < 2; i++) assert.deepEqual(await host(createBody(`n${i}`, { availability_zone: 'nova' })).then((h) => h[1]), 'nova')
    for (let i = 0; i < 2; i++) assert.equal((await host(createBody(`s${i}`, { flavorRef: 'ssd' })))[0], 'sim-host-2')
    assert.equal((await call(tb, tb.member, 'POST', '/servers', createBody('z', { availability_zone: 'mars' }), '2.96')).status, 400)
    const none = await call(tb, tb.member, 'POST', '/servers', createBody('nv', { flavorRef: 'nvme' }), '2.96')
    assert.equal((await waitStatus(tb, none.body.server.id, 'ERROR'))['OS-EXT-SRV-ATTR:host'], null, 'no host has the metadata')
    assert.deepEqual(
      (await call(tb, tb.member, 'GET', '/os-availability-zone')).body.availabilityZoneInfo.map((z: { zoneName: string }) => z.zoneName),
      ['edge', 'nova'],
    )
    // Only a zone the create asked for binds a server (Nova's request spec): one placed on an edge host without
    // asking migrates out of the zone; one created in edge has no other host to go to.
    const free = await call(tb, tb.admin, 'POST', '/servers', createBody('free', { host: 'sim-host-3' }), '2.74')
    assert.equal(free.status, 202, JSON.stringify(free.body))
    assert.equal((await waitStatus(tb, free.body.server.id, 'ACTIVE'))['OS-EXT-AZ:availability_zone'], 'edge')
    assert.equal((await call(tb, tb.admin, 'POST', `/servers/${free.body.server.id}/action`, { migrate: null })).status, 202)
    const migrated = await waitStatus(tb, free.body.server.id, 'VERIFY_RESIZE')
    assert.notEqual(migrated['OS-EXT-SRV-ATTR:host'], 'sim-host-3')
    assert.equal((await call(tb, tb.admin, 'POST', `/servers/${free.body.server.id}/action`, { confirmResize: null })).status, 204)
    assert.equal((await waitStatus(tb, free.body.server.id, 'ACTIVE'))['OS-EXT-AZ:availability_zone'], 'nova')
    const edgeServer = (await call(tb, tb.admin, 'GET', '/servers?all_tenants=1&name=^e0$')).body.servers[0].id as string
    assert.equal((await call(tb, tb.admin, 'POST', `/servers/${edgeServer}/action`, { migrate: null })).status, 202)
    for (let tries = 0; ; tries++) {
      const migrations = (await call(tb, tb.admin, 'GET', `/os-migrations?instance_uuid=${edgeServer}`)).body.migrations as { status: string }[]
      if (migrations[0]?.status === 'error') break
      assert.ok(tries < 600, `the pinned server's migration should fail: ${JSON.stringify(migrations)}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const after = await waitStatus(tb, edgeServer, 'ACTIVE')
    assert.equal(after['OS-EXT-SRV-ATTR:host'], 'sim-host-3')
    // A zone does not change under the servers of its hosts.
    const moved = await call(tb, tb.admin, 'PUT', `/os-aggregates/${zone.id}`, { aggregate: { availability_zone: 'edge2' } })
    assert.equal(moved.status, 400)
  } finally {
    await tb.close()
  }
})
