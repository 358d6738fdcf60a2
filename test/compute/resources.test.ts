/** Flavors, key pairs, metadata, tags, ips, zones, limits, quota sets, server groups and usage. */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { ACTIVE, call, computeTestbed, createBody, setState } from './helpers.js'

test('flavors: defaults, list/detail/show per version, create/delete for admins, extra specs, private access', async () => {
  const tb = await computeTestbed()
  try {
    const list = await call(tb, tb.member, 'GET', '/flavors/detail?is_public=None')
    assert.deepEqual(list.body.flavors.map((f: { name: string }) => f.name), ['m1.tiny', 'm1.small', 'm1.medium', 'm1.large', 'm1.nano', 'm1.xlarge'], 'flavorid in string order')
    const tiny = list.body.flavors[0]
    assert.equal(tiny.id, '1')
    assert.equal(tiny.swap, '', 'swap is "" below 2.75')
    assert.ok(!('description' in tiny) && !('extra_specs' in tiny))
    assert.equal((await call(tb, tb.member, 'GET', '/flavors/1', undefined, '2.75')).body.flavor.swap, 0)
    const v61 = (await call(tb, tb.member, 'GET', '/flavors/1', undefined, '2.61')).body.flavor
    assert.deepEqual(v61.extra_specs, {})
    assert.equal(v61.description, null)
    assert.deepEqual(Object.keys((await call(tb, tb.member, 'GET', '/flavors')).body.flavors[0]).sort(), ['id', 'links', 'name'])
    assert.equal((await call(tb, tb.member, 'GET', '/flavors?minRam=4096')).body.flavors.length, 3)
    const paged = await call(tb, tb.member, 'GET', '/flavors?limit=2')
    assert.equal(paged.body.flavors.length, 2)
    assert.ok(paged.body.flavors_links[0].href.includes('marker=2'))

    assert.equal((await call(tb, tb.member, 'POST', '/flavors', { flavor: { name: 'x', ram: 1, vcpus: 1, disk: 0 } })).status, 403)
    const created = await call(tb, tb.admin, 'POST', '/flavors', { flavor: { name: 'private.one', id: 'p1', ram: 256, vcpus: 1, disk: 1, 'os-flavor-access:is_public': false } })
    assert.equal(created.status, 200)
    assert.equal(created.body.flavor['os-flavor-access:is_public'], false)
    assert.equal((await call(tb, tb.admin, 'POST', '/flavors', { flavor: { name: 'private.one', ram: 256, vcpus: 1, disk: 1 } })).status, 409)
    const badFlavor = await call(tb, tb.admin, 'POST', '/flavors', { flavor: { name: 'bad', ram: 0, vcpus: 1, disk: 1 } })
    assert.equal(badFlavor.status, 400)
    assert.match(badFlavor.body.badRequest.message, /ram/)
    assert.equal((await call(tb, tb.member, 'GET', '/flavors/p1')).status, 404, 'private flavor hidden')
    assert.equal((await call(tb, tb.member, 'POST', '/servers', createBody('p', { flavorRef: 'p1' }), '2.96')).status, 400)
    const grant = await call(tb, tb.admin, 'POST', '/flavors/p1/action', { addTenantAccess: { tenant: tb.member.projectId } })
    assert.equal(grant.status, 200)
    assert.deepEqual(grant.body.flavor_access, [{ flavor_id: 'p1', tenant_id: tb.member.projectId }])
    assert.equal((await call(tb, tb.admin, 'POST', '/flavors/p1/action', { addTenantAccess: { tenant: tb.member.projectId } })).status, 409)
    assert.equal((await call(tb, tb.member, 'GET', '/flavors/p1')).status, 200)
    assert.equal((await call(tb, tb.admin, 'GET', '/flavors/1/os-flavor-access')).status, 404)
    assert.equal((await call(tb, tb.admin, 'POST', '/flavors/1/action', { addTenantAccess: { tenant: 'x' } }, '2.7')).status, 409)

    // Extra specs exist for every flavor.
    assert.deepEqual((await call(tb, tb.member, 'GET', '/flavors/2/os-extra_specs')).body, { extra_specs: {} })
    assert.equal((await call(tb, tb.admin, 'POST', '/flavors/2/os-extra_specs', { extra_specs: { 'hw:cpu_policy': 'dedicated', n: 2 } })).status, 200)
    assert.deepEqual((await call(tb, tb.member, 'GET', '/flavors/2/os-extra_specs/n')).body, { n: '2' })
    assert.equal((await call(tb, tb.admin, 'PUT', '/flavors/2/os-extra_specs/n', { m: '3' })).status, 400)
    assert.equal((await call(tb, tb.admin, 'PUT', '/flavors/2/os-extra_specs/n', { n: '3' })).status, 200)
    assert.equal((await call(tb, tb.admin, 'DELETE', '/flavors/2/os-extra_specs/n')).status, 200)
    assert.equal((await call(tb, tb.member, 'GET', '/flavors/2/os-extra_specs/n')).status, 404)
    assert.equal((await call(tb, tb.member, 'POST', '/flavors/2/os-extra_specs', { extra_specs: { a: 'b' } })).status, 403)
    assert.equal((await call(tb, tb.admin, 'PUT', '/flavors/2', { flavor: { description: 'small' } }, '2.54')).status, 404)
    assert.equal((await call(tb, tb.admin, 'PUT', '/flavors/2', { flavor: { description: 'small' } }, '2.55')).body.flavor.description, 'small')
    assert.equal((await call(tb, tb.admin, 'DELETE', '/flavors/p1')).status, 202)
    assert.equal((await call(tb, tb.admin, 'DELETE', '/flavors/p1')).status, 404)
  } finally {
    await tb.close()
  }
})

