/**
 * Security groups and anti-spoofing as one nftables ruleset per host, built from the desired state as data
 * (nft-script.ts) and loaded atomically — whole, or as the chains and sets that changed — so a rule change never
 * opens a gap, and conntrack keeps the established connections the new rules still admit across it (the others
 * are deleted after the load: conntrack.ts).
 *
 * Two tables, because the kernel may lack bridge-family conntrack (CONFIG_NF_CONNTRACK_BRIDGE; so it is on the
 * machine that built this) while br_netfilter passes bridged IP traffic through the inet hooks, where conntrack
 * works:
 *
 * - `bridge pcc` sees the real bridge ports. Prerouting checks what a guest sends — only its MAC, its fixed IPs
 *   and allowed address pairs, ARP included (Neutron's ebtables arp_protect plus its iptables spoof chain) — and
 *   marks the frame with the sending port's number (low 16 bits of the packet mark); forward marks frames bound to
 *   a guest with the receiving port's number (high 16 bits).
 * - `inet pcc` puts each network's traffic in its own conntrack zone (overlapping tenant addresses never share
 *   a connection; chosen by bridge, the input device br_netfilter gives these hooks), then filters marked traffic
 *   statefully: established and related pass, then the sender's egress rules, then the receiver's ingress rules
 *   (default deny), as Neutron's iptables firewall orders its chains (docs/network.md, "Choices"; see firewallTables).
 *   Unmarked traffic (the host's own, routers, DHCP servers) is not touched.
 *
 * The mark is the back end's: other software on the host must not set packet marks on bridged guest traffic.
 */
import type { DataplanePort, DataplaneRule, HostNetworkState } from '../../../contracts/network/dataplane.js'
import { names } from '../names.js'
import { newTable, renderRemoval, type NftTable } from './nft-script.js'

/** Neutron's protocol names and their numbers (neutron-lib constants). */
const PROTOCOLS: Record<string, number> = {
  icmp: 1, igmp: 2, tcp: 6, egp: 8, 'ipv6-encap': 41, 'ipv6-route': 43, 'ipv6-frag': 44, gre: 47, rsvp: 46, esp: 50, ah: 51,
  'ipv6-icmp': 58, icmpv6: 58, 'ipv6-nonxt': 59, 'ipv6-opts': 60, ospf: 89, vrrp: 112, pgm: 113, sctp: 132, udplite: 136, dccp: 33, udp: 17,
}
/** Protocols whose rules carry a destination port range (the same header offset for all of them). */
const PORTED = new Set([6, 17, 33, 132, 136])

/** What every guest may always send and receive, before its security groups (Neutron's fixed rules). */
const FIXED_EGRESS = [
  'udp sport 68 udp dport 67 accept',
  'udp sport 546 udp dport 547 accept',
  'udp sport 67 udp dport 68 drop',
  'udp sport 547 udp dport 546 drop',
  'icmpv6 type nd-router-advert drop',
  'icmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert, mld-listener-report, mld2-listener-report } accept',
]
const FIXED_INGRESS = [
  'udp sport 67 udp dport 68 accept',
  'udp sport 547 udp dport 546 accept',
  'icmpv6 type { nd-router-advert, nd-neighbor-solicit, nd-neighbor-advert, mld-listener-query } accept',
]

/** Values spliced into the ruleset come from the control plane's validated records; refuse anything else. */
function literal(text: string): string {
  if (!/^[0-9A-Za-z.:/-]+$/.test(text)) throw new Error(`refusing ${JSON.stringify(text)} in a firewall rule`)
  return text
}

const isV6 = (address: string) => address.includes(':')

/** The IPv6 link-local address a MAC gives (EUI-64): what a guest sends router and neighbour solicitations from. */
export function linkLocal(mac: string): string {
  const b = mac.split(':').map((h) => parseInt(h, 16))
  b[0] ^= 2
  const words = [(b[0] << 8) | b[1], (b[2] << 8) | 0xff, (0xfe << 8) | b[3], (b[4] << 8) | b[5]]
  return `fe80::${words.map((w) => w.toString(16)).join(':')}`
}

