/**
 * Network API behaviour Tempest's tests hold pcc to, checked without Tempest: bulk creation (all or nothing), null
 * meaning an empty list for routes, host routes and name servers, an external network's subnets hidden from other
 * projects, Neutron's messages for out-of-range security group rule ports, deleting an external network with its
 * unused floating IPs and an auto-address IPv6 subnet with its ports' addresses, renaming a group to `default`, and
 * the `.json` suffix of the quota details.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { admin, assertNeutronError, client, projectMember, type Client } from './helpers.js'

describe('network answers as Neutron gives them', () => {
  let server: TestServer
  let alice: Client
  let root: Client
  before(async () => {
    server = await startTestServer()
    alice = client(server, await projectMember(server, 'alice'))
    root = client(server, await admin(server))
  })
  after(() => server.close())

  const count = async (collection: string) => ((await alice.get<Record<string, unknown[]>>(`/v2.0/${collection}`)).body[collection] ?? []).length

  it('creates networks, subnets and ports in bulk', async () => {
    const nets = await alice.post<{ networks: { id: string; name: string }[] }>('/v2.0/networks', { networks: [{ name: 'bulk-1' }, { name: 'bulk-2' }] })
    assert.equal(nets.status, 201, JSON.stringify(nets.body))
    assert.deepEqual(nets.body.networks.map((n) => n.name), ['bulk-1', 'bulk-2'])
    const [n1, n2] = nets.body.networks
    const subnets = await alice.post<{ subnets: { id: string }[] }>('/v2.0/subnets', {
      subnets: [
        { network_id: n1.id, cidr: '10.1.0.0/24', ip_version: 4 },
        { network_id: n2.id, cidr: '10.2.0.0/24', ip_version: 4 },
      ],
    })
    assert.equal(subnets.status, 201, JSON.stringify(subnets.body))
    assert.equal(subnets.body.subnets.length, 2)
    const ports = await alice.post<{ ports: { network_id: string; fixed_ips: unknown[] }[] }>('/v2.0/ports', { ports: [{ network_id: n1.id }, { network_id: n2.id }] })
    assert.equal(ports.status, 201, JSON.stringify(ports.body))
    assert.deepEqual(ports.body.ports.map((p) => p.network_id), [n1.id, n2.id])
    assert.ok(ports.body.ports.every((p) => p.fixed_ips.length === 1))
  })

  it('creates nothing of a bulk request when one member is refused', async () => {
    const before = await count('networks')
    const refused = await alice.post('/v2.0/networks', { networks: [{ name: 'fine' }, { name: 'bad', mtu: 'many' }] })
    assertNeutronError(refused, 400, 'BadRequest')
    const net = await alice.create('networks', 'network', { name: 'for-ports' })
    const portsBefore = await count('ports')
    const unknownNet = await alice.post('/v2.0/ports', { ports: [{ network_id: net.id }, { network_id: '00000000-0000-0000-0000-000000000000' }] })
    assert.equal(unknownNet.status, 404, JSON.stringify(unknownNet.body))
    assert.equal(await count('networks'), before + 1, 'only the network made on its own')
    assert.equal(await count('ports'), portsBefore)
    assertNeutronError(await alice.post('/v2.0/networks', { networks: [] }), 400, 'BadRequest')
    assertNeutronError(await alice.post('/v2.0/networks', { network: { name: 'x' }, networks: [{ name: 'y' }] }), 400, 'BadRequest')
  })

  it('reads null as an empty list for router routes, host routes and name servers', async () => {
    const net = await alice.create('networks', 'network', { name: 'routes' })
    const subnet = await alice.create('subnets', 'subnet', { network_id: net.id, cidr: '10.9.0.0/24', ip_version: 4, dns_nameservers: ['10.9.0.53'], host_routes: [{ destination: '10.8.0.0/24', nexthop: '10.9.0.9' }] })
    const cleared = await alice.put<{ subnet: { dns_nameservers: unknown[]; host_routes: unknown[] } }>(`/v2.0/subnets/${subnet.id}`, { subnet: { dns_nameservers: null, host_routes: null } })
    assert.equal(cleared.status, 200, JSON.stringify(cleared.body))
    assert.deepEqual(cleared.body.subnet.dns_nameservers, [])
    assert.deepEqual(cleared.body.subnet.host_routes, [])
    const router = await alice.create('routers', 'router', { name: 'r' })
    assert.equal((await alice.put(`/v2.0/routers/${router.id}/add_router_interface`, { subnet_id: subnet.id })).status, 200)
    const routed = await alice.put<{ router: { routes: unknown[] } }>(`/v2.0/routers/${router.id}`, { router: { routes: [{ destination: '10.7.0.0/24', nexthop: '10.9.0.7' }] } })
    assert.equal(routed.body.router.routes.length, 1, JSON.stringify(routed.body))
    const unrouted = await alice.put<{ router: { routes: unknown[] } }>(`/v2.0/routers/${router.id}`, { router: { routes: null } })
    assert.equal(unrouted.status, 200, JSON.stringify(unrouted.body))
    assert.deepEqual(unrouted.body.router.routes, [])
  })

  it('shows an external network to every project, but its subnets only to its own', async () => {
    const ext = await root.create('networks', 'network', { name: 'ext', 'router:external': true })
    const sub = await root.create('subnets', 'subnet', { network_id: ext.id, cidr: '172.30.0.0/24', ip_version: 4 })
    assert.equal((await alice.get(`/v2.0/networks/${ext.id}`)).status, 200)
    assertNeutronError(await alice.get(`/v2.0/subnets/${sub.id}`), 404, 'SubnetNotFound')
    const listed = (await alice.get<{ subnets: { id: string }[] }>('/v2.0/subnets')).body.subnets
    assert.ok(!listed.some((s) => s.id === sub.id))
    const shared = await root.create('networks', 'network', { name: 'ext-shared', 'router:external': true, shared: true })
    const sharedSub = await root.create('subnets', 'subnet', { network_id: shared.id, cidr: '172.31.0.0/24', ip_version: 4 })
    assert.equal((await alice.get(`/v2.0/subnets/${sharedSub.id}`)).status, 200, 'a shared network\'s subnets are everyone\'s to see')
  })

  it('refuses out-of-range rule ports with Neutron\'s messages, whatever the protocol', async () => {
    const group = await alice.create('security-groups', 'security_group', { name: 'ports' })
    const rule = (protocol: string, min: number | null, max: number | null) =>
      alice.post('/v2.0/security-group-rules', { security_group_rule: { security_group_id: group.id, direction: 'ingress', protocol, port_range_min: min, port_range_max: max } })
    const cases: [string, number | null, number | null, string, RegExp][] = [
      ['tcp', -16, 80, 'SecurityGroupInvalidPortValue', /Invalid value for port -16/],
      ['tcp', 80, 65536, 'SecurityGroupInvalidPortValue', /Invalid value for port 65536/],
      ['tcp', 80, 79, 'SecurityGroupInvalidPortRange', /port_range_min must be <= port_range_max/],
      ['icmp', -1, 25, 'SecurityGroupInvalidPortValue', /Invalid value/],
      ['icmp', 1, 256, 'SecurityGroupInvalidIcmpValue', /Invalid value for ICMP code/],
    ]
    const before = await count('security-group-rules')
    for (const [protocol, min, max, type, message] of cases) assertNeutronError(await rule(protocol, min, max), 400, type, message)
    assert.equal(await count('security-group-rules'), before)
  })

  it('deletes an external network with its unused floating IPs; an associated one keeps it in use', async () => {
    const ext = await root.create('networks', 'network', { name: 'ext-del', 'router:external': true })
    await root.create('subnets', 'subnet', { network_id: ext.id, cidr: '172.29.0.0/24', ip_version: 4 })
    const fip = await root.create('floatingips', 'floatingip', { floating_network_id: ext.id })
    assert.equal((await root.del(`/v2.0/networks/${ext.id}`)).status, 204)
    assert.equal((await root.get(`/v2.0/floatingips/${fip.id}`)).status, 404)
    const holders = (await root.get<{ ports: unknown[] }>(`/v2.0/ports?network_id=${ext.id}`)).body.ports
    assert.deepEqual(holders, [], 'the floating IP\'s holder port went too')
  })

  it('deletes an auto-address IPv6 subnet that ports have addresses on; a router interface keeps it', async () => {
    const net = await alice.create('networks', 'network', { name: 'slaac' })
    const v6 = await alice.create('subnets', 'subnet', { network_id: net.id, cidr: '2001:db8:5::/64', ip_version: 6, ipv6_address_mode: 'slaac', ipv6_ra_mode: 'slaac' })
    const port = await alice.create('ports', 'port', { network_id: net.id })
    assert.equal(port.fixed_ips.length, 1)
    assert.equal((await alice.del(`/v2.0/subnets/${v6.id}`)).status, 204)
    assert.deepEqual((await alice.get<{ port: { fixed_ips: unknown[] } }>(`/v2.0/ports/${port.id}`)).body.port.fixed_ips, [])
    const kept = await alice.create('subnets', 'subnet', { network_id: net.id, cidr: '2001:db8:6::/64', ip_version: 6, ipv6_address_mode: 'slaac', ipv6_ra_mode: 'slaac' })
    const router = await alice.create('routers', 'router', { name: 'v6r' })
    assert.equal((await alice.put(`/v2.0/routers/${router.id}/add_router_interface`, { subnet_id: kept.id })).status, 200)
    assertNeutronError(await alice.del(`/v2.0/subnets/${kept.id}`), 409, 'SubnetInUse')
  })

  it('refuses to rename a group to default (409) and to rename the default group (400)', async () => {
    const group = await alice.create('security-groups', 'security_group', { name: 'plain' })
    assertNeutronError(await alice.put(`/v2.0/security-groups/${group.id}`, { security_group: { name: 'default' } }), 409, 'SecurityGroupDefaultAlreadyExists')
    const groups = (await alice.get<{ security_groups: { id: string; name: string }[] }>('/v2.0/security-groups')).body.security_groups
    const def = groups.find((g) => g.name === 'default')!
    assertNeutronError(await alice.put(`/v2.0/security-groups/${def.id}`, { security_group: { name: 'other' } }), 400, 'SecurityGroupCannotUpdateDefault')
  })

  it('answers the quota details with the .json format suffix too', async () => {
    const a = await root.get('/v2.0/quotas/p1/details')
    const b = await root.get('/v2.0/quotas/p1/details.json')
    assert.equal(a.status, 200)
    assert.deepEqual(b, a)
  })
})
