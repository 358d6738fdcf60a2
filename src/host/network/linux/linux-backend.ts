/**
 * The network back end of real hosts, on Linux's own parts (docs/network.md): bridges, VXLAN and taps
 * (links.ts), nftables for anti-spoofing and security groups (firewall.ts), dnsmasq in `qdhcp-` namespaces
 * (dhcp.ts), routers in `qrouter-` namespaces (routers.ts). One `apply` converges them in an order that never
 * leaves a guest's frames unfiltered: stale taps go before their rules, rules come before new taps join a
 * bridge, namespaces go before the bridges they hang off.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { HostNetworkState } from '../../../contracts/network/dataplane.js'
import { EMPTY_STATE, type NetworkBackend, type NetworkInventory } from '../backend.js'
import { names, OWNED } from '../names.js'
import { sweepConnections } from './conntrack.js'
import { DhcpServers } from './dhcp.js'
import { FIREWALL_TEARDOWN, firewallTables } from './firewall.js'
import { links, run } from './host-commands.js'
import { ensureLinks, l2Plan, pruneLinks, removeStaleTaps, type L2Plan, type LinkConfig } from './links.js'
import { runningFrom, Namespaces } from './namespaces.js'
import { renderDelta, renderWhole, type NftTable } from './nft-script.js'
import { Routers } from './routers.js'

export interface LinuxBackendOptions extends LinkConfig {
  /** The agent's root (`/` on a real host): namespaces under <root>/run/netns, files under <root>/var/lib/pcc. */
  root: string
}

/** How often the whole ruleset is loaded again even when a delta would do (repairs rules changed by hand). */
const WHOLE_RULESET_EVERY_MS = 300_000

/** br_netfilter's switches: bridged IP traffic through the inet hooks, where the security groups' conntrack is. */
const BRIDGE_NETFILTER = ['/proc/sys/net/bridge/bridge-nf-call-iptables', '/proc/sys/net/bridge/bridge-nf-call-ip6tables']

/** Conntrack zones: of each network, by id and by bridge, and those of networks that left (zones.json). */
interface Zones {
  ofNetwork: Map<string, number>
  ofBridge: Map<string, number>
  retired: number[]
}

export class LinuxNetworkBackend implements NetworkBackend {
  readonly name = 'linux'
  readonly namespaces: Namespaces
  private readonly dhcp: DhcpServers
  private readonly routers: Routers
  private readonly zonesFile: string
  /** The ruleset the kernel holds (as loaded by this process), and when it was last loaded whole. */
  private loaded: NftTable[] | undefined
  private wholeAt = 0
  /** The state whose rules the last connection sweep enforced (undefined after a restart). */
  private swept: HostNetworkState | undefined

  constructor(private readonly options: LinuxBackendOptions) {
    this.namespaces = new Namespaces(options.root)
    this.dhcp = new DhcpServers(options.root, this.namespaces, options.warn)
    this.routers = new Routers(this.namespaces, options.warn)
    this.zonesFile = join(options.root, 'var/lib/pcc/network/zones.json')
  }

  async apply(state: HostNetworkState): Promise<void> {
    this.enableBridgeNetfilter()
    const plan = l2Plan(state, this.options)
    await removeStaleTaps(plan)
    await this.loadFirewall(state, plan)
    await ensureLinks(plan, this.options)
    await this.dhcp.converge(state)
    await this.routers.converge(state)
    await pruneLinks(plan)
  }

  async inventory(): Promise<NetworkInventory> {
    const all = await links()
    const pick = (re: RegExp) => all.map((l) => l.ifname).filter((n) => re.test(n)).sort()
    const dhcpDir = join(this.options.root, 'var/lib/pcc/dhcp')
    const dhcpServers = existsSync(dhcpDir) ? readdirSync(dhcpDir).filter((id) => runningFrom(join(dhcpDir, id, 'pid'), join(dhcpDir, id, 'dnsmasq.conf'))).sort() : []
    return {
      bridges: pick(OWNED.bridge),
      tunnels: pick(OWNED.vxlan),
      taps: pick(OWNED.tap),
      namespaces: this.namespaces.list().filter((n) => this.namespaces.exists(n)).sort(),
      dhcpServers,
      firewallPorts: await this.firewallPorts(),
    }
  }

  async teardown(): Promise<void> {
    await this.apply(EMPTY_STATE)
    await run('nft', ['-f', '-'], { input: FIREWALL_TEARDOWN })
    this.loaded = undefined
    rmSync(join(this.options.root, 'var/lib/pcc/dhcp'), { recursive: true, force: true })
    rmSync(join(this.options.root, 'var/lib/pcc/network'), { recursive: true, force: true })
  }

