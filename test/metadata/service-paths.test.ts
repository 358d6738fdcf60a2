/** The metadata service's paths (service-paths.ts), as Nova's handler lays them out, for one guest. */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { InstanceFacts } from '../../src/server/metadata/documents.js'
import { answerMetadata, isPasswordPath } from '../../src/server/metadata/service-paths.js'

const facts: InstanceFacts = {
  uuid: '6e3d1c3a-8d0f-4d5e-9b77-2b0a5f1e9c11', name: 'web-1', hostname: 'web-1', displayId: 42, projectId: 'p1', availabilityZone: 'nova', launchIndex: 0,
  reservationId: 'r-1', flavorName: 'm1.tiny', imageId: 'img', metadata: { role: 'web' },
  key: { name: 'k1', type: 'ssh', publicKey: 'ssh-ed25519 AAAA test' }, userData: Buffer.from('#!/bin/sh\necho hi\n').toString('base64'), securityGroups: ['default', 'web'],
  nics: [{ portId: 'port-1', macAddress: 'fa:16:3e:00:00:01', networkId: 'net-1', mtu: 1450, vifType: 'bridge', fixedIps: [{ address: '10.0.0.5', version: 4, cidr: '10.0.0.0/24', gateway: '10.0.0.1', dhcp: true, dns: [], routes: [] }], floatingIps: ['203.0.113.9'] }],
}
const get = (path: string, f = facts) => {
  const r = answerMetadata(f, path)
  return { status: r.status, type: r.contentType, text: r.body.toString() }
}

describe('metadata service paths', () => {
  it('lists the EC2 versions at the root and the OpenStack ones at /openstack', () => {
    assert.equal(get('/').text.split('\n').at(-1), 'latest')
    assert.ok(get('/').text.startsWith('1.0\n2007-01-19'))
    assert.equal(get('/openstack').text.split('\n')[0], '2012-08-10')
    assert.equal(get('/openstack/').text, get('/openstack').text)
  })

  it('serves the OpenStack documents of a version and lists them', () => {
    assert.deepEqual(get('/openstack/latest').text.split('\n'), ['meta_data.json', 'network_data.json', 'password', 'user_data', 'vendor_data.json', 'vendor_data2.json'])
    const md = get('/openstack/latest/meta_data.json')
    assert.equal(md.type, 'application/json')
    const doc = JSON.parse(md.text) as Record<string, unknown>
    assert.equal(doc.uuid, facts.uuid)
    assert.equal(doc.admin_pass, undefined, 'the admin password is for the config drive only')
    assert.equal(get('/openstack/2012-08-10/network_data.json').status, 404, 'network_data.json came with 2015-10-15')
    assert.equal(get('/openstack/latest/user_data').text, '#!/bin/sh\necho hi\n')
    assert.equal(get('/openstack/latest/password').text, '')
    assert.equal(answerMetadata(facts, '/openstack/2013-10-17/password', 'posted').body.toString(), 'posted', 'what the guest posted')
    assert.equal(get('/openstack/1999-01-01/meta_data.json').status, 404)
    assert.equal(get('/openstack/latest/user_data', { ...facts, userData: null }).status, 404)
  })

  it('names the password paths, the one a guest may post to', () => {
    for (const path of ['/openstack/latest/password', '/openstack/2013-10-17/password', '//openstack/latest/./password', '/openstack/latest/password?x=1']) assert.ok(isPasswordPath(path), path)
    for (const path of ['/openstack/latest', '/openstack/latest/meta_data.json', '/openstack/1999-01-01/password', '/latest/meta-data/password', '/openstack/latest/password/x']) assert.ok(!isPasswordPath(path), path)
  })

  it('walks the EC2 tree: listings, nested keys, lists, the public key as 0=<name>, user data', () => {
    assert.equal(get('/latest').text, 'meta-data/\nuser-data')
    const listing = get('/2009-04-04/meta-data/').text.split('\n')
    for (const key of ['instance-id', 'local-ipv4', 'placement/', 'public-keys/', 'security-groups']) assert.ok(listing.includes(key), key)
    assert.equal(get('/latest/meta-data/instance-id').text, 'i-0000002a')
    assert.equal(get('/latest/meta-data/local-ipv4').text, '10.0.0.5')
    assert.equal(get('/latest/meta-data/public-ipv4').text, '203.0.113.9')
    assert.equal(get('/latest/meta-data/placement/availability-zone').text, 'nova')
    assert.equal(get('/latest/meta-data/security-groups').text, 'default\nweb')
    assert.equal(get('/latest/meta-data/public-keys').text, '0=k1')
    assert.equal(get('/latest/meta-data/public-keys/0/openssh-key').text, 'ssh-ed25519 AAAA test')
    assert.equal(get('/latest/user-data').text, '#!/bin/sh\necho hi\n')
    assert.equal(get('/latest/meta-data/nope').status, 404)
    for (const inherited of ['constructor', 'toString', '__proto__', 'placement/hasOwnProperty']) assert.equal(get(`/latest/meta-data/${inherited}`).status, 404, inherited)
    assert.equal(get('/2099-01-01/meta-data/').status, 404)
    assert.equal(get('/latest/meta-data/../../openstack/latest/meta_data.json').status, 200, 'paths are normalised as Nova does')
  })
})
