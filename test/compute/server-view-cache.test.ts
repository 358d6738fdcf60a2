/**
 * The detail list and GET /servers/{id} serve servers from the view cache (src/server/compute/server-view-cache.ts).
 * Whatever changes what a server shows — its row, tags, faults, ports, addresses, floating IPs, security groups,
 * the names of its network and groups, its volumes, its host's state, its server groups — both must show it at
 * once and agree with each other, for members and admins, at old and new microversions, and in another process
 * on the same PostgreSQL, where a process keeping no views (PCC_VIEW_CACHE_MB=0) is the reference. Each read is
 * made twice, once to fill the cache and once from it.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { call, computeTestbed, createBody, type ComputeTestbed, type Persona } from './helpers.js'
import { client, type Client } from '../network/helpers.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const VERSIONS = ['2.1', '2.47', '2.96']

async function until<T>(what: string, check: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** GET /servers/{id} at `version`, read twice: once to fill the cache, once from it (the answer). */
async function shownWhole(tb: ComputeTestbed, who: Persona, id: string, version: string, base = tb.compute): Promise<Json> {
  let found: Json
  for (let i = 0; i < 2; i++) {
    const r = await fetch(`${base}/servers/${id}`, { headers: { 'x-auth-token': who.token, 'openstack-api-version': `compute ${version}` } })
    const body = (await r.json()) as { server: Json }
    assert.equal(r.status, 200, JSON.stringify(body))
    found = body.server
  }
  return found
}

/** As shownWhole, without server_groups (a show-only field) to compare with the detail list. */
async function shown(tb: ComputeTestbed, who: Persona, id: string, version: string, base = tb.compute): Promise<Json> {
  const server = await shownWhole(tb, who, id, version, base)
  delete server.server_groups
  return server
}

