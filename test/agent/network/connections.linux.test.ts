/**
 * The Linux back end and connections that already run: a rule, a group, a remote group's member or a port going
 * cuts the established connections it admitted (their conntrack entries are deleted) while the ones another rule
 * still admits go on; and the router answers a guest at its own floating IP and another guest of its network at
 * it (hairpin). Two stand-in guests (namespaces behind veths named as their ports' taps) on one test host, the
 * state applied to the back end directly; the connections are busybox nc streams whose bytes are counted.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DataplaneRule, HostNetworkState } from '../../../src/contracts/network/dataplane.js'
import { until } from '../../../src/testkit/compute-api.js'
import { dataplaneMissing } from '../../../src/testkit/dataplane-cluster.js'
import { runIn, standInGuest, tcpStream, type StandInGuest, type TcpStream } from '../../../src/testkit/stand-in-guest.js'
import { closeHost, linuxHost, type LinuxHost } from './linux-host.js'

const missing = dataplaneMissing() ?? (commandMissing('conntrack') ? 'conntrack is not installed' : undefined)

function commandMissing(name: string): boolean {
  return !process.env.PATH?.split(':').some((dir) => {
    try {
      return statSync(join(dir, name)).isFile()
    } catch {
      return false
    }
  })
}

const ID = {
  net: 'a7000000-0000-4000-8000-000000000001',
  sub: 'a7100000-0000-4000-8000-000000000001',
  ext: 'e7000000-0000-4000-8000-000000000003',
  extSub: 'e7100000-0000-4000-8000-000000000003',
  server: 'c7100000-0000-4000-8000-000000000001',
  client: 'c7200000-0000-4000-8000-000000000002',
  router: 'f7000000-0000-4000-8000-000000000001',
  routerIf: 'f7100000-0000-4000-8000-000000000001',
  routerGw: 'f7200000-0000-4000-8000-000000000002',
  /**
   * The server's groups: `wide` admits TCP 8000–8199, `narrow` 8100–8199, 8300 and ICMP, and 8200–8299 from the
   * members of `peers`; each stream takes a port of its own in the range of the rules it tests.
   */
  wide: 'd7000000-0000-4000-8000-00000000000a',
  narrow: 'd7000000-0000-4000-8000-00000000000b',
  /** The client's groups: `out` lets it send anything, `peers` is a remote group of the server's rules. */
  out: 'd7000000-0000-4000-8000-00000000000c',
  peers: 'd7000000-0000-4000-8000-00000000000d',
}
const SERVER_IP = '10.70.0.11'
const CLIENT_IP = '10.70.0.12'
const FLOATING_IP = '198.51.100.20'

const rule = (id: string, direction: 'ingress' | 'egress', protocol: string | null, ports?: [number, number], remoteGroupId: string | null = null): DataplaneRule => ({
  id, direction, ethertype: 'IPv4', protocol, portRangeMin: ports?.[0] ?? null, portRangeMax: ports?.[1] ?? null, remoteIpPrefix: null, remoteGroupId,
})

interface Variant {
  /** The rules of `wide` (default: TCP 8000–8199). */
  wideRules?: DataplaneRule[]
  serverGroups?: string[]
  /** Whether the client is a member of `peers`. */
  clientInPeers?: boolean
  /** Whether the client's port is on the host at all. */
  client?: boolean
}

