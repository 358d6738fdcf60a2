import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { admin, assertNeutronError, client, projectMember, type Client } from './helpers.js'

for (const dialect of DIALECTS) {
  describe(`network API: networks and discovery (${dialect})`, () => {
    let server: TestServer
    let alice: Client
    let bob: Client
    let root: Client

    before(async () => {
      server = await startTestServer({ dialect })
      alice = client(server, await projectMember(server, 'alice'))
      bob = client(server, await projectMember(server, 'bob'))
      root = client(server, await admin(server))
    })
    after(() => server.close())

    it('answers the version document without a token, with an absolute v2.0 link', async () => {
      const res = await fetch(`${server.url}/network/`)
      assert.equal(res.status, 200)
      const body = (await res.json()) as { versions: { id: string; status: string; links: { href: string }[] }[] }
      assert.equal(body.versions[0].id, 'v2.0')
      assert.equal(body.versions[0].status, 'CURRENT')
      assert.equal(body.versions[0].links[0].href, `${server.deps.urls.network}/v2.0/`)
    })

    it('lists extensions and answers unknown ones with 404', async () => {
      const list = await alice.get<{ extensions: { alias: string }[] }>('/v2.0/extensions')
      assert.equal(list.status, 200)
      const aliases = list.body.extensions.map((e) => e.alias)
      for (const a of ['external-net', 'router', 'security-group', 'quotas', 'binding', 'pagination', 'sorting']) assert.ok(aliases.includes(a), a)
      assert.equal((await alice.get('/v2.0/extensions/router')).status, 200)
      assertNeutronError(await alice.get('/v2.0/extensions/nope'), 404, 'ExtensionNotFound')
    })

    it('needs a token for the v2.0 API', async () => {
      const res = await fetch(`${server.url}/network/v2.0/networks`)
      assert.equal(res.status, 401)
      const body = (await res.json()) as { NeutronError: { type: string } }
      assert.equal(body.NeutronError.type, 'NotAuthorized')
    })

    it('creates, shows, updates and deletes a network with Neutron attributes', async () => {
      const net = await alice.create('networks', 'network', { name: 'net1', mtu: 1400 })
      assert.equal(net.name, 'net1')
      assert.equal(net.mtu, 1400)
      assert.equal(net.admin_state_up, true)
      assert.equal(net.shared, false)
      assert.equal(net['router:external'], false)
      assert.equal(net.status, 'ACTIVE')
      assert.deepEqual(net.subnets, [])
      assert.equal(net.project_id, net.tenant_id)
      assert.match(net.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
      const shown = await alice.get<{ network: Record<string, unknown> }>(`/v2.0/networks/${net.id}`)
      assert.equal(shown.status, 200)
      assert.equal(shown.body.network.id, net.id)
      const updated = await alice.put<{ network: Record<string, unknown> }>(`/v2.0/networks/${net.id}`, { network: { name: 'renamed', admin_state_up: false } })
      assert.equal(updated.status, 200)
      assert.equal(updated.body.network.name, 'renamed')
      assert.equal(updated.body.network.admin_state_up, false)
      assert.equal(updated.body.network.revision_number, 2)
      assert.equal((await alice.del(`/v2.0/networks/${net.id}`)).status, 204)
      assertNeutronError(await alice.get(`/v2.0/networks/${net.id}`), 404, 'NetworkNotFound')
    })

    it("hides another project's network (404) but shows shared and external ones to everyone", async () => {
      const priv = await alice.create('networks', 'network', { name: 'alice-private' })
      const shared = await root.create('networks', 'network', { name: 'everyone', shared: true })
      const ext = await root.create('networks', 'network', { name: 'public', 'router:external': true })
      assertNeutronError(await bob.get(`/v2.0/networks/${priv.id}`), 404, 'NetworkNotFound')
      assertNeutronError(await bob.put(`/v2.0/networks/${priv.id}`, { network: { name: 'x' } }), 404, 'NetworkNotFound')
      assertNeutronError(await bob.del(`/v2.0/networks/${priv.id}`), 404, 'NetworkNotFound')
      const bobs = await bob.get<{ networks: { id: string }[] }>('/v2.0/networks')
      const ids = bobs.body.networks.map((n) => n.id)
      assert.ok(!ids.includes(priv.id))
      assert.ok(ids.includes(shared.id) && ids.includes(ext.id))
      // Visible but not his: 403 on change.
      assertNeutronError(await bob.put(`/v2.0/networks/${shared.id}`, { network: { name: 'mine' } }), 403, 'PolicyNotAuthorized')
      // The admin sees everything.
      const all = (await root.get<{ networks: { id: string }[] }>('/v2.0/networks')).body.networks.map((n) => n.id)
      assert.ok(all.includes(priv.id))
    })

    it('keeps shared and router:external for admins', async () => {
      assertNeutronError(await alice.post('/v2.0/networks', { network: { name: 's', shared: true } }), 403, 'PolicyNotAuthorized')
      assertNeutronError(await alice.post('/v2.0/networks', { network: { name: 'e', 'router:external': true } }), 403, 'PolicyNotAuthorized')
    })

    it('gives tenant networks a VXLAN segment with an allocated VNI and MTU 1450, shown to admins only', async () => {
      const a = await alice.create('networks', 'network', { name: 'vx-a' })
      const b = await alice.create('networks', 'network', { name: 'vx-b' })
      assert.equal(a.mtu, 1450)
      assert.equal(a['provider:network_type'], undefined, 'members do not see provider attributes')
      const shown = async (id: unknown) => (await root.get<{ network: Record<string, unknown> }>(`/v2.0/networks/${id}`)).body.network
      const [sa, sb] = [await shown(a.id), await shown(b.id)]
      assert.equal(sa['provider:network_type'], 'vxlan')
      assert.equal(sa['provider:physical_network'], null)
      assert.equal(typeof sa['provider:segmentation_id'], 'number')
      assert.notEqual(sa['provider:segmentation_id'], sb['provider:segmentation_id'])
      const listed = await root.get<{ networks: Record<string, unknown>[] }>(`/v2.0/networks?provider:segmentation_id=${sa['provider:segmentation_id']}`)
      assert.deepEqual(listed.body.networks.map((n) => n.id), [a.id])
      assertNeutronError(await alice.post('/v2.0/networks', { network: { mtu: 1500 } }), 400, 'InvalidInput', /maximum is 1450/)
      assertNeutronError(await alice.put(`/v2.0/networks/${a.id}`, { network: { mtu: 1451 } }), 400, 'InvalidInput')
    })

    it('lets admins name segments: flat on a physical network, or a chosen VNI; refuses clashes and bad combinations', async () => {
      const flat = await root.create('networks', 'network', { name: 'ext-flat', 'router:external': true, 'provider:network_type': 'flat', 'provider:physical_network': 'public' })
      assert.deepEqual([flat['provider:network_type'], flat['provider:physical_network'], flat['provider:segmentation_id'], flat.mtu], ['flat', 'public', null, 1500])
      const vni = await root.create('networks', 'network', { name: 'vni-4000', 'provider:network_type': 'vxlan', 'provider:segmentation_id': 4000 })
      assert.equal(vni['provider:segmentation_id'], 4000)
      const next = await root.create('networks', 'network', { name: 'after-4000' })
      assert.equal(next['provider:segmentation_id'], 4001, 'one above the highest in use')
      const create = (body: Record<string, unknown>) => root.post('/v2.0/networks', { network: { name: 'bad', ...body } })
      assertNeutronError(await create({ 'provider:network_type': 'flat', 'provider:physical_network': 'public' }), 409, 'FlatNetworkInUse')
      assertNeutronError(await create({ 'provider:network_type': 'vxlan', 'provider:segmentation_id': 4000 }), 409, 'TunnelIdInUse')
      assertNeutronError(await create({ 'provider:network_type': 'flat' }), 400, 'InvalidInput', /physical_network required/)
      assertNeutronError(await create({ 'provider:network_type': 'flat', 'provider:physical_network': 'other', 'provider:segmentation_id': 3 }), 400, 'InvalidInput')
      assertNeutronError(await create({ 'provider:network_type': 'vxlan', 'provider:physical_network': 'public' }), 400, 'InvalidInput')
      assertNeutronError(await create({ 'provider:network_type': 'vxlan', 'provider:segmentation_id': 2 ** 24 }), 400, 'InvalidInput', /out of range/)
      assertNeutronError(await create({ 'provider:network_type': 'vlan', 'provider:physical_network': 'public' }), 400, 'InvalidInput', /not supported/)
      assertNeutronError(await create({ 'provider:segmentation_id': 7 }), 400, 'InvalidInput', /network_type required/)
      assertNeutronError(await alice.post('/v2.0/networks', { network: { 'provider:network_type': 'vxlan' } }), 403, 'PolicyNotAuthorized')
      assertNeutronError(await root.put(`/v2.0/networks/${vni.id}`, { network: { 'provider:segmentation_id': 4002 } }), 400, 'InvalidInput')
      const same = await root.put<{ network: Record<string, unknown> }>(`/v2.0/networks/${vni.id}`, { network: { 'provider:segmentation_id': 4000, name: 'renamed' } })
      assert.equal(same.status, 200)
      for (const n of [flat, vni, next]) assert.equal((await root.del(`/v2.0/networks/${n.id}`)).status, 204)
    })

    it('rejects wrong types and unknown attributes with 400 in Neutron shape', async () => {
      assertNeutronError(await alice.post('/v2.0/networks', { network: { name: 'x', admin_state_up: 'yes' } }), 400, 'BadRequest')
      assertNeutronError(await alice.post('/v2.0/networks', { network: { name: 5 } }), 400, 'BadRequest')
      assertNeutronError(await alice.post('/v2.0/networks', { network: { bogus: 1 } }), 400, 'BadRequest')
      assertNeutronError(await alice.post('/v2.0/networks', { network: 'x' }), 400, 'BadRequest')
      assertNeutronError(await alice.post('/v2.0/networks', '{not json'), 400, 'BadRequest')
      assertNeutronError(await alice.post('/v2.0/networks', { network: { mtu: 20 } }), 400, 'InvalidInput')
      assertNeutronError(await alice.post('/v2.0/networks', { network: { mtu: 1500.5 } }), 400, 'BadRequest')
      // Neutron's converters: integers and booleans may come as strings.
      const converted = await alice.create('networks', 'network', { name: 'conv', mtu: '1400', admin_state_up: 'False', shared: 0 })
      assert.equal(converted.mtu, 1400)
      assert.equal(converted.admin_state_up, false)
      assert.equal(converted.shared, false)
    })

    it('filters, selects fields, sorts and paginates like Neutron', async () => {
      const carol = client(server, await projectMember(server, 'carol'))
      const names = ['n-c', 'n-a', 'n-e', 'n-b', 'n-d']
      for (const name of names) await carol.create('networks', 'network', { name, admin_state_up: name !== 'n-e' })
      const byName = await carol.get<{ networks: { name: string }[] }>('/v2.0/networks?name=n-b&name=n-d')
      assert.deepEqual(byName.body.networks.map((n) => n.name).sort(), ['n-b', 'n-d'])
      const down = await carol.get<{ networks: { name: string }[] }>('/v2.0/networks?admin_state_up=False')
      assert.deepEqual(down.body.networks.map((n) => n.name), ['n-e'])
      const fields = await carol.get<{ networks: Record<string, unknown>[] }>('/v2.0/networks?name=n-a&fields=id&fields=name')
      assert.deepEqual(Object.keys(fields.body.networks[0]).sort(), ['id', 'name'])
      const sorted = await carol.get<{ networks: { name: string }[] }>('/v2.0/networks?sort_key=name&sort_dir=desc')
      assert.deepEqual(sorted.body.networks.map((n) => n.name).filter((n) => n.startsWith('n-')), ['n-e', 'n-d', 'n-c', 'n-b', 'n-a'])
      // Walk the pages through the next links.
      const seen: string[] = []
      let next: string | undefined = '/v2.0/networks?sort_key=name&sort_dir=asc&limit=2'
      let pages = 0
      while (next) {
        const page: { status: number; body: { networks: { name: string }[]; networks_links?: { rel: string; href: string }[] } } = await carol.get(next)
        assert.equal(page.status, 200)
        assert.ok(page.body.networks.length <= 2)
        seen.push(...page.body.networks.map((n) => n.name))
        const link = page.body.networks_links?.find((l) => l.rel === 'next')?.href
        next = link ? link.slice(`${server.deps.urls.network}`.length) : undefined
        if (link) assert.ok(link.startsWith(`${server.deps.urls.network}/v2.0/networks?`), link)
        pages++
      }
      assert.deepEqual(seen.filter((n) => n.startsWith('n-')), ['n-a', 'n-b', 'n-c', 'n-d', 'n-e'])
      assert.ok(pages >= 3)
      assertNeutronError(await carol.get('/v2.0/networks?sort_key=bogus'), 400, 'BadRequest')
      assertNeutronError(await carol.get('/v2.0/networks?limit=x'), 400, 'BadRequest')
    })

    it('enforces the network quota with OverQuota (409)', async () => {
      const dave = await projectMember(server, 'dave')
      const d = client(server, dave)
      const set = await root.put<{ quota: Record<string, number> }>(`/v2.0/quotas/${dave.projectId}`, { quota: { network: 1 } })
      assert.equal(set.status, 200)
      assert.equal(set.body.quota.network, 1)
      assertNeutronError(await d.put(`/v2.0/quotas/${dave.projectId}`, { quota: { network: 10 } }), 403, 'PolicyNotAuthorized')
      const own = await d.get<{ quota: Record<string, number> }>(`/v2.0/quotas/${dave.projectId}`)
      assert.equal(own.body.quota.network, 1)
      assert.equal(own.body.quota.port, 500)
      await d.create('networks', 'network', { name: 'one' })
      assertNeutronError(await d.post('/v2.0/networks', { network: { name: 'two' } }), 409, 'OverQuota', /network/)
      const details = await d.get<{ quota: Record<string, { used: number; limit: number }> }>(`/v2.0/quotas/${dave.projectId}/details`)
      assert.deepEqual(details.body.quota.network, { limit: 1, used: 1, reserved: 0 })
      assertNeutronError(await d.get(`/v2.0/quotas/${(await projectMember(server, 'eve')).projectId}`), 403, 'PolicyNotAuthorized')
      assert.equal((await root.del(`/v2.0/quotas/${dave.projectId}`)).status, 204)
      assert.equal((await d.get<{ quota: Record<string, number> }>(`/v2.0/quotas/${dave.projectId}`)).body.quota.network, 100)
    })

    it('enforces the subnet, port, router, floating IP and rule quotas with OverQuota (409), creating nothing', async () => {
      const frank = await projectMember(server, 'frank')
      const f = client(server, frank)
      const ext = await root.create('networks', 'network', { name: 'quota-public', 'router:external': true })
      await root.create('subnets', 'subnet', { network_id: ext.id, ip_version: 4, cidr: '203.0.113.0/24' })
      const net = await f.create('networks', 'network', { name: 'quota-net' })
      await f.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.9.0.0/24' })
      const group = await f.create('security-groups', 'security_group', { name: 'quota-sg' })
      const usage = async () => (await f.get<{ quota: Record<string, { used: number }> }>(`/v2.0/quotas/${frank.projectId}/details`)).body.quota
      const before = await usage()
      // Every limit at what is used now: the next one of each is over.
      const limits = { subnet: 1, port: before.port.used, router: 0, floatingip: 0, security_group_rule: before.security_group_rule.used }
      assert.equal((await root.put(`/v2.0/quotas/${frank.projectId}`, { quota: limits })).status, 200)
      assertNeutronError(await f.post('/v2.0/subnets', { subnet: { network_id: net.id, ip_version: 4, cidr: '10.9.1.0/24' } }), 409, 'OverQuota', /subnet/)
      assertNeutronError(await f.post('/v2.0/ports', { port: { network_id: net.id } }), 409, 'OverQuota', /port/)
      assertNeutronError(await f.post('/v2.0/routers', { router: { name: 'r' } }), 409, 'OverQuota', /router/)
      assertNeutronError(await f.post('/v2.0/floatingips', { floatingip: { floating_network_id: ext.id } }), 409, 'OverQuota', /floatingip/)
      const rule = { security_group_id: group.id, direction: 'ingress', protocol: 'tcp', port_range_min: 22, port_range_max: 22 }
      assertNeutronError(await f.post('/v2.0/security-group-rules', { security_group_rule: rule }), 409, 'OverQuota', /security_group_rule/)
      const after = await usage()
      for (const resource of Object.keys(limits)) assert.equal(after[resource].used, before[resource].used, `no ${resource} created`)
      // Raised again, the same requests succeed.
      assert.equal((await root.del(`/v2.0/quotas/${frank.projectId}`)).status, 204)
      await f.create('ports', 'port', { network_id: net.id })
      await f.create('security-group-rules', 'security_group_rule', rule)
    })

    it('manages tags through the tags sub-resource and filters by them', async () => {
      const net = await alice.create('networks', 'network', { name: 'tagged' })
      const put = await alice.put<{ tags: string[] }>(`/v2.0/networks/${net.id}/tags`, { tags: ['red', 'blue', 'red'] })
      assert.equal(put.status, 200)
      assert.deepEqual([...put.body.tags].sort(), ['blue', 'red'])
      assert.equal((await alice.call('PUT', `/v2.0/networks/${net.id}/tags/green`)).status, 201)
      assert.equal((await alice.get(`/v2.0/networks/${net.id}/tags/green`)).status, 204)
      assertNeutronError(await alice.get(`/v2.0/networks/${net.id}/tags/purple`), 404, 'TagNotFound')
      const tagged = await alice.get<{ networks: { id: string }[] }>('/v2.0/networks?tags=red,green')
      assert.deepEqual(tagged.body.networks.map((n) => n.id), [net.id])
      assert.deepEqual((await alice.get<{ networks: { id: string }[] }>('/v2.0/networks?not-tags-any=red')).body.networks.filter((n) => n.id === net.id), [])
      assert.equal((await alice.del(`/v2.0/networks/${net.id}/tags/red`)).status, 204)
      assert.deepEqual([...(await alice.get<{ tags: string[] }>(`/v2.0/networks/${net.id}/tags`)).body.tags].sort(), ['blue', 'green'])
      assert.equal((await alice.del(`/v2.0/networks/${net.id}/tags`)).status, 204)
      assert.deepEqual((await alice.get<{ network: { tags: string[] } }>(`/v2.0/networks/${net.id}`)).body.network.tags, [])
      assertNeutronError(await bob.put(`/v2.0/networks/${net.id}/tags`, { tags: ['x'] }), 404, 'NetworkNotFound')
      // A project that only sees a shared network may not tag it, with a tag it has too (that was a 201; found by the fuzz suite).
      const shared = await root.create('networks', 'network', { name: 'shared-tagged', shared: true, tags: ['blue'] })
      assertNeutronError(await bob.call('PUT', `/v2.0/networks/${shared.id}/tags/blue`), 403, 'PolicyNotAuthorized')
    })

    it('answers 405 for a known path with another method, 404 for unknown paths', async () => {
      const res = await alice.call('PATCH', '/v2.0/networks')
      assert.equal(res.status, 405)
      assertNeutronError(await alice.get('/v2.0/nothing-here'), 404, 'NotFound')
    })
  })
}
