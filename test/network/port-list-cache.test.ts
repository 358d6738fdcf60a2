/**
 * GET /ports?network_id=X and ?device_id=X answer kept lists (http/view-cache.ts) stamped with the rows they show:
 * each port's revision (migration 0129), addresses and groups, read in the one statement they are rendered from.
 * Whatever changes a port — its row, its addresses, its groups, through the API or written straight into the
 * database as another process would — the list must answer it at once and agree with the same list rendered
 * without the cache (`network_id` given twice, which listPorts answers); a kept list must never answer another
 * project's ports, nor a member the admin's binding attributes. Each list is read twice: to fill, then from the cache.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { admin, assertNeutronError, client, projectMember, type Caller, type Client } from './helpers.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

/** The list as the kept path answers it, read twice (fill, then hit). */
async function kept(c: Client, query: string): Promise<Json> {
  let found: Json
  for (let i = 0; i < 2; i++) {
    const reply = await c.get<Json>(`/v2.0/ports?${query}`)
    assert.equal(reply.status, 200, JSON.stringify(reply.body))
    found = reply.body
  }
  return found
}

for (const dialect of DIALECTS) {
  describe(`port lists from kept answers (${dialect})`, { timeout: 300_000 }, () => {
    let server: TestServer
    let alice: Caller
    let a: Client
    let bob: Client
    let root: Client

    /** The kept network list equals the uncached one for each client, after `what`; answers the first client's ports. */
    async function agree(networkId: string, what: string, clients: Client[] = [a, root]): Promise<Json[]> {
      let first: Json[] | undefined
      for (const c of clients) {
        const body = await kept(c, `network_id=${networkId}`)
        const reference = await c.get<Json>(`/v2.0/ports?network_id=${networkId}&network_id=${networkId}`)
        assert.deepEqual(body, reference.body, `after ${what}`)
        first ??= body.ports
      }
      return first!
    }

    before(async () => {
      server = await startTestServer({ dialect })
      alice = await projectMember(server, 'alice')
      a = client(server, alice)
      bob = client(server, await projectMember(server, 'bob'))
      root = client(server, await admin(server))
    })
    after(() => server.close())

    it('answers every change of a port, its addresses and its groups at once', async () => {
      const net = await a.create('networks', 'network', { name: 'kept-ports' })
      const id = String(net.id)
      assert.deepEqual(await agree(id, 'create'), [])
      const subnet = await a.create('subnets', 'subnet', { network_id: id, ip_version: 4, cidr: '10.72.0.0/24' })
      const port = await a.create('ports', 'port', { network_id: id, name: 'p1' })
      const portId = String(port.id)
      const ports = await agree(id, 'port create')
      assert.equal(ports.length, 1)
      assert.equal(ports[0].fixed_ips.length, 1)
      const res = await fetch(`${server.url}/network/v2.0/ports?network_id=${id}`, { headers: { 'x-auth-token': alice.token } })
      assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8')

      assert.equal((await a.put(`/v2.0/ports/${portId}`, { port: { name: 'renamed' } })).status, 200)
      assert.equal((await agree(id, 'rename'))[0].name, 'renamed')
      const fixed = [{ subnet_id: subnet.id, ip_address: '10.72.0.50' }, { subnet_id: subnet.id, ip_address: '10.72.0.51' }]
      assert.equal((await a.put(`/v2.0/ports/${portId}`, { port: { fixed_ips: fixed } })).status, 200)
      assert.deepEqual((await agree(id, 'new addresses'))[0].fixed_ips, fixed)
      const group = await a.create('security-groups', 'security_group', { name: 'kept-group' })
      const groups = [...(await agree(id, 'group create'))[0].security_groups, group.id].sort()
      assert.equal((await a.put(`/v2.0/ports/${portId}`, { port: { security_groups: groups } })).status, 200)
      assert.deepEqual((await agree(id, 'two groups'))[0].security_groups, groups)
      assert.equal((await a.call('PUT', `/v2.0/ports/${portId}/tags/blue`)).status, 201)
      assert.deepEqual((await agree(id, 'tag'))[0].tags, ['blue'])
      const second = await a.create('ports', 'port', { network_id: id, name: 'p2' })
      assert.equal((await agree(id, 'second port')).length, 2)

      // Written straight into the database, as another process would: the row's revision, the addresses and the
      // groups read with it tell.
      const db = server.deps.store.db
      await db.updateTable('ports').set({ name: 'from-the-database' }).where('id', '=', portId).execute()
      assert.equal((await agree(id, 'a row update in the database')).find((p) => p.id === portId).name, 'from-the-database')
      // One group for another: as many rows as before, so only the group itself can tell.
      const other = await a.create('security-groups', 'security_group', { name: 'other-group' })
      await db.updateTable('port_security_groups').set({ security_group_id: String(other.id) }).where('port_id', '=', portId).where('security_group_id', '=', String(group.id)).execute()
      const swapped = groups.map((g) => (g === group.id ? other.id : g)).sort()
      assert.deepEqual((await agree(id, 'a group swapped in the database')).find((p) => p.id === portId).security_groups, swapped)
      await db.deleteFrom('port_security_groups').where('port_id', '=', portId).where('security_group_id', '=', String(other.id)).execute()
      assert.deepEqual((await agree(id, 'a group removed in the database')).find((p) => p.id === portId).security_groups, groups.filter((g) => g !== group.id))
      await db.updateTable('ip_allocations').set({ ip_address: '10.72.0.60' }).where('port_id', '=', portId).where('ip_address', '=', '10.72.0.51').execute()
      assert.deepEqual((await agree(id, 'an address changed in the database')).find((p) => p.id === portId).fixed_ips.map((f: Json) => f.ip_address), ['10.72.0.50', '10.72.0.60'])

      // The query's other parameters are applied to the kept rows as to any list.
      assert.deepEqual((await kept(a, `network_id=${id}&fields=name&sort_key=name&sort_dir=desc`)).ports, [{ name: 'p2' }, { name: 'from-the-database' }])
      const page = await kept(a, `network_id=${id}&limit=1`)
      assert.equal(page.ports.length, 1)
      assert.equal(page.ports_links[0].rel, 'next')
      assertNeutronError(await a.get(`/v2.0/ports?network_id=${id}&limit=x`), 400, 'BadRequest')

      assert.equal((await a.del(`/v2.0/ports/${second.id}`)).status, 204)
      assert.equal((await agree(id, 'port delete')).length, 1)
    })

    it('answers a server\'s ports by device_id as the uncached list does', async () => {
      const net = await a.create('networks', 'network', { name: 'device-ports' })
      await a.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.73.0.0/24' })
      const port = await a.create('ports', 'port', { network_id: net.id, name: 'dev' })
      const device = 'a6a3c1f0-4b8e-4c59-9a3e-6f0e1d2c3b4a'
      const byDevice = async () => {
        const body = await kept(a, `device_id=${device}`)
        assert.deepEqual(body, (await a.get<Json>(`/v2.0/ports?device_id=${device}&device_id=${device}`)).body)
        return body.ports as Json[]
      }
      assert.deepEqual(await byDevice(), [])
      assert.equal((await a.put(`/v2.0/ports/${port.id}`, { port: { device_id: device } })).status, 200)
      const [bound] = await byDevice()
      assert.equal(bound.id, port.id)
      assert.equal(bound.status, 'ACTIVE')
      assert.equal((await a.put(`/v2.0/ports/${port.id}`, { port: { device_id: '' } })).status, 200)
      assert.deepEqual(await byDevice(), [])
    })

    it('never answers another project its ports, nor a member the binding attributes', async () => {
      const net = await root.create('networks', 'network', { name: 'shared-kept', shared: true })
      const id = String(net.id)
      await root.create('subnets', 'subnet', { network_id: id, ip_version: 4, cidr: '10.74.0.0/24' })
      const mine = await a.create('ports', 'port', { network_id: id, name: 'alice-port' })
      const theirs = await bob.create('ports', 'port', { network_id: id, name: 'bob-port' })
      // The admin's variant first, then each member's: each has its own entry.
      const all = await agree(id, 'ports of two projects', [root])
      assert.deepEqual(all.map((p) => p.id).sort(), [mine.id, theirs.id].sort())
      assert.ok(all.every((p) => 'binding:host_id' in p))
      const alices = await agree(id, 'the same list for alice', [a])
      assert.deepEqual(alices.map((p) => p.id), [mine.id])
      assert.equal('binding:host_id' in alices[0], false)
      const bobs = await agree(id, 'the same list for bob', [bob])
      assert.deepEqual(bobs.map((p) => p.id), [theirs.id])
      // A private network of alice's: bob's list of it is empty, however often alice's was kept.
      const privateNet = await a.create('networks', 'network', { name: 'alice-only' })
      await a.create('subnets', 'subnet', { network_id: privateNet.id, ip_version: 4, cidr: '10.75.0.0/24' })
      await a.create('ports', 'port', { network_id: privateNet.id })
      assert.equal((await kept(a, `network_id=${privateNet.id}`)).ports.length, 1)
      assert.deepEqual((await kept(bob, `network_id=${privateNet.id}`)).ports, [])
    })

    if (dialect === 'postgres') {
      it('answers in one process what another process changed', async () => {
        const masterKey = readFileSync(join(server.dataDir, 'master.key'), 'utf8').trim()
        const other = await startTestServer({ databaseUrl: server.config.databaseUrl, env: { PCC_MASTER_KEY: masterKey, PCC_SIMULATED_HOSTS: '0' } })
        try {
          const b = client(other, alice)
          const net = await a.create('networks', 'network', { name: 'two-processes' })
          const id = String(net.id)
          await a.create('subnets', 'subnet', { network_id: id, ip_version: 4, cidr: '10.76.0.0/24' })
          const port = await a.create('ports', 'port', { network_id: id, name: 'here' })
          assert.deepEqual(await kept(a, `network_id=${id}`), await kept(b, `network_id=${id}`))
          assert.equal((await b.put(`/v2.0/ports/${port.id}`, { port: { name: 'changed-in-other' } })).status, 200)
          assert.equal((await agree(id, 'a rename in the other process'))[0].name, 'changed-in-other')
          await b.create('ports', 'port', { network_id: id, name: 'made-in-other' })
          assert.equal((await agree(id, 'a port made in the other process')).length, 2)
          assert.equal((await a.put(`/v2.0/ports/${port.id}`, { port: { name: 'changed-here' } })).status, 200)
          assert.ok((await kept(b, `network_id=${id}`)).ports.some((p: Json) => p.name === 'changed-here'))
        } finally {
          await other.close()
        }
      })
    }
  })
}
