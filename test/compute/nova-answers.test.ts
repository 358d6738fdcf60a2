/**
 * Compute answers Tempest's tests hold pcc to, each checked here without Tempest: the image proxy (`/images`,
 * 2.1–2.35), generated x509 key pairs, accessIPv6 in Nova's canonical form, flavors with numeric ids, os-resetState,
 * hypervisor search, the legacy network quota keys, migrations to unknown hosts, the usage route without a project,
 * os-server-password and the block storage and network proxies (`/os-volumes`, `/os-snapshots`, `/os-networks`,
 * `/os-tenant-networks`, `/os-security-groups`, `/os-security-group-rules`, `/os-floating-ips` and the
 * addFloatingIp / removeFloatingIp actions).
 */
import { after, before, describe, it, test } from 'node:test'
import assert from 'node:assert/strict'
import { X509Certificate, createHash, createPrivateKey } from 'node:crypto'
import { ACTIVE, call, computeTestbed, createBody, IMAGE, setState, type ComputeTestbed } from './helpers.js'
import { setTimeout as sleep } from 'node:timers/promises'
import { lastLines } from '../../src/server/conductor/conductor.js'

describe('compute answers as Nova gives them', () => {
  let tb: ComputeTestbed
  before(async () => {
    tb = await computeTestbed()
  })
  after(() => tb.close())

  /** An image of the member's project with some properties, made through the image service's API. */
  async function memberImage(name: string, properties: Record<string, string> = {}): Promise<string> {
    const res = await fetch(`${tb.server.url}/image/v2/images`, {
      method: 'POST',
      headers: { 'x-auth-token': tb.member.token, 'content-type': 'application/json' },
      body: JSON.stringify({ name, disk_format: 'qcow2', container_format: 'bare', min_disk: 1, ...properties }),
    })
    assert.equal(res.status, 201)
    return ((await res.json()) as { id: string }).id
  }

  describe('image proxy', () => {
    it('shows an image in Nova\'s shape, with its properties as metadata and its server', async () => {
      const id = await memberImage('snap', { instance_uuid: '9b2f4a04-9f4e-4a6b-a5c3-46d2b7f2c1aa', image_type: 'snapshot' })
      const res = await call(tb, tb.member, 'GET', `/images/${id}`)
      assert.equal(res.status, 200)
      const image = res.body.image
      assert.deepEqual(Object.keys(image).sort(), ['OS-EXT-IMG-SIZE:size', 'created', 'id', 'links', 'metadata', 'minDisk', 'minRam', 'name', 'progress', 'server', 'status', 'updated'])
      assert.equal(image.status, 'SAVING', 'queued in Glance')
      assert.equal(image.progress, 25)
      assert.equal(image.minDisk, 1)
      assert.deepEqual(image.metadata, { instance_uuid: '9b2f4a04-9f4e-4a6b-a5c3-46d2b7f2c1aa', image_type: 'snapshot' })
      assert.equal(image.server.id, '9b2f4a04-9f4e-4a6b-a5c3-46d2b7f2c1aa')
      assert.match(image.created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
      assert.deepEqual(image.links.map((l: { rel: string }) => l.rel), ['self', 'bookmark', 'alternate'])
      const active = (await call(tb, tb.member, 'GET', `/images/${IMAGE}`)).body.image
      assert.equal(active.status, 'ACTIVE')
      assert.equal(active.progress, 100)
      assert.equal('server' in active, false)
    })

    it('lists summaries and details with Nova\'s filters and pages', async () => {
      const a = await memberImage('filter-a', { image_type: 'filter-type' })
      const b = await memberImage('filter-b')
      const summary = (await call(tb, tb.member, 'GET', '/images')).body.images
      assert.ok(summary.some((i: { id: string }) => i.id === a))
      for (const i of summary) assert.deepEqual(Object.keys(i).sort(), ['id', 'links', 'name'])
      const ids = async (query: string) => (await call(tb, tb.member, 'GET', `/images/detail?${query}`)).body.images.map((i: { id: string }) => i.id)
      assert.deepEqual(await ids('name=filter-b'), [b])
      assert.deepEqual(await ids('type=filter-type'), [a])
      assert.ok((await ids('status=ACTIVE')).includes(IMAGE))
      assert.ok(!(await ids('status=ACTIVE')).includes(a))
      assert.ok((await ids('minDisk=1')).includes(a))
      assert.ok(!(await ids('minDisk=1')).includes(IMAGE))
      const first = await call(tb, tb.member, 'GET', '/images?limit=1')
      assert.equal(first.body.images.length, 1)
      const next = first.body.images_links.find((l: { rel: string }) => l.rel === 'next').href
      assert.match(next, /marker=/)
      const second = await call(tb, tb.member, 'GET', next.slice(next.indexOf('/images')))
      assert.notEqual(second.body.images[0].id, first.body.images[0].id)
      assert.equal((await call(tb, tb.member, 'GET', '/images?marker=nope')).status, 400)
    })

    it('sets, replaces, shows and deletes image metadata', async () => {
      const id = await memberImage('meta', { a: '1' })
      assert.deepEqual((await call(tb, tb.member, 'POST', `/images/${id}/metadata`, { metadata: { b: '2' } })).body, { metadata: { a: '1', b: '2' } })
      assert.deepEqual((await call(tb, tb.member, 'PUT', `/images/${id}/metadata`, { metadata: { c: '3' } })).body, { metadata: { c: '3' } })
      assert.deepEqual((await call(tb, tb.member, 'PUT', `/images/${id}/metadata/d`, { meta: { d: '4' } })).body, { meta: { d: '4' } })
      assert.equal((await call(tb, tb.member, 'PUT', `/images/${id}/metadata/d`, { meta: { e: '5' } })).status, 400, 'URI and body keys differ')
      assert.deepEqual((await call(tb, tb.member, 'GET', `/images/${id}/metadata/d`)).body, { meta: { d: '4' } })
      assert.equal((await call(tb, tb.member, 'DELETE', `/images/${id}/metadata/d`)).status, 204)
      assert.equal((await call(tb, tb.member, 'GET', `/images/${id}/metadata/d`)).status, 404)
      assert.deepEqual((await call(tb, tb.member, 'GET', `/images/${id}/metadata`)).body, { metadata: { c: '3' } })
      const tooMany = Object.fromEntries(Array.from({ length: 129 }, (_, n) => [`k${n}`, 'v']))
      assert.equal((await call(tb, tb.member, 'POST', `/images/${id}/metadata`, { metadata: tooMany })).status, 403, 'over the metadata_items quota')
      assert.deepEqual((await call(tb, tb.member, 'GET', `/images/${id}/metadata`)).body, { metadata: { c: '3' } })
    })

    it('deletes an image; another project\'s private image is a 404; the proxy is gone from 2.36', async () => {
      const id = await memberImage('to-delete')
      assert.equal((await call(tb, tb.other, 'GET', `/images/${id}`)).status, 404)
      assert.equal((await call(tb, tb.other, 'DELETE', `/images/${id}`)).status, 404)
      assert.equal((await call(tb, tb.member, 'GET', `/images/${id}`, undefined, '2.36')).status, 404)
      assert.equal((await call(tb, tb.member, 'GET', '/images', undefined, '2.36')).status, 404)
      assert.equal((await call(tb, tb.member, 'GET', `/images/${id}`, undefined, '2.35')).status, 200)
      assert.equal((await call(tb, tb.member, 'DELETE', `/images/${id}`)).status, 204)
      const gone = await call(tb, tb.member, 'GET', `/images/${id}`)
      assert.equal(gone.status, 404)
      assert.equal(gone.body.itemNotFound.message, 'Image not found.')
    })
  })

  it('generates an x509 key pair: a self-signed certificate for the user and its private key', async () => {
    const res = await call(tb, tb.member, 'POST', '/os-keypairs', { keypair: { name: 'winrm', type: 'x509' } }, '2.2')
    assert.equal(res.status, 201, JSON.stringify(res.body))
    const k = res.body.keypair
    assert.equal(k.type, 'x509')
    const cert = new X509Certificate(k.public_key)
    assert.equal(cert.subject, `CN=${tb.member.userId}`)
    assert.ok(cert.checkPrivateKey(createPrivateKey(k.private_key)), 'the private key is the certificate\'s')
    assert.equal(k.fingerprint, [...createHash('sha1').update(cert.raw).digest()].map((b) => b.toString(16).padStart(2, '0')).join(':'))
    const shown = (await call(tb, tb.member, 'GET', '/os-keypairs/winrm', undefined, '2.2')).body.keypair
    assert.equal(shown.public_key, k.public_key)
    assert.equal('private_key' in shown, false)
  })

  it('keeps accessIPv6 in its canonical form, on create, update and rebuild', async () => {
    const created = await call(tb, tb.member, 'POST', '/servers', createBody('v6', { accessIPv6: '0000:0000:0000:0000:0000:babe:220.12.22.2' }), '2.37')
    assert.equal(created.status, 202, JSON.stringify(created.body))
    const id = created.body.server.id
    const show = async () => (await call(tb, tb.member, 'GET', `/servers/${id}`)).body.server.accessIPv6
    assert.equal(await show(), '::babe:dc0c:1602')
    await call(tb, tb.member, 'PUT', `/servers/${id}`, { server: { accessIPv6: '2001:DB8:0:0:0:0:0:1' } })
    assert.equal(await show(), '2001:db8::1')
    await setState(tb, id, ACTIVE)
    const rebuilt = await call(tb, tb.member, 'POST', `/servers/${id}/action`, { rebuild: { imageRef: IMAGE, accessIPv6: 'FE80:0000::0001' } })
    assert.equal(rebuilt.status, 202, JSON.stringify(rebuilt.body))
    assert.equal(await show(), 'fe80::1')
  })

  it('creates a flavor whose id is a JSON number, keeping its text', async () => {
    const res = await call(tb, tb.admin, 'POST', '/flavors', { flavor: { name: 'numeric', id: 871434024, ram: 64, vcpus: 1, disk: 1 } })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.equal(res.body.flavor.id, '871434024')
    assert.equal((await call(tb, tb.admin, 'GET', '/flavors/871434024')).body.flavor.name, 'numeric')
    assert.equal((await call(tb, tb.admin, 'POST', '/flavors', { flavor: { name: 'fraction', id: 1.5, ram: 64, vcpus: 1, disk: 1 } })).status, 400)
  })

  it('lets admins reset a server\'s state (os-resetState), and nobody else', async () => {
    const id = (await call(tb, tb.member, 'POST', '/servers', createBody('reset'), '2.37')).body.server.id
    await setState(tb, id, { ...ACTIVE, task_state: 'rebooting' })
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${id}/action`, { 'os-resetState': { state: 'error' } })).status, 403)
    assert.equal((await call(tb, tb.admin, 'POST', `/servers/${id}/action`, { 'os-resetState': { state: 'paused' } })).status, 400)
    assert.equal((await call(tb, tb.admin, 'POST', `/servers/${id}/action`, { 'os-resetState': { state: 'error' } })).status, 202)
    const server = (await call(tb, tb.admin, 'GET', `/servers/${id}`)).body.server
    assert.deepEqual([server.status, server['OS-EXT-STS:task_state']], ['ERROR', null])
    assert.equal((await call(tb, tb.admin, 'POST', `/servers/${id}/action`, { 'os-resetState': { state: 'active' } })).status, 202)
    assert.equal((await call(tb, tb.admin, 'GET', `/servers/${id}`)).body.server.status, 'ACTIVE')
  })

  it('refuses a migration to a host that does not exist before accepting it, leaving the server as it was', async () => {
    const id = (await call(tb, tb.member, 'POST', '/servers', createBody('stay'), '2.37')).body.server.id
    await setState(tb, id, ACTIVE)
    const live = await call(tb, tb.admin, 'POST', `/servers/${id}/action`, { 'os-migrateLive': { host: 'nowhere', block_migration: false, disk_over_commit: false } })
    assert.equal(live.status, 400, JSON.stringify(live.body))
    assert.match(live.body.badRequest.message, /nowhere/)
    assert.equal((await call(tb, tb.admin, 'POST', `/servers/${id}/action`, { migrate: { host: 'nowhere' } }, '2.56')).status, 400)
    const server = (await call(tb, tb.admin, 'GET', `/servers/${id}`)).body.server
    assert.deepEqual([server.status, server['OS-EXT-STS:task_state']], ['ACTIVE', null])
  })

  it('serves the pre-2.53 hypervisor search, and takes the legacy network quota keys below 2.36', async () => {
    assert.equal((await call(tb, tb.admin, 'GET', '/os-hypervisors/no-such-host/search')).status, 404)
    assert.equal((await call(tb, tb.member, 'GET', '/os-hypervisors/x/search')).status, 403)
    assert.equal((await call(tb, tb.admin, 'GET', '/os-hypervisors/x/search', undefined, '2.53')).status, 404)
    const legacy = { fixed_ips: 10, floating_ips: 20, security_groups: 20, security_group_rules: 20, cores: 30 }
    const updated = await call(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: legacy })
    assert.equal(updated.status, 200, JSON.stringify(updated.body))
    assert.equal(updated.body.quota_set.cores, 30)
    assert.equal(updated.body.quota_set.fixed_ips, -1, 'network quotas belong to the network service')
    assert.equal((await call(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: legacy }, '2.36')).status, 400)
  })

  it('answers 404 for the usage of an empty project id', async () => {
    const res = await call(tb, tb.admin, 'GET', '/os-simple-tenant-usage/?start=2020-01-01T00:00:00&end=2020-01-02T00:00:00')
    assert.equal(res.status, 404)
  })

  it('shows and clears the password a guest posted (os-server-password)', async () => {
    const id = (await call(tb, tb.member, 'POST', '/servers', createBody('pw'), '2.37')).body.server.id
    assert.deepEqual((await call(tb, tb.member, 'GET', `/servers/${id}/os-server-password`)).body, { password: '' })
    const posted = 'x'.repeat(255) + 'tail'
    await tb.server.deps.store.db.insertInto('server_system_metadata').values([{ server_id: id, key: 'password_0', value: posted.slice(0, 255) }, { server_id: id, key: 'password_1', value: posted.slice(255) }]).execute()
    assert.deepEqual((await call(tb, tb.member, 'GET', `/servers/${id}/os-server-password`)).body, { password: posted })
    assert.equal((await call(tb, tb.other, 'DELETE', `/servers/${id}/os-server-password`)).status, 404)
    assert.equal((await call(tb, tb.reader, 'DELETE', `/servers/${id}/os-server-password`)).status, 403)
    assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${id}/os-server-password`)).status, 204)
    assert.deepEqual((await call(tb, tb.member, 'GET', `/servers/${id}/os-server-password`)).body, { password: '' })
  })

  it('proxies volumes and snapshots in Nova\'s shape below 2.36', async () => {
    const db = tb.server.deps.store.db
    const created = await call(tb, tb.member, 'POST', '/os-volumes', { volume: { size: 1, display_name: 'proxied', metadata: { a: '1' } } })
    assert.equal(created.status, 200, JSON.stringify(created.body))
    const v = created.body.volume
    assert.deepEqual(Object.keys(v).sort(), ['attachments', 'availabilityZone', 'createdAt', 'displayDescription', 'displayName', 'id', 'metadata', 'size', 'snapshotId', 'status', 'volumeType'])
    assert.deepEqual([v.displayName, v.size, v.volumeType, v.attachments], ['proxied', 1, '__DEFAULT__', [{}]])
    await db.updateTable('volumes').set({ status: 'available' }).where('id', '=', v.id).execute()
    assert.equal((await call(tb, tb.member, 'GET', `/os-volumes/${v.id}`)).body.volume.status, 'available')
    assert.ok((await call(tb, tb.member, 'GET', '/os-volumes/detail')).body.volumes.some((x: { id: string }) => x.id === v.id))
    assert.equal((await call(tb, tb.member, 'GET', '/os-volumes?limit=1&offset=0')).body.volumes.length, 1)
    assert.equal((await call(tb, tb.other, 'GET', `/os-volumes/${v.id}`)).status, 404)
    for (const size of ['#$%', '', 0]) assert.equal((await call(tb, tb.member, 'POST', '/os-volumes', { volume: { size } })).status, 400, `size ${JSON.stringify(size)}`)
    assert.equal((await call(tb, tb.member, 'GET', '/os-volumes/')).status, 404)

    const snap = await call(tb, tb.member, 'POST', '/os-snapshots', { snapshot: { volume_id: v.id, display_name: 'snap' } })
    assert.equal(snap.status, 200, JSON.stringify(snap.body))
    assert.deepEqual(Object.keys(snap.body.snapshot).sort(), ['createdAt', 'displayDescription', 'displayName', 'id', 'size', 'status', 'volumeId'])
    await db.updateTable('volume_snapshots').set({ status: 'available' }).where('id', '=', snap.body.snapshot.id).execute()
    assert.equal((await call(tb, tb.member, 'DELETE', `/os-snapshots/${snap.body.snapshot.id}`)).status, 202)
    assert.equal((await call(tb, tb.member, 'GET', '/os-volumes', undefined, '2.36')).status, 404)
    await db.deleteFrom('volume_snapshots').where('volume_id', '=', v.id).execute()
    assert.equal((await call(tb, tb.member, 'DELETE', `/os-volumes/${v.id}`)).status, 202)
  })

  it('proxies the caller\'s networks in nova-network\'s shape below 2.36', async () => {
    const neutron = async (path: string, body: unknown) => {
      const res = await fetch(`${tb.server.url}/network/v2.0/${path}`, { method: 'POST', headers: { 'x-auth-token': tb.member.token, 'content-type': 'application/json' }, body: JSON.stringify(body) })
      assert.equal(res.status, 201)
      return (await res.json()) as Record<string, { id: string }>
    }
    const net = (await neutron('networks', { network: { name: 'proxied-net' } })).network
    await neutron('subnets', { subnet: { network_id: net.id, cidr: '10.77.0.0/24', ip_version: 4, dns_nameservers: ['10.77.0.53'] } })
    const tenant = (await call(tb, tb.member, 'GET', `/os-tenant-networks/${net.id}`)).body.network
    assert.deepEqual(tenant, { id: net.id, cidr: '10.77.0.0/24', label: 'proxied-net' })
    assert.ok((await call(tb, tb.member, 'GET', '/os-tenant-networks')).body.networks.some((n: { id: string }) => n.id === net.id))
    const dict = (await call(tb, tb.member, 'GET', `/os-networks/${net.id}`)).body.network
    assert.deepEqual([dict.label, dict.cidr, dict.netmask, dict.gateway, dict.dns1], ['proxied-net', '10.77.0.0/24', '255.255.255.0', '10.77.0.1', '10.77.0.53'])
    assert.equal('project_id' in dict, false, 'nova-network\'s admin fields are for admins')
    assert.equal((await call(tb, tb.admin, 'GET', `/os-networks/${net.id}`)).body.network.project_id, tb.member.projectId)
    assert.equal((await call(tb, tb.other, 'GET', `/os-tenant-networks/${net.id}`)).status, 404)
    assert.equal((await call(tb, tb.member, 'GET', '/os-networks', undefined, '2.36')).status, 404)
  })

  it('proxies security groups and their rules in Nova\'s shape below 2.36', async () => {
    const created = await call(tb, tb.member, 'POST', '/os-security-groups', { security_group: { name: 'web', description: 'web servers' } })
    assert.equal(created.status, 200, JSON.stringify(created.body))
    const group = created.body.security_group
    assert.deepEqual([group.name, group.description, group.tenant_id, group.rules], ['web', 'web servers', tb.member.projectId, []], 'egress rules are not shown')
    for (const name of ['', '   ', 'n'.repeat(256)]) assert.equal((await call(tb, tb.member, 'POST', '/os-security-groups', { security_group: { name, description: 'd' } })).status, 400)

    const rule = await call(tb, tb.member, 'POST', '/os-security-group-rules', { security_group_rule: { parent_group_id: group.id, ip_protocol: 'tcp', from_port: 22, to_port: 22, cidr: '10.0.0.0/8' } })
    assert.equal(rule.status, 200, JSON.stringify(rule.body))
    assert.deepEqual(rule.body.security_group_rule, { id: rule.body.security_group_rule.id, parent_group_id: group.id, ip_protocol: 'tcp', from_port: 22, to_port: 22, group: {}, ip_range: { cidr: '10.0.0.0/8' } })
    const again = { security_group_rule: { parent_group_id: group.id, ip_protocol: 'tcp', from_port: 22, to_port: 22, cidr: '10.0.0.0/8' } }
    assert.equal((await call(tb, tb.member, 'POST', '/os-security-group-rules', again)).status, 400, 'a duplicate rule')
    for (const bad of [{ ip_protocol: 'bogus', from_port: 1, to_port: 2 }, { ip_protocol: 'tcp', from_port: 80, to_port: 22 }, { ip_protocol: 'tcp', from_port: 0, to_port: 70000 }, { ip_protocol: 'icmp', from_port: 300, to_port: 0 }]) {
      assert.equal((await call(tb, tb.member, 'POST', '/os-security-group-rules', { security_group_rule: { parent_group_id: group.id, ...bad } })).status, 400, JSON.stringify(bad))
    }
    assert.equal((await call(tb, tb.member, 'POST', '/os-security-group-rules', { security_group_rule: { parent_group_id: 'not-a-uuid', ip_protocol: 'tcp', from_port: 1, to_port: 2 } })).status, 400)
    const missing = '00000000-0000-0000-0000-000000000000'
    assert.equal((await call(tb, tb.member, 'POST', '/os-security-group-rules', { security_group_rule: { parent_group_id: missing, ip_protocol: 'tcp', from_port: 1, to_port: 2 } })).status, 404)
    const shown = (await call(tb, tb.member, 'GET', `/os-security-groups/${group.id}`)).body.security_group
    assert.equal(shown.rules.length, 1)
    const listed = (await call(tb, tb.member, 'GET', '/os-security-groups')).body.security_groups.map((g: { name: string }) => g.name).sort()
    assert.deepEqual(listed, ['default', 'web'])
    assert.equal((await call(tb, tb.other, 'GET', `/os-security-groups/${group.id}`)).status, 404)
    const everyone = (await call(tb, tb.admin, 'GET', '/os-security-groups?all_tenants=1')).body.security_groups
    assert.ok(everyone.some((g: { id: string }) => g.id === group.id))
    assert.equal((await call(tb, tb.member, 'PUT', `/os-security-groups/${group.id}`, { security_group: { name: 'web2', description: 'd2' } })).body.security_group.name, 'web2')
    assert.equal((await call(tb, tb.member, 'DELETE', `/os-security-group-rules/${rule.body.security_group_rule.id}`)).status, 202)
    assert.equal((await call(tb, tb.member, 'DELETE', `/os-security-group-rules/${rule.body.security_group_rule.id}`)).status, 404)
    const defaultGroup = (await call(tb, tb.member, 'GET', '/os-security-groups')).body.security_groups.find((g: { name: string }) => g.name === 'default')
    assert.equal((await call(tb, tb.member, 'DELETE', `/os-security-groups/${defaultGroup.id}`)).status, 400)
    assert.equal((await call(tb, tb.member, 'DELETE', `/os-security-groups/${group.id}`)).status, 202)
    assert.equal((await call(tb, tb.member, 'GET', `/os-security-groups/${group.id}`)).status, 404)
    assert.equal((await call(tb, tb.member, 'GET', '/os-security-groups', undefined, '2.36')).status, 404)
  })

  it('proxies floating IPs, and associates them with addFloatingIp / removeFloatingIp below 2.44', async () => {
    const neutron = async (who: typeof tb.admin, method: string, path: string, body: unknown) => {
      const res = await fetch(`${tb.server.url}/network/v2.0/${path}`, { method, headers: { 'x-auth-token': who.token, 'content-type': 'application/json' }, body: JSON.stringify(body) })
      assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${await res.clone().text()}`)
      return (await res.json()) as Record<string, { id: string }>
    }
    const ext = (await neutron(tb.admin, 'POST', 'networks', { network: { name: 'fip-pool', 'router:external': true } })).network
    await neutron(tb.admin, 'POST', 'subnets', { subnet: { network_id: ext.id, cidr: '198.51.100.0/24', ip_version: 4 } })
    const net = (await neutron(tb.member, 'POST', 'networks', { network: { name: 'fip-inside' } })).network
    const subnet = (await neutron(tb.member, 'POST', 'subnets', { subnet: { network_id: net.id, cidr: '10.88.0.0/24', ip_version: 4 } })).subnet
    const router = (await neutron(tb.member, 'POST', 'routers', { router: { name: 'fip-router', external_gateway_info: { network_id: ext.id } } })).router
    await neutron(tb.member, 'PUT', `routers/${router.id}/add_router_interface`, { subnet_id: subnet.id })

    assert.ok((await call(tb, tb.member, 'GET', '/os-floating-ip-pools')).body.floating_ip_pools.some((p: { name: string }) => p.name === 'fip-pool'))
    assert.equal((await call(tb, tb.member, 'POST', '/os-floating-ips', { pool: 'no-such-pool' })).status, 404)
    const byId = await call(tb, tb.member, 'POST', '/os-floating-ips', { pool: ext.id })
    assert.equal(byId.body.floating_ip.pool, 'fip-pool', 'a pool named by its network id')
    assert.equal((await call(tb, tb.member, 'DELETE', `/os-floating-ips/${byId.body.floating_ip.id}`)).status, 202)
    const allocated = await call(tb, tb.member, 'POST', '/os-floating-ips', { pool: 'fip-pool' })
    assert.equal(allocated.status, 200, JSON.stringify(allocated.body))
    const fip = allocated.body.floating_ip
    assert.deepEqual([fip.pool, fip.fixed_ip, fip.instance_id], ['fip-pool', null, null])
    assert.match(fip.ip, /^198\.51\.100\./)

    const id = (await call(tb, tb.member, 'POST', '/servers', createBody('fip', {}, [{ uuid: net.id }]), '2.37')).body.server.id
    const action = (body: unknown, version?: string) => call(tb, tb.member, 'POST', `/servers/${id}/action`, body, version)
    assert.equal((await action({ addFloatingIp: { address: '203.0.113.9' } })).status, 404, 'not an address of the caller')
    assert.equal((await action({ removeFloatingIp: { address: fip.ip } })).status, 409, 'not on this server')
    assert.equal((await action({ addFloatingIp: { address: fip.ip } })).status, 202)
    const associated = (await call(tb, tb.member, 'GET', `/os-floating-ips/${fip.id}`)).body.floating_ip
    assert.equal(associated.instance_id, id)
    assert.match(associated.fixed_ip, /^10\.88\.0\./)
    // A second floating IP onto the same fixed IP: Neutron refuses (409), Nova answers 400 with its reason.
    const second = (await call(tb, tb.member, 'POST', '/os-floating-ips', { pool: 'fip-pool' })).body.floating_ip
    const refused = await action({ addFloatingIp: { address: second.ip } })
    assert.equal(refused.status, 400, JSON.stringify(refused.body))
    assert.match(refused.body.badRequest.message, /already has a floating IP/)
    assert.equal((await call(tb, tb.member, 'GET', `/os-floating-ips/${second.id}`)).body.floating_ip.instance_id, null, 'nothing changed')
    assert.equal((await call(tb, tb.member, 'DELETE', `/os-floating-ips/${second.id}`)).status, 202)
    assert.equal((await action({ removeFloatingIp: { address: fip.ip } })).status, 202)
    assert.equal((await call(tb, tb.member, 'GET', `/os-floating-ips/${fip.id}`)).body.floating_ip.instance_id, null)
    assert.equal((await action({ addFloatingIp: { address: fip.ip } }, '2.44')).status, 404, 'the action is gone from 2.44')

    assert.equal((await call(tb, tb.other, 'GET', `/os-floating-ips/${fip.id}`)).status, 404)
    assert.ok((await call(tb, tb.member, 'GET', '/os-floating-ips')).body.floating_ips.some((f: { id: string }) => f.id === fip.id))
    assert.equal((await call(tb, tb.member, 'DELETE', `/os-floating-ips/${fip.id}`)).status, 202)
    assert.equal((await call(tb, tb.member, 'DELETE', `/os-floating-ips/${fip.id}`)).status, 404)
  })
})

test('os-getConsoleOutput with a length gives that many lines, without the final newline', () => {
  const log = 'one\ntwo\nthree\nfour\n'
  assert.equal(lastLines(log, 3), 'two\nthree\nfour')
  assert.equal(lastLines(log, 3).split('\n').length, 3, 'what Tempest counts')
  assert.equal(lastLines(log, 10), 'one\ntwo\nthree\nfour')
  assert.equal(lastLines(log, 0), '')
  assert.equal(lastLines(log), log)
  assert.equal(lastLines('no newline at the end', 1), 'no newline at the end')
})

describe('createBackup, through the conductor and a simulated host', () => {
  let tb: ComputeTestbed
  before(async () => {
    tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0' }, true)
  })
  after(() => tb.close())

  const until = async <T>(what: string, check: () => Promise<T | undefined>): Promise<T> => {
    for (const end = Date.now() + 20_000; Date.now() < end; await sleep(100)) {
      const value = await check()
      if (value !== undefined) return value
    }
    throw new Error(`timed out waiting for ${what}`)
  }
  const backups = async (serverId: string) => {
    const res = await fetch(`${tb.server.url}/image/v2/images?instance_uuid=${serverId}&image_type=backup`, { headers: { 'x-auth-token': tb.member.token } })
    return ((await res.json()) as { images: { id: string; name: string; status: string; backup_type: string }[] }).images
  }

  it('snapshots the server into a backup image and keeps the newest `rotation` of its kind', async () => {
    const id = (await call(tb, tb.member, 'POST', '/servers', createBody('backed-up'), '2.37')).body.server.id
    await until('the server to be ACTIVE', async () => ((await call(tb, tb.member, 'GET', `/servers/${id}`)).body.server.status === 'ACTIVE' ? true : undefined))
    const made: string[] = []
    for (const name of ['b1', 'b2', 'b3']) {
      const res = await call(tb, tb.member, 'POST', `/servers/${id}/action`, { createBackup: { name, backup_type: 'daily', rotation: 2 } }, '2.45')
      assert.equal(res.status, 202, JSON.stringify(res.body))
      made.push(res.body.image_id)
      await until(`${name} to be done`, async () => {
        const server = (await call(tb, tb.member, 'GET', `/servers/${id}`)).body.server
        const image = (await backups(id)).find((i) => i.id === res.body.image_id)
        return server['OS-EXT-STS:task_state'] === null && image?.status === 'active' ? true : undefined
      })
    }
    const kept = await backups(id)
    assert.deepEqual(kept.map((i) => i.name).sort(), ['b2', 'b3'], 'the oldest daily backup went')
    assert.ok(kept.every((i) => i.backup_type === 'daily'))
    const weekly = await call(tb, tb.member, 'POST', `/servers/${id}/action`, { createBackup: { name: 'w1', backup_type: 'weekly', rotation: 1 } })
    assert.equal(weekly.status, 202)
    assert.match(weekly.headers.get('location') ?? '', /\/images\//, 'below 2.45 the image is in Location')
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${id}/action`, { createBackup: { name: 'x', backup_type: 'daily' } })).status, 400, 'rotation is required')
  })
})

