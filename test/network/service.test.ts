/**
 * The network service interface the compute service calls (src/server/network/service.ts): ports for a new
 * server (auto, none, chosen networks, ports and fixed IPs), their release, Nova's `addresses`, the ip/ip6
 * filters, interface attach/detach and security groups — against a real store on both dialects.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { AppError } from '../../src/contracts/errors.js'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import type { AllocateRequest, NetworkService } from '../../src/server/network/service.js'
import { admin, client, projectMember, type Caller, type Client, type Json } from './helpers.js'

async function rejects(promise: Promise<unknown>, code: string, message?: RegExp): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof AppError, String(err))
    assert.equal(err.code, code, err.message)
    assert.equal(err.options.type, undefined, 'no Neutron type: the compute family renders Nova faults')
    if (message) assert.match(err.message, message)
    return true
  })
}

for (const dialect of DIALECTS) {
  describe(`network service interface for compute (${dialect})`, () => {
    let server: TestServer
    let svc: NetworkService
    let alice: Caller
    let api: Client
    let root: Client
    const allocate = (req: Omit<AllocateRequest, 'projectId'> & { projectId?: string }) =>
      server.deps.store.db.transaction().execute((tx) => svc.allocateServerPorts(tx, { projectId: alice.projectId, ...req }))
    const release = (serverId: string) => server.deps.store.db.transaction().execute((tx) => svc.releaseServerPorts(tx, serverId))

    before(async () => {
      server = await startTestServer({ dialect })
      svc = server.deps.network
      alice = await projectMember(server, 'alice')
      api = client(server, alice)
      root = client(server, await admin(server))
      const ext = await root.create('networks', 'network', { name: 'public', 'router:external': true, is_default: true })
      await root.create('subnets', 'subnet', { network_id: ext.id, ip_version: 4, cidr: '203.0.113.0/24' })
    })
    after(() => server.close())

    it('allocates nothing for "none"', async () => {
      assert.deepEqual(await allocate({ serverId: randomUUID(), request: 'none' }), [])
    })

    it('creates the auto-allocated network on the first "auto", reuses it after, and routes it to the default external network', async () => {
      const s1 = randomUUID()
      const s2 = randomUUID()
      const [p1] = await allocate({ serverId: s1, request: 'auto' })
      assert.equal(p1.networkName, 'auto_allocated_network')
      assert.equal(p1.fixedIps[0].ip_address, '10.0.0.2')
      assert.equal(p1.autoDelete, true)
      const [p2] = await allocate({ serverId: s2, request: 'auto' })
      assert.equal(p2.networkId, p1.networkId)
      assert.equal(p2.fixedIps[0].ip_address, '10.0.0.3')
      const nets = (await api.get<{ networks: Json[] }>('/v2.0/networks?name=auto_allocated_network')).body.networks
      assert.equal(nets.length, 1)
      const routers = (await api.get<{ routers: Json[] }>('/v2.0/routers')).body.routers
      assert.equal(routers.length, 1)
      assert.equal(routers[0].name, 'auto_allocated_router')
      assert.ok(routers[0].external_gateway_info)
      // The server's port is a Nova port: bound, in the default group, visible through the port API.
      const ports = (await api.get<{ ports: Json[] }>(`/v2.0/ports?device_id=${s1}`)).body.ports
      assert.equal(ports.length, 1)
      assert.equal(ports[0].device_owner, 'compute:nova')
      assert.equal(ports[0].status, 'ACTIVE')
      const groups = await svc.serverSecurityGroups([s1])
      assert.deepEqual(groups.get(s1), [{ name: 'default' }])
      await release(s1)
      await release(s2)
    })

    it('honours a chosen network, fixed IP and port; reports Nova-style errors', async () => {
      const net = await api.create('networks', 'network', { name: 'chosen' })
      const subnet = await api.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '192.168.50.0/24' })
      await api.create('subnets', 'subnet', { network_id: net.id, ip_version: 6, cidr: 'fd00:50::/64', ipv6_address_mode: 'slaac', ipv6_ra_mode: 'slaac' })
      const userPort = await api.create('ports', 'port', { network_id: net.id, name: 'mine' })
      const server1 = randomUUID()
      const ports = await allocate({ serverId: server1, request: [{ uuid: net.id, fixed_ip: '192.168.50.10' }, { port: userPort.id }], hostId: 'host-1' })
      assert.equal(ports.length, 2)
      assert.deepEqual(ports[0].fixedIps.find((f) => f.subnet_id === subnet.id), { subnet_id: subnet.id, ip_address: '192.168.50.10' })
      assert.ok(ports[0].fixedIps.some((f) => f.ip_address.startsWith('fd00:50::')), 'SLAAC address too')
      assert.equal(ports[1].id, userPort.id)
      assert.equal(ports[1].autoDelete, false)
      const adminView = (await root.get<{ port: Json }>(`/v2.0/ports/${ports[0].id}`)).body.port
      assert.equal(adminView['binding:host_id'], 'host-1')

      const other = randomUUID()
      await rejects(allocate({ serverId: other, request: [{ port: userPort.id }] }), 'conflict', /in use/)
      await rejects(allocate({ serverId: other, request: [{ uuid: net.id, fixed_ip: '192.168.50.10' }] }), 'bad_request', /already/)
      await rejects(allocate({ serverId: other, request: [{ uuid: randomUUID() }] }), 'bad_request', /could not be found/)
      await rejects(allocate({ serverId: other, request: [{ uuid: net.id }], securityGroups: ['nope'] }), 'bad_request')
      const ext = (await api.get<{ networks: Json[] }>('/v2.0/networks?name=public')).body.networks[0]
      await rejects(allocate({ serverId: other, request: [{ uuid: ext.id }] }), 'forbidden')
      // Nothing of the failed requests was kept.
      assert.equal((await api.get<{ ports: Json[] }>(`/v2.0/ports?device_id=${other}`)).body.ports.length, 0)

      // Ambiguous "auto": the project now has two networks of its own.
      const bob = await projectMember(server, 'bob')
      const bobApi = client(server, bob)
      await bobApi.create('networks', 'network', { name: 'b1' })
      await bobApi.create('networks', 'network', { name: 'b2' })
      await rejects(allocate({ projectId: bob.projectId, serverId: other, request: 'auto' }), 'conflict', /Multiple possible networks/)

      // Release: created ports go, the user's port stays, unbound; addresses return to the pool.
      await release(server1)
      const left = (await api.get<{ ports: Json[] }>(`/v2.0/ports?network_id=${net.id}`)).body.ports
      assert.deepEqual(left.map((p) => p.id), [userPort.id])
      assert.equal(left[0].device_id, '')
      const again = await allocate({ serverId: randomUUID(), request: [{ uuid: net.id, fixed_ip: '192.168.50.10' }] })
      assert.equal(again[0].fixedIps[0].ip_address, '192.168.50.10')
    })

    it("builds Nova's addresses with fixed then floating entries, and finds servers by IP", async () => {
      const net = await api.create('networks', 'network', { name: 'web' })
      const subnet = await api.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.77.0.0/24' })
      const v6 = await api.create('subnets', 'subnet', { network_id: net.id, ip_version: 6, cidr: 'fd77::/64', ipv6_address_mode: 'slaac', ipv6_ra_mode: 'slaac' })
      const ext = (await api.get<{ networks: Json[] }>('/v2.0/networks?name=public')).body.networks[0]
      const router = await api.create('routers', 'router', { name: 'edge', external_gateway_info: { network_id: ext.id } })
      await api.put(`/v2.0/routers/${router.id}/add_router_interface`, { subnet_id: subnet.id })
      const sa = randomUUID()
      const sb = randomUUID()
      const [pa] = await allocate({ serverId: sa, request: [{ uuid: net.id, fixed_ip: '10.77.0.5' }] })
      await allocate({ serverId: sb, request: [{ uuid: net.id, fixed_ip: '10.77.0.50' }] })
      const fip = await api.create('floatingips', 'floatingip', { floating_network_id: ext.id, port_id: pa.id })
      const addresses = await svc.serverAddresses([sa, sb, 'no-such-server'])
      assert.deepEqual(addresses.get('no-such-server'), {})
      const a = addresses.get(sa)!
      assert.deepEqual(Object.keys(a), ['web'])
      assert.deepEqual(
        a.web.map((x) => [x.addr, x.version, x['OS-EXT-IPS:type'], x['OS-EXT-IPS-MAC:mac_addr']]),
        [
          ['10.77.0.5', 4, 'fixed', pa.macAddress],
          [fip.floating_ip_address, 4, 'floating', pa.macAddress],
          [pa.fixedIps.find((f) => f.subnet_id === v6.id)!.ip_address, 6, 'fixed', pa.macAddress],
        ],
      )
      const pa6 = pa.fixedIps.find((f) => f.subnet_id === v6.id)!.ip_address
      assert.match(pa6, /^fd77::f816:3eff:fe/)
      assert.deepEqual(await svc.findServersByIp('10\\.77\\.0\\.50', 4), [sb])
      assert.deepEqual((await svc.findServersByIp('10.77.0.5', 4)).sort(), [sa, sb].sort(), 'prefix match: 10.77.0.5 finds 10.77.0.50 too')
      assert.deepEqual(await svc.findServersByIp(pa6, 6), [sa])
      assert.deepEqual(await svc.findServersByIp(pa6, 4), [])
      assert.deepEqual(await svc.findServersByIp(fip.floating_ip_address, 4), [], 'fixed addresses only')
      assert.deepEqual(await svc.findServersByIp('10.77.0.5', 4, { projectId: 'another' }), [])
      assert.deepEqual(await svc.findServersByIp('10.77.(', 4), [], 'an invalid expression is matched literally')

      // Deleting the server's ports disassociates its floating IP and frees its addresses.
      await release(sa)
      assert.equal((await api.get<{ floatingip: Json }>(`/v2.0/floatingips/${fip.id}`)).body.floatingip.port_id, null)
      assert.deepEqual((await svc.serverAddresses([sa])).get(sa), {})
    })

    it('attaches and detaches interfaces, and adds and removes security groups', async () => {
      const net = await api.create('networks', 'network', { name: 'attach' })
      await api.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.88.0.0/24' })
      const web = await api.create('security-groups', 'security_group', { name: 'web' })
      const s = randomUUID()
      const tx = <T>(fn: (db: Json) => Promise<T>) => server.deps.store.db.transaction().execute(fn)
      const attached = await tx((db) => svc.attachInterface(db, { projectId: alice.projectId, serverId: s, networkId: net.id, fixedIp: '10.88.0.9' }))
      assert.equal(attached.fixedIps[0].ip_address, '10.88.0.9')
      const userPort = await api.create('ports', 'port', { network_id: net.id })
      await tx((db) => svc.attachInterface(db, { projectId: alice.projectId, serverId: s, portId: userPort.id }))
      assert.deepEqual((await svc.serverPorts(s)).map((p) => p.id), [attached.id, userPort.id])

      await tx((db) => svc.addServerSecurityGroup(db, { projectId: alice.projectId, serverId: s, group: 'web' }))
      assert.deepEqual((await svc.serverSecurityGroups([s])).get(s), [{ name: 'default' }, { name: 'web' }])
      await rejects(tx((db) => svc.addServerSecurityGroup(db, { projectId: alice.projectId, serverId: s, group: web.id })), 'bad_request', /already associated/)
      await tx((db) => svc.removeServerSecurityGroup(db, { projectId: alice.projectId, serverId: s, group: 'web' }))
      await rejects(tx((db) => svc.removeServerSecurityGroup(db, { projectId: alice.projectId, serverId: s, group: 'web' })), 'bad_request', /not associated/)
      await rejects(tx((db) => svc.addServerSecurityGroup(db, { projectId: alice.projectId, serverId: s, group: 'missing' })), 'not_found', /missing/)
      await rejects(tx((db) => svc.addServerSecurityGroup(db, { projectId: alice.projectId, serverId: randomUUID(), group: 'web' })), 'not_found', /any ports/)

      await tx((db) => svc.detachInterface(db, { serverId: s, portId: attached.id }))
      await rejects(tx((db) => svc.detachInterface(db, { serverId: s, portId: attached.id })), 'not_found')
      assert.equal((await api.get(`/v2.0/ports/${attached.id}`)).status, 404)
      await tx((db) => svc.detachInterface(db, { serverId: s, portId: userPort.id }))
      const kept = (await api.get<{ port: Json }>(`/v2.0/ports/${userPort.id}`)).body.port
      assert.equal(kept.device_id, '')
    })

    it('maps the port quota to 403 as Nova does', async () => {
      const carol = await projectMember(server, 'carol')
      const c = client(server, carol)
      const net = await c.create('networks', 'network', { name: 'q' })
      await c.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.99.0.0/24' })
      await root.put(`/v2.0/quotas/${carol.projectId}`, { quota: { port: 1 } })
      await allocate({ projectId: carol.projectId, serverId: randomUUID(), request: [{ uuid: net.id }] })
      await rejects(allocate({ projectId: carol.projectId, serverId: randomUUID(), request: [{ uuid: net.id }] }), 'forbidden', /ports/)
    })
  })
}
