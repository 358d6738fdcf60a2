/**
 * Guest networking end to end, with stand-in guests: two agent hosts, each in its own network namespace running
 * pcc-agent with the Linux back end, a third namespace as the external network; the guests are namespaces
 * plugged into their host by a veth named as the port's tap, running busybox (udhcpc, ping, nc). Ports are bound
 * through the network API as Nova binds them (device, owner `compute:nova`, binding:host_id), so every byte that
 * moves was allowed by the state the control plane computed and the agents applied.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { until } from '../../src/testkit/compute-api.js'
import { dataplaneMissing, externalNetwork, startDataplaneCluster, type DataplaneCluster } from '../../src/testkit/dataplane-cluster.js'
import { RemoteLinuxBackend } from '../../src/testkit/network-backend-host.js'
import { runIn, standInGuest, tcpStream, type StandInGuest } from '../../src/testkit/stand-in-guest.js'

const missing = dataplaneMissing()

describe('guest networking with stand-in guests on two agent hosts', { skip: missing }, () => {
  let c: DataplaneCluster
  let ext: { namespace: string; close(): void }
  const guests: StandInGuest[] = []
  let scratch: string
  let networkId: string
  let subnetId: string
  const ports: Record<string, { id: string; mac: string; ip: string; guest: StandInGuest }> = {}

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'pcc-stand-in-'))
    c = await startDataplaneCluster({ hosts: 2, networkHosts: [0], physicalInterfaces: (i): Record<string, string> => (i === 0 ? { public: 'ext0' } : {}) })
    ext = externalNetwork(c.hosts[0].namespace, 'ext0', '203.0.113.1/24')
  })
  after(async () => {
    for (const g of guests) g.close()
    ext?.close()
    await c?.close()
    if (scratch) rmSync(scratch, { recursive: true, force: true })
  })

  const neutron = (method: string, path: string, body?: unknown) => c.neutron(method, path, body)

  /** A port plugged into a stand-in guest on host `hostIndex`, then bound there as Nova binds a server's port. */
  const guestOn = async (name: string, hostIndex: number, network = networkId, extra: Record<string, unknown> = {}) => {
    const port = (await neutron('POST', '/ports', { port: { network_id: network, name, ...extra } })).port
    const guest = standInGuest(c.hosts[hostIndex].namespace, port.id, port.mac_address)
    guests.push(guest)
    const started = Date.now()
    await neutron('PUT', `/ports/${port.id}`, { port: { device_id: randomUUID(), device_owner: 'compute:nova', 'binding:host_id': c.hosts[hostIndex].hostname } })
    ports[name] = { id: port.id, mac: port.mac_address, ip: port.fixed_ips[0]?.ip_address, guest }
    return { port, guest, started }
  }

  const pings = (guest: StandInGuest, target: string, from?: string) => guest.exec(['busybox', 'ping', '-c', '1', '-W', '1', ...(from ? ['-I', from] : []), target]).then((r) => r.code === 0)
  /** ICMP echo requests a guest's stack received (per namespace, /proc/net/snmp). */
  const echoesIn = async (guest: StandInGuest) => {
    const snmp = (await guest.exec(['cat', '/proc/net/snmp'])).stdout.split('\n').filter((l) => l.startsWith('Icmp:'))
    const [head, values] = snmp.map((l) => l.split(/\s+/))
    return Number(values[head.indexOf('InEchos')])
  }
  const connects = (guest: StandInGuest, ip: string, port: number) => guest.exec(['sh', '-c', `echo | busybox timeout 1 busybox nc ${ip} ${port}`], 3000).then((r) => r.stdout.includes('hi'))

  it('two guests on one VXLAN network on different hosts get exactly their addresses by DHCP and reach each other', async () => {
    const network = (await neutron('POST', '/networks', { network: { name: 'tenant' } })).network
    networkId = network.id
    assert.equal(network['provider:network_type'], 'vxlan')
    assert.equal(network.mtu, 1450)
    const subnet = (await neutron('POST', '/subnets', { subnet: { network_id: networkId, ip_version: 4, cidr: '10.50.0.0/24', dns_nameservers: ['10.50.0.53'] } })).subnet
    subnetId = subnet.id
    const a = await guestOn('a', 0)
    const b = await guestOn('b', 1)
    for (const [name, g] of [['a', a], ['b', b]] as const) {
      const lease = await until(`a DHCP lease for ${name}`, 20_000, () => g.guest.dhcp(3))
      assert.equal(lease.ip, g.port.fixed_ips[0].ip_address, 'the address IPAM assigned')
      assert.equal(lease.mask, '24')
      assert.equal(lease.router, '10.50.0.1')
      assert.equal(lease.dns, '10.50.0.53')
      assert.equal(lease.mtu, '1450')
      const dhcpPort = (await neutron('GET', `/ports?network_id=${networkId}&device_owner=network:dhcp`)).ports
      assert.equal(dhcpPort.length, 1, 'one DHCP port for the network, shared by both hosts')
      assert.equal(lease.serverid, dhcpPort[0].fixed_ips[0].ip_address)
      assert.equal(lease.staticroutes, `169.254.169.254/32 ${lease.serverid} 0.0.0.0/0 10.50.0.1`, 'metadata through the DHCP port, default through the gateway')
    }
    assert.ok(await pings(a.guest, ports.b.ip), 'a reaches b across the VXLAN tunnel')
    assert.ok(await pings(b.guest, ports.a.ip), 'b reaches a')
  })

  it('answers no DHCP on a subnet with DHCP disabled', async () => {
    const quiet = (await neutron('POST', '/networks', { network: { name: 'quiet' } })).network
    await neutron('POST', '/subnets', { subnet: { network_id: quiet.id, ip_version: 4, cidr: '10.51.0.0/24', enable_dhcp: false } })
    const { guest } = await guestOn('quiet', 0, quiet.id)
    assert.equal(await guest.dhcp(3), undefined)
    assert.equal((await neutron('GET', `/ports?network_id=${quiet.id}&device_owner=network:dhcp`)).ports.length, 0)
  })

  it('drops DHCP replies a guest sends, so a rogue server reaches nobody', async () => {
    const lan = (await neutron('POST', '/networks', { network: { name: 'rogue-lan' } })).network
    await neutron('POST', '/subnets', { subnet: { network_id: lan.id, ip_version: 4, cidr: '10.52.0.0/24', enable_dhcp: false } })
    // The rogue's group lets DHCP requests in, so only the firewall's rule on what it sends can stop it.
    const open = (await neutron('POST', '/security-groups', { security_group: { name: 'dhcp-in' } })).security_group
    await neutron('POST', '/security-group-rules', { security_group_rule: { security_group_id: open.id, direction: 'ingress', protocol: 'udp', port_range_min: 67, port_range_max: 67 } })
    const rogue = await guestOn('rogue', 0, lan.id, { security_groups: [open.id] })
    const victim = await guestOn('victim', 1, lan.id)
    await rogue.guest.address(`${rogue.port.fixed_ips[0].ip_address}/24`)
    const conf = `start 10.52.0.150\nend 10.52.0.160\ninterface eth0\nlease_file /dev/null\noption subnet 255.255.255.0\n`
    await rogue.guest.exec(['sh', '-c', `printf '${conf}' > /tmp/udhcpd-${rogue.guest.namespace}.conf && (busybox udhcpd -f /tmp/udhcpd-${rogue.guest.namespace}.conf >/dev/null 2>&1 &)`])
    assert.equal(await victim.guest.dhcp(3), undefined, "the rogue's offer never reached the victim")
    // The same rogue with port security off (nothing filters it, as Neutron does then): the victim takes its offer.
    await neutron('PUT', `/ports/${rogue.port.id}`, { port: { security_groups: [], port_security_enabled: false } })
    const lease = await until('the unfiltered rogue to answer', 20_000, () => victim.guest.dhcp(2))
    assert.match(lease.ip, /^10\.52\.0\.1[56]\d$/)
    await rogue.guest.exec(['rm', '-f', `/tmp/udhcpd-${rogue.guest.namespace}.conf`])
  })

  it('plugs the port of a server booted through the compute API in its build: the guest leases at once and reads its metadata', async () => {
    const port = (await neutron('POST', '/ports', { port: { network_id: networkId, name: 'booted' } })).port
    const guest = standInGuest(c.hosts[1].namespace, port.id, port.mac_address)
    guests.push(guest)
    const flavor = (await c.call('GET', '/compute/v2.1/flavors')).body.flavors[0].id
    const image = (await c.call('GET', '/image/v2/images')).body.images[0].id
    const created = await c.call('POST', '/compute/v2.1/servers', {
      server: { name: 'booted', flavorRef: flavor, imageRef: image, networks: [{ port: port.id }], availability_zone: `nova:${c.hosts[1].hostname}` },
    })
    assert.equal(created.status, 202, JSON.stringify(created.body))
    const serverId = created.body.server.id as string
    await until('the server ACTIVE', 30_000, async () => ((await c.call('GET', `/compute/v2.1/servers/${serverId}`)).body.server.status === 'ACTIVE' ? true : undefined))
    // ACTIVE means the build's networking step returned: the agent had applied the binding by then.
    const lease = await guest.dhcp(2)
    assert.equal(lease?.ip, port.fixed_ips[0].ip_address)
    // The metadata service answers the guest as its server, whatever it claims, through the DHCP port's route.
    const read = async (path: string) => (await guest.exec(['busybox', 'wget', '-q', '-O', '-', `http://169.254.169.254${path}`])).stdout
    const md = await until('metadata for the server', 15_000, async () => {
      const text = await read('/openstack/latest/meta_data.json')
      return text ? (JSON.parse(text) as Record<string, unknown>) : undefined
    })
    assert.equal(md.uuid, serverId)
    assert.equal(md.name, 'booted')
    assert.match(await read('/latest/meta-data/instance-id'), /^i-[0-9a-f]{8}$/)
    assert.equal(await read('/latest/meta-data/local-ipv4'), port.fixed_ips[0].ip_address)
    const network = JSON.parse(await read('/openstack/latest/network_data.json')) as { links: { vif_id: string }[] }
    assert.equal(network.links[0].vif_id, port.id)
    // The guest posts its password (cloudbase-init's way) through the same proxy, for its own server; the user
    // reads it through os-server-password, and a second post is refused while it is stored.
    const post = (body: string) => guest.exec(['busybox', 'wget', '-q', '-O', '-', '--post-data', body, 'http://169.254.169.254/openstack/latest/password'])
    assert.equal((await post('c2VjcmV0')).code, 0)
    assert.equal(await read('/openstack/2013-10-17/password'), 'c2VjcmV0')
    assert.deepEqual((await c.call('GET', `/compute/v2.1/servers/${serverId}/os-server-password`)).body, { password: 'c2VjcmV0' })
    const again = await post('another')
    assert.notEqual(again.code, 0)
    assert.match(again.stderr, /409 Conflict/)
    assert.equal(await read('/openstack/latest/password'), 'c2VjcmV0')
    // A path climbing out of the metadata tree stays in it: the agent, asking with its host credential, never
    // fetches its host's own endpoints (here the data-plane state of every port on the host) for a guest.
    for (const path of ['/../../network', '/%2e%2e/%2E%2e/network', '/openstack/../../../network?wait=0']) {
      const request = `GET ${path} HTTP/1.0`
      // busybox's nc quits when its input ends: the sleep keeps it reading until the answer is in.
      const raw = (await guest.exec(['sh', '-c', '{ printf "%s\\r\\n\\r\\n" "$0"; sleep 2; } | busybox timeout 4 busybox nc 169.254.169.254 80', request], 6000)).stdout
      assert.match(raw, /^HTTP\/1\.1 404 /, `${request}: ${raw.slice(0, 200)}`)
      assert.doesNotMatch(raw, /"hash"|tunnelIp/, request)
    }
    // A guest whose port belongs to no server gets nothing.
    const nobody = await ports.a.guest.exec(['busybox', 'wget', '-O', '-', 'http://169.254.169.254/openstack/latest/meta_data.json'])
    assert.match(nobody.stderr, /404 Not Found/)
    // The control plane answers a host for the ports bound to it only, with its own credential only.
    const [other, own] = c.hosts
    const credential = (h: typeof own) => (JSON.parse(readFileSync(join(h.root, 'etc/pcc/agent.json'), 'utf8')) as { credential: string }).credential
    const ask = async (host: typeof own, auth: string) =>
      (await fetch(`${c.server.url}/resmgr/v1/hosts/${host.hostId}/metadata/${port.id}/openstack/latest/meta_data.json`, { headers: { authorization: `Bearer ${auth}`, 'x-auth-token': auth } })).status
    assert.equal(await ask(own, credential(own)), 200)
    assert.equal(await ask(other, credential(other)), 404, 'the port is not bound to that host')
    assert.equal(await ask(own, credential(other)), 403, "another host's credential")
    assert.equal(await ask(own, c.adminToken), 401, 'a user token, even an admin one')
    assert.equal((await c.call('DELETE', `/compute/v2.1/servers/${serverId}`)).status, 204)
    await until('the port unbound from the deleted server', 30_000, async () => ((await neutron('GET', `/ports/${port.id}`)).port.device_id === '' ? true : undefined))
    await until('the guest cut off from its network', 10_000, async () => ((await pings(guest, ports.a.ip)) ? undefined : true))
    await neutron('DELETE', `/ports/${port.id}`)
  })

  it('closes ingress by default; a rule opens a TCP port and its removal closes it again, each within a second', async () => {
    const group = (await neutron('POST', '/security-groups', { security_group: { name: 'web' } })).security_group
    await neutron('PUT', `/ports/${ports.b.id}`, { port: { security_groups: [group.id] } })
    await ports.b.guest.exec(['sh', '-c', 'busybox nc -ll -p 8080 -e echo hi >/dev/null 2>&1 &'])
    await until('the default group no longer letting a reach b', 10_000, async () => ((await pings(ports.a.guest, ports.b.ip)) ? undefined : true))
    assert.equal(await connects(ports.a.guest, ports.b.ip, 8080), false, 'no ingress rule: closed')
    const opened = Date.now()
    const rule = (await neutron('POST', '/security-group-rules', { security_group_rule: { security_group_id: group.id, direction: 'ingress', protocol: 'tcp', port_range_min: 8080, port_range_max: 8080 } }))
      .security_group_rule
    await until('the rule to open port 8080', 10_000, async () => ((await connects(ports.a.guest, ports.b.ip, 8080)) ? true : undefined), 20)
    const openMs = Date.now() - opened
    const closed = Date.now()
    await neutron('DELETE', `/security-group-rules/${rule.id}`)
    await until('the rule removal to close port 8080', 10_000, async () => ((await connects(ports.a.guest, ports.b.ip, 8080)) ? undefined : true), 20)
    const closeMs = Date.now() - closed
    // Each probe is a process start and a connect with a 1 s timeout: the figures include that much.
    assert.ok(openMs < 2500, `opened after ${openMs} ms`)
    assert.ok(closeMs < 2500, `closed after ${closeMs} ms`)
    assert.equal(await pings(ports.a.guest, ports.b.ip), false, 'ICMP still closed')
  })

  it('cuts an established connection within a second of the removal of the rule that admitted it, across hosts', async () => {
    const group = (await neutron('GET', `/ports/${ports.b.id}`)).port.security_groups[0]
    const rule = (await neutron('POST', '/security-group-rules', { security_group_rule: { security_group_id: group, direction: 'ingress', protocol: 'tcp', port_range_min: 8090, port_range_max: 8090 } }))
      .security_group_rule
    const stream = await until('a connection from a to b:8090', 15_000, () => tcpStream(ports.a.guest, ports.b.guest, ports.b.ip, 8090, join(scratch, 'received-8090')).catch(() => undefined))
    try {
      assert.ok(await stream.flowing(), 'bytes pass while the rule exists')
      await neutron('DELETE', `/security-group-rules/${rule.id}`)
      const removed = Date.now()
      await new Promise((r) => setTimeout(r, 1000))
      const size = stream.received()
      assert.equal(await stream.flowing(1500), false, `still passing bytes ${Date.now() - removed} ms after the rule's removal (${stream.received() - size} more)`)
    } finally {
      stream.close()
    }
  })

  it('drops what a guest sends from an address or MAC that is not its own, until an allowed address pair permits it', async () => {
    // b accepts ICMP from anywhere: whatever does not arrive was dropped at a's side.
    const group = (await neutron('GET', `/ports/${ports.b.id}`)).port.security_groups[0]
    await neutron('POST', '/security-group-rules', { security_group_rule: { security_group_id: group, direction: 'ingress', protocol: 'icmp' } })
    await until('b answering pings', 10_000, async () => ((await pings(ports.a.guest, ports.b.ip)) ? true : undefined))
    await ports.a.guest.address('10.50.0.200/24')
    const before = await echoesIn(ports.b.guest)
    for (let i = 0; i < 3; i++) await pings(ports.a.guest, ports.b.ip, '10.50.0.200')
    assert.equal(await echoesIn(ports.b.guest), before, 'no echo request from a spoofed address reached b')
    assert.ok(await pings(ports.a.guest, ports.b.ip), 'its own address still works')
    await neutron('PUT', `/ports/${ports.a.id}`, { port: { allowed_address_pairs: [{ ip_address: '10.50.0.200' }] } })
    await until('the allowed address pair to let 10.50.0.200 through', 10_000, async () => ((await pings(ports.a.guest, ports.b.ip, '10.50.0.200')) ? true : undefined))
    // A foreign MAC is dropped whatever the address.
    await ports.a.guest.exec(['ip', 'link', 'set', 'eth0', 'address', 'fa:16:3e:99:99:99'])
    const beforeMac = await echoesIn(ports.b.guest)
    for (let i = 0; i < 3; i++) await pings(ports.a.guest, ports.b.ip)
    assert.equal(await echoesIn(ports.b.guest), beforeMac, 'nothing from a foreign MAC reached b')
    await ports.a.guest.exec(['ip', 'link', 'set', 'eth0', 'address', ports.a.mac])
    await until('a back on its own MAC', 10_000, async () => ((await pings(ports.a.guest, ports.b.ip)) ? true : undefined))
  })

  it('routes guests to the external network through SNAT, and reaches a guest from outside through a floating IP', async () => {
    const public_ = (await neutron('POST', '/networks', { network: { name: 'public', 'router:external': true, 'provider:network_type': 'flat', 'provider:physical_network': 'public' } })).network
    await neutron('POST', '/subnets', {
      subnet: { network_id: public_.id, ip_version: 4, cidr: '203.0.113.0/24', gateway_ip: '203.0.113.1', enable_dhcp: false, allocation_pools: [{ start: '203.0.113.10', end: '203.0.113.100' }] },
    })
    const router = (await neutron('POST', '/routers', { router: { name: 'edge', external_gateway_info: { network_id: public_.id } } })).router
    await neutron('PUT', `/routers/${router.id}/add_router_interface`, { subnet_id: subnetId })
    const gatewayIp = router.external_gateway_info.external_fixed_ips[0].ip_address
    // b sits on the other host than the router: its traffic crosses the tunnel to the router, then leaves.
    await until('b reaching the external network through the router', 20_000, async () => ((await pings(ports.b.guest, '203.0.113.1')) ? true : undefined))
    const seen = await runIn(ext.namespace, ['ip', 'neigh', 'show', gatewayIp])
    assert.match(seen.stdout, /lladdr/, 'the outside talked to the router gateway (SNAT), it has no route to the tenant subnet')
    const fip = (await neutron('POST', '/floatingips', { floatingip: { floating_network_id: public_.id, port_id: ports.b.id } })).floatingip
    await until('the floating IP to reach b from outside', 20_000, async () => ((await runIn(ext.namespace, ['busybox', 'ping', '-c', '1', '-W', '1', fip.floating_ip_address])).code === 0 ? true : undefined))
    // Hairpin: b reaches its own floating IP, and a (on the other host) reaches b through it; the router SNATs both.
    assert.ok(await pings(ports.b.guest, fip.floating_ip_address), 'b pings its own floating IP')
    assert.ok(await pings(ports.a.guest, fip.floating_ip_address), "a pings b's floating IP")
    // The network node decommissioned: by the time its role's removal is confirmed, its router namespace is gone.
    const node = c.hosts[0]
    assert.equal((await c.call('DELETE', `/resmgr/v1/hosts/${node.hostId}/roles/network`)).status, 200)
    await until('the network role removed', 20_000, async () => ((await c.call('GET', `/resmgr/v1/hosts/${node.hostId}`)).body.roles.includes('network') ? undefined : true))
    const backend = new RemoteLinuxBackend(node.namespace, node.root, node.address)
    try {
      assert.ok(!(await backend.inventory()).namespaces.some((n) => n.startsWith('qrouter-')), 'no router namespace left on the former network node')
    } finally {
      await backend.close()
    }
  })

  it('keeps guests connected while an agent is down, and its restart rebuilds nothing that is right', async () => {
    const host = c.hosts[1]
    const indexes = async () => JSON.parse((await runIn(host.namespace, ['ip', '-j', 'link', 'show'])).stdout) as { ifname: string; ifindex: number }[]
    const before = (await indexes()).filter((l) => /^(tap|brq|vxlan-)/.test(l.ifname))
    await host.kill()
    assert.ok(await pings(ports.a.guest, ports.b.ip), 'the data plane outlives the agent')
    host.start()
    await until(`${host.hostname}'s agent back`, 20_000, async () => {
      const view = await c.call('GET', `/resmgr/v1/hosts/${host.hostId}`)
      return view.body.info.responding ? true : undefined
    })
    // Give it a poll's worth of time to re-apply the state, then check nothing was made anew.
    await new Promise((r) => setTimeout(r, 2000))
    const afterRestart = (await indexes()).filter((l) => /^(tap|brq|vxlan-)/.test(l.ifname))
    assert.deepEqual(afterRestart, before)
    assert.ok(await pings(ports.a.guest, ports.b.ip))
  })

  it('leaves no device, rule, namespace or DHCP server behind once everything is deleted', async () => {
    for (const f of (await neutron('GET', '/floatingips')).floatingips) await neutron('DELETE', `/floatingips/${f.id}`)
    for (const r of (await neutron('GET', '/routers')).routers) {
      for (const p of (await neutron('GET', `/ports?device_id=${r.id}&device_owner=network:router_interface`)).ports) await neutron('PUT', `/routers/${r.id}/remove_router_interface`, { port_id: p.id })
      await neutron('DELETE', `/routers/${r.id}`)
    }
    for (const p of Object.values(ports)) await neutron('DELETE', `/ports/${p.id}`)
    // The guests go with their ports (as QEMU's taps go with QEMU); the back end never deletes a device it did not make.
    for (const g of guests) g.close()
    for (const n of (await neutron('GET', '/networks')).networks) await neutron('DELETE', `/networks/${n.id}`)
    for (const h of c.hosts) {
      const backend = new RemoteLinuxBackend(h.namespace, h.root, h.address)
      try {
        const empty = { bridges: [], tunnels: [], taps: [], namespaces: [], dhcpServers: [], firewallPorts: [] }
        let last: unknown
        await until(`${h.hostname} to be empty`, 15_000, async () => {
          const inv = await backend.inventory()
          last = inv
          return JSON.stringify(inv) === JSON.stringify(empty) ? inv : undefined
        }).catch((err: Error) => {
          throw new Error(`${err.message}: still ${JSON.stringify(last)}`)
        })
        const tables = await runIn(h.namespace, ['nft', 'list', 'tables'])
        assert.doesNotMatch(tables.stdout, /pcc/, 'no nftables table left')
      } finally {
        await backend.close()
      }
    }
  })
})
