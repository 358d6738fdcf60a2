/**
 * Every server field × microversion boundary: presence for admins and for project members in show and
 * detail, written from Nova's fields (docs/compute.md, "Servers"), not from the field table.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ACTIVE, call, computeTestbed, createBody, setState } from './helpers.js'

interface Expect {
  key: string
  since?: string
  until?: string
  admin?: boolean
  /** false: never in /servers/detail. */
  detail?: boolean
}

const BASE = ['id', 'name', 'status', 'tenant_id', 'user_id', 'created', 'updated', 'links', 'hostId', 'image', 'flavor', 'addresses', 'metadata', 'accessIPv4', 'accessIPv6', 'OS-DCF:diskConfig',
  'config_drive', 'key_name', 'OS-EXT-AZ:availability_zone', 'OS-EXT-STS:vm_state', 'OS-EXT-STS:task_state', 'OS-EXT-STS:power_state', 'OS-SRV-USG:launched_at', 'OS-SRV-USG:terminated_at',
  'os-extended-volumes:volumes_attached', 'security_groups', 'progress']

const TABLE: Expect[] = [
  ...BASE.map((key) => ({ key })),
  { key: 'OS-EXT-SRV-ATTR:host', admin: true },
  { key: 'OS-EXT-SRV-ATTR:instance_name', admin: true },
  { key: 'OS-EXT-SRV-ATTR:hypervisor_hostname', admin: true },
  { key: 'OS-EXT-SRV-ATTR:kernel_id', since: '2.3', admin: true },
  { key: 'OS-EXT-SRV-ATTR:ramdisk_id', since: '2.3', admin: true },
  { key: 'OS-EXT-SRV-ATTR:launch_index', since: '2.3', admin: true },
  { key: 'OS-EXT-SRV-ATTR:reservation_id', since: '2.3', admin: true },
  { key: 'OS-EXT-SRV-ATTR:root_device_name', since: '2.3', admin: true },
  { key: 'OS-EXT-SRV-ATTR:user_data', since: '2.3', admin: true },
  { key: 'locked', since: '2.9' },
  { key: 'host_status', since: '2.16', admin: true },
  { key: 'description', since: '2.19' },
  { key: 'tags', since: '2.26' },
  { key: 'trusted_image_certificates', since: '2.63' },
  { key: 'server_groups', since: '2.71', detail: false },
  { key: 'locked_reason', since: '2.73' },
  { key: 'pinned_availability_zone', since: '2.96' },
]

const minor = (v: string) => Number(v.split('.')[1])
const prev = (v: string) => `2.${minor(v) - 1}`

function expected(e: Expect, version: string, admin: boolean, view: 'show' | 'detail'): boolean {
  if (view === 'detail' && e.detail === false) return false
  if (e.admin && !admin) return false
  if (e.since && minor(version) < minor(e.since)) return false
  if (e.until && minor(version) >= minor(e.until)) return false
  return true
}

test('server fields at every microversion boundary, for admins and members, in show and detail', async () => {
  const tb = await computeTestbed()
  try {
    // On the project's network, so the server has addresses and security groups to show.
    const created = await call(tb, tb.member, 'POST', '/servers', createBody('fields', {}, 'auto'), '2.96')
    assert.equal(created.status, 202)
    const id = created.body.server.id
    await setState(tb, id, ACTIVE)
    // An attached volume, as the conductor records it (volumes_attached reads the server's block device mappings).
    await tb.server.deps.store.db
      .insertInto('block_device_mappings')
      .values({
        id: 'b1a7e1a0-0000-4000-8000-0000000000b1', server_id: id, boot_index: null, source_type: 'volume', destination_type: 'volume', volume_id: 'b1a7e1a0-0000-4000-8000-000000000001',
        image_id: null, snapshot_id: null, volume_size: 1, volume_type: null, device_name: '/dev/vdb', device_type: 'disk', disk_bus: null, guest_format: null,
        delete_on_termination: 1, tag: null, attachment_id: null, created_at: Date.now(),
      })
      .execute()

    const versions = new Set<string>(['2.1', '2.96', '2.89', '2.90', '2.46', '2.47'])
    for (const e of TABLE) {
      for (const v of [e.since, e.until]) if (v) [v, prev(v)].filter((x) => minor(x) >= 1).forEach((x) => versions.add(x))
    }
    for (const version of [...versions].sort((a, b) => minor(a) - minor(b))) {
      for (const [who, admin] of [[tb.admin, true], [tb.member, false]] as const) {
        const show = (await call(tb, who, 'GET', `/servers/${id}`, undefined, version)).body.server
        const detailAll = await call(tb, who, 'GET', admin ? '/servers/detail?all_tenants=1' : '/servers/detail', undefined, version)
        const detail = detailAll.body.servers.find((s: { id: string }) => s.id === id)
        assert.ok(show && detail, `server visible at ${version}`)
        for (const e of TABLE) {
          assert.equal(e.key in show, expected(e, version, admin, 'show'), `show ${e.key} at ${version} admin=${admin}`)
          assert.equal(e.key in detail, expected(e, version, admin, 'detail'), `detail ${e.key} at ${version} admin=${admin}`)
        }
        for (const [view, server] of [['show', show], ['detail', detail]]) {
          // Hostname: admins from 2.3, everyone from 2.90.
          assert.equal('OS-EXT-SRV-ATTR:hostname' in server, admin ? minor(version) >= 3 : minor(version) >= 90, `${view} hostname at ${version} admin=${admin}`)
          // Shapes that change.
          const flavorKeys = minor(version) < 47 ? ['id', 'links'] : ['disk', 'ephemeral', 'extra_specs', 'original_name', 'ram', 'swap', 'vcpus']
          assert.deepEqual(Object.keys(server.flavor).sort(), flavorKeys, `${view} flavor at ${version}`)
        }
        const vol = show['os-extended-volumes:volumes_attached'][0]
        assert.deepEqual(Object.keys(vol).sort(), minor(version) < 3 ? ['id'] : ['delete_on_termination', 'id'])
        assert.equal(typeof show.config_drive, 'string')
        assert.equal(show['OS-EXT-STS:task_state'], null)
        assert.equal(show.status, 'ACTIVE')
        assert.ok(!('fault' in show))
      }
    }
  } finally {
    await tb.close()
  }
})

