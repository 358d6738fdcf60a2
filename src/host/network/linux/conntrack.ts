/**
 * Cutting the connections a new rule set no longer admits. The security groups are stateful: `ct state
 * established` passes a connection's packets before any rule is read, so a connection outlives the rule that let
 * it in. Neutron deletes the conntrack entries of the rules and ports that change (agent/linux/ip_conntrack.py);
 * this does the same, by asking a question that does not depend on what changed: after each new ruleset is
 * loaded, every tracked connection in a network's zone is checked against the rules as they are now, and those
 * no rule admits any more are deleted. The next packet of a deleted TCP or UDP connection is then new to conntrack
 * (nf_conntrack_tcp_loose picks TCP up mid-stream) and meets the rules: dropped when nothing admits it, tracked
 * again when another rule does — so a connection still allowed by another rule, or another group, survives.
 *
 * A connection is checked on the sides that are ports of this host, by its original direction: the side that
 * opened it needs an egress rule of one of its groups admitting the destination, the side it was opened to an
 * ingress rule admitting the source. A side that is a port without port security, a router, a DHCP server or a
 * guest on another host (whose own host checks it) puts no condition. A side that was a guarded port of this host
 * at the last sweep and is not any more (the port left) admits nothing, and the zones of networks that left the
 * host are emptied, so a zone given to another network later holds none of their connections.
 *
 * The entries are read and deleted with the `conntrack` tool (Debian's `conntrack` package): one listing, one
 * batch of deletions (`conntrack -R <file>`).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { DataplanePort, HostNetworkState } from '../../../contracts/network/dataplane.js'
import { cidrContains, parseCidr, parseIp, type IpAddress } from '../../../lib/ip.js'
import { ruleMatch, type RuleMatch } from './firewall.js'
import { run } from './host-commands.js'

/** A tracked connection, by its original direction. */
export interface TrackedFlow {
  zone: number
  family: 4 | 6
  /** conntrack's name of the protocol (tcp, udp, icmp, icmpv6, sctp… or unknown) and its number. */
  protocolName: string
  protocol: number
  src: string
  dst: string
  sport?: number
  dport?: number
  icmpType?: number
  icmpCode?: number
  icmpId?: number
}

/** Parses `conntrack -L -o extended`: the first src/dst/ports/type of a line are the original direction's. */
export function parseFlows(text: string): TrackedFlow[] {
  const flows: TrackedFlow[] = []
  for (const line of text.split('\n')) {
    const words = line.trim().split(/\s+/)
    if (words.length < 5 || (words[0] !== 'ipv4' && words[0] !== 'ipv6')) continue
    const fields: Record<string, string> = {}
    for (const w of words.slice(4)) {
      const eq = w.indexOf('=')
      if (eq > 0 && !(w.slice(0, eq) in fields)) fields[w.slice(0, eq)] = w.slice(eq + 1)
    }
    if (!fields.src || !fields.dst) continue
    const num = (key: string) => (fields[key] === undefined ? undefined : Number(fields[key]))
    flows.push({
      zone: num('zone') ?? 0,
      family: words[0] === 'ipv4' ? 4 : 6,
      protocolName: words[2],
      protocol: Number(words[3]),
      src: fields.src,
      dst: fields.dst,
      sport: num('sport'),
      dport: num('dport'),
      icmpType: num('type'),
      icmpCode: num('code'),
      icmpId: num('id'),
    })
  }
  return flows
}

/** The `conntrack` arguments deleting exactly one flow (one line of a `conntrack -R` batch). */
export function deletionArgs(f: TrackedFlow): string[] {
  const args = ['-D', '-f', f.family === 4 ? 'ipv4' : 'ipv6', '-w', String(f.zone), '-p', f.protocolName === 'unknown' ? String(f.protocol) : f.protocolName, '-s', f.src, '-d', f.dst]
  if (f.sport !== undefined && f.dport !== undefined) args.push('--sport', String(f.sport), '--dport', String(f.dport))
  const icmp = f.protocol === 1 ? '--icmp' : '--icmpv6'
  if ((f.protocol === 1 || f.protocol === 58) && f.icmpType !== undefined) args.push(`${icmp}-type`, String(f.icmpType), `${icmp}-code`, String(f.icmpCode ?? 0), `${icmp}-id`, String(f.icmpId ?? 0))
  return args
}

/**
 * Flows the guests' fixed rules decide (firewall.ts FIXED_EGRESS/FIXED_INGRESS: DHCP, neighbour discovery), which
 * no security-group change affects.
 */
const FIXED: ((f: TrackedFlow) => boolean)[] = [
  (f) => f.protocol === 17 && [[68, 67], [67, 68], [546, 547], [547, 546]].some(([sport, dport]) => f.sport === sport && f.dport === dport),
  (f) => f.protocol === 58 && f.icmpType !== undefined && f.icmpType >= 130 && f.icmpType <= 143,
]

