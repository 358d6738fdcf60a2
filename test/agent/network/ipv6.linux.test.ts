/**
 * IPv6 on tenant subnets, on the Linux back end: the network's DHCP server advertises a SLAAC subnet's prefix and
 * guests configure exactly the EUI-64 addresses IPAM gave their ports (the kernel's own SLAAC, in stand-in guests),
 * reaching each other through their security groups; on a DHCPv6-stateful subnet it advertises the managed flag
 * (no SLAAC) and answers a DHCPv6 Solicit with exactly the port's address. The DHCPv6 client is a few lines of
 * Node over a UDP socket in the guest's namespace (busybox has no udhcpc6), speaking RFC 8415 on the wire.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DataplaneNetwork, DataplaneRule, HostNetworkState, Ipv6Mode } from '../../../src/contracts/network/dataplane.js'
import { eui64, formatIp, parseCidr } from '../../../src/lib/ip.js'
import { until } from '../../../src/testkit/compute-api.js'
import { dataplaneMissing } from '../../../src/testkit/dataplane-cluster.js'
import { standInGuest, type StandInGuest } from '../../../src/testkit/stand-in-guest.js'
import { closeHost, linuxHost, type LinuxHost } from './linux-host.js'

const missing = dataplaneMissing()

const ID = {
  slaacNet: 'a8000000-0000-4000-8000-000000000001',
  slaacSub: 'a8100000-0000-4000-8000-000000000001',
  slaacDhcp: 'a8200000-0000-4000-8000-000000000001',
  statefulNet: 'b8000000-0000-4000-8000-000000000002',
  statefulSub: 'b8100000-0000-4000-8000-000000000002',
  statefulDhcp: 'b8200000-0000-4000-8000-000000000002',
  a: 'c8100000-0000-4000-8000-000000000001',
  b: 'c8200000-0000-4000-8000-000000000002',
  c: 'c8300000-0000-4000-8000-000000000003',
  group: 'd8000000-0000-4000-8000-000000000001',
}
const MAC = { a: 'fa:16:3e:80:00:0a', b: 'fa:16:3e:80:00:0b', c: 'fa:16:3e:81:00:0c', slaacDhcp: 'fa:16:3e:80:00:02', statefulDhcp: 'fa:16:3e:81:00:02' }
const SLAAC = '2001:db8:80::/64'
const STATEFUL = '2001:db8:81::/64'
const slaacAddress = (mac: string) => formatIp(6, eui64(parseCidr(SLAAC)!.network, mac))
const C_ADDRESS = '2001:db8:81::10'

function network(id: string, vni: number, subnetId: string, cidr: string, mode: Ipv6Mode, dhcp: { portId: string; mac: string; ip: string }): DataplaneNetwork {
  return {
    id, type: 'vxlan', segmentationId: vni, physicalNetwork: null, mtu: 1450, peers: [],
    subnets: [{ id: subnetId, ipVersion: 6, cidr, gatewayIp: null, dnsNameservers: ['2001:db8::53'], hostRoutes: [], enableDhcp: true, ipv6RaMode: mode, ipv6AddressMode: mode }],
    dhcp: { portId: dhcp.portId, mac: dhcp.mac, fixedIps: [{ subnetId, ipAddress: dhcp.ip }] },
  }
}

function hostState(tunnelIp: string): HostNetworkState {
  const rule = (id: string, direction: 'ingress' | 'egress', protocol: string | null): DataplaneRule => ({
    id, direction, ethertype: 'IPv6', protocol, portRangeMin: null, portRangeMax: null, remoteIpPrefix: null, remoteGroupId: null,
  })
  const port = (id: string, networkId: string, mac: string, subnetId: string, ip: string) => ({
    id, networkId, deviceId: `vm-${id}`, mac, fixedIps: [{ subnetId, ipAddress: ip }], adminStateUp: true, portSecurityEnabled: true, allowedAddressPairs: [], securityGroupIds: [ID.group],
  })
  return {
    tunnelIp,
    networks: [
      network(ID.slaacNet, 180, ID.slaacSub, SLAAC, 'slaac', { portId: ID.slaacDhcp, mac: MAC.slaacDhcp, ip: slaacAddress(MAC.slaacDhcp) }),
      network(ID.statefulNet, 181, ID.statefulSub, STATEFUL, 'dhcpv6-stateful', { portId: ID.statefulDhcp, mac: MAC.statefulDhcp, ip: '2001:db8:81::2' }),
    ],
    ports: [
      port(ID.a, ID.slaacNet, MAC.a, ID.slaacSub, slaacAddress(MAC.a)),
      port(ID.b, ID.slaacNet, MAC.b, ID.slaacSub, slaacAddress(MAC.b)),
      port(ID.c, ID.statefulNet, MAC.c, ID.statefulSub, C_ADDRESS),
    ],
    securityGroups: [{ id: ID.group, rules: [rule('egress', 'egress', null), rule('icmp', 'ingress', 'ipv6-icmp')] }],
    groupMembers: [{ groupId: ID.group, addresses: [slaacAddress(MAC.a), slaacAddress(MAC.b), C_ADDRESS] }],
    routers: [],
  }
}

/**
 * A DHCPv6 client for one exchange: a Solicit (client id DUID-LL from the MAC, one IA_NA, DNS servers asked
 * for) to ff02::1:2 from port 546 on eth0, then prints the Advertise's IA_NA addresses and DNS servers as JSON.
 */
