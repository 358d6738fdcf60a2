/**
 * Network lists and shows run outside any transaction (docs/network.md, "Reads outside transactions"): they must
 * still see every write at once, in this process and, on PostgreSQL, one made by another process sharing the
 * database, and never answer another project's resources. Security groups, whose list writes, keep their
 * transaction: listing them still makes the project's default group.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { assertNeutronError, client, projectMember, type Caller, type Client } from './helpers.js'

type Port = { id: string; name: string; fixed_ips: { ip_address: string }[] }

async function portNames(c: Client, networkId: string): Promise<string[]> {
  const reply = await c.get<{ ports: Port[] }>(`/v2.0/ports?network_id=${networkId}`)
  assert.equal(reply.status, 200, JSON.stringify(reply.body))
  return reply.body.ports.map((p) => p.name).sort()
}

for (const dialect of DIALECTS) {
  describe(`network reads outside transactions (${dialect})`, () => {
    let server: TestServer
    let alice: Caller
    let a: Client
    let bob: Client

    before(async () => {
      server = await startTestServer({ dialect })
      alice = await projectMember(server, 'alice')
      a = client(server, alice)
      bob = client(server, await projectMember(server, 'bob'))
    })
    after(() => server.close())

    it('sees each write at once and never another project', async () => {
      const net = await a.create('networks', 'network', { name: 'reads' })
      await a.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.66.0.0/24' })
      const port = await a.create('ports', 'port', { network_id: net.id, name: 'p1' })
      assert.deepEqual(await portNames(a, String(net.id)), ['p1'])
      assert.equal((await a.put(`/v2.0/ports/${port.id}`, { port: { name: 'p1-renamed' } })).status, 200)
      assert.equal((await a.get<{ port: Port }>(`/v2.0/ports/${port.id}`)).body.port.name, 'p1-renamed')
      assert.deepEqual(await portNames(a, String(net.id)), ['p1-renamed'])
      // Another project: the list is empty, the show and the network are 404 in Neutron's shape.
      assert.deepEqual(await portNames(bob, String(net.id)), [])
      assertNeutronError(await bob.get(`/v2.0/ports/${port.id}`), 404, 'PortNotFound')
      assertNeutronError(await bob.get(`/v2.0/networks/${net.id}`), 404, 'NetworkNotFound')
      assert.equal((await a.del(`/v2.0/ports/${port.id}`)).status, 204)
      assertNeutronError(await a.get(`/v2.0/ports/${port.id}`), 404, 'PortNotFound')
      assert.deepEqual(await portNames(a, String(net.id)), [])
    })

    it('still makes the default security group when a project lists its groups', async () => {
      const carol = client(server, await projectMember(server, 'carol'))
      const reply = await carol.get<{ security_groups: { name: string }[] }>('/v2.0/security-groups')
      assert.equal(reply.status, 200)
      assert.deepEqual(reply.body.security_groups.map((g) => g.name), ['default'])
    })

    if (dialect === 'postgres') {
      it('reads in one process what another process wrote', async () => {
        // Same database and master key: the second process reads the first one's tokens and rows.
        const masterKey = readFileSync(join(server.dataDir, 'master.key'), 'utf8').trim()
        const second = await startTestServer({ databaseUrl: server.config.databaseUrl, env: { PCC_MASTER_KEY: masterKey, PCC_SIMULATED_HOSTS: '0' } })
        try {
          const b = client(second, alice)
          const net = await a.create('networks', 'network', { name: 'shared-db' })
          await a.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.67.0.0/24' })
          assert.equal((await b.get<{ network: { name: string } }>(`/v2.0/networks/${net.id}`)).body.network.name, 'shared-db')
          const port = await a.create('ports', 'port', { network_id: net.id, name: 'first' })
          assert.deepEqual(await portNames(b, String(net.id)), ['first'])
          // Written through the second process, read at once through the first.
          assert.equal((await b.put(`/v2.0/ports/${port.id}`, { port: { name: 'second' } })).status, 200)
          assert.equal((await a.get<{ port: Port }>(`/v2.0/ports/${port.id}`)).body.port.name, 'second')
          assert.deepEqual(await portNames(a, String(net.id)), ['second'])
          assert.equal((await b.del(`/v2.0/ports/${port.id}`)).status, 204)
          assertNeutronError(await a.get(`/v2.0/ports/${port.id}`), 404, 'PortNotFound')
          assert.deepEqual(await portNames(a, String(net.id)), [])
        } finally {
          await second.close()
        }
      })
    }
  })
}