function hostState(tunnelIp: string, v: Variant = {}): HostNetworkState {
  const clientGroups = v.clientInPeers === false ? [ID.out] : [ID.out, ID.peers]
  const port = (id: string, mac: string, ip: string, securityGroupIds: string[]) => ({
    id, networkId: ID.net, deviceId: `vm-${id}`, mac, fixedIps: [{ subnetId: ID.sub, ipAddress: ip }], adminStateUp: true, portSecurityEnabled: true, allowedAddressPairs: [], securityGroupIds,
  })
  return {
    tunnelIp,
    networks: [
      {
        id: ID.net, type: 'vxlan', segmentationId: 170, physicalNetwork: null, mtu: 1450, dhcp: null, peers: [],
        subnets: [{ id: ID.sub, ipVersion: 4, cidr: '10.70.0.0/24', gatewayIp: '10.70.0.1', dnsNameservers: [], hostRoutes: [], enableDhcp: false, ipv6RaMode: null, ipv6AddressMode: null }],
      },
      {
        id: ID.ext, type: 'flat', segmentationId: null, physicalNetwork: 'public', mtu: 1500, dhcp: null, peers: [],
        subnets: [{ id: ID.extSub, ipVersion: 4, cidr: '198.51.100.0/24', gatewayIp: '198.51.100.1', dnsNameservers: [], hostRoutes: [], enableDhcp: false, ipv6RaMode: null, ipv6AddressMode: null }],
      },
    ],
    ports: [
      port(ID.server, 'fa:16:3e:70:00:11', SERVER_IP, v.serverGroups ?? [ID.wide, ID.narrow]),
      ...(v.client === false ? [] : [port(ID.client, 'fa:16:3e:70:00:12', CLIENT_IP, clientGroups)]),
    ],
    securityGroups: [
      { id: ID.wide, rules: v.wideRules ?? [rule('wide-tcp', 'ingress', 'tcp', [8000, 8199])] },
      {
        id: ID.narrow,
        rules: [
          rule('narrow-egress', 'egress', null),
          rule('narrow-tcp', 'ingress', 'tcp', [8100, 8199]),
          rule('narrow-peers', 'ingress', 'tcp', [8200, 8299], ID.peers),
          rule('narrow-echo', 'ingress', 'tcp', [8300, 8300]),
          rule('narrow-icmp', 'ingress', 'icmp'),
        ],
      },
      { id: ID.out, rules: [rule('out-egress', 'egress', null)] },
      { id: ID.peers, rules: [] },
    ].sort((a, b) => a.id.localeCompare(b.id)),
    groupMembers: [
      { groupId: ID.narrow, addresses: [SERVER_IP] },
      { groupId: ID.out, addresses: v.client === false ? [] : [CLIENT_IP] },
      { groupId: ID.peers, addresses: v.client !== false && v.clientInPeers !== false ? [CLIENT_IP] : [] },
      { groupId: ID.wide, addresses: [SERVER_IP] },
    ],
    routers: [
      {
        id: ID.router,
        gateway: { portId: ID.routerGw, networkId: ID.ext, mac: 'fa:16:3e:7e:00:0a', addresses: ['198.51.100.10/24'], nexthop: '198.51.100.1', enableSnat: true },
        interfaces: [{ portId: ID.routerIf, networkId: ID.net, mac: 'fa:16:3e:70:00:01', addresses: ['10.70.0.1/24'] }],
        routes: [],
        floatingIps: [{ floatingIpAddress: FLOATING_IP, fixedIpAddress: SERVER_IP }],
      },
    ],
  }
}

