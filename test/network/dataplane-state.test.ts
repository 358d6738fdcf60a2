/**
 * The control plane's side of guest networking: the state each host is sent (GET /resmgr/v1/hosts/{id}/network),
 * its long poll, who may read it, and the writes hosts' needs cause (DHCP ports). Hosts are registered through
 * the real registration API and report their tunnel address in their heartbeat, as an agent does; no agent runs.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { HostNetworkAnswer } from '../../src/contracts/network/dataplane.js'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { admin, client, projectMember, registerHost, resmgr as call, type Client, type RegisteredHost as Host } from './helpers.js'

for (const dialect of DIALECTS) {
  describe(`data-plane state for hosts (${dialect})`, () => {
    let server: TestServer
    let root: Client
    let alice: Client
    let aliceProject: string
    let adminToken: string
    const hosts: Host[] = []

    const resmgr = (method: string, path: string, auth: string, body?: unknown) => call(server, method, path, auth, body)
    const register = (hostname: string, tunnelIp: string) => registerHost(server, adminToken, hostname, tunnelIp)
    const state = async (host: Host, query = '') => {
      const r = await resmgr('GET', `/v1/hosts/${host.id}/network${query}`, host.credential)
      return r as { status: number; body: HostNetworkAnswer }
    }
    /** A port of alice's on `network`, bound to `host` as Nova binds a server's port. */
    const bound = async (network: string, host: Host, extra: Record<string, unknown> = {}) =>
      root.create('ports', 'port', { network_id: network, project_id: aliceProject, device_id: randomUUID(), device_owner: 'compute:nova', 'binding:host_id': host.hostname, ...extra })

    before(async () => {
      server = await startTestServer({ dialect })
      const a = await admin(server)
      adminToken = a.token
      root = client(server, a)
      const a2 = await projectMember(server, 'alice')
      aliceProject = a2.projectId
      alice = client(server, a2)
      hosts.push(await register('compute-1', '192.0.2.1'), await register('compute-2', '192.0.2.2'), await register('netnode', '192.0.2.3'))
    })
    after(() => server.close())

    it('answers only the host itself, with its credential', async () => {
      const [h1, h2] = hosts
      assert.equal((await resmgr('GET', `/v1/hosts/${h1.id}/network`, h2.credential)).status, 403, "another host's credential")
      assert.equal((await resmgr('GET', `/v1/hosts/${h1.id}/network`, adminToken)).status, 401, 'a user token, even an admin one')
      assert.equal((await resmgr('GET', `/v1/hosts/${h1.id}/network`, 'pcch_nope')).status, 401)
      assert.equal((await resmgr('GET', `/v1/hosts/${h1.id}/network?wait=99`, h1.credential)).status, 400)
    })

    it('sends an idle host an empty state, and the same hash while nothing changes', async () => {
      const idle = await register('idle', '192.0.2.9')
      const first = await state(idle)
      assert.equal(first.status, 200)
      assert.deepEqual(first.body.state, { tunnelIp: '192.0.2.9', networks: [], ports: [], securityGroups: [], groupMembers: [], routers: [] })
      assert.equal((await state(idle)).body.hash, first.body.hash)
      const started = Date.now()
      assert.equal((await state(idle, `?known=${first.body.hash}&wait=1`)).status, 204, 'nothing new within the wait')
      assert.ok(Date.now() - started >= 900)
    })

    it('gives each host its ports, their network with the other hosts as VXLAN peers, and one DHCP port made on first need', async () => {
      const [h1, h2] = hosts
      const net = await alice.create('networks', 'network', { name: 'app' })
      const subnet = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.7.0.0/24', dns_nameservers: ['10.7.0.53'] })
      assert.equal((await root.get<{ ports: unknown[] }>(`/v2.0/ports?network_id=${net.id}`)).body.ports.length, 0, 'no DHCP port before a host needs one')
      const p1 = await bound(net.id as string, h1)
      const p2 = await bound(net.id as string, h2, { allowed_address_pairs: [{ ip_address: '10.7.0.200', mac_address: 'fa:16:3e:00:00:99' }] })
      const [s1, s2] = await Promise.all([state(h1), state(h2)])
      const dhcpPorts = (await root.get<{ ports: { id: string; project_id: string; fixed_ips: { ip_address: string }[] }[] }>(`/v2.0/ports?network_id=${net.id}&device_owner=network:dhcp`)).body.ports
      assert.equal(dhcpPorts.length, 1, 'one DHCP port, however many hosts asked at once')
      assert.equal(dhcpPorts[0].project_id, '')
      const n1 = s1.body.state.networks.find((n) => n.id === net.id)!
      assert.equal(n1.type, 'vxlan')
      assert.equal(n1.mtu, 1450)
      assert.equal(typeof n1.segmentationId, 'number')
      assert.deepEqual(n1.dhcp, { portId: dhcpPorts[0].id, mac: (dhcpPorts[0] as unknown as { mac_address: string }).mac_address, fixedIps: [{ subnetId: subnet.id, ipAddress: dhcpPorts[0].fixed_ips[0].ip_address }] })
      assert.deepEqual(n1.peers, [{ tunnelIp: '192.0.2.2', macs: ['fa:16:3e:00:00:99', p2.mac_address].sort() }])
      assert.deepEqual(s1.body.state.ports.map((p) => p.id), [p1.id])
      const n2 = s2.body.state.networks.find((n) => n.id === net.id)!
      assert.deepEqual(n2.peers, [{ tunnelIp: '192.0.2.1', macs: [p1.mac_address] }])
      assert.deepEqual(s2.body.state.ports[0].allowedAddressPairs, [{ ipAddress: '10.7.0.200', macAddress: 'fa:16:3e:00:00:99' }])
      assert.deepEqual(s2.body.state.ports[0].securityGroupIds.length, 1, "the project's default group")
      const members = s2.body.state.groupMembers[0]
      assert.deepEqual(members.addresses, [p1.fixed_ips[0].ip_address, p2.fixed_ips[0].ip_address, '10.7.0.200'].sort(), 'the default group names itself: its members on every host')
      // A subnet added later gets the DHCP port an address too; deleting it gives the address back.
      const second = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.8.0.0/24' })
      const again = await state(h1)
      assert.equal(again.body.state.networks.find((n) => n.id === net.id)!.dhcp!.fixedIps.length, 2)
      assert.equal((await alice.del(`/v2.0/subnets/${second.id}`)).status, 204, 'a DHCP address never keeps a subnet in use')
      // An IPv6 subnet with DHCP too (its EUI-64 address on a SLAAC one), its modes in the state for the server.
      const v6 = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 6, cidr: '2001:db8:7::/64', ipv6_ra_mode: 'slaac', ipv6_address_mode: 'slaac' })
      const withV6 = (await state(h1)).body.state.networks.find((n) => n.id === net.id)!
      assert.deepEqual(withV6.subnets.map((s) => [s.ipVersion, s.ipv6RaMode, s.ipv6AddressMode]), [[4, null, null], [6, 'slaac', 'slaac']])
      assert.match(withV6.dhcp!.fixedIps.find((ip) => ip.subnetId === v6.id)?.ipAddress ?? '', /^2001:db8:7:0:f816:3eff:fe/)
      // The network goes with its DHCP port once the guests' ports are gone.
      for (const p of [p1, p2]) assert.equal((await root.del(`/v2.0/ports/${p.id}`)).status, 204)
      assert.equal((await alice.del(`/v2.0/networks/${net.id}`)).status, 204)
      assert.deepEqual((await state(h1)).body.state.networks, [])
    })

    it("gives hosts the network a rule's remote prefix names, not its host bits", async () => {
      const [h1] = hosts
      const net = await alice.create('networks', 'network', { name: 'filtered' })
      await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.9.0.0/24' })
      const group = await alice.create('security-groups', 'security_group', { name: 'ssh-from-office' })
      const rule = await alice.create('security-group-rules', 'security_group_rule', { security_group_id: group.id, direction: 'ingress', protocol: 'tcp', port_range_min: 22, port_range_max: 22, remote_ip_prefix: '10.2.3.124/24' })
      const port = await bound(net.id as string, h1, { security_groups: [group.id] })
      const sent = (await state(h1)).body.state.securityGroups.find((g) => g.id === group.id)!
      assert.equal(sent.rules.find((r) => r.id === rule.id)!.remoteIpPrefix, '10.2.3.0/24')
      assert.equal((await root.del(`/v2.0/ports/${port.id}`)).status, 204)
      assert.equal((await alice.del(`/v2.0/networks/${net.id}`)).status, 204)
    })

    it('takes the tunnel address a host reports only when it is an IP address', async () => {
      const [h1] = hosts
      // What another host's agent would otherwise put in its FDB command line (`bridge fdb … dst <address>`).
      const odd = await register('odd-tunnel', '192.0.2.8 self')
      const net = await alice.create('networks', 'network', { name: 'odd' })
      await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.11.0.0/24' })
      const ports = [await bound(net.id as string, h1), await bound(net.id as string, odd)]
      assert.equal((await state(odd)).body.state.tunnelIp, null)
      assert.deepEqual((await state(h1)).body.state.networks.find((n) => n.id === net.id)!.peers, [], 'no tunnel to a host without an address')
      for (const p of ports) assert.equal((await root.del(`/v2.0/ports/${p.id}`)).status, 204)
      assert.equal((await alice.del(`/v2.0/networks/${net.id}`)).status, 204)
    })

    it('wakes a waiting host within a second of a change that concerns it, and not for one that does not', async () => {
      const [h1, h2] = hosts
      const net = await alice.create('networks', 'network', { name: 'watched' })
      await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.9.0.0/24' })
      await bound(net.id as string, h1)
      const known = (await state(h1)).body.hash
      // A change on another host's side only: h1's long poll wakes, recomputes, and keeps waiting.
      const other = await alice.create('networks', 'network', { name: 'elsewhere' })
      const unrelated = state(h1, `?known=${known}&wait=2`)
      await new Promise((r) => setTimeout(r, 300))
      await bound(other.id as string, h2)
      assert.equal((await unrelated).status, 204)
      const group = (await alice.get<{ security_groups: { id: string; name: string }[] }>('/v2.0/security-groups')).body.security_groups.find((g) => g.name === 'default')!
      const waiting = state(h1, `?known=${known}&wait=10`)
      await new Promise((r) => setTimeout(r, 300))
      const changed = Date.now()
      await alice.create('security-group-rules', 'security_group_rule', { security_group_id: group.id, direction: 'ingress', protocol: 'tcp', port_range_min: 22, port_range_max: 22 })
      const answer = await waiting
      const ms = Date.now() - changed
      assert.equal(answer.status, 200)
      assert.notEqual(answer.body.hash, known)
      assert.ok(answer.body.state.securityGroups[0].rules.some((r) => r.protocol === 'tcp' && r.portRangeMin === 22))
      assert.ok(ms < 1000, `woke after ${ms} ms`)
    })

    it('places each router on a network host, which gets its ports and floating IPs; compute hosts tunnel to it', async () => {
      const [h1, , netnode] = hosts
      assert.equal((await resmgr('PUT', `/v1/hosts/${netnode.id}/roles/network`, adminToken, {})).status, 200)
      assert.equal((await resmgr('PUT', `/v1/hosts/${netnode.id}/roles/network/status`, netnode.credential, { state: 'ok' })).status, 200)
      const ext = await root.create('networks', 'network', { name: 'ext', 'router:external': true, 'provider:network_type': 'flat', 'provider:physical_network': 'public' })
      await root.create('subnets', 'subnet', { network_id: ext.id, ip_version: 4, cidr: '198.51.100.0/24', enable_dhcp: false })
      const net = await alice.create('networks', 'network', { name: 'routed' })
      const subnet = await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.10.0.0/24' })
      const router = await alice.create('routers', 'router', { name: 'r', external_gateway_info: { network_id: ext.id } })
      assert.equal((await alice.put(`/v2.0/routers/${router.id}/add_router_interface`, { subnet_id: subnet.id })).status, 200)
      const guest = await bound(net.id as string, h1)
      const fip = await alice.create('floatingips', 'floatingip', { floating_network_id: ext.id, port_id: guest.id })
      const onNode = (await state(netnode)).body.state
      assert.equal(onNode.routers.length, 1)
      const r = onNode.routers[0]
      assert.equal(r.id, router.id)
      assert.deepEqual(r.interfaces[0].addresses, ['10.10.0.1/24'])
      assert.equal(r.gateway!.networkId, ext.id)
      assert.equal(r.gateway!.enableSnat, true)
      assert.deepEqual(r.floatingIps, [{ floatingIpAddress: fip.floating_ip_address, fixedIpAddress: guest.fixed_ips[0].ip_address }])
      assert.deepEqual(onNode.networks.map((n) => n.id).sort(), [ext.id, net.id].sort())
      assert.equal(onNode.networks.find((n) => n.id === net.id)!.dhcp, null, 'no guests of its own there: no DHCP server on the network host')
      assert.deepEqual(onNode.networks.find((n) => n.id === net.id)!.peers, [{ tunnelIp: '192.0.2.1', macs: [guest.mac_address] }])
      const onCompute = (await state(h1)).body.state
      assert.equal(onCompute.routers.length, 0)
      const routerMac = (await root.get<{ ports: { mac_address: string }[] }>(`/v2.0/ports?device_id=${router.id}&device_owner=network:router_interface`)).body.ports[0].mac_address
      assert.deepEqual(onCompute.networks.find((n) => n.id === net.id)!.peers, [{ tunnelIp: '192.0.2.3', macs: [routerMac] }])
      // Administratively down, the router runs nowhere; up again, it is back.
      assert.equal((await alice.put(`/v2.0/routers/${router.id}`, { router: { admin_state_up: false } })).status, 200)
      assert.equal((await state(netnode)).body.state.routers.length, 0)
      assert.deepEqual((await state(h1)).body.state.networks.find((n) => n.id === net.id)!.peers, [])
      assert.equal((await alice.put(`/v2.0/routers/${router.id}`, { router: { admin_state_up: true } })).status, 200)
      assert.equal((await state(netnode)).body.state.routers.length, 1)
      // Without a network host, nobody runs the router.
      assert.equal((await resmgr('DELETE', `/v1/hosts/${netnode.id}/roles/network`, adminToken)).status, 200)
      assert.equal((await resmgr('PUT', `/v1/hosts/${netnode.id}/roles/network/status`, netnode.credential, { state: 'removed' })).status, 200)
      assert.equal((await state(netnode)).body.state.routers.length, 0)
      assert.deepEqual((await state(h1)).body.state.networks.find((n) => n.id === net.id)!.peers, [])
    })
  })
}