const DHCPV6_CLIENT = `
import dgram from 'node:dgram'
const mac = process.argv[2].split(':').map((h) => parseInt(h, 16))
const option = (code, body) => Buffer.concat([Buffer.from([code >> 8, code & 255, body.length >> 8, body.length & 255]), body])
const solicit = Buffer.concat([
  Buffer.from([1, 0x12, 0x34, 0x56]),
  option(1, Buffer.from([0, 3, 0, 1, ...mac])),
  option(3, Buffer.alloc(12, 0).fill(7, 0, 4)),
  option(8, Buffer.from([0, 0])),
  option(6, Buffer.from([0, 23])),
])
const socket = dgram.createSocket({ type: 'udp6', reuseAddr: true })
const timer = setTimeout(() => { console.log(JSON.stringify({ error: 'no answer' })); process.exit(0) }, 8000)
socket.on('message', (msg) => {
  if (msg[0] !== 2) return
  const out = { addresses: [], dns: [] }
  const walk = (buf, at) => {
    while (at + 4 <= buf.length) {
      const code = buf.readUInt16BE(at), len = buf.readUInt16BE(at + 2), body = buf.subarray(at + 4, at + 4 + len)
      if (code === 3) walk(body, 12)
      if (code === 5) out.addresses.push([...Array(8)].map((_, i) => body.readUInt16BE(i * 2).toString(16)).join(':'))
      if (code === 23) for (let i = 0; i + 16 <= body.length; i += 16) out.dns.push([...Array(8)].map((_, j) => body.readUInt16BE(i + j * 2).toString(16)).join(':'))
      at += 4 + len
    }
  }
  walk(msg, 4)
  clearTimeout(timer)
  console.log(JSON.stringify(out))
  socket.close()
})
socket.bind(546, () => {
  socket.setMulticastInterface('::%eth0')
  const send = () => socket.send(solicit, 547, 'ff02::1:2%eth0')
  send()
  setInterval(send, 1000).unref()
})
`

/** An IPv6 address in full, lower case, no zero compression (how the client prints them). */
const expand = (address: string) => {
  const [head, tail = ''] = address.split('::')
  const h = head ? head.split(':') : []
  const t = tail ? tail.split(':') : []
  return [...h, ...Array(8 - h.length - t.length).fill('0'), ...t].map((x) => parseInt(x, 16).toString(16)).join(':')
}

