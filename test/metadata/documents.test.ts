/**
 * The metadata documents (documents.ts) as Nova builds them: meta_data.json per version, network_data.json for
 * DHCP and static subnets, the config drive's tree (admin password on the drive only), and the facts read from the
 * store for a server booted through the API.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { metaData, metadataFiles, networkData, type InstanceFacts } from '../../src/server/metadata/documents.js'
import { loadInstanceFacts } from '../../src/server/metadata/load.js'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { ComputeClient, until } from '../../src/testkit/compute-api.js'

const nic = (dhcp: boolean) => ({
  portId: '0d1f2e3c-aaaa-4bbb-8ccc-000000000001', macAddress: 'fa:16:3e:00:00:01', networkId: 'net-1', mtu: 1450, vifType: 'bridge', floatingIps: [],
  fixedIps: [{ address: '10.0.0.5', version: 4 as const, cidr: '10.0.0.0/24', gateway: '10.0.0.1', dhcp, dns: ['10.0.0.2'], routes: [{ destination: '192.168.0.0/16', nexthop: '10.0.0.254' }] }],
})
const facts: InstanceFacts = {
  uuid: 'b1c2d3e4-0000-4000-8000-000000000001', name: 'web-1', hostname: 'web-1', displayId: 26, projectId: 'p1', availabilityZone: 'nova', launchIndex: 0,
  reservationId: 'r-1', flavorName: 'm1.tiny', imageId: 'img', metadata: { role: 'web' }, key: { name: 'k1', type: 'ssh', publicKey: 'ssh-ed25519 AAAA me' },
  userData: Buffer.from('#!/bin/sh\n').toString('base64'), securityGroups: ['default'], nics: [nic(true)],
}

describe('metadata documents', () => {
  it("meta_data.json carries what each version added, and the admin password only when asked (the config drive's)", () => {
    const old = metaData(facts, '2012-08-10')
    assert.deepEqual(Object.keys(old).sort(), ['availability_zone', 'hostname', 'keys', 'launch_index', 'meta', 'name', 'public_keys', 'uuid'])
    assert.equal(old.hostname, 'web-1.novalocal')
    assert.deepEqual(old.public_keys, { k1: 'ssh-ed25519 AAAA me' })
    const latest = metaData(facts, 'latest', { adminPass: 's3cret' })
    for (const key of ['random_seed', 'project_id', 'devices', 'dedicated_cpus']) assert.ok(key in latest, key)
    assert.equal(Buffer.from(String(latest.random_seed), 'base64').length, 512)
    assert.equal(latest.admin_pass, 's3cret')
    assert.equal('admin_pass' in metaData(facts, 'latest'), false)
  })

  it('network_data.json: a DHCP subnet says only ipv4_dhcp (no MTU on the link); a static one its address, routes and DNS', () => {
    const dhcp = networkData(facts)
    assert.deepEqual(dhcp.links, [{ id: 'tap0d1f2e3c-aa', vif_id: nic(true).portId, type: 'bridge', mtu: null, ethernet_mac_address: 'fa:16:3e:00:00:01' }])
    assert.deepEqual(dhcp.networks, [{ id: 'network0', type: 'ipv4_dhcp', link: 'tap0d1f2e3c-aa', network_id: 'net-1' }])
    const fixed = networkData({ ...facts, nics: [nic(false)] })
    assert.equal((fixed.links as { mtu: number }[])[0].mtu, 1450)
    assert.deepEqual((fixed.networks as Record<string, unknown>[])[0], {
      id: 'network0', type: 'ipv4', link: 'tap0d1f2e3c-aa', ip_address: '10.0.0.5', netmask: '255.255.255.0', network_id: 'net-1',
      routes: [{ network: '0.0.0.0', netmask: '0.0.0.0', gateway: '10.0.0.1' }, { network: '192.168.0.0', netmask: '255.255.0.0', gateway: '10.0.0.254' }],
      services: [{ type: 'dns', address: '10.0.0.2' }],
    })
    assert.deepEqual(fixed.services, [{ type: 'dns', address: '10.0.0.2' }])
  })

  it('lays out the config drive: every OpenStack version and latest, user data decoded, the EC2 tree', () => {
    const files = metadataFiles(facts, { adminPass: 'p' })
    assert.equal(files['openstack/latest/user_data'].toString(), '#!/bin/sh\n')
    assert.ok(files['openstack/2012-08-10/meta_data.json'] && !files['openstack/2012-08-10/network_data.json'], 'network_data.json since 2015-10-15')
    assert.ok(files['openstack/2016-10-06/vendor_data2.json'])
    const ec2 = JSON.parse(files['ec2/latest/meta-data.json'].toString()) as Record<string, unknown>
    assert.equal(ec2['instance-id'], 'i-0000001a')
    assert.equal(ec2['local-ipv4'], '10.0.0.5')
    assert.equal(ec2['hostname'], 'web-1.novalocal')
    const seeds = new Set(Object.entries(files).filter(([k]) => k.endsWith('meta_data.json') && !k.includes('2012-08-10')).map(([, v]) => JSON.parse(v.toString()).random_seed))
    assert.equal(seeds.size, 1, 'one random seed for the whole drive')
  })
})

describe('instance facts from the store', () => {
  let server: TestServer
  let api: ComputeClient
  before(async () => {
    server = await startTestServer({ env: { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0' } })
    const token = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
    api = new ComputeClient(server.url, token)
  })
  after(() => server.close())

  it("reads a server's name, key, metadata, user data and its port with its address and subnet", async () => {
    await api.call('POST', '/os-keypairs', { keypair: { name: 'k1', public_key: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPccGuestImageTestKey0123456789abcdefghijk facts@pcc' } })
    const net = await api.other('POST', '/network/v2.0/networks', { network: { name: 'lan' } })
    await api.other('POST', '/network/v2.0/subnets', { subnet: { network_id: net.body.network.id, ip_version: 4, cidr: '10.9.0.0/24', dns_nameservers: ['10.9.0.53'] } })
    const { id } = await api.create({ name: 'facts-vm', imageRef: await api.bootImage(), flavorRef: '1', networks: [{ uuid: net.body.network.id }], key_name: 'k1', metadata: { tier: 'db' }, user_data: Buffer.from('hello').toString('base64') })
    await until('ACTIVE', 20_000, async () => ((await api.server(id))?.status === 'ACTIVE' ? true : undefined))
    const f = (await loadInstanceFacts(server.deps.store.db, id))!
    assert.equal(f.name, 'facts-vm')
    assert.deepEqual(f.key, { name: 'k1', type: 'ssh', publicKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPccGuestImageTestKey0123456789abcdefghijk facts@pcc' })
    assert.deepEqual(f.metadata, { tier: 'db' })
    assert.equal(Buffer.from(f.userData!, 'base64').toString(), 'hello')
    assert.equal(f.nics.length, 1)
    assert.match(f.nics[0].fixedIps[0].address, /^10\.9\.0\.\d+$/)
    assert.deepEqual(f.nics[0].fixedIps[0].dns, ['10.9.0.53'])
    assert.equal(f.nics[0].fixedIps[0].dhcp, true)
    assert.equal(await loadInstanceFacts(server.deps.store.db, 'no-such-server'), undefined)
  })
})