const setName = (groupId: string, family: 4 | 6) => `rg-${groupId}-${family}`

/**
 * What one security-group rule matches, as data: the family, the remote side (a prefix or a group's members), the
 * protocol number and its destination ports or ICMP type and code. The nftables rule (ruleExpression) and the
 * check of a tracked connection against the rules (conntrack.ts) both read it, so they never disagree.
 * Undefined when the rule can never match (a prefix of the other family, an unknown protocol name).
 */
export interface RuleMatch {
  family: 4 | 6
  direction: 'ingress' | 'egress'
  remotePrefix?: string
  remoteGroupId?: string
  protocol?: number
  ports?: [number, number]
  icmpType?: number
  icmpCode?: number
}

export function ruleMatch(rule: DataplaneRule): RuleMatch | undefined {
  const match: RuleMatch = { family: rule.ethertype === 'IPv6' ? 6 : 4, direction: rule.direction }
  if (rule.remoteIpPrefix) {
    if (isV6(rule.remoteIpPrefix) !== (match.family === 6)) return undefined
    match.remotePrefix = literal(rule.remoteIpPrefix)
  }
  if (rule.remoteGroupId) match.remoteGroupId = rule.remoteGroupId
  if (rule.protocol !== null && rule.protocol !== 'any') {
    let proto = /^\d+$/.test(rule.protocol) ? Number(rule.protocol) : PROTOCOLS[rule.protocol.toLowerCase()]
    if (proto === undefined) return undefined
    if (proto === 1 && match.family === 6) proto = 58
    match.protocol = proto
    if (PORTED.has(proto) && rule.portRangeMin !== null) match.ports = [rule.portRangeMin, rule.portRangeMax ?? rule.portRangeMin]
    if ((proto === 1 || proto === 58) && rule.portRangeMin !== null) {
      match.icmpType = rule.portRangeMin
      if (rule.portRangeMax !== null) match.icmpCode = rule.portRangeMax
    }
  }
  return match
}

/** One security-group rule as an nftables rule, or undefined when it can never match. */
export function ruleExpression(rule: DataplaneRule): string | undefined {
  const m = ruleMatch(rule)
  if (!m) return undefined
  const family = m.family === 4 ? 'ip' : 'ip6'
  const parts = [`meta nfproto ${m.family === 4 ? 'ipv4' : 'ipv6'}`]
  const side = m.direction === 'ingress' ? 'saddr' : 'daddr'
  if (m.remotePrefix) parts.push(`${family} ${side} ${m.remotePrefix}`)
  if (m.remoteGroupId) parts.push(`${family} ${side} @${setName(m.remoteGroupId, m.family)}`)
  if (m.protocol !== undefined) parts.push(`meta l4proto ${m.protocol}`)
  if (m.ports) parts.push(`th dport ${m.ports[0] === m.ports[1] ? m.ports[0] : `${m.ports[0]}-${m.ports[1]}`}`)
  const icmp = m.protocol === 1 ? 'icmp' : 'icmpv6'
  if (m.icmpType !== undefined) parts.push(`${icmp} type ${m.icmpType}`)
  if (m.icmpCode !== undefined) parts.push(`${icmp} code ${m.icmpCode}`)
  return parts.join(' ')
}

/** What a port may send from: its (MAC, address) pairs, fixed IPs and allowed address pairs. */
function sources(port: DataplanePort): { macs: string[]; v4: string[]; v6: string[] } {
  const pairs = [...port.fixedIps.map((ip) => ({ mac: port.mac, ip: ip.ipAddress })), ...port.allowedAddressPairs.map((p) => ({ mac: p.macAddress, ip: p.ipAddress }))]
  const macs = [...new Set([port.mac, ...pairs.map((p) => p.mac)])]
  const concat = (p: { mac: string; ip: string }) => `${literal(p.mac)} . ${literal(p.ip)}`
  return {
    macs,
    v4: pairs.filter((p) => !isV6(p.ip)).map(concat),
    v6: [...pairs.filter((p) => isV6(p.ip)), ...macs.map((mac) => ({ mac, ip: linkLocal(mac) }))].map(concat),
  }
}

