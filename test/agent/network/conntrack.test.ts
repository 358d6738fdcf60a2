import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { deletionArgs, parseFlows, staleFlows, type SweepInput } from '../../../src/host/network/linux/conntrack.js'
import type { DataplaneRule, HostNetworkState } from '../../../src/contracts/network/dataplane.js'
import { fullState, ID } from '../../../src/host/network/conformance/states.js'

/** `conntrack -L -o extended` as the kernel of 6.1 prints it. */
const LISTING = `ipv4     2 tcp      6 431999 ESTABLISHED src=10.60.0.12 dst=10.60.0.11 sport=41060 dport=8000 src=10.60.0.11 dst=10.60.0.12 sport=8000 dport=41060 [ASSURED] mark=0 zone=1 use=1
ipv4     2 icmp     1 29 src=10.61.0.13 dst=10.60.0.11 type=8 code=0 id=17615 src=10.60.0.11 dst=10.61.0.13 type=0 code=0 id=17615 mark=0 zone=1 use=1
ipv4     2 udp      17 29 src=0.0.0.0 dst=255.255.255.255 sport=68 dport=67 [UNREPLIED] src=255.255.255.255 dst=0.0.0.0 sport=67 dport=68 mark=0 zone=1 use=1
ipv4     2 unknown  2 599 src=0.0.0.0 dst=224.0.0.22 [UNREPLIED] src=224.0.0.22 dst=0.0.0.0 mark=0 use=1
ipv6     10 icmpv6   58 29 src=fe80::1 dst=ff02::2 type=133 code=0 id=0 src=ff02::2 dst=fe80::1 type=134 code=0 id=0 mark=0 zone=1 use=1
ipv4     2 tcp      6 431999 ESTABLISHED src=10.60.0.99 dst=10.60.0.11 sport=5000 dport=22 src=10.60.0.11 dst=10.60.0.99 sport=22 dport=5000 [ASSURED] mark=0 zone=3 use=1
`

const zoneOf = new Map([[ID.netA, 1], [ID.netB, 2], [ID.netExt, 4]])
const input = (state: HostNetworkState, extra: Partial<SweepInput> = {}): SweepInput => ({ state, zoneOf, retiredZones: [], ...extra })
const withIngress = (state: HostNetworkState, rules: DataplaneRule[]): HostNetworkState => ({
  ...state,
  securityGroups: state.securityGroups.map((g) => ({ ...g, rules: [...g.rules.filter((r) => r.direction === 'egress'), ...rules] })),
})
const rule = (over: Partial<DataplaneRule>): DataplaneRule => ({
  id: 'r', direction: 'ingress', ethertype: 'IPv4', protocol: null, portRangeMin: null, portRangeMax: null, remoteIpPrefix: null, remoteGroupId: null, ...over,
})

describe('conntrack: which tracked connections the rules no longer admit', () => {
  const flows = parseFlows(LISTING)
  const ports = (list: ReturnType<typeof staleFlows>) => list.map((f) => `${f.zone} ${f.src}>${f.dst}:${f.dport ?? f.icmpType}`)

  it('reads the original direction, the zone and the ports or ICMP type of each flow', () => {
    assert.equal(flows.length, 6)
    assert.deepEqual(flows[0], { zone: 1, family: 4, protocolName: 'tcp', protocol: 6, src: '10.60.0.12', dst: '10.60.0.11', sport: 41060, dport: 8000, icmpType: undefined, icmpCode: undefined, icmpId: undefined })
    assert.deepEqual([flows[1].icmpType, flows[1].icmpCode, flows[1].icmpId], [8, 0, 17615])
    assert.equal(flows[3].zone, 0)
    assert.equal(flows[4].family, 6)
  })

  it('deletes one flow exactly: its zone, protocol, addresses and ports or ICMP identity', () => {
    assert.deepEqual(deletionArgs(flows[0]), ['-D', '-f', 'ipv4', '-w', '1', '-p', 'tcp', '-s', '10.60.0.12', '-d', '10.60.0.11', '--sport', '41060', '--dport', '8000'])
    assert.deepEqual(deletionArgs(flows[1]).slice(-6), ['--icmp-type', '8', '--icmp-code', '0', '--icmp-id', '17615'])
    assert.deepEqual(deletionArgs(flows[3]).slice(4, 7), ['0', '-p', '2'])
  })

  it('keeps what the rules admit: the group admits its members (10.61.0.13), and an unguarded sender (port 2) needs no egress rule', () => {
    // port 2 (10.60.0.12) has no port security; port 1 (10.60.0.11) admits members of its group only.
    assert.deepEqual(ports(staleFlows(flows, input(fullState(null)))), ['1 10.60.0.12>10.60.0.11:8000'], 'port 2 is no member: its connection to port 1 goes')
    const open = withIngress(fullState(null), [rule({ protocol: 'tcp', portRangeMin: 8000, portRangeMax: 8080 })])
    assert.deepEqual(ports(staleFlows(flows, input(open))), ['1 10.61.0.13>10.60.0.11:8'], 'a TCP rule admits 8000, and ICMP from the member is no longer admitted')
    const echo = withIngress(fullState(null), [rule({ protocol: 'tcp', remoteIpPrefix: '10.60.0.0/24' }), rule({ protocol: 'icmp', portRangeMin: 8, portRangeMax: 0 })])
    assert.deepEqual(ports(staleFlows(flows, input(echo))), [], 'a prefix and an ICMP type and code')
    const v6 = withIngress(fullState(null), [rule({ ethertype: 'IPv6', protocol: 'tcp' })])
    assert.equal(ports(staleFlows(flows, input(v6))).length, 2, 'an IPv6 rule admits no IPv4 flow')
  })

  it("never touches DHCP, neighbour discovery, the host's own traffic or zones it did not give", () => {
    const closed = withIngress(fullState(null), [])
    assert.deepEqual(ports(staleFlows(flows, input(closed))), ['1 10.60.0.12>10.60.0.11:8000', '1 10.61.0.13>10.60.0.11:8'])
  })

  it('forgets the flows of a guarded port that left, and every flow of a retired zone', () => {
    const open = withIngress(fullState(null), [rule({})])
    assert.deepEqual(ports(staleFlows(flows, input(open))), [])
    const without = (id: string) => ({ ...open, ports: open.ports.filter((p) => p.id !== id) })
    assert.deepEqual(ports(staleFlows(flows, input(without(ID.port2), { previous: open }))), [], 'an unguarded port leaving changes nothing')
    assert.deepEqual(ports(staleFlows(flows, input(without(ID.port1), { previous: open }))), ['1 10.60.0.12>10.60.0.11:8000', '1 10.61.0.13>10.60.0.11:8'], 'port 1 left: every flow to it')
    assert.deepEqual(ports(staleFlows(flows, input(without(ID.port1)))), [], 'after a restart nothing says it was there')
    assert.deepEqual(ports(staleFlows(flows, input(open, { retiredZones: [3] }))), ['3 10.60.0.99>10.60.0.11:22'])
  })
})