  /**
   * Loads the state's rules: only the chains and sets that changed when the rest is as this process last loaded
   * it (a rule change rewrites one group chain), the whole ruleset otherwise, or when a delta fails, or every few
   * minutes. A host without guest networking keeps no tables.
   */
  private async loadFirewall(state: HostNetworkState, plan: L2Plan): Promise<void> {
    const zones = this.zones(state)
    let changed: boolean
    if (state.networks.length === 0 && state.ports.length === 0) {
      changed = this.loaded?.length !== 0
      if (changed) await run('nft', ['-f', '-'], { input: FIREWALL_TEARDOWN })
      this.loaded = []
    } else {
      changed = await this.loadRuleset(firewallTables({ state, bridgePorts: bridgePorts(state, plan), zones: zones.ofBridge }))
    }
    if (changed || zones.retired.length > 0) await this.sweep(state, zones)
  }

  /** Loads the ruleset (a delta when it can); false when the kernel already held it. */
  private async loadRuleset(next: NftTable[]): Promise<boolean> {
    const delta = this.loaded?.length && Date.now() - this.wholeAt < WHOLE_RULESET_EVERY_MS ? renderDelta(this.loaded, next) : undefined
    if (delta === '') return false
    try {
      if (delta !== undefined) {
        await run('nft', ['-f', '-'], { input: delta })
        this.loaded = next
        return true
      }
    } catch (err) {
      this.options.warn('partial firewall update failed; loading the whole ruleset', { error: (err as Error).message })
    }
    this.loaded = undefined
    await run('nft', ['-f', '-'], { input: renderWhole(next) })
    this.loaded = next
    this.wholeAt = Date.now()
    return true
  }

  /**
   * After new rules are loaded (never before: a packet in between would be tracked again under the old ones),
   * deletes the tracked connections they no longer admit (conntrack.ts). A failure leaves the rules in force
   * for new connections and is retried with the next ruleset change.
   */
  private async sweep(state: HostNetworkState, zones: Zones): Promise<void> {
    try {
      await sweepConnections({ state, zoneOf: zones.ofNetwork, previous: this.swept, retiredZones: zones.retired }, join(this.zonesFile, '..'))
      this.swept = state
    } catch (err) {
      this.options.warn('connections the new rules refuse could not be cut', { error: (err as Error).message })
    }
  }

  /** Ports with loaded rules: the `in-<port>` chains of the inet table. */
  private async firewallPorts(): Promise<string[]> {
    let text: string
    try {
      text = await run('nft', ['-j', 'list', 'table', 'inet', 'pcc'])
    } catch {
      return []
    }
    const items = (JSON.parse(text) as { nftables: { chain?: { name: string } }[] }).nftables
    return items.flatMap((i) => (i.chain?.name.startsWith('in-') ? [i.chain.name.slice(3)] : [])).sort()
  }

  private enableBridgeNetfilter(): void {
    for (const file of BRIDGE_NETFILTER) {
      try {
        if (readFileSync(file, 'utf8').trim() !== '1') writeFileSync(file, '1')
      } catch {
        this.options.warn('br_netfilter is not available: security groups cannot see bridged traffic', { file })
      }
    }
  }

  /**
   * The conntrack zone of every network. Zones are kept in a file so a restarted
   * agent gives each network the zone its connections are tracked in (a new zone would forget them).
   */
  private zones(state: HostNetworkState): Zones {
    let saved: Record<string, number> = {}
    try {
      saved = JSON.parse(readFileSync(this.zonesFile, 'utf8')) as Record<string, number>
    } catch {
      saved = {}
    }
    const zoneOf: Record<string, number> = {}
    for (const n of state.networks) if (saved[n.id]) zoneOf[n.id] = saved[n.id]
    const used = new Set(Object.values(zoneOf))
    // A zone of a network that left is not given to a new one in the same apply: its connections go first.
    const taken = new Set(Object.values(saved))
    let next = 1
    for (const n of state.networks) {
      if (zoneOf[n.id]) continue
      while (used.has(next) || taken.has(next)) next++
      zoneOf[n.id] = next
      used.add(next)
    }
    if (JSON.stringify(zoneOf) !== JSON.stringify(saved)) {
      mkdirSync(join(this.zonesFile, '..'), { recursive: true })
      writeFileSync(`${this.zonesFile}.tmp`, JSON.stringify(zoneOf))
      renameSync(`${this.zonesFile}.tmp`, this.zonesFile)
    }
    const retired = Object.values(saved).filter((zone) => !used.has(zone))
    return { ofNetwork: new Map(Object.entries(zoneOf)), ofBridge: new Map(state.networks.map((n) => [names.bridge(n.id), zoneOf[n.id]])), retired }
  }
}

/** Every port of the networks' bridges: uplinks, guest taps, the bridge ends of DHCP and router veths. */
function bridgePorts(state: HostNetworkState, plan: L2Plan): string[] {
  return [
    ...[...plan.uplinks.values()].map((up) => up.device),
    ...state.ports.map((p) => names.tap(p.id)),
    ...DhcpServers.served(state).map((n) => names.tap(n.dhcp!.portId)),
    ...state.routers.flatMap((r) => [...r.interfaces, ...(r.gateway ? [r.gateway] : [])].map((p) => names.tap(p.portId))),
  ]
}