test('timestamps, hostId, fault only in ERROR, security_groups omitted when empty, summary view', async () => {
  const tb = await computeTestbed()
  try {
    const created = await call(tb, tb.member, 'POST', '/servers', createBody('f2', { security_groups: [] }, []))
    assert.equal(created.status, 202, JSON.stringify(created.body))
    const id = created.body.server.id
    await setState(tb, id, { ...ACTIVE, vm_state: 'error', power_state: 0 })
    await tb.server.deps.store.db.insertInto('instance_faults').values({ id: 'f1', server_id: id, code: 500, message: 'boom', details: 'trace', created_at: Date.now() }).execute()
    const asMember = (await call(tb, tb.member, 'GET', `/servers/${id}`)).body.server
    assert.equal(asMember.status, 'ERROR')
    assert.equal(asMember.fault.message, 'boom')
    assert.ok(!('details' in asMember.fault), 'details of a 500 fault are for admins')
    const asAdmin = (await call(tb, tb.admin, 'GET', `/servers/${id}`)).body.server
    assert.equal(asAdmin.fault.details, 'trace')
    assert.match(asMember.created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
    assert.match(asMember['OS-SRV-USG:launched_at'], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$/)
    assert.match(asMember.hostId, /^[0-9a-f]{56}$/)
    assert.ok(!('security_groups' in asMember))
    assert.ok(!('progress' in asMember), 'no progress in ERROR')
    const list = (await call(tb, tb.member, 'GET', '/servers')).body
    assert.deepEqual(Object.keys(list.servers[0]).sort(), ['id', 'links', 'name'])
  } finally {
    await tb.close()
  }
})

test('PUT answers the reduced view below 2.75 and the full one from 2.75', async () => {
  const tb = await computeTestbed()
  try {
    const id = (await call(tb, tb.member, 'POST', '/servers', createBody('put'), '2.96')).body.server.id
    await setState(tb, id, ACTIVE)
    const reduced = await call(tb, tb.member, 'PUT', `/servers/${id}`, { server: { name: 'renamed' } }, '2.74')
    assert.equal(reduced.status, 200)
    assert.equal(reduced.body.server.name, 'renamed')
    assert.ok(!('OS-EXT-STS:vm_state' in reduced.body.server))
    assert.ok('locked_reason' in reduced.body.server && 'server_groups' in reduced.body.server)
    const full = await call(tb, tb.member, 'PUT', `/servers/${id}`, { server: { description: 'd' } }, '2.75')
    assert.equal(full.body.server.description, 'd')
    assert.ok('OS-EXT-STS:vm_state' in full.body.server)
    assert.ok(!('OS-EXT-SRV-ATTR:host' in full.body.server), 'admin-only fields stay hidden from members')
    const old = await call(tb, tb.member, 'PUT', `/servers/${id}`, { server: { description: 'x' } }, '2.18')
    assert.equal(old.status, 400, 'description is an additional property before 2.19')
    assert.match(old.body.badRequest.message, /description/)
  } finally {
    await tb.close()
  }
})