test('key pairs: generated and imported, ssh and x509, codes per version, per user', async () => {
  const tb = await computeTestbed()
  try {
    const gen = await call(tb, tb.member, 'POST', '/os-keypairs', { keypair: { name: 'gen' } })
    assert.equal(gen.status, 200, '2.1 answers 200')
    assert.match(gen.body.keypair.public_key, /^ssh-rsa /)
    assert.match(gen.body.keypair.private_key, /BEGIN RSA PRIVATE KEY/)
    assert.match(gen.body.keypair.fingerprint, /^([0-9a-f]{2}:){15}[0-9a-f]{2}$/)
    assert.ok(!('type' in gen.body.keypair))
    const { publicKey } = generateKeyPairSync('ed25519')
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32)
    const len = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b])
    const ssh = `ssh-ed25519 ${Buffer.concat([len(Buffer.from('ssh-ed25519')), len(raw)]).toString('base64')} me@host`
    const imported = await call(tb, tb.member, 'POST', '/os-keypairs', { keypair: { name: 'imp', public_key: ssh } }, '2.2')
    assert.equal(imported.status, 201)
    assert.equal(imported.body.keypair.type, 'ssh')
    assert.ok(!('private_key' in imported.body.keypair))
    assert.equal((await call(tb, tb.member, 'POST', '/os-keypairs', { keypair: { name: 'imp', public_key: ssh } }, '2.2')).status, 409)
    assert.equal((await call(tb, tb.member, 'POST', '/os-keypairs', { keypair: { name: 'bad', public_key: 'ssh-rsa nonsense' } }, '2.2')).status, 400)
    assert.equal((await call(tb, tb.member, 'POST', '/os-keypairs', { keypair: { name: 'bad name!' } }, '2.2')).status, 400)
    assert.equal((await call(tb, tb.member, 'POST', '/os-keypairs', { keypair: { name: 'x', type: 'pgp' } }, '2.2')).status, 400)
    assert.equal((await call(tb, tb.member, 'POST', '/os-keypairs', { keypair: { name: 'x', type: 'ssh' } }, '2.1')).status, 400, 'type is 2.2+')
    assert.equal((await call(tb, tb.member, 'POST', '/os-keypairs', { keypair: { name: 'nopub' } }, '2.92')).status, 400, '2.92 requires public_key')
    assert.equal((await call(tb, tb.member, 'POST', '/os-keypairs', { keypair: { name: 'y', user_id: tb.other.userId } }, '2.10')).status, 403)

    const list = await call(tb, tb.member, 'GET', '/os-keypairs', undefined, '2.2')
    assert.deepEqual(list.body.keypairs.map((k: { keypair: { name: string } }) => k.keypair.name), ['gen', 'imp'])
    assert.equal((await call(tb, tb.other, 'GET', '/os-keypairs')).body.keypairs.length, 0)
    const page = await call(tb, tb.member, 'GET', '/os-keypairs?limit=1', undefined, '2.35')
    assert.equal(page.body.keypairs.length, 1)
    assert.ok(page.body.keypairs_links)
    const show = await call(tb, tb.member, 'GET', '/os-keypairs/imp', undefined, '2.2')
    for (const k of ['public_key', 'name', 'fingerprint', 'user_id', 'deleted', 'created_at', 'updated_at', 'deleted_at', 'id', 'type']) assert.ok(k in show.body.keypair, k)
    assert.equal((await call(tb, tb.member, 'GET', '/os-keypairs/none')).status, 404)

    // Key names are usable at create.
    const server = await call(tb, tb.member, 'POST', '/servers', createBody('k', { key_name: 'imp' }), '2.96')
    assert.equal(server.status, 202)
    assert.equal((await call(tb, tb.member, 'GET', `/servers/${server.body.server.id}`)).body.server.key_name, 'imp')

    assert.equal((await call(tb, tb.member, 'DELETE', '/os-keypairs/gen')).status, 202)
    assert.equal((await call(tb, tb.member, 'DELETE', '/os-keypairs/imp', undefined, '2.2')).status, 204)
  } finally {
    await tb.close()
  }
})

