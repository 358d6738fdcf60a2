/**
 * Guest networking with real guests: two agent hosts, each in its own network namespace running pcc-agent with
 * the QEMU driver (TCG) and the Linux network back end, the first also a network node with a router; an
 * "external" network is one more namespace on the first host's interface. Each guest (the pcc guest image) runs
 * a probe loop from its user data and prints what it sees on its serial console; the test reads the guests' own
 * words through the console-log API:
 *
 * - both get their assigned addresses (and MTU 1450) by DHCP and read their metadata from 169.254.169.254;
 * - each pings the other across the VXLAN tunnel, and reaches the external network through the router's SNAT;
 * - a security-group rule added on the second guest opens TCP 8080 to the first, removed closes it;
 * - the second guest's pings from an address not its own never reach the first (its echo counter stands still);
 * - the external namespace reaches the second guest through a floating IP, and so does the guest itself (hairpin);
 * - deleting everything leaves no QEMU, device, rule, namespace or dnsmasq on either host.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { until } from '../../src/testkit/compute-api.js'
import { dataplaneMissing, externalNetwork, startDataplaneCluster, type DataplaneCluster } from '../../src/testkit/dataplane-cluster.js'
import { RemoteLinuxBackend } from '../../src/testkit/network-backend-host.js'
import { guestImage, qemuLeftovers, realGuestsMissing } from '../../src/testkit/qemu.js'
import { runIn } from '../../src/testkit/stand-in-guest.js'
import { EXTERNAL_GATEWAY, latest, probeScript } from './guest-probe.js'

const missing = realGuestsMissing() ?? dataplaneMissing()
describe('guest networking with real guests on two agent hosts', { skip: missing }, () => {
  let c: DataplaneCluster
  let ext: { namespace: string; close(): void }
  const servers: { id: string; host: number }[] = []

  before(async () => {
    c = await startDataplaneCluster({
      hosts: 2,
      networkHosts: [0],
      driver: 'qemu',
      qemu: { accel: 'tcg' },
      physicalInterfaces: (i): Record<string, string> => (i === 0 ? { public: 'ext0' } : {}),
    })
    ext = externalNetwork(c.hosts[0].namespace, 'ext0', `${EXTERNAL_GATEWAY}/24`)
  })
  after(async () => {
    for (const s of servers) await c?.call('DELETE', `/compute/v2.1/servers/${s.id}`).catch(() => {})
    ext?.close()
    await c?.close()
  })

  const neutron = (method: string, path: string, body?: unknown) => c.neutron(method, path, body)
  const consoleOf = async (id: string) => ((await c.call('POST', `/compute/v2.1/servers/${id}/action`, { 'os-getConsoleOutput': {} })).body?.output as string | undefined) ?? ''
  const waitFor = (id: string, what: string, value: string, ms = 120_000) =>
    until(`${what} ${value} in the console of ${id}`, ms, async () => {
      const seen = latest(await consoleOf(id), what)
      return seen?.value === value ? seen : undefined
    }, 1000)

  let a: { id: string; ip: string; port: string }
  let b: { id: string; ip: string; port: string }
  let bGroup: string
  let publicNet: string

  it('two guests on one tenant network on different hosts get their addresses by DHCP, read their metadata and ping each other', async () => {
    const image = await guestImage()
    const created = (await c.call('POST', '/image/v2/images', { name: 'pcc-guest', disk_format: 'qcow2', container_format: 'bare' })).body
    const upload = await fetch(`${c.server.url}/image/v2/images/${created.id}/file`, {
      method: 'PUT',
      headers: { 'x-auth-token': c.adminToken, 'content-type': 'application/octet-stream' },
      body: readFileSync(image.disk.path),
    })
    assert.equal(upload.status, 204)

    const net = (await neutron('POST', '/networks', { network: { name: 'tenant' } })).network
    const subnet = (await neutron('POST', '/subnets', { subnet: { network_id: net.id, ip_version: 4, cidr: '10.60.0.0/24' } })).subnet
    publicNet = (await neutron('POST', '/networks', { network: { name: 'public', 'router:external': true, 'provider:network_type': 'flat', 'provider:physical_network': 'public' } })).network.id
    await neutron('POST', '/subnets', { subnet: { network_id: publicNet, ip_version: 4, cidr: '203.0.113.0/24', gateway_ip: EXTERNAL_GATEWAY, enable_dhcp: false, allocation_pools: [{ start: '203.0.113.10', end: '203.0.113.100' }] } })
    const router = (await neutron('POST', '/routers', { router: { name: 'edge', external_gateway_info: { network_id: publicNet } } })).router
    await neutron('PUT', `/routers/${router.id}/add_router_interface`, { subnet_id: subnet.id })
    // Each guest answers ICMP from anywhere (so only anti-spoofing can stop a spoofed ping); TCP 8080 stays closed.
    const group = async (name: string) => {
      const g = (await neutron('POST', '/security-groups', { security_group: { name } })).security_group
      await neutron('POST', '/security-group-rules', { security_group_rule: { security_group_id: g.id, direction: 'ingress', protocol: 'icmp' } })
      return g.id as string
    }
    const aGroup = await group('guest-a')
    bGroup = await group('guest-b')
    const portA = (await neutron('POST', '/ports', { port: { network_id: net.id, security_groups: [aGroup] } })).port
    const portB = (await neutron('POST', '/ports', { port: { network_id: net.id, security_groups: [bGroup] } })).port
    a = { id: '', ip: portA.fixed_ips[0].ip_address, port: portA.id }
    b = { id: '', ip: portB.fixed_ips[0].ip_address, port: portB.id }
    const boot = async (name: string, port: string, host: number, userData: string) => {
      const r = await c.call('POST', '/compute/v2.1/servers', {
        server: { name, imageRef: created.id, flavorRef: '1', networks: [{ port }], availability_zone: `nova:${c.hosts[host].hostname}`, user_data: Buffer.from(userData).toString('base64') },
      })
      assert.equal(r.status, 202, JSON.stringify(r.body))
      servers.push({ id: r.body.server.id, host })
      return r.body.server.id as string
    }
    a.id = await boot('guest-a', a.port, 0, probeScript(b.ip, 'pinger'))
    b.id = await boot('guest-b', b.port, 1, probeScript(a.ip, 'spoofer'))
    for (const s of [a, b]) {
      await until(`${s.id} ACTIVE`, 240_000, async () => {
        const st = (await c.call('GET', `/compute/v2.1/servers/${s.id}`)).body.server
        assert.notEqual(st.status, 'ERROR', JSON.stringify(st.fault))
        return st.status === 'ACTIVE' ? true : undefined
      }, 1000)
    }
    for (const s of [a, b]) {
      const log = await until(`the address of ${s.id}`, 180_000, async () => {
        const text = await consoleOf(s.id)
        // The values, not the user data's own echo lines (the console shows the script too).
        return /pcc-guest: address eth0 \d/.test(text) && /pcc-guest: ec2-instance-id i-[0-9a-f]{8}/.test(text) ? text : undefined
      }, 1000)
      assert.match(log, new RegExp(`pcc-guest: address eth0 ${s.ip.replaceAll('.', '\\.')}/24 gateway 10\\.60\\.0\\.1 mtu 1450`))
      assert.match(log, new RegExp(`pcc-guest: metadata-uuid ${s.id}`), 'the guest read its own uuid from 169.254.169.254')
      assert.match(log, /pcc-guest: ec2-instance-id i-[0-9a-f]{8}/)
    }
    // The first pings the second across the tunnel (and gets its replies); the other way is the spoofing test's.
    await waitFor(a.id, 'peer-ping', 'ok')
  })

  it('reaches the external network through SNAT, and a floating IP reaches the guest from outside and from itself', async () => {
    await waitFor(b.id, 'external-ping', 'ok')
    const fip = (await neutron('POST', '/floatingips', { floatingip: { floating_network_id: publicNet, port_id: b.port } })).floatingip
    await until('the floating IP answering from outside', 60_000, async () => ((await runIn(ext.namespace, ['busybox', 'ping', '-c', '1', '-W', '1', fip.floating_ip_address])).code === 0 ? true : undefined), 500)
    // Hairpin: the guest pings its own floating IP (out to the router, DNATed and SNATed back in).
    assert.equal((await c.call('POST', `/compute/v2.1/servers/${b.id}/metadata`, { metadata: { hairpin: fip.floating_ip_address } })).status, 200)
    await waitFor(b.id, 'hairpin-ping', 'ok', 60_000)
  })

  it('opens TCP 8080 on the second guest when a rule allows it, and closes it when the rule goes', async () => {
    await waitFor(a.id, 'peer-tcp', 'closed', 60_000)
    const rule = (await neutron('POST', '/security-group-rules', { security_group_rule: { security_group_id: bGroup, direction: 'ingress', protocol: 'tcp', port_range_min: 8080, port_range_max: 8080 } })).security_group_rule
    await waitFor(a.id, 'peer-tcp', 'open', 30_000)
    await neutron('DELETE', `/security-group-rules/${rule.id}`)
    await waitFor(a.id, 'peer-tcp', 'closed', 30_000)
  })

  it('drops pings the second guest sends from an address that is not its own, and passes its own', async () => {
    // Nothing pings the first guest yet: its echo counter stands still.
    const before = Number(
      (await until('the first guest counting echo requests', 60_000, async () => latest(await consoleOf(a.id), 'in-echos'), 1000)).value,
    )
    assert.equal((await c.call('POST', `/compute/v2.1/servers/${b.id}/metadata`, { metadata: { spoof: 'now' } })).status, 200)
    await waitFor(b.id, 'own-pings', 'ok', 60_000)
    // Two rounds later, the first guest has counted the three pings from the second's own address, and no more.
    const round = latest(await consoleOf(a.id), 'in-echos')!.round
    await until('two more rounds', 30_000, async () => ((latest(await consoleOf(a.id), 'in-echos')?.round ?? 0) >= round + 2 ? true : undefined), 1000)
    assert.match(await consoleOf(b.id), /pcc-guest: spoofed-pings-sent 3/)
    assert.equal(Number(latest(await consoleOf(a.id), 'in-echos')!.value) - before, 3, 'the 3 spoofed echo requests never arrived')
  })

  it('leaves no QEMU, device, rule, namespace or DHCP server behind once everything is deleted', async () => {
    for (const s of servers.splice(0)) {
      assert.equal((await c.call('DELETE', `/compute/v2.1/servers/${s.id}`)).status, 204)
      await until(`server ${s.id} gone`, 120_000, async () => ((await c.call('GET', `/compute/v2.1/servers/${s.id}`)).status === 404 ? true : undefined), 500)
      assert.deepEqual(qemuLeftovers(c.hosts[s.host].root, s.id), [])
    }
    for (const f of (await neutron('GET', '/floatingips')).floatingips) await neutron('DELETE', `/floatingips/${f.id}`)
    for (const r of (await neutron('GET', '/routers')).routers) {
      for (const p of (await neutron('GET', `/ports?device_id=${r.id}&device_owner=network:router_interface`)).ports) await neutron('PUT', `/routers/${r.id}/remove_router_interface`, { port_id: p.id })
      await neutron('DELETE', `/routers/${r.id}`)
    }
    for (const p of [a.port, b.port]) await neutron('DELETE', `/ports/${p}`)
    for (const n of (await neutron('GET', '/networks')).networks) await neutron('DELETE', `/networks/${n.id}`)
    const empty = JSON.stringify({ bridges: [], tunnels: [], taps: [], namespaces: [], dhcpServers: [], firewallPorts: [] })
    for (const h of c.hosts) {
      const backend = new RemoteLinuxBackend(h.namespace, h.root, h.address)
      try {
        // Within one long-poll period (25 s) plus the apply, even if a wake-up was missed; the assertion names what is left.
        let left = ''
        await until(`${h.hostname} empty`, 60_000, async () => ((left = JSON.stringify(await backend.inventory())) === empty ? true : undefined), 500).catch(() => undefined)
        assert.equal(left, empty, `${h.hostname} still has networking left`)
        assert.doesNotMatch((await runIn(h.namespace, ['nft', 'list', 'tables'])).stdout, /pcc/)
      } finally {
        await backend.close()
      }
    }
  })
})
