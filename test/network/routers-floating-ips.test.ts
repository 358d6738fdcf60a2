import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { admin, assertNeutronError, client, projectMember, type Client, type Json } from './helpers.js'

for (const dialect of DIALECTS) {
  describe(`network API: routers and floating IPs (${dialect})`, () => {
    let server: TestServer
    let alice: Client
    let bob: Client
    let root: Client
    let ext: Record<string, Json>
    let extSubnet: Record<string, Json>

    before(async () => {
      server = await startTestServer({ dialect })
      alice = client(server, await projectMember(server, 'alice'))
      bob = client(server, await projectMember(server, 'bob'))
      root = client(server, await admin(server))
      ext = await root.create('networks', 'network', { name: 'public', 'router:external': true })
      extSubnet = await root.create('subnets', 'subnet', { network_id: ext.id, ip_version: 4, cidr: '203.0.113.0/28', enable_dhcp: false })
    })
    after(() => server.close())

    it('connects a project network to the external one and floats an address onto a port', async () => {
      const net = await alice.create('networks', 'network', { name: 'private' })
      const subnet = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.0.0.0/24' })
      const port = await alice.create('ports', 'port', { network_id: net.id })

      const fip = await alice.create('floatingips', 'floatingip', { floating_network_id: ext.id })
      assert.equal(fip.floating_network_id, ext.id)
      assert.match(fip.floating_ip_address, /^203\.0\.113\./)
      assert.equal(fip.status, 'DOWN')
      assert.equal(fip.port_id, null)

      // Without a router the external network is unreachable from the subnet.
      assertNeutronError(await alice.put(`/v2.0/floatingips/${fip.id}`, { floatingip: { port_id: port.id } }), 404, 'ExternalGatewayForFloatingIPNotFound')

      const router = await alice.create('routers', 'router', { name: 'r1' })
      assert.equal(router.external_gateway_info, null)
      const withGw = await alice.put<{ router: Json }>(`/v2.0/routers/${router.id}`, { router: { external_gateway_info: { network_id: ext.id } } })
      assert.equal(withGw.status, 200, JSON.stringify(withGw.body))
      assert.equal(withGw.body.router.external_gateway_info.network_id, ext.id)
      assert.equal(withGw.body.router.external_gateway_info.enable_snat, true)
      assert.equal(withGw.body.router.external_gateway_info.external_fixed_ips[0].subnet_id, extSubnet.id)
      const iface = await alice.put<Json>(`/v2.0/routers/${router.id}/add_router_interface`, { subnet_id: subnet.id })
      assert.equal(iface.status, 200)
      assert.equal(iface.body.id, router.id)
      assert.deepEqual(iface.body.subnet_ids, [subnet.id])
      assert.equal(iface.body.network_id, net.id)
      assertNeutronError(await alice.put(`/v2.0/routers/${router.id}/add_router_interface`, { subnet_id: subnet.id }), 400, 'BadRequest')

      const assoc = await alice.put<{ floatingip: Json }>(`/v2.0/floatingips/${fip.id}`, { floatingip: { port_id: port.id } })
      assert.equal(assoc.status, 200, JSON.stringify(assoc.body))
      assert.equal(assoc.body.floatingip.port_id, port.id)
      assert.equal(assoc.body.floatingip.fixed_ip_address, port.fixed_ips[0].ip_address)
      assert.equal(assoc.body.floatingip.router_id, router.id)
      assert.equal(assoc.body.floatingip.status, 'ACTIVE')

      // A second floating IP cannot take the same fixed address.
      const fip2 = await alice.create('floatingips', 'floatingip', { floating_network_id: ext.id })
      assertNeutronError(await alice.put(`/v2.0/floatingips/${fip2.id}`, { floatingip: { port_id: port.id } }), 409, 'FloatingIPPortAlreadyAssociated')
      // The router's pieces are in use while the floating IP points through them.
      assertNeutronError(await alice.put(`/v2.0/routers/${router.id}/remove_router_interface`, { subnet_id: subnet.id }), 409, 'RouterInterfaceInUseByFloatingIP')
      assertNeutronError(await alice.put(`/v2.0/routers/${router.id}`, { router: { external_gateway_info: {} } }), 409, 'RouterExternalGatewayInUseByFloatingIp')
      assertNeutronError(await alice.del(`/v2.0/routers/${router.id}`), 409, 'RouterInUse')

      // Disassociate, release, unplug, clear, delete.
      const dis = await alice.put<{ floatingip: Json }>(`/v2.0/floatingips/${fip.id}`, { floatingip: { port_id: null } })
      assert.equal(dis.body.floatingip.port_id, null)
      assert.equal(dis.body.floatingip.status, 'DOWN')
      assert.equal((await alice.del(`/v2.0/floatingips/${fip.id}`)).status, 204)
      assert.equal((await alice.del(`/v2.0/floatingips/${fip2.id}`)).status, 204)
      assertNeutronError(await alice.get(`/v2.0/floatingips/${fip.id}`), 404, 'FloatingIPNotFound')
      const removed = await alice.put<Json>(`/v2.0/routers/${router.id}/remove_router_interface`, { subnet_id: subnet.id })
      assert.equal(removed.status, 200)
      assertNeutronError(await alice.put(`/v2.0/routers/${router.id}/remove_router_interface`, { subnet_id: subnet.id }), 404, 'RouterInterfaceNotFoundForSubnet')
      const cleared = await alice.put<{ router: Json }>(`/v2.0/routers/${router.id}`, { router: { external_gateway_info: {} } })
      assert.equal(cleared.body.router.external_gateway_info, null)
      assert.equal((await alice.del(`/v2.0/routers/${router.id}`)).status, 204)
      // Every external address is back in the pool.
      const extPorts = await server.deps.store.db.selectFrom('ip_allocations').select('ip_address').where('subnet_id', '=', extSubnet.id).execute()
      assert.equal(extPorts.length, 0)
    })

    it('deleting a port disassociates its floating IP', async () => {
      const net = await alice.create('networks', 'network', { name: 'p2' })
      const subnet = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.9.0.0/24' })
      const router = await alice.create('routers', 'router', { name: 'r2', external_gateway_info: { network_id: ext.id } })
      await alice.put(`/v2.0/routers/${router.id}/add_router_interface`, { subnet_id: subnet.id })
      const port = await alice.create('ports', 'port', { network_id: net.id })
      const fip = await alice.create('floatingips', 'floatingip', { floating_network_id: ext.id, port_id: port.id })
      assert.equal(fip.port_id, port.id)
      assert.equal((await alice.del(`/v2.0/ports/${port.id}`)).status, 204)
      const after = await alice.get<{ floatingip: Json }>(`/v2.0/floatingips/${fip.id}`)
      assert.equal(after.body.floatingip.port_id, null)
    })

    it('refuses floating IPs from internal networks, gateways to internal networks, and foreign resources', async () => {
      const net = await alice.create('networks', 'network', { name: 'internal' })
      assertNeutronError(await alice.post('/v2.0/floatingips', { floatingip: { floating_network_id: net.id } }), 400, 'BadRequest', /not a valid external network/)
      assertNeutronError(await alice.post('/v2.0/routers', { router: { name: 'x', external_gateway_info: { network_id: net.id } } }), 400, 'BadRequest')
      assertNeutronError(await alice.post('/v2.0/floatingips', { floatingip: { floating_network_id: ext.id, floating_ip_address: '203.0.113.9' } }), 403, 'PolicyNotAuthorized')
      const router = await alice.create('routers', 'router', { name: 'mine' })
      assertNeutronError(await bob.get(`/v2.0/routers/${router.id}`), 404, 'RouterNotFound')
      assertNeutronError(await bob.put(`/v2.0/routers/${router.id}/add_router_interface`, { subnet_id: extSubnet.id }), 404, 'RouterNotFound')
      const fip = await alice.create('floatingips', 'floatingip', { floating_network_id: ext.id })
      assertNeutronError(await bob.del(`/v2.0/floatingips/${fip.id}`), 404, 'FloatingIPNotFound')
      const bobNet = await bob.create('networks', 'network', { name: 'bob' })
      await bob.create('subnets', 'subnet', { network_id: bobNet.id, ip_version: 4, cidr: '10.7.0.0/24' })
      const bobPort = await bob.create('ports', 'port', { network_id: bobNet.id })
      assertNeutronError(await alice.put(`/v2.0/floatingips/${fip.id}`, { floatingip: { port_id: bobPort.id } }), 404, 'PortNotFound')
      const fixed = await root.create('floatingips', 'floatingip', { floating_network_id: ext.id, floating_ip_address: '203.0.113.14' })
      assert.equal(fixed.floating_ip_address, '203.0.113.14')
    })

    it('answers IpAddressGenerationFailure when the external pool is exhausted', async () => {
      const small = await root.create('networks', 'network', { name: 'tiny-ext', 'router:external': true })
      await root.create('subnets', 'subnet', { network_id: small.id, ip_version: 4, cidr: '198.51.100.0/30' })
      await alice.create('floatingips', 'floatingip', { floating_network_id: small.id })
      assertNeutronError(await alice.post('/v2.0/floatingips', { floatingip: { floating_network_id: small.id } }), 409, 'IpAddressGenerationFailure')
    })
  })
}