describe('Linux network back end: IPv6 subnets (router advertisements and DHCPv6)', { skip: missing }, () => {
  let h: LinuxHost
  let dir: string
  const guests: Record<'a' | 'b' | 'c', StandInGuest> = {} as never

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pcc-ipv6-'))
    h = linuxHost()
    guests.a = standInGuest(h.namespace, ID.a, MAC.a)
    guests.b = standInGuest(h.namespace, ID.b, MAC.b)
    guests.c = standInGuest(h.namespace, ID.c, MAC.c)
    await h.backend.apply(hostState(h.address))
  })
  after(async () => {
    await closeHost(h, () => {
      for (const g of Object.values(guests)) g.close()
    }, dir)
  })

  const globalAddresses = async (g: StandInGuest) => {
    const out = JSON.parse((await g.exec(['ip', '-j', '-6', 'addr', 'show', 'dev', 'eth0', 'scope', 'global'])).stdout || '[]') as { addr_info?: { local: string }[] }[]
    return (out[0]?.addr_info ?? []).flatMap((a) => (a.local ? [a.local] : []))
  }

  it("advertises a SLAAC subnet's prefix: each guest configures exactly its port's EUI-64 address, and they reach each other", async () => {
    for (const name of ['a', 'b'] as const) {
      // A guest asks at once (router solicitation); the answer is immediate.
      const got = await until(`${name}'s SLAAC address`, 20_000, async () => {
        const list = await globalAddresses(guests[name])
        return list.length ? list : undefined
      }, 200)
      assert.deepEqual(got, [slaacAddress(MAC[name])])
    }
    const ping = await until('a reaching b over IPv6', 10_000, async () => {
      const r = await guests.a.exec(['busybox', 'ping', '-6', '-c', '1', '-W', '1', slaacAddress(MAC.b)])
      return r.code === 0 ? r : undefined
    })
    assert.match(ping.stdout, /1 packets received/)
    const routes = await guests.a.exec(['ip', '-6', 'route', 'show', 'default'])
    assert.equal(routes.stdout.trim(), '', 'the DHCP server advertises no default router (router lifetime 0)')
  })

  it('writes the modes into dnsmasq: an RA-only range for SLAAC, a static DHCPv6 range with host entries for stateful', () => {
    const files = (net: string) => ({ conf: readFileSync(join(h.root, 'var/lib/pcc/dhcp', net, 'dnsmasq.conf'), 'utf8'), hosts: readFileSync(join(h.root, 'var/lib/pcc/dhcp', net, 'host'), 'utf8') })
    const slaac = files(ID.slaacNet)
    assert.match(slaac.conf, new RegExp(`^dhcp-range=set:subnet-${ID.slaacSub},2001:db8:80::,ra-only,64,86400s$`, 'm'))
    assert.match(slaac.conf, new RegExp(`^enable-ra\nra-param=ns-${ID.slaacDhcp.slice(0, 11)},mtu:1450,60,0$`, 'm'))
    assert.match(slaac.conf, /^dhcp-option=tag:subnet-[0-9a-f-]+,option6:dns-server,\[2001:db8::53\]$/m)
    assert.equal(slaac.hosts, '', 'SLAAC addresses are not handed out')
    const stateful = files(ID.statefulNet)
    assert.match(stateful.conf, new RegExp(`^dhcp-range=set:subnet-${ID.statefulSub},2001:db8:81::,static,64,86400s$`, 'm'))
    assert.equal(stateful.hosts, `${MAC.c},host-2001-db8-81--10,[2001:db8:81::10]\n`)
  })

  it('answers a DHCPv6 Solicit on a stateful subnet with exactly the port address, and advertises no prefix for SLAAC', async () => {
    const script = join(dir, 'dhcpv6-client.mjs')
    writeFileSync(script, DHCPV6_CLIENT)
    // The client speaks from its link-local address, usable once duplicate address detection is over.
    await until("c's link-local address", 10_000, async () => {
      const r = await guests.c.exec(['ip', '-6', 'addr', 'show', 'dev', 'eth0', 'scope', 'link'])
      return /inet6 fe80/.test(r.stdout) && !/tentative/.test(r.stdout) ? true : undefined
    })
    const answer = await new Promise<{ addresses?: string[]; dns?: string[]; error?: string }>((resolve, reject) => {
      execFile('ip', ['netns', 'exec', guests.c.namespace, process.execPath, script, MAC.c], { timeout: 15_000 }, (err, stdout) => {
        if (err) reject(err)
        else resolve(JSON.parse(stdout.trim().split('\n').pop()!) as never)
      })
    })
    assert.deepEqual(answer, { addresses: [expand(C_ADDRESS)], dns: [expand('2001:db8::53')] })
    assert.deepEqual(await globalAddresses(guests.c), [], 'the managed flag, no autonomous prefix: no SLAAC address')
  })
})
