import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { admin, assertNeutronError, client, projectMember, tableCounts, type Client } from './helpers.js'

for (const dialect of DIALECTS) {
  describe(`network API: subnets, ports and IPAM (${dialect})`, () => {
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

    it('creates an IPv4 subnet with Neutron defaults for gateway and pools', async () => {
      const net = await alice.create('networks', 'network', { name: 'v4' })
      const subnet = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '192.168.10.0/24', dns_nameservers: ['8.8.8.8'] })
      assert.equal(subnet.cidr, '192.168.10.0/24')
      assert.equal(subnet.gateway_ip, '192.168.10.1')
      assert.deepEqual(subnet.allocation_pools, [{ start: '192.168.10.2', end: '192.168.10.254' }])
      assert.deepEqual(subnet.dns_nameservers, ['8.8.8.8'])
      assert.equal(subnet.enable_dhcp, true)
      assert.equal(subnet.ip_version, 4)
      assert.deepEqual((await alice.get<{ network: { subnets: string[] } }>(`/v2.0/networks/${net.id}`)).body.network.subnets, [subnet.id])
      const noGw = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '192.168.11.0/29', gateway_ip: null })
      assert.equal(noGw.gateway_ip, null)
      assert.deepEqual(noGw.allocation_pools, [{ start: '192.168.11.1', end: '192.168.11.6' }])
      const midGw = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '192.168.12.0/28', gateway_ip: '192.168.12.5' })
      assert.deepEqual(midGw.allocation_pools, [{ start: '192.168.12.1', end: '192.168.12.4' }, { start: '192.168.12.6', end: '192.168.12.14' }])
    })

    it('creates an IPv6 subnet (SLAAC gives EUI-64 addresses, stateful hands out pool addresses)', async () => {
      const net = await alice.create('networks', 'network', { name: 'v6' })
      const slaac = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 6, cidr: '2001:db8:1::/64', ipv6_address_mode: 'slaac', ipv6_ra_mode: 'slaac' })
      assert.equal(slaac.gateway_ip, '2001:db8:1::1')
      assert.deepEqual(slaac.allocation_pools, [{ start: '2001:db8:1::2', end: '2001:db8:1:0:ffff:ffff:ffff:ffff' }])
      const port = await alice.create('ports', 'port', { network_id: net.id, mac_address: 'fa:16:3e:11:22:33' })
      assert.deepEqual(port.fixed_ips, [{ subnet_id: slaac.id, ip_address: '2001:db8:1:0:f816:3eff:fe11:2233' }])
      const net2 = await alice.create('networks', 'network', { name: 'v6-stateful' })
      const stateful = await alice.create('subnets', 'subnet', { network_id: net2.id, ip_version: 6, cidr: 'fd00:1::/120' })
      const p2 = await alice.create('ports', 'port', { network_id: net2.id })
      assert.deepEqual(p2.fixed_ips, [{ subnet_id: stateful.id, ip_address: 'fd00:1::2' }])
    })

    it('rejects bad subnets with 4xx in Neutron shape and creates nothing', async () => {
      const net = await alice.create('networks', 'network', { name: 'bad-input' })
      await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.1.0.0/16' })
      const before = await tableCounts(server)
      const bad: [Record<string, unknown>, number, string, RegExp?][] = [
        [{ network_id: net.id, ip_version: 4, cidr: '10.300.0.0/24' }, 400, 'InvalidInput', /not a valid IP subnet/],
        [{ network_id: net.id, ip_version: 4, cidr: 'garbage' }, 400, 'InvalidInput'],
        [{ network_id: net.id, ip_version: 4, cidr: '10.2.0.0/33' }, 400, 'InvalidInput'],
        [{ network_id: net.id, ip_version: 4, cidr: '10.2.0.1/24' }, 400, 'InvalidInput', /10\.2\.0\.0\/24/],
        [{ network_id: net.id, ip_version: 6, cidr: '10.2.0.0/24' }, 400, 'InvalidInput', /ip_version/],
        [{ network_id: net.id, ip_version: 4, cidr: '10.1.5.0/24' }, 400, 'InvalidInput', /overlaps/],
        [{ network_id: net.id, ip_version: 4, cidr: '10.3.0.0/24', gateway_ip: '10.9.9.1' }, 400, 'InvalidInput', /Gateway/],
        [{ network_id: net.id, ip_version: 4, cidr: '10.3.0.0/24', gateway_ip: '10.3.0.255' }, 400, 'InvalidInput', /Gateway/],
        [{ network_id: net.id, ip_version: 4, cidr: '10.3.0.0/24', allocation_pools: [{ start: '10.3.0.10', end: '10.4.0.5' }] }, 400, 'OutOfBoundsAllocationPool'],
        [{ network_id: net.id, ip_version: 4, cidr: '10.3.0.0/24', allocation_pools: [{ start: '10.3.0.1', end: '10.3.0.20' }] }, 409, 'GatewayConflictWithAllocationPools'],
        [{ network_id: net.id, ip_version: 4, cidr: '10.3.0.0/24', dns_nameservers: ['not-an-ip'] }, 400, 'InvalidInput'],
        [{ network_id: net.id, ip_version: 4, cidr: '10.3.0.0/24', ipv6_address_mode: 'slaac' }, 400, 'InvalidInput'],
        [{ network_id: '00000000-0000-4000-8000-000000000000', ip_version: 4, cidr: '10.3.0.0/24' }, 404, 'NetworkNotFound'],
        [{ network_id: net.id, ip_version: 5, cidr: '10.3.0.0/24' }, 400, 'InvalidInput'],
        [{ network_id: net.id, ip_version: 'four', cidr: '10.3.0.0/24' }, 400, 'BadRequest'],
        [{ network_id: net.id, ip_version: 4, cidr: 10 }, 400, 'BadRequest'],
        
        [{ network_id: net.id, ip_version: 4, cidr: '10.3.0.0/24', enable_dhcp: 'maybe' }, 400, 'BadRequest'],
      ]
      for (const [attrs, status, type, message] of bad) assertNeutronError(await alice.post('/v2.0/subnets', { subnet: attrs }), status, type, message)
      // Bob cannot add a subnet to Alice's network: he does not see it.
      assertNeutronError(await bob.post('/v2.0/subnets', { subnet: { network_id: net.id, ip_version: 4, cidr: '10.3.0.0/24' } }), 404, 'NetworkNotFound')
      assert.deepEqual(await tableCounts(server), before)
    })

    it('allocates addresses lowest first, honours requested ones, refuses duplicates, and frees on delete', async () => {
      const net = await alice.create('networks', 'network', { name: 'ipam' })
      const subnet = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '172.16.0.0/29' })
      // Pool: .2 … .6 (5 addresses).
      const p1 = await alice.create('ports', 'port', { network_id: net.id, name: 'p1' })
      assert.deepEqual(p1.fixed_ips, [{ subnet_id: subnet.id, ip_address: '172.16.0.2' }])
      assert.match(p1.mac_address, /^fa:16:3e(:[0-9a-f]{2}){3}$/)
      assert.equal(p1.status, 'DOWN')
      assert.equal(p1.security_groups.length, 1, 'the default group')
      const p2 = await alice.create('ports', 'port', { network_id: net.id, fixed_ips: [{ ip_address: '172.16.0.5' }] })
      assert.deepEqual(p2.fixed_ips, [{ subnet_id: subnet.id, ip_address: '172.16.0.5' }])
      assertNeutronError(await alice.post('/v2.0/ports', { port: { network_id: net.id, fixed_ips: [{ ip_address: '172.16.0.5' }] } }), 409, 'IpAddressAlreadyAllocated')
      assertNeutronError(await alice.post('/v2.0/ports', { port: { network_id: net.id, fixed_ips: [{ ip_address: '172.16.9.5' }] } }), 400, 'InvalidIpForNetwork')
      assertNeutronError(await alice.post('/v2.0/ports', { port: { network_id: net.id, fixed_ips: [{ subnet_id: subnet.id, ip_address: '172.16.0.7' }] } }), 400, 'InvalidIpForSubnet')
      assertNeutronError(await alice.post('/v2.0/ports', { port: { network_id: net.id, mac_address: p1.mac_address } }), 409, 'MacAddressInUse')
      const p3 = await alice.create('ports', 'port', { network_id: net.id })
      const p4 = await alice.create('ports', 'port', { network_id: net.id })
      const p5 = await alice.create('ports', 'port', { network_id: net.id })
      assert.deepEqual([p3, p4, p5].map((p) => p.fixed_ips[0].ip_address), ['172.16.0.3', '172.16.0.4', '172.16.0.6'])
      const before = await tableCounts(server)
      assertNeutronError(await alice.post('/v2.0/ports', { port: { network_id: net.id } }), 409, 'IpAddressGenerationFailure', new RegExp(net.id))
      assert.deepEqual(await tableCounts(server), before, 'the failed create left nothing behind')
      assert.equal((await alice.del(`/v2.0/ports/${p3.id}`)).status, 204)
      const again = await alice.create('ports', 'port', { network_id: net.id })
      assert.equal(again.fixed_ips[0].ip_address, '172.16.0.3', 'the freed address is handed out again')
      // Changing a port's addresses returns the old one to the pool.
      const moved = await alice.put<{ port: { fixed_ips: { ip_address: string }[] } }>(`/v2.0/ports/${p2.id}`, { port: { fixed_ips: [{ subnet_id: subnet.id }] } })
      assert.equal(moved.status, 409, 'the pool is full, so no new address')
      assertNeutronError(await alice.del(`/v2.0/subnets/${subnet.id}`), 409, 'SubnetInUse')
      assertNeutronError(await alice.del(`/v2.0/networks/${net.id}`), 409, 'NetworkInUse')
    })

    it('lists ports with Neutron filters (device_id, fixed_ips) and hides binding details from members', async () => {
      const net = await alice.create('networks', 'network', { name: 'filters' })
      const subnet = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '172.17.0.0/24' })
      await alice.create('ports', 'port', { network_id: net.id, device_id: 'dev-1', device_owner: 'compute:nova' })
      const p = await alice.create('ports', 'port', { network_id: net.id, fixed_ips: [{ subnet_id: subnet.id, ip_address: '172.17.0.77' }] })
      const byDevice = await alice.get<{ ports: { device_id: string; status: string }[] }>('/v2.0/ports?device_id=dev-1')
      assert.equal(byDevice.body.ports.length, 1)
      assert.equal(byDevice.body.ports[0].status, 'ACTIVE')
      const byIp = await alice.get<{ ports: { id: string }[] }>('/v2.0/ports?fixed_ips=ip_address%3D172.17.0.77')
      assert.deepEqual(byIp.body.ports.map((x) => x.id), [p.id])
      const bySubstr = await alice.get<{ ports: { id: string }[] }>(`/v2.0/ports?network_id=${net.id}&fixed_ips=ip_address_substr%3D0.7`)
      assert.deepEqual(bySubstr.body.ports.map((x) => x.id), [p.id])
      const memberView = (await alice.get<{ port: Record<string, unknown> }>(`/v2.0/ports/${p.id}`)).body.port
      assert.ok(!('binding:host_id' in memberView))
      assert.equal(memberView['binding:vnic_type'], 'normal')
      const adminView = (await root.get<{ port: Record<string, unknown> }>(`/v2.0/ports/${p.id}`)).body.port
      assert.equal(adminView['binding:host_id'], '')
      assert.equal(adminView['binding:vif_type'], 'unbound')
      assertNeutronError(await bob.get(`/v2.0/ports/${p.id}`), 404, 'PortNotFound')
      assert.ok(!(await bob.get<{ ports: { id: string }[] }>('/v2.0/ports')).body.ports.some((x) => x.id === p.id))
      assertNeutronError(await alice.post('/v2.0/ports', { port: { network_id: net.id, 'binding:host_id': 'h1' } }), 403, 'PolicyNotAuthorized')
    })

    it('lets members of other projects create ports on a shared network but not choose addresses', async () => {
      const shared = await root.create('networks', 'network', { name: 'shared', shared: true })
      const subnet = await root.create('subnets', 'subnet', { network_id: shared.id, ip_version: 4, cidr: '172.18.0.0/24' })
      const port = await bob.create('ports', 'port', { network_id: shared.id })
      assert.equal(port.fixed_ips[0].subnet_id, subnet.id)
      assertNeutronError(await bob.post('/v2.0/ports', { port: { network_id: shared.id, fixed_ips: [{ ip_address: '172.18.0.50' }] } }), 403, 'PolicyNotAuthorized')
      assert.ok((await bob.get<{ subnets: { id: string }[] }>('/v2.0/subnets')).body.subnets.some((s) => s.id === subnet.id), 'subnets of shared networks are visible')
      assertNeutronError(await bob.del(`/v2.0/subnets/${subnet.id}`), 403, 'PolicyNotAuthorized')
    })

    it('refuses to delete router-owned ports through the port API', async () => {
      const net = await alice.create('networks', 'network', { name: 'l3' })
      const subnet = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '172.19.0.0/24' })
      const router = await alice.create('routers', 'router', { name: 'r' })
      const iface = await alice.put<{ port_id: string; subnet_id: string }>(`/v2.0/routers/${router.id}/add_router_interface`, { subnet_id: subnet.id })
      assert.equal(iface.status, 200)
      assertNeutronError(await alice.del(`/v2.0/ports/${iface.body.port_id}`), 409, 'L3PortInUse')
      const port = (await alice.get<{ port: { fixed_ips: { ip_address: string }[]; device_owner: string } }>(`/v2.0/ports/${iface.body.port_id}`)).body.port
      assert.equal(port.device_owner, 'network:router_interface')
      assert.equal(port.fixed_ips[0].ip_address, '172.19.0.1')
    })
  })
}