test('metadata, tags and ips sub-resources', async () => {
  const tb = await computeTestbed()
  try {
    const id = (await call(tb, tb.member, 'POST', '/servers', createBody('m', { metadata: { a: '1' } }), '2.96')).body.server.id
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${id}/metadata`, { metadata: { b: '2' } })).status, 409, 'building servers refuse metadata writes')
    await setState(tb, id, ACTIVE)
    assert.deepEqual((await call(tb, tb.member, 'POST', `/servers/${id}/metadata`, { metadata: { b: '2' } })).body.metadata, { a: '1', b: '2' })
    assert.deepEqual((await call(tb, tb.member, 'PUT', `/servers/${id}/metadata`, { metadata: { c: '3' } })).body.metadata, { c: '3' })
    assert.deepEqual((await call(tb, tb.member, 'GET', `/servers/${id}/metadata/c`)).body, { meta: { c: '3' } })
    assert.equal((await call(tb, tb.member, 'PUT', `/servers/${id}/metadata/c`, { meta: { d: '4' } })).status, 400)
    assert.equal((await call(tb, tb.member, 'PUT', `/servers/${id}/metadata/c`, { meta: { c: 'x'.repeat(256) } })).status, 400)
    assert.equal((await call(tb, tb.member, 'PUT', `/servers/${id}/metadata/d`, { meta: { d: '4' } })).status, 200)
    assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${id}/metadata/d`)).status, 204)
    assert.equal((await call(tb, tb.member, 'GET', `/servers/${id}/metadata/d`)).status, 404)
    assert.equal((await call(tb, tb.reader, 'PUT', `/servers/${id}/metadata`, { metadata: {} })).status, 403)
    assert.equal((await call(tb, tb.reader, 'GET', `/servers/${id}/metadata`)).status, 200)

    assert.equal((await call(tb, tb.member, 'GET', `/servers/${id}/tags`, undefined, '2.25')).status, 404)
    assert.deepEqual((await call(tb, tb.member, 'PUT', `/servers/${id}/tags`, { tags: ['b', 'a'] }, '2.26')).body, { tags: ['a', 'b'] })
    const added = await call(tb, tb.member, 'PUT', `/servers/${id}/tags/c`, undefined, '2.26')
    assert.equal(added.status, 201)
    assert.match(added.headers.get('location') ?? '', /\/tags\/c$/)
    assert.equal((await call(tb, tb.member, 'PUT', `/servers/${id}/tags/c`, undefined, '2.26')).status, 204)
    assert.equal((await call(tb, tb.member, 'GET', `/servers/${id}/tags/c`, undefined, '2.26')).status, 204)
    assert.equal((await call(tb, tb.member, 'GET', `/servers/${id}/tags/z`, undefined, '2.26')).status, 404)
    assert.equal((await call(tb, tb.member, 'PUT', `/servers/${id}/tags`, { tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, '2.26')).status, 400)
    assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${id}/tags/c`, undefined, '2.26')).status, 204)
    assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${id}/tags`, undefined, '2.26')).status, 204)
    assert.deepEqual((await call(tb, tb.member, 'GET', `/servers/${id}`, undefined, '2.26')).body.server.tags, [])

    assert.deepEqual((await call(tb, tb.member, 'GET', `/servers/${id}/ips`)).body, { addresses: {} })
    assert.equal((await call(tb, tb.other, 'GET', `/servers/${id}/ips`)).status, 404)
  } finally {
    await tb.close()
  }
})

