/**
 * Subnet pools (/v2.0/subnetpools): CRUD with Neutron's prefix merging and bounds, subnets allocated from a pool
 * (the first free block of a prefix length, a CIDR asked for, the default pool), the per-project prefix quota,
 * tags, and who sees and changes what (another project's pool 404, shared pools visible, admin-only flags);
 * address scopes, whose pools never overlap.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { admin, assertNeutronError, client, projectMember, type Client, type Json } from './helpers.js'

for (const dialect of DIALECTS) {
  describe(`network API: subnet pools (${dialect})`, () => {
    let server: TestServer
    let alice: Client
    let bob: Client
    let root: Client

    const poolRows = async () => (await server.deps.store.db.selectFrom('subnet_pools').selectAll().execute()).length
    const subnetRows = async () => (await server.deps.store.db.selectFrom('subnets').selectAll().execute()).length

    before(async () => {
      server = await startTestServer({ dialect })
      alice = client(server, await projectMember(server, 'alice'))
      bob = client(server, await projectMember(server, 'bob'))
      root = client(server, await admin(server))
    })
    after(() => server.close())

    it('creates, shows, lists, updates and deletes a pool, its prefixes merged as Neutron keeps them', async () => {
      const pool = await alice.create('subnetpools', 'subnetpool', { name: 'p1', prefixes: ['10.10.1.0/24', '10.10.0.0/24', '10.10.0.128/25'] })
      assert.deepEqual(pool.prefixes, ['10.10.0.0/23'], 'a prefix inside another goes, two halves make one block')
      assert.deepEqual([pool.ip_version, pool.min_prefixlen, pool.max_prefixlen, pool.default_prefixlen, pool.shared, pool.is_default, pool.default_quota], [4, 8, 32, 8, false, false, null])
      assert.equal((await alice.get<{ subnetpool: Json }>(`/v2.0/subnetpools/${pool.id}`)).body.subnetpool.name, 'p1')
      assert.ok((await alice.get<{ subnetpools: Json[] }>('/v2.0/subnetpools')).body.subnetpools.some((p) => p.id === pool.id))
      const updated = await alice.put<{ subnetpool: Json }>(`/v2.0/subnetpools/${pool.id}`, { subnetpool: { name: 'p1b', prefixes: ['10.10.0.0/23', '10.20.0.0/16'], default_prefixlen: 26 } })
      assert.equal(updated.status, 200, JSON.stringify(updated.body))
      assert.deepEqual([updated.body.subnetpool.name, updated.body.subnetpool.prefixes, updated.body.subnetpool.default_prefixlen], ['p1b', ['10.10.0.0/23', '10.20.0.0/16'], 26])
      assert.equal(updated.body.subnetpool.revision_number, 1)
      const v6 = await alice.create('subnetpools', 'subnetpool', { name: 'p6', prefixes: ['2001:db8::/48'] })
      assert.deepEqual([v6.ip_version, v6.min_prefixlen, v6.max_prefixlen], [6, 64, 128])
      for (const p of [pool, v6]) assert.equal((await alice.del(`/v2.0/subnetpools/${p.id}`)).status, 204)
      assertNeutronError(await alice.get(`/v2.0/subnetpools/${pool.id}`), 404, 'SubnetPoolNotFound')
    })

    it('refuses bad pools and bad updates, changing nothing', async () => {
      const pool = await alice.create('subnetpools', 'subnetpool', { name: 'strict', prefixes: ['172.16.0.0/16'] })
      const before = await poolRows()
      const create = (attrs: Record<string, unknown>) => alice.post('/v2.0/subnetpools', { subnetpool: { name: 'bad', ...attrs } })
      assertNeutronError(await create({}), 400, 'BadRequest')
      assertNeutronError(await create({ prefixes: ['10.0.0.0/33'] }), 400, 'InvalidInput')
      assertNeutronError(await create({ prefixes: ['10.0.0.0/8', '2001:db8::/32'] }), 400, 'PrefixVersionMismatch')
      assertNeutronError(await create({ prefixes: ['10.0.0.0/8'], min_prefixlen: 24, max_prefixlen: 16 }), 400, 'IllegalSubnetPoolPrefixBounds')
      assertNeutronError(await create({ prefixes: ['10.0.0.0/8'], default_prefixlen: 40 }), 400, 'IllegalSubnetPoolPrefixBounds')
      assertNeutronError(await create({ prefixes: ['10.0.0.0/8'], shared: true }), 403, 'PolicyNotAuthorized')
      assertNeutronError(await create({ prefixes: ['10.0.0.0/8'], is_default: true }), 403, 'PolicyNotAuthorized')
      assertNeutronError(await create({ prefixes: ['10.0.0.0/8'], address_scope_id: 'x' }), 404, 'AddressScopeNotFound')
      const update = (attrs: Record<string, unknown>) => alice.put(`/v2.0/subnetpools/${pool.id}`, { subnetpool: attrs })
      assertNeutronError(await update({ prefixes: ['172.16.0.0/17'] }), 400, 'IllegalSubnetPoolPrefixUpdate')
      assertNeutronError(await update({ prefixes: ['2001:db8::/32'] }), 400, 'PrefixVersionMismatch')
      assertNeutronError(await update({ ip_version: 6 }), 400, 'BadRequest')
      assert.equal(await poolRows(), before)
      assert.deepEqual((await alice.get<{ subnetpool: Json }>(`/v2.0/subnetpools/${pool.id}`)).body.subnetpool.prefixes, ['172.16.0.0/16'])
    })

    it('allocates subnets from a pool: the first free block, a CIDR asked for, the pool in use until they go', async () => {
      const pool = await alice.create('subnetpools', 'subnetpool', { name: 'alloc', prefixes: ['10.30.0.0/22'], default_prefixlen: 24, min_prefixlen: 23, max_prefixlen: 26 })
      const net = await alice.create('networks', 'network', { name: 'pooled' })
      const first = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, subnetpool_id: pool.id })
      assert.deepEqual([first.cidr, first.subnetpool_id, first.gateway_ip], ['10.30.0.0/24', pool.id, '10.30.0.1'])
      const small = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, subnetpool_id: pool.id, prefixlen: 26 })
      assert.equal(small.cidr, '10.30.1.0/26')
      const asked = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, subnetpool_id: pool.id, cidr: '10.30.2.0/23' })
      assert.equal(asked.cidr, '10.30.2.0/23')
      const next = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, subnetpool_id: pool.id, prefixlen: 25 })
      assert.equal(next.cidr, '10.30.1.128/25', 'the hole after the /26, aligned')
      const before = await subnetRows()
      const create = (attrs: Record<string, unknown>) => alice.post('/v2.0/subnets', { subnet: { network_id: net.id, ip_version: 4, subnetpool_id: pool.id, ...attrs } })
      assertNeutronError(await create({}), 409, 'SubnetAllocationError')
      assertNeutronError(await create({ cidr: '10.30.0.0/24' }), 409, 'SubnetAllocationError')
      assertNeutronError(await create({ cidr: '10.99.0.0/24' }), 400, 'InvalidInput')
      assertNeutronError(await create({ prefixlen: 28 }), 400, 'InvalidInput')
      assertNeutronError(await create({ ip_version: 6 }), 400, 'InvalidInput')
      assertNeutronError(await alice.post('/v2.0/subnets', { subnet: { network_id: net.id, ip_version: 4, prefixlen: 24 } }), 400, 'BadRequest')
      assert.equal(await subnetRows(), before)
      assertNeutronError(await alice.del(`/v2.0/subnetpools/${pool.id}`), 409, 'SubnetPoolInUse')
      // Deleting a subnet gives its block back.
      assert.equal((await alice.del(`/v2.0/subnets/${first.id}`)).status, 204)
      assert.equal((await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, subnetpool_id: pool.id })).cidr, '10.30.0.0/24')
      assert.equal((await alice.del(`/v2.0/networks/${net.id}`)).status, 204)
      assert.equal((await alice.del(`/v2.0/subnetpools/${pool.id}`)).status, 204)
    })

    it('serves the default pool, shared pools to every project, and the per-project prefix quota', async () => {
      const shared = await root.create('subnetpools', 'subnetpool', { name: 'public-pool', prefixes: ['100.64.0.0/16'], default_prefixlen: 24, shared: true, is_default: true, default_quota: 512 })
      assertNeutronError(await root.post('/v2.0/subnetpools', { subnetpool: { prefixes: ['100.65.0.0/16'], is_default: true } }), 409, 'DefaultSubnetPoolExists')
      assert.ok((await bob.get<{ subnetpools: Json[] }>('/v2.0/subnetpools')).body.subnetpools.some((p) => p.id === shared.id), 'shared: visible to every project')
      assertNeutronError(await bob.put(`/v2.0/subnetpools/${shared.id}`, { subnetpool: { name: 'mine' } }), 403, 'PolicyNotAuthorized')
      const net = await bob.create('networks', 'network', { name: 'bob-net' })
      const a = await bob.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, use_default_subnetpool: true })
      assert.deepEqual([a.cidr, a.subnetpool_id], ['100.64.0.0/24', shared.id])
      await bob.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, use_default_subnetpool: true })
      assertNeutronError(await bob.post('/v2.0/subnets', { subnet: { network_id: net.id, ip_version: 4, subnetpool_id: shared.id } }), 409, 'SubnetPoolQuotaExceeded')
      assertNeutronError(await bob.post('/v2.0/subnets', { subnet: { network_id: net.id, ip_version: 6, use_default_subnetpool: true } }), 400, 'BadRequest')
      // Another project's private pool is invisible, also to allocate from.
      const private_ = await alice.create('subnetpools', 'subnetpool', { name: 'alice-only', prefixes: ['10.40.0.0/16'] })
      assertNeutronError(await bob.get(`/v2.0/subnetpools/${private_.id}`), 404, 'SubnetPoolNotFound')
      assertNeutronError(await bob.del(`/v2.0/subnetpools/${private_.id}`), 404, 'SubnetPoolNotFound')
      assertNeutronError(await bob.post('/v2.0/subnets', { subnet: { network_id: net.id, ip_version: 4, subnetpool_id: private_.id } }), 404, 'SubnetPoolNotFound')
      assert.ok(!(await bob.get<{ subnetpools: Json[] }>('/v2.0/subnetpools')).body.subnetpools.some((p) => p.id === private_.id))
      assert.equal((await bob.del(`/v2.0/networks/${net.id}`)).status, 204)
      assert.equal((await root.put(`/v2.0/subnetpools/${shared.id}`, { subnetpool: { is_default: false } })).status, 200)
    })

    it('keeps the pools of an address scope apart, and the scope while pools are in it', async () => {
      const scope = await alice.create('address-scopes', 'address_scope', { name: 'corp', ip_version: 4 })
      assert.deepEqual([scope.name, scope.ip_version, scope.shared, scope.project_id], ['corp', 4, false, scope.tenant_id])
      const a = await alice.create('subnetpools', 'subnetpool', { name: 'in-scope-a', prefixes: ['10.60.0.0/16'], address_scope_id: scope.id })
      assert.equal(a.address_scope_id, scope.id)
      const before = await poolRows()
      assertNeutronError(await alice.post('/v2.0/subnetpools', { subnetpool: { prefixes: ['10.60.128.0/17'], address_scope_id: scope.id } }), 400, 'AddressScopePrefixConflict')
      assertNeutronError(await alice.post('/v2.0/subnetpools', { subnetpool: { prefixes: ['2001:db8::/48'], address_scope_id: scope.id } }), 400, 'IllegalSubnetPoolAssociationToAddressScope')
      assert.equal(await poolRows(), before)
      const b = await alice.create('subnetpools', 'subnetpool', { name: 'outside', prefixes: ['10.60.0.0/24'] })
      assertNeutronError(await alice.put(`/v2.0/subnetpools/${b.id}`, { subnetpool: { address_scope_id: scope.id } }), 400, 'AddressScopePrefixConflict')
      // A pool in the scope may grow only where no other pool of the scope is.
      const c = await alice.create('subnetpools', 'subnetpool', { name: 'in-scope-c', prefixes: ['10.62.0.0/16'], address_scope_id: scope.id })
      assertNeutronError(await alice.put(`/v2.0/subnetpools/${a.id}`, { subnetpool: { prefixes: ['10.60.0.0/16', '10.62.0.0/24'] } }), 400, 'AddressScopePrefixConflict')
      assert.equal((await alice.put(`/v2.0/subnetpools/${a.id}`, { subnetpool: { prefixes: ['10.60.0.0/16', '10.63.0.0/16'] } })).status, 200)
      // Invisible to another project, refused to its pools; shared only by admins; in use while pools are in it.
      assertNeutronError(await bob.get(`/v2.0/address-scopes/${scope.id}`), 404, 'AddressScopeNotFound')
      assertNeutronError(await bob.post('/v2.0/subnetpools', { subnetpool: { prefixes: ['10.64.0.0/16'], address_scope_id: scope.id } }), 404, 'AddressScopeNotFound')
      assertNeutronError(await alice.put(`/v2.0/address-scopes/${scope.id}`, { address_scope: { shared: true } }), 403, 'PolicyNotAuthorized')
      assertNeutronError(await alice.post('/v2.0/address-scopes', { address_scope: { name: 'no-version' } }), 400, 'BadRequest')
      assertNeutronError(await alice.del(`/v2.0/address-scopes/${scope.id}`), 409, 'AddressScopeInUse')
      assert.equal((await alice.put<{ address_scope: Json }>(`/v2.0/address-scopes/${scope.id}`, { address_scope: { name: 'corp-2' } })).body.address_scope.name, 'corp-2')
      assert.equal((await alice.put(`/v2.0/subnetpools/${a.id}`, { subnetpool: { address_scope_id: null } })).status, 200)
      for (const p of [a, b, c]) assert.equal((await alice.del(`/v2.0/subnetpools/${p.id}`)).status, 204)
      assert.equal((await alice.del(`/v2.0/address-scopes/${scope.id}`)).status, 204)
      assertNeutronError(await alice.get(`/v2.0/address-scopes/${scope.id}`), 404, 'AddressScopeNotFound')
      // A shared scope (admin) is visible to every project, whose pools may join it.
      const open = await root.create('address-scopes', 'address_scope', { name: 'shared-scope', ip_version: 6, shared: true })
      assert.ok((await bob.get<{ address_scopes: Json[] }>('/v2.0/address-scopes')).body.address_scopes.some((x) => x.id === open.id))
      const joined = await bob.create('subnetpools', 'subnetpool', { prefixes: ['2001:db8:1::/48'], address_scope_id: open.id })
      assertNeutronError(await root.put(`/v2.0/address-scopes/${open.id}`, { address_scope: { shared: false } }), 409, 'AddressScopeInUse')
      assert.equal((await bob.del(`/v2.0/subnetpools/${joined.id}`)).status, 204)
    })

    it('tags pools like every standard resource', async () => {
      const pool = await alice.create('subnetpools', 'subnetpool', { name: 'tagged', prefixes: ['10.50.0.0/16'] })
      assert.equal((await alice.put(`/v2.0/subnetpools/${pool.id}/tags/red`, {})).status, 201)
      assert.deepEqual((await alice.get<{ tags: string[] }>(`/v2.0/subnetpools/${pool.id}/tags`)).body.tags, ['red'])
      const byTag = await alice.get<{ subnetpools: Json[] }>('/v2.0/subnetpools?tags=red')
      assert.deepEqual(byTag.body.subnetpools.map((p) => p.id), [pool.id])
      assert.equal((await alice.call('DELETE', `/v2.0/subnetpools/${pool.id}/tags`)).status, 204)
      assert.deepEqual((await alice.get<{ tags: string[] }>(`/v2.0/subnetpools/${pool.id}/tags`)).body.tags, [])
    })
  })
}