const address = (text: string) => parseIp(text.split('%')[0])
/** Whether `ip` is `spec` (an address) or inside it (a CIDR). */
function within(spec: string, ip: IpAddress): boolean {
  const cidr = parseCidr(spec.includes('/') ? spec : `${spec}/${spec.includes(':') ? 128 : 32}`)
  return cidr !== undefined && cidrContains(cidr, ip)
}

/** The addresses a port holds: its fixed IPs and allowed address pairs (the sources anti-spoofing lets it use). */
const held = (p: DataplanePort) => [...p.fixedIps.map((f) => f.ipAddress), ...p.allowedAddressPairs.map((a) => a.ipAddress)]

/** Whether a rule admits the flow seen from one of its ports: `remote` is the other side's address. */
function admits(m: RuleMatch, f: TrackedFlow, remote: IpAddress, members: Map<string, string[]>): boolean {
  if (m.family !== f.family) return false
  if (m.remotePrefix && !within(m.remotePrefix, remote)) return false
  if (m.remoteGroupId && !(members.get(m.remoteGroupId) ?? []).some((a) => within(a, remote))) return false
  if (m.protocol !== undefined && m.protocol !== f.protocol) return false
  if (m.ports && (f.dport === undefined || f.dport < m.ports[0] || f.dport > m.ports[1])) return false
  if (m.icmpType !== undefined && m.icmpType !== f.icmpType) return false
  if (m.icmpCode !== undefined && m.icmpCode !== f.icmpCode) return false
  return true
}

/** The guarded ports of each network, for one state. */
type PortsByNetwork = Map<string, DataplanePort[]>
const portsByNetwork = (state: HostNetworkState): PortsByNetwork => {
  const map: PortsByNetwork = new Map()
  for (const p of state.ports) map.set(p.networkId, [...(map.get(p.networkId) ?? []), p])
  return map
}

export interface SweepInput {
  state: HostNetworkState
  /** The zone of each network of the state. */
  zoneOf: Map<string, number>
  /** The state of the last sweep (undefined after a restart): whose ports have left. */
  previous?: HostNetworkState
  /** Zones that belonged to networks no longer on the host. */
  retiredZones: number[]
}

/** The flows the state's rules no longer admit (see the top of the file). */
export function staleFlows(flows: TrackedFlow[], { state, zoneOf, previous, retiredZones }: SweepInput): TrackedFlow[] {
  const networkOfZone = new Map([...zoneOf].map(([network, zone]) => [zone, network]))
  const retired = new Set(retiredZones)
  const now = portsByNetwork(state)
  const before = previous ? portsByNetwork(previous) : new Map<string, DataplanePort[]>()
  const members = new Map(state.groupMembers.map((g) => [g.groupId, g.addresses]))
  const rules = new Map(state.securityGroups.map((g) => [g.id, g.rules.map(ruleMatch).filter((m): m is RuleMatch => m !== undefined)]))

  /** Whether the side `ip` of the flow lets it through in `direction` (true when the side is nobody's to check). */
  const sideAdmits = (network: string, ip: IpAddress, remote: IpAddress, direction: 'ingress' | 'egress', f: TrackedFlow) => {
    const ports = (now.get(network) ?? []).filter((p) => held(p).some((a) => within(a, ip)))
    if (ports.length === 0) {
      const left = (before.get(network) ?? []).some((p) => p.portSecurityEnabled && held(p).some((a) => within(a, ip)))
      return !left
    }
    return ports.some((p) => !p.portSecurityEnabled || p.securityGroupIds.some((g) => (rules.get(g) ?? []).some((m) => m.direction === direction && admits(m, f, remote, members))))
  }

  return flows.filter((f) => {
    if (retired.has(f.zone)) return true
    const network = networkOfZone.get(f.zone)
    if (network === undefined || FIXED.some((fixed) => fixed(f))) return false
    const src = address(f.src)
    const dst = address(f.dst)
    if (!src || !dst) return false
    return !sideAdmits(network, src, dst, 'egress', f) || !sideAdmits(network, dst, src, 'ingress', f)
  })
}

/**
 * Reads the host's tracked connections and deletes those the state no longer admits; answers how many. The
 * deletions are one batch file in `scratchDir` (conntrack cannot read a batch from a pipe), removed after; a flow
 * gone meanwhile deletes nothing and the batch goes on.
 */
export async function sweepConnections(input: SweepInput, scratchDir: string): Promise<number> {
  const stale = staleFlows(parseFlows(await run('conntrack', ['-L', '-o', 'extended'])), input)
  if (stale.length === 0) return 0
  mkdirSync(scratchDir, { recursive: true })
  const batch = join(scratchDir, `conntrack-${process.pid}.batch`)
  writeFileSync(batch, stale.map((f) => deletionArgs(f).join(' ')).join('\n') + '\n')
  try {
    await run('conntrack', ['-R', batch])
  } finally {
    rmSync(batch, { force: true })
  }
  return stale.length
}