test('availability zones, limits, quota sets, server groups and usage', async () => {
  const tb = await computeTestbed()
  try {
    const az = await call(tb, tb.member, 'GET', '/os-availability-zone')
    assert.deepEqual(az.body, { availabilityZoneInfo: [{ zoneName: 'nova', zoneState: { available: true }, hosts: null }] })
    assert.equal((await call(tb, tb.member, 'GET', '/os-availability-zone/detail')).status, 403)

    await call(tb, tb.member, 'POST', '/servers', createBody('l'), '2.96')
    const limits = (await call(tb, tb.member, 'GET', '/limits')).body.limits
    assert.deepEqual(limits.rate, [])
    assert.equal(limits.absolute.maxTotalInstances, 10)
    assert.equal(limits.absolute.totalInstancesUsed, 1)
    assert.equal(limits.absolute.totalRAMUsed, 512)
    assert.ok('maxPersonality' in limits.absolute && 'maxTotalFloatingIps' in limits.absolute)
    const l57 = (await call(tb, tb.member, 'GET', '/limits', undefined, '2.57')).body.limits.absolute
    assert.ok(!('maxPersonality' in l57) && !('maxTotalFloatingIps' in l57) && !('maxImageMeta' in l57))

    const q = await call(tb, tb.member, 'GET', `/os-quota-sets/${tb.member.projectId}`)
    assert.equal(q.body.quota_set.instances, 10)
    assert.equal(q.body.quota_set.id, tb.member.projectId)
    assert.equal((await call(tb, tb.member, 'GET', `/os-quota-sets/${tb.other.projectId}`)).status, 403)
    assert.equal((await call(tb, tb.member, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { instances: 20 } })).status, 403)
    const upd = await call(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { instances: 20 } }, '2.57')
    assert.equal(upd.status, 200)
    assert.equal(upd.body.quota_set.instances, 20)
    assert.ok(!('id' in upd.body.quota_set) && !('injected_files' in upd.body.quota_set))
    assert.equal((await call(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { instances: 0 } })).status, 400, 'below usage')
    // Refused as a whole: the value before the one below usage is not written either (it was; found by the fuzz suite).
    assert.equal((await call(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { key_pairs: 7, instances: 0 } })).status, 400)
    assert.equal((await call(tb, tb.member, 'GET', `/os-quota-sets/${tb.member.projectId}`)).body.quota_set.key_pairs, 100)
    // The decimal-string form is bounded like the integer form (it was a 500 on PostgreSQL, accepted on SQLite).
    assert.equal((await call(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { ram: '99999999999999999999' } })).status, 400)
    // Below too: -1 (unlimited) is the least limit, in either form (the string form took any negative number).
    assert.equal((await call(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { ram: -2 } })).status, 400)
    assert.equal((await call(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { ram: '-2' } })).status, 400)
    assert.equal((await call(tb, tb.member, 'GET', `/os-quota-sets/${tb.member.projectId}`)).body.quota_set.ram, 51200)
    assert.equal((await call(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { bananas: 1 } })).status, 400)
    const detail = await call(tb, tb.member, 'GET', `/os-quota-sets/${tb.member.projectId}/detail`)
    assert.deepEqual(detail.body.quota_set.instances, { in_use: 1, limit: 20, reserved: 0 })
    assert.equal((await call(tb, tb.member, 'GET', `/os-quota-sets/${tb.member.projectId}/defaults`)).body.quota_set.instances, 10)
    assert.equal((await call(tb, tb.admin, 'DELETE', `/os-quota-sets/${tb.member.projectId}`)).status, 202)
    assert.equal((await call(tb, tb.member, 'GET', `/os-quota-sets/${tb.member.projectId}`)).body.quota_set.instances, 10)

    const g1 = await call(tb, tb.member, 'POST', '/os-server-groups', { server_group: { name: 'g', policies: ['anti-affinity'] } })
    assert.equal(g1.status, 200)
    assert.deepEqual(Object.keys(g1.body.server_group).sort(), ['id', 'members', 'metadata', 'name', 'policies'])
    assert.equal((await call(tb, tb.member, 'POST', '/os-server-groups', { server_group: { name: 'g', policies: ['soft-affinity'] } }, '2.14')).status, 400)
    const g2 = await call(tb, tb.member, 'POST', '/os-server-groups', { server_group: { name: 'g2', policy: 'anti-affinity', rules: { max_server_per_host: 2 } } }, '2.64')
    assert.equal(g2.body.server_group.policy, 'anti-affinity')
    assert.deepEqual(g2.body.server_group.rules, { max_server_per_host: 2 })
    assert.equal((await call(tb, tb.member, 'POST', '/os-server-groups', { server_group: { name: 'g3', policy: 'affinity', rules: { max_server_per_host: 2 } } }, '2.64')).status, 400)
    const member = await call(tb, tb.member, 'POST', '/servers', { ...createBody('in-group'), 'os:scheduler_hints': { group: g2.body.server_group.id } }, '2.96')
    assert.equal(member.status, 202)
    assert.deepEqual((await call(tb, tb.member, 'GET', `/os-server-groups/${g2.body.server_group.id}`, undefined, '2.64')).body.server_group.members, [member.body.server.id])
    assert.deepEqual((await call(tb, tb.member, 'GET', `/servers/${member.body.server.id}`, undefined, '2.71')).body.server.server_groups, [g2.body.server_group.id])
    assert.equal((await call(tb, tb.member, 'GET', '/os-server-groups')).body.server_groups.length, 2)
    assert.equal((await call(tb, tb.other, 'GET', `/os-server-groups/${g1.body.server_group.id}`)).status, 404)
    assert.equal((await call(tb, tb.member, 'DELETE', `/os-server-groups/${g1.body.server_group.id}`)).status, 204)

    assert.equal((await call(tb, tb.member, 'GET', '/os-simple-tenant-usage')).status, 403)
    const usage = await call(tb, tb.admin, 'GET', '/os-simple-tenant-usage?start=2020-01-01T00:00:00&end=2099-01-01T00:00:00&detailed=1')
    assert.equal(usage.status, 200)
    assert.equal(usage.body.tenant_usages[0].server_usages.length, 2)
    const mine = await call(tb, tb.member, 'GET', `/os-simple-tenant-usage/${tb.member.projectId}?start=2020-01-01T00:00:00`)
    assert.equal(mine.body.tenant_usage.tenant_id, tb.member.projectId)
    assert.equal((await call(tb, tb.admin, 'GET', '/os-simple-tenant-usage?start=yesterday')).status, 400)
  } finally {
    await tb.close()
  }
})
