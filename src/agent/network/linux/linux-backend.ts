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

export class LinuxNetworkBackend implements NetworkBackend {
  readonly name = 'linux'
  readonly namespaces: Namespaces
  private readonly dhcp: DhcpServers
  private readonly routers: Routers
  private readonly zonesFile: string
  /** The ruleset the kernel holds (as loaded by this process), and when it was last loaded whole. */
  private loaded: NftTable[] | undefined
  private wholeAt = 0

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
    if (state.networks.length === 0 && state.ports.length === 0) {
      if (this.loaded?.length !== 0) await run('nft', ['-f', '-'], { input: FIREWALL_TEARDOWN })
      this.loaded = []
      return
    }
    const next = firewallTables({ state, zones: this.zones(state, plan) })
    const delta = this.loaded?.length && Date.now() - this.wholeAt < WHOLE_RULESET_EVERY_MS ? renderDelta(this.loaded, next) : undefined
    if (delta === '') return
    try {
      if (delta !== undefined) {
        await run('nft', ['-f', '-'], { input: delta })
        this.loaded = next
        return
      }
    } catch (err) {
      this.options.warn('partial firewall update failed; loading the whole ruleset', { error: (err as Error).message })
    }
    this.loaded = undefined
    await run('nft', ['-f', '-'], { input: renderWhole(next) })
    this.loaded = next
    this.wholeAt = Date.now()
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
   * The conntrack zone of every bridge port, one zone per network. Zones are kept in a file so a restarted
   * agent gives each network the zone its connections are tracked in (a new zone would forget them).
   */
  private zones(state: HostNetworkState, plan: L2Plan): Map<string, number> {
    let saved: Record<string, number> = {}
    try {
      saved = JSON.parse(readFileSync(this.zonesFile, 'utf8')) as Record<string, number>
    } catch {
      saved = {}
    }
    const zoneOf: Record<string, number> = {}
    for (const n of state.networks) if (saved[n.id]) zoneOf[n.id] = saved[n.id]
    const used = new Set(Object.values(zoneOf))
    let next = 1
    for (const n of state.networks) {
      if (zoneOf[n.id]) continue
      while (used.has(next)) next++
      zoneOf[n.id] = next
      used.add(next)
    }
    if (JSON.stringify(zoneOf) !== JSON.stringify(saved)) {
      mkdirSync(join(this.zonesFile, '..'), { recursive: true })
      writeFileSync(`${this.zonesFile}.tmp`, JSON.stringify(zoneOf))
      renameSync(`${this.zonesFile}.tmp`, this.zonesFile)
    }
    const devices = new Map<string, number>()
    for (const up of plan.uplinks.values()) devices.set(up.device, zoneOf[state.networks.find((n) => names.bridge(n.id) === up.bridge)!.id])
    for (const p of state.ports) devices.set(names.tap(p.id), zoneOf[p.networkId])
    for (const n of DhcpServers.served(state)) devices.set(names.tap(n.dhcp!.portId), zoneOf[n.id])
    for (const r of state.routers) for (const p of [...r.interfaces, ...(r.gateway ? [r.gateway] : [])]) devices.set(names.tap(p.portId), zoneOf[p.networkId])
    return devices
  }
}