describe('Linux network back end: running connections and hairpin', { skip: missing }, () => {
  let h: LinuxHost
  let server: StandInGuest
  let client: StandInGuest
  let dir: string
  const streams: TcpStream[] = []
  const state = (v?: Variant) => hostState(h.address, v)

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pcc-conntrack-'))
    h = linuxHost()
    server = standInGuest(h.namespace, ID.server, 'fa:16:3e:70:00:11')
    client = standInGuest(h.namespace, ID.client, 'fa:16:3e:70:00:12')
    await h.backend.apply(state())
    for (const [g, ip] of [[server, SERVER_IP], [client, CLIENT_IP]] as const) {
      await g.address(`${ip}/24`)
      await g.exec(['ip', 'route', 'add', 'default', 'via', '10.70.0.1'])
    }
    await until('the client reaching the server', 10_000, async () => ((await client.exec(['busybox', 'ping', '-c', '1', '-W', '1', SERVER_IP])).code === 0 ? true : undefined))
  })
  after(async () => {
    await closeHost(h, () => {
      for (const s of streams) s.close()
      server?.close()
      client?.close()
    }, dir)
  })

  const next = { only: 8000, both: 8100, peers: 8200 }
  /** A stream from the client to a new port of the server in the range `kind` names (see ID). */
  const stream = async (kind: keyof typeof next) => {
    const port = next[kind]++
    const s = await tcpStream(client, server, SERVER_IP, port, join(dir, `received-${port}`))
    streams.push(s)
    return { kind, ...s }
  }
  type Stream = Awaited<ReturnType<typeof stream>>
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
  /** Applies `v` and says which streams still pass bytes once a second has gone by since the apply began. */
  const applyAndWatch = async (v: Variant, watched: Stream[]) => {
    const started = Date.now()
    await h.backend.apply(state(v))
    await sleep(Math.max(0, 1000 - (Date.now() - started)))
    const sizes = watched.map((s) => s.received())
    await sleep(1500)
    return Object.fromEntries(watched.map((s, i) => [s.kind, s.received() > sizes[i]]))
  }
  const flowsFrom = async (address: string) => (await runIn(h.namespace, ['conntrack', '-L', '-s', address])).stdout

  it('cuts a connection within a second of the rule that admitted it going; one another rule admits goes on', async () => {
    const only = await stream('only')
    const both = await stream('both')
    // A change that keeps both admitted (a new rule) sweeps the table too, and cuts neither.
    const more = [rule('wide-tcp', 'ingress', 'tcp', [8000, 8199]), rule('wide-udp', 'ingress', 'udp', [53, 53])]
    assert.deepEqual(await applyAndWatch({ wideRules: more }, [only, both]), { only: true, both: true }, 'both still admitted')
    assert.deepEqual(await applyAndWatch({ wideRules: [] }, [only, both]), { only: false, both: true }, 'one admitted by the removed rule only, the other by narrow too')
    assert.equal(await only.flowing(), false, 'and it stays cut')
    await h.backend.apply(state())
    assert.ok(await (await stream('only')).flowing(), 'a new connection passes once the rule is back')
  })

  it('cuts a connection when the group that admitted it leaves the port', async () => {
    const only = await stream('only')
    const both = await stream('both')
    assert.deepEqual(await applyAndWatch({ serverGroups: [ID.narrow] }, [only, both]), { only: false, both: true })
    await h.backend.apply(state())
  })

  it('cuts a connection admitted by a remote group when its source leaves the group', async () => {
    const peers = await stream('peers')
    const both = await stream('both')
    assert.deepEqual(await applyAndWatch({ clientInPeers: false }, [peers, both]), { peers: false, both: true })
    await h.backend.apply(state())
  })

  it("answers a guest at its own floating IP, and another guest of its network at that guest's (hairpin through the router)", async () => {
    await server.exec(['sh', '-c', 'busybox nc -ll -p 8300 -e echo hi >/dev/null 2>&1 &'])
    const hello = (g: StandInGuest, ip: string) => g.exec(['sh', '-c', `echo | busybox timeout 2 busybox nc ${ip} 8300`], 4000).then((r) => r.stdout.trim())
    await until('the server answering on its fixed address', 10_000, async () => ((await hello(client, SERVER_IP)) === 'hi' ? true : undefined))
    assert.equal(await hello(server, FLOATING_IP), 'hi', 'the server reaches itself through its floating IP')
    assert.equal(await hello(client, FLOATING_IP), 'hi', 'the client reaches the server through its floating IP')
    const ping = await server.exec(['busybox', 'ping', '-c', '1', '-W', '2', FLOATING_IP])
    assert.equal(ping.code, 0, `ping of its own floating IP: ${ping.stdout}${ping.stderr}`)
  })

  it('forgets the connections of a port that left the host', async () => {
    await stream('both')
    assert.match(await flowsFrom(CLIENT_IP), /dport=81\d\d/, 'the client has a tracked connection')
    await h.backend.apply(state({ client: false }))
    assert.doesNotMatch(await flowsFrom(CLIENT_IP), /dport=/, "no connection of the departed port's address is left")
  })
})
