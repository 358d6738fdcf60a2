/**
 * GET /networks/{id} answers kept views (http/view-cache.ts) stamped with the network's revisions (migration
 * 0128). Whatever changes what a network shows — its row (name, sharing, tags) or its subnets, through the API or
 * written straight into the database as another process or an older release would — the show must answer it at
 * once and agree with the list (which renders every time); a kept view must never answer another project, nor a
 * member the admin's provider attributes. Each show is read twice: once to fill the cache, once from it.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { admin, assertNeutronError, client, projectMember, type Caller, type Client } from './helpers.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

/** The network as show answers it, read twice (fill, then hit); the header is the one of an uncached answer. */
async function shown(c: Client, id: string): Promise<Json> {
  let found: Json
  for (let i = 0; i < 2; i++) {
    const reply = await c.get<{ network: Json }>(`/v2.0/networks/${id}`)
    assert.equal(reply.status, 200, JSON.stringify(reply.body))
    found = reply.body.network
  }
  return found
}

/** The network as the list renders it (no cache): the reference. */
async function listed(c: Client, id: string): Promise<Json> {
  const reply = await c.get<{ networks: Json[] }>(`/v2.0/networks?id=${id}`)
  assert.equal(reply.status, 200, JSON.stringify(reply.body))
  return reply.body.networks.find((n) => n.id === id)
}

for (const dialect of DIALECTS) {
  describe(`network show from kept views (${dialect})`, { timeout: 300_000 }, () => {
    let server: TestServer
    let alice: Caller
    let a: Client
    let bob: Client
    let root: Client

    /** Show equals the list for the member and the admin, after `what`. */
    async function agree(id: string, what: string, clients: Client[] = [a, root]): Promise<Json> {
      let member: Json
      for (const c of clients) {
        const view = await shown(c, id)
        assert.deepEqual(view, await listed(c, id), `after ${what}`)
        member ??= view
      }
      return member
    }

    before(async () => {
      server = await startTestServer({ dialect })
      alice = await projectMember(server, 'alice')
      a = client(server, alice)
      bob = client(server, await projectMember(server, 'bob'))
      root = client(server, await admin(server))
    })
    after(() => server.close())

    it('answers every change of the row and its subnets at once', async () => {
      const net = await a.create('networks', 'network', { name: 'kept' })
      const id = String(net.id)
      assert.deepEqual((await agree(id, 'create')).subnets, [])
      const res = await fetch(`${server.url}/network/v2.0/networks/${id}`, { headers: { 'x-auth-token': alice.token } })
      assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8')

      assert.equal((await a.put(`/v2.0/networks/${id}`, { network: { name: 'renamed' } })).status, 200)
      assert.equal((await agree(id, 'rename')).name, 'renamed')
      const subnet = await a.create('subnets', 'subnet', { network_id: id, ip_version: 4, cidr: '10.70.0.0/24' })
      assert.deepEqual((await agree(id, 'subnet create')).subnets, [subnet.id])
      const second = await a.create('subnets', 'subnet', { network_id: id, ip_version: 4, cidr: '10.70.1.0/24' })
      assert.deepEqual((await agree(id, 'second subnet')).subnets, [subnet.id, second.id])
      assert.equal((await a.del(`/v2.0/subnets/${second.id}`)).status, 204)
      assert.deepEqual((await agree(id, 'subnet delete')).subnets, [subnet.id])
      assert.equal((await a.call('PUT', `/v2.0/networks/${id}/tags/blue`)).status, 201)
      assert.deepEqual((await agree(id, 'tag')).tags, ['blue'])

      // Written straight into the database, as another process or an older release would: the triggers count it.
      const db = server.deps.store.db
      await db.updateTable('networks').set({ name: 'from-the-database' }).where('id', '=', id).execute()
      assert.equal((await agree(id, 'a row update in the database')).name, 'from-the-database')
      await db.updateTable('subnets').set({ created_at: 0 }).where('id', '=', subnet.id).execute()
      await db.deleteFrom('subnets').where('id', '=', subnet.id).execute()
      assert.deepEqual((await agree(id, 'a subnet delete in the database')).subnets, [])

      assert.equal((await a.del(`/v2.0/networks/${id}`)).status, 204)
      assertNeutronError(await a.get(`/v2.0/networks/${id}`), 404, 'NetworkNotFound')
      assert.equal((await db.selectFrom('view_revisions').select('rev').where('kind', '=', 'network').where('id', '=', id).execute()).length, 0)
    })

    it('never answers another project, nor a member the provider attributes', async () => {
      const net = await a.create('networks', 'network', { name: 'private' })
      const id = String(net.id)
      // The admin's variant first, then the member's: each has its own entry.
      assert.ok('provider:network_type' in (await shown(root, id)))
      assert.equal('provider:network_type' in (await shown(a, id)), false)
      assert.ok('provider:network_type' in (await shown(root, id)))
      assertNeutronError(await bob.get(`/v2.0/networks/${id}`), 404, 'NetworkNotFound')
      // Sharing it shows it to bob at once; unsharing hides it again, whatever was kept.
      assert.equal((await root.put(`/v2.0/networks/${id}`, { network: { shared: true } })).status, 200)
      assert.equal((await agree(id, 'share', [a, bob, root])).shared, true)
      assert.equal((await root.put(`/v2.0/networks/${id}`, { network: { shared: false } })).status, 200)
      assertNeutronError(await bob.get(`/v2.0/networks/${id}`), 404, 'NetworkNotFound')
      assert.equal((await agree(id, 'unshare')).shared, false)
      // fields= still cuts the view.
      assert.deepEqual((await a.get(`/v2.0/networks/${id}?fields=id&fields=name`)).body, { network: { id, name: 'private' } })
      assertNeutronError(await a.get('/v2.0/networks/not-a-network'), 404, 'NetworkNotFound')
    })

    if (dialect === 'postgres') {
      it('answers in one process what another process changed', async () => {
        const masterKey = readFileSync(join(server.dataDir, 'master.key'), 'utf8').trim()
        const other = await startTestServer({ databaseUrl: server.config.databaseUrl, env: { PCC_MASTER_KEY: masterKey, PCC_SIMULATED_HOSTS: '0' } })
        try {
          const b = client(other, alice)
          const net = await a.create('networks', 'network', { name: 'two-processes' })
          const id = String(net.id)
          assert.deepEqual(await shown(a, id), await shown(b, id))
          assert.equal((await b.put(`/v2.0/networks/${id}`, { network: { name: 'changed-in-other' } })).status, 200)
          assert.equal((await agree(id, 'a rename in the other process')).name, 'changed-in-other')
          const subnet = await b.create('subnets', 'subnet', { network_id: id, ip_version: 4, cidr: '10.71.0.0/24' })
          assert.deepEqual((await agree(id, 'a subnet made in the other process')).subnets, [subnet.id])
          assert.equal((await a.put(`/v2.0/networks/${id}`, { network: { name: 'changed-here' } })).status, 200)
          assert.equal((await shown(b, id)).name, 'changed-here')
          assert.equal((await b.del(`/v2.0/subnets/${subnet.id}`)).status, 204)
          assert.equal((await b.del(`/v2.0/networks/${id}`)).status, 204)
          assertNeutronError(await a.get(`/v2.0/networks/${id}`), 404, 'NetworkNotFound')
        } finally {
          await other.close()
        }
      })
    }
  })
}