function spoofChain(port: DataplanePort, mark: number): string[] {
  const { macs, v4, v6 } = sources(port)
  const tag = `meta mark set ${mark}`
  const lines = [`ether saddr != { ${macs.join(', ')} } drop`, `ether type arp arp saddr ether != { ${macs.join(', ')} } drop`]
  const arpIps = [...port.fixedIps, ...port.allowedAddressPairs.map((p) => ({ ipAddress: p.ipAddress }))].map((ip) => ip.ipAddress).filter((ip) => !isV6(ip))
  const limitedByMac = port.fixedIps.length === 0 && port.allowedAddressPairs.length === 0
  if (limitedByMac) {
    // Neutron: a port without addresses is held to its MAC only.
    return [...lines, `${tag} accept`]
  }
  lines.push(`ether type arp arp saddr ip != { 0.0.0.0, ${arpIps.map(literal).join(', ') || '0.0.0.0'} } drop`, `ether type arp ${tag} accept`)
  lines.push(`ether type ip ip saddr 0.0.0.0 ip daddr 255.255.255.255 udp sport 68 udp dport 67 ${tag} accept`)
  if (v4.length > 0) lines.push(`ether type ip ether saddr . ip saddr { ${v4.join(', ')} } ${tag} accept`)
  lines.push(`ether type ip6 ip6 saddr :: meta l4proto 58 ${tag} accept`)
  lines.push(`ether type ip6 ether saddr . ip6 saddr { ${v6.join(', ')} } ${tag} accept`)
  return [...lines, 'drop']
}

export interface FirewallInput {
  state: HostNetworkState
  /** The ports of the networks' bridges (taps, tunnels, DHCP and router veths): their frames never reach the host itself. */
  bridgePorts: string[]
  /**
   * The conntrack zone of each network, by its bridge's name: br_netfilter hands bridged traffic to the inet
   * hooks with the bridge as the input device (the port is not visible there).
   */
  zones: Map<string, number>
}

/** The back end's tables (also what teardown removes). */
export const FIREWALL_TABLES = [
  { family: 'bridge', name: 'pcc' },
  { family: 'inet', name: 'pcc' },
] as const

/**
 * The ruleset for a state. In the inet table a guest's traffic meets two base chains on the forward hook: `egress`
 * (priority 0) runs the sender's chain `out-<port>`, `ingress` (priority 10) the receiver's `in-<port>`; each jumps
 * to the fixed guest rules and then to its groups' chains `sg-<group>-egress|ingress`, whose rules accept, and drops
 * what none accepted. An accept ends one base chain only, so a packet between two guests of the host passes the
 * sender's egress and then the receiver's ingress. Group chains are shared by every port of the group: a rule
 * change is one chain, whatever the number of ports.
 */