/** The server as the detail list shows it to `who` at `version`, read twice: once to fill the cache, once from it. */
async function listed(tb: ComputeTestbed, who: Persona, id: string, version: string, base = tb.compute): Promise<Json> {
  const path = `/servers/detail${who === tb.admin ? '?all_tenants=1' : ''}`
  let found: Json
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${base}${path}`, { headers: { 'x-auth-token': who.token, 'openstack-api-version': `compute ${version}` } })
    const body = (await res.json()) as { servers: Json[] }
    found = body.servers.find((s) => s.id === id)
  }
  return found
}

/** The detail list agrees with show for members and admins at every version checked. */
async function agree(tb: ComputeTestbed, id: string, what: string, base = tb.compute): Promise<void> {
  for (const version of VERSIONS) {
    for (const who of [tb.member, tb.admin]) {
      assert.deepEqual(await listed(tb, who, id, version, base), await shown(tb, who, id, version, base), `after ${what}: detail at ${version} for ${who === tb.admin ? 'admin' : 'member'}`)
    }
  }
}

/** Show in `base` agrees with show in a process that keeps no views, server_groups included. */
async function agreeWithUncached(tb: ComputeTestbed, id: string, what: string, base: string, reference: string): Promise<void> {
  for (const version of [...VERSIONS, '2.71']) {
    for (const who of [tb.member, tb.admin]) {
      assert.deepEqual(await shownWhole(tb, who, id, version, base), await shownWhole(tb, who, id, version, reference), `after ${what}: show at ${version} for ${who === tb.admin ? 'admin' : 'member'}`)
    }
  }
}

for (const dialect of DIALECTS) {
  describe(`the detail list's view cache follows every change (${dialect})`, { timeout: 600_000 }, () => {
    let tb: ComputeTestbed
    let net: Client
    let serverId: string
    before(async () => {
      tb = await computeTestbed(dialect, { PCC_SIMULATED_HOSTS: '2', PCC_SIMULATED_DELAY_MS: '10' }, true)
      net = client(tb.server, tb.member)
      const lan = await net.create('networks', 'network', { name: 'lan' })
      await net.create('subnets', 'subnet', { network_id: lan.id, ip_version: 4, cidr: '10.20.0.0/24' })
      const created = await call(tb, tb.member, 'POST', '/servers', createBody('cached', {}, [{ uuid: lan.id }]), '2.96')
      assert.equal(created.status, 202, JSON.stringify(created.body))
      serverId = created.body.server.id
      await until('ACTIVE', async () => ((await shown(tb, tb.member, serverId, '2.96')).status === 'ACTIVE' ? true : undefined))
    })
    after(() => tb.close())

    it('shows changes of the row, tags and faults', async () => {
      await agree(tb, serverId, 'boot')
      assert.equal((await call(tb, tb.member, 'PUT', `/servers/${serverId}`, { server: { name: 'renamed', description: 'd' } }, '2.96')).status, 200)
      await agree(tb, serverId, 'rename')
      assert.equal((await listed(tb, tb.member, serverId, '2.96')).name, 'renamed')
      assert.equal((await shown(tb, tb.member, serverId, '2.96')).name, 'renamed')
      assert.equal((await call(tb, tb.member, 'PUT', `/servers/${serverId}/tags/blue`, undefined, '2.96')).status, 201)
      await agree(tb, serverId, 'a tag')
      assert.deepEqual((await listed(tb, tb.member, serverId, '2.96')).tags, ['blue'])
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/metadata`, { metadata: { role: 'db' } })).status, 200)
      await agree(tb, serverId, 'metadata')
      // A fault recorded without the row changing (the view revision alone tells it).
      await tb.server.deps.store.db.insertInto('instance_faults').values({ id: `fault-${dialect}`, server_id: serverId, code: 500, message: 'boom', details: 'trace', created_at: Date.now() }).execute()
      await tb.server.deps.store.db.updateTable('servers').set({ vm_state: 'error' }).where('id', '=', serverId).execute()
      await agree(tb, serverId, 'a fault')
      assert.equal((await listed(tb, tb.admin, serverId, '2.96')).fault.message, 'boom')
      assert.equal((await shown(tb, tb.admin, serverId, '2.96')).fault.message, 'boom')
      await tb.server.deps.store.db.updateTable('servers').set({ vm_state: 'active' }).where('id', '=', serverId).execute()
      await tb.server.deps.store.db.deleteFrom('instance_faults').where('server_id', '=', serverId).execute()
      await agree(tb, serverId, 'recovery')
    })

    it('shows changes of ports, addresses, floating IPs, security groups and their names', async () => {
      const root = client(tb.server, tb.admin)
      const other = await net.create('networks', 'network', { name: 'backend' })
      await net.create('subnets', 'subnet', { network_id: other.id, ip_version: 4, cidr: '10.30.0.0/24' })
      const attach = await call(tb, tb.member, 'POST', `/servers/${serverId}/os-interface`, { interfaceAttachment: { net_id: other.id } }, '2.96')
      assert.equal(attach.status, 200, JSON.stringify(attach.body))
      await agree(tb, serverId, 'an interface attached')
      assert.ok('backend' in (await listed(tb, tb.member, serverId, '2.96')).addresses)

      const renamed = await net.put(`/v2.0/networks/${other.id}`, { network: { name: 'backend-2' } })
      assert.equal(renamed.status, 200)
      await agree(tb, serverId, 'a network renamed')
      assert.ok('backend-2' in (await listed(tb, tb.member, serverId, '2.96')).addresses)

      const ext = await root.create('networks', 'network', { name: 'public', 'router:external': true })
      await root.create('subnets', 'subnet', { network_id: ext.id, ip_version: 4, cidr: '198.51.100.0/24' })
      const router = await net.create('routers', 'router', { name: 'r', external_gateway_info: { network_id: ext.id } })
      const backendSubnet = (await net.get<{ subnets: Json[] }>(`/v2.0/subnets?network_id=${other.id}`)).body.subnets[0]
      assert.equal((await net.put(`/v2.0/routers/${router.id}/add_router_interface`, { subnet_id: backendSubnet.id })).status, 200)
      const port = attach.body.interfaceAttachment.port_id
      const fip = await net.create('floatingips', 'floatingip', { floating_network_id: ext.id, port_id: port })
      await agree(tb, serverId, 'a floating IP associated')
      assert.ok(JSON.stringify((await listed(tb, tb.member, serverId, '2.96')).addresses).includes(fip.floating_ip_address))
      assert.equal((await net.put(`/v2.0/floatingips/${fip.id}`, { floatingip: { port_id: null } })).status, 200)
      await agree(tb, serverId, 'a floating IP disassociated')

      const group = await net.create('security-groups', 'security_group', { name: 'web' })
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { addSecurityGroup: { name: 'web' } })).status, 202)
      await agree(tb, serverId, 'a security group added')
      assert.equal((await net.put(`/v2.0/security-groups/${group.id}`, { security_group: { name: 'web-2' } })).status, 200)
      await agree(tb, serverId, 'a security group renamed')
      assert.ok((await listed(tb, tb.member, serverId, '2.96')).security_groups.some((g: Json) => g.name === 'web-2'))

      assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${serverId}/os-interface/${port}`, undefined, '2.96')).status, 202)
      await agree(tb, serverId, 'an interface detached')
    })

    it('shows volumes attached and the host going down', async () => {
      const volume = await fetch(`${tb.server.url}/volume/v3/volumes`, {
        method: 'POST',
        headers: { 'x-auth-token': tb.member.token, 'content-type': 'application/json' },
        body: JSON.stringify({ volume: { size: 1, name: 'data' } }),
      }).then((r) => r.json() as Promise<Json>)
      await until('volume available', async () => {
        const r = await fetch(`${tb.server.url}/volume/v3/volumes/${volume.volume.id}`, { headers: { 'x-auth-token': tb.member.token } })
        return ((await r.json()) as Json).volume.status === 'available' ? true : undefined
      })
      const attached = await call(tb, tb.member, 'POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId: volume.volume.id } }, '2.79')
      assert.equal(attached.status, 200, JSON.stringify(attached.body))
      await agree(tb, serverId, 'a volume attached')
      assert.deepEqual((await listed(tb, tb.member, serverId, '2.96'))['os-extended-volumes:volumes_attached'], [{ id: volume.volume.id, delete_on_termination: false }])

      // host_status follows the host, not any row of the server.
      const host = (await shown(tb, tb.admin, serverId, '2.96'))['OS-EXT-SRV-ATTR:host']
      const services = (await call(tb, tb.admin, 'GET', `/os-services?binary=nova-compute&host=${host}`, undefined, '2.53')).body.services
      assert.equal((await call(tb, tb.admin, 'PUT', `/os-services/${services[0].id}`, { forced_down: true }, '2.53')).status, 200)
      await agree(tb, serverId, 'the host forced down')
      assert.equal((await listed(tb, tb.admin, serverId, '2.96')).host_status, 'DOWN')
      assert.equal((await shown(tb, tb.admin, serverId, '2.96')).host_status, 'DOWN')
      assert.equal((await call(tb, tb.admin, 'PUT', `/os-services/${services[0].id}`, { forced_down: false }, '2.53')).status, 200)
      assert.equal((await listed(tb, tb.admin, serverId, '2.96')).host_status, 'UP')
      assert.equal((await shown(tb, tb.admin, serverId, '2.96')).host_status, 'UP')
      // A host with no record is UNKNOWN, as Nova shows a server whose compute service is gone.
      const db = tb.server.deps.store.db
      await db.updateTable('servers').set({ host: 'gone' }).where('id', '=', serverId).execute()
      assert.equal((await listed(tb, tb.admin, serverId, '2.96')).host_status, 'UNKNOWN')
      assert.equal((await shown(tb, tb.admin, serverId, '2.96')).host_status, 'UNKNOWN')
      await db.updateTable('servers').set({ host }).where('id', '=', serverId).execute()
      assert.equal((await listed(tb, tb.admin, serverId, '2.96')).host_status, 'UP')
    })

    it('shows the server groups it joins and leaves, and never another project its server', async () => {
      const created = await call(tb, tb.member, 'POST', '/os-server-groups', { server_group: { name: 'g', policy: 'affinity' } }, '2.64')
      assert.equal(created.status, 200, JSON.stringify(created.body))
      const groupId = created.body.server_group.id
      assert.deepEqual((await shownWhole(tb, tb.member, serverId, '2.96')).server_groups, [])
      // Membership follows no revision: each answer reads it.
      const db = tb.server.deps.store.db
      await db.insertInto('server_group_members').values({ group_id: groupId, server_id: serverId }).execute()
      assert.deepEqual((await shownWhole(tb, tb.member, serverId, '2.96')).server_groups, [groupId])
      assert.deepEqual((await shownWhole(tb, tb.admin, serverId, '2.71')).server_groups, [groupId])
      assert.equal((await shownWhole(tb, tb.member, serverId, '2.70')).server_groups, undefined)
      await db.deleteFrom('server_group_members').where('server_id', '=', serverId).execute()
      assert.deepEqual((await shownWhole(tb, tb.member, serverId, '2.96')).server_groups, [])
      // A kept view is never another project's answer, nor a member's the admin fields.
      assert.equal((await call(tb, tb.other, 'GET', `/servers/${serverId}`, undefined, '2.96')).status, 404)
      assert.equal((await shown(tb, tb.member, serverId, '2.96'))['OS-EXT-SRV-ATTR:host'], undefined)
      assert.ok((await shown(tb, tb.admin, serverId, '2.96'))['OS-EXT-SRV-ATTR:host'])
    })

    if (dialect === 'postgres') {
      it('shows in one process what another process changed', async () => {
        // Same database and master key: the second process reads the first one's tokens and rows.
        const masterKey = readFileSync(join(tb.server.dataDir, 'master.key'), 'utf8').trim()
        const second: TestServer = await startTestServer({ databaseUrl: tb.server.config.databaseUrl, env: { PCC_MASTER_KEY: masterKey, PCC_SIMULATED_HOSTS: '0' } })
        try {
          await agree(tb, serverId, 'before', `${second.url}/compute/v2.1`)
          assert.equal((await call(tb, tb.member, 'PUT', `/servers/${serverId}`, { server: { name: 'changed-elsewhere' } }, '2.96')).status, 200)
          assert.equal((await call(tb, tb.member, 'PUT', `/servers/${serverId}/tags/green`, undefined, '2.96')).status, 201)
          await agree(tb, serverId, 'a change made through the first process', `${second.url}/compute/v2.1`)
          // The reference: a third process that keeps no views.
          const uncached: TestServer = await startTestServer({ databaseUrl: tb.server.config.databaseUrl, env: { PCC_MASTER_KEY: masterKey, PCC_SIMULATED_HOSTS: '0', PCC_VIEW_CACHE_MB: '0' } })
          try {
            const [first, other, reference] = [tb.compute, `${second.url}/compute/v2.1`, `${uncached.url}/compute/v2.1`]
            await agreeWithUncached(tb, serverId, 'before', first, reference)
            await agreeWithUncached(tb, serverId, 'before', other, reference)
            assert.equal((await fetch(`${second.url}/compute/v2.1/servers/${serverId}`, { method: 'PUT', headers: { 'x-auth-token': tb.member.token, 'content-type': 'application/json' }, body: JSON.stringify({ server: { name: 'changed-in-second' } }) })).status, 200)
            assert.equal((await fetch(`${second.url}/compute/v2.1/servers/${serverId}/tags/red`, { method: 'PUT', headers: { 'x-auth-token': tb.member.token, 'openstack-api-version': 'compute 2.96' } })).status, 201)
            await agreeWithUncached(tb, serverId, 'a change made through the second process', first, reference)
            assert.equal((await shown(tb, tb.member, serverId, '2.96')).name, 'changed-in-second')
            assert.ok((await shown(tb, tb.member, serverId, '2.96')).tags.includes('red'))
          } finally {
            await uncached.close()
          }
        } finally {
          await second.close()
        }
      })
    }
  })
}