export function firewallTables({ state, bridgePorts, zones }: FirewallInput): NftTable[] {
  const guarded = state.ports.filter((p) => p.portSecurityEnabled)
  const marks = new Map(guarded.map((p, i) => [p.id, i + 1]))
  const bridge = newTable('bridge', 'pcc')
  const inet = newTable('inet', 'pcc')

  const tapVmap = (chainOf: (p: DataplanePort) => string) => guarded.map((p) => `"${names.tap(p.id)}" : jump ${chainOf(p)}`).join(', ')
  bridge.chains.set('prerouting', { hook: 'type filter hook prerouting priority -300; policy accept;', rules: guarded.length ? [`iifname vmap { ${tapVmap((p) => `spoof-${p.id}`)} }`] : [] })
  bridge.chains.set('forward', { hook: 'type filter hook forward priority -200; policy accept;', rules: guarded.length ? [`oifname vmap { ${tapVmap((p) => `to-${p.id}`)} }`] : [] })
  // Frames for the host itself from a tenant network's bridge: the host has no business there (a guest could
  // otherwise ARP for the host's own addresses through the bridge).
  const ports = bridgePorts.map((d) => `"${d}"`)
  bridge.chains.set('input', { hook: 'type filter hook input priority 0; policy accept;', rules: ports.length ? [`iifname { ${ports.join(', ')} } drop`] : [] })
  for (const p of guarded) {
    const mark = marks.get(p.id)!
    bridge.chains.set(`spoof-${p.id}`, { rules: spoofChain(p, mark) })
    bridge.chains.set(`to-${p.id}`, { rules: [`meta mark set meta mark | 0x${(mark << 16).toString(16)}`] })
  }

  for (const members of state.groupMembers) {
    for (const family of [4, 6] as const) {
      inet.sets.set(setName(members.groupId, family), {
        spec: `type ${family === 4 ? 'ipv4_addr' : 'ipv6_addr'}; flags interval; auto-merge;`,
        elements: members.addresses.filter((a) => isV6(a) === (family === 6)).map(literal),
      })
    }
  }
  const zoneMap = [...zones].map(([bridge, zone]) => `"${bridge}" : ${zone}`).join(', ')
  inet.chains.set('zones', { hook: 'type filter hook prerouting priority -300; policy accept;', rules: zoneMap ? [`ct zone set iifname map { ${zoneMap} }`] : [] })
  const egress = ['meta mark & 0x0000ffff == 0 accept', 'ct state established,related accept', 'ct state invalid drop']
  const ingress = ['meta mark & 0xffff0000 == 0 accept', 'ct state established,related accept', 'ct state invalid drop']
  if (guarded.length) {
    egress.push(`meta mark & 0x0000ffff vmap { ${guarded.map((p) => `${marks.get(p.id)} : jump out-${p.id}`).join(', ')} }`)
    ingress.push(`meta mark & 0xffff0000 vmap { ${guarded.map((p) => `0x${(marks.get(p.id)! << 16).toString(16)} : jump in-${p.id}`).join(', ')} }`)
  }
  inet.chains.set('egress', { hook: 'type filter hook forward priority 0; policy accept;', rules: egress })
  inet.chains.set('ingress', { hook: 'type filter hook forward priority 10; policy accept;', rules: ingress })
  inet.chains.set('guest-egress', { rules: FIXED_EGRESS })
  inet.chains.set('guest-ingress', { rules: FIXED_INGRESS })
  const used = new Set(guarded.flatMap((p) => p.securityGroupIds))
  for (const group of state.securityGroups.filter((g) => used.has(g.id))) {
    for (const direction of ['egress', 'ingress'] as const) {
      const rules = group.rules.filter((r) => r.direction === direction).map(ruleExpression).filter((e): e is string => e !== undefined)
      inet.chains.set(`sg-${group.id}-${direction}`, { rules: rules.map((e) => `${e} accept`) })
    }
  }
  const known = new Set(state.securityGroups.map((g) => g.id))
  for (const p of guarded) {
    const groups = p.securityGroupIds.filter((id) => known.has(id))
    inet.chains.set(`out-${p.id}`, { rules: ['jump guest-egress', ...groups.map((g) => `jump sg-${g}-egress`), 'drop'] })
    inet.chains.set(`in-${p.id}`, { rules: ['jump guest-ingress', ...groups.map((g) => `jump sg-${g}-ingress`), 'drop'] })
  }
  return [bridge, inet]
}

/** Removes both tables (nothing of the back end's filtering left). */
export const FIREWALL_TEARDOWN = renderRemoval([...FIREWALL_TABLES])
