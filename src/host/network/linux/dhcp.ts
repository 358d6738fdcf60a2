/**
 * DHCP for the guests of this host, as Neutron's DHCP agent runs it (docs/network.md, "Choices", DHCP): per network a
 * namespace `qdhcp-<net>` holding the network's DHCP port (`ns-<port>`, its MAC and addresses, plus
 * 169.254.169.254 for metadata) joined to the bridge by a veth, and one dnsmasq answering only the host entries
 * it is given — each local port's MAC gets exactly its fixed IP, with the subnet's gateway, DNS servers, host
 * routes (and a route to the metadata address through the DHCP port) and the network's MTU. Subnets with DHCP
 * disabled get no range, so no answer. IPv6 subnets get router advertisements and DHCPv6 by their modes
 * (V6_SERVICES).
 *
 * Every host runs its own server behind the same DHCP port: the veth's bridge end and the uplink are isolated
 * bridge ports, so a host's server never answers, and is never seen by, another host's guests.
 *
 * dnsmasq is a daemon of its own (pid file), so it keeps answering while the agent restarts. Its settings live in
 * a conf file (a change restarts it); the host entries in a hosts file (a change is a SIGHUP, as Neutron reloads).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { DataplaneNetwork, DataplaneSubnet, HostNetworkState } from '../../../contracts/network/dataplane.js'
import { METADATA_ADDRESS, names } from '../names.js'
import { Converged } from './converged.js'
import { GONE, links, run, runIdempotent, type LinkInfo } from './host-commands.js'
import { plugVeth } from './links.js'
import { runningFrom, type Namespaces } from './namespaces.js'

const LEASE_SECONDS = 86400
const DOMAIN = 'openstacklocal'

function prefixLength(cidr: string): number {
  return Number(cidr.split('/')[1])
}

function netmask(cidr: string): string {
  const bits = prefixLength(cidr)
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0
  return [24, 16, 8, 0].map((s) => (mask >>> s) & 255).join('.')
}

/** How the DHCP server serves an IPv6 subnet: its dnsmasq range mode, whether it advertises, whether it assigns addresses. */
interface V6Service {
  /** `ra-only`: router advertisements for SLAAC; `ra-stateless`: SLAAC plus DHCPv6 options; `static`: DHCPv6 addresses. */
  range: 'ra-only' | 'ra-stateless' | 'static'
  advertise: boolean
  addresses: boolean
}

/**
 * IPv6 subnets by (ipv6_ra_mode, ipv6_address_mode) — Neutron validates that the two agree when both are set. The
 * RA mode says the cloud advertises the prefix (Neutron's L3 agent runs radvd for it; here the network's DHCP
 * server does, with the flags of the mode: A, A+O, M); the address mode says how guests get addresses (Neutron's
 * DHCP agent: DHCPv6 for the stateful and stateless modes, and, with neither mode set, static DHCPv6 as it has
 * always done). A SLAAC address mode without an RA mode expects a router outside the cloud: nothing to serve.
 */
const V6_SERVICES: Record<string, V6Service | undefined> = {
  'slaac/slaac': { range: 'ra-only', advertise: true, addresses: false },
  'slaac/-': { range: 'ra-only', advertise: true, addresses: false },
  'dhcpv6-stateless/dhcpv6-stateless': { range: 'ra-stateless', advertise: true, addresses: false },
  'dhcpv6-stateless/-': { range: 'ra-stateless', advertise: true, addresses: false },
  'dhcpv6-stateful/dhcpv6-stateful': { range: 'static', advertise: true, addresses: true },
  'dhcpv6-stateful/-': { range: 'static', advertise: true, addresses: true },
  '-/dhcpv6-stateless': { range: 'ra-stateless', advertise: false, addresses: false },
  '-/dhcpv6-stateful': { range: 'static', advertise: false, addresses: true },
  '-/-': { range: 'static', advertise: false, addresses: true },
  '-/slaac': undefined,
}

export function v6Service(subnet: DataplaneSubnet): V6Service | undefined {
  if (subnet.ipVersion !== 6 || !subnet.enableDhcp) return undefined
  return V6_SERVICES[`${subnet.ipv6RaMode ?? '-'}/${subnet.ipv6AddressMode ?? '-'}`]
}

/** The dnsmasq settings of one network: ranges and options per DHCP subnet (what a change restarts it for). */
export function dnsmasqConf(network: DataplaneNetwork, dir: string, device: string, dropPrivileges: boolean): string {
  const dhcp = network.dhcp!
  const lines = [
    'no-hosts',
    'no-resolv',
    // DHCP only: no DNS server in the namespace.
    'port=0',
    'bind-interfaces',
    `interface=${device}`,
    'except-interface=lo',
    `pid-file=${join(dir, 'pid')}`,
    `dhcp-hostsfile=${join(dir, 'host')}`,
    'leasefile-ro',
    'dhcp-authoritative',
    `domain=${DOMAIN}`,
    ...(dropPrivileges ? [] : ['user=root']),
  ]
  for (const subnet of network.subnets.filter((s) => s.ipVersion === 4 && s.enableDhcp)) {
    const tag = `subnet-${subnet.id}`
    const server = dhcp.fixedIps.find((ip) => ip.subnetId === subnet.id)?.ipAddress
    if (!server) continue
    lines.push(`dhcp-range=set:${tag},${subnet.cidr.split('/')[0]},static,${netmask(subnet.cidr)},${LEASE_SECONDS}s`)
    // busybox udhcpc and many others ask for neither the MTU nor classless routes: send them anyway.
    lines.push(`dhcp-option-force=tag:${tag},option:mtu,${network.mtu}`)
    lines.push(subnet.gatewayIp ? `dhcp-option=tag:${tag},option:router,${subnet.gatewayIp}` : `dhcp-option=tag:${tag},option:router`)
    if (subnet.dnsNameservers.length) lines.push(`dhcp-option=tag:${tag},option:dns-server,${subnet.dnsNameservers.join(',')}`)
    // RFC 3442: a client given classless routes ignores option 3, so the default route goes in the list too.
    const routes = [`${METADATA_ADDRESS}/32,${server}`, ...subnet.hostRoutes.filter((r) => !r.destination.includes(':')).map((r) => `${r.destination},${r.nexthop}`)]
    if (subnet.gatewayIp) routes.push(`0.0.0.0/0,${subnet.gatewayIp}`)
    lines.push(`dhcp-option-force=tag:${tag},option:classless-static-route,${routes.join(',')}`)
    lines.push(`dhcp-option-force=tag:${tag},249,${routes.join(',')}`)
  }
  let advertise = false
  for (const subnet of network.subnets) {
    const service = v6Service(subnet)
    // dnsmasq serves a prefix only on an interface holding an address in it: the DHCP port's.
    if (!service || !dhcp.fixedIps.some((ip) => ip.subnetId === subnet.id)) continue
    const tag = `subnet-${subnet.id}`
    lines.push(`dhcp-range=set:${tag},${subnet.cidr.split('/')[0]},${service.range},${prefixLength(subnet.cidr)},${LEASE_SECONDS}s`)
    if (subnet.dnsNameservers.length) lines.push(`dhcp-option=tag:${tag},option6:dns-server,${subnet.dnsNameservers.map((a) => `[${a}]`).join(',')}`)
    advertise ||= service.advertise
  }
  if (advertise) {
    // Router lifetime 0: the DHCP namespace advertises prefixes and flags but routes nothing, so it must not
    // become the guests' default router (routers do not forward IPv6 yet). The MTU goes in the advertisement too.
    lines.push('enable-ra', `ra-param=${device},mtu:${network.mtu},60,0`)
  }
  return lines.join('\n') + '\n'
}

/**
 * Host entries: each local port's MAC → its addresses on the subnets where DHCP assigns them (IPv4 with DHCP,
 * stateful DHCPv6), with Neutron's `host-<ip>` names; IPv6 addresses in brackets, as dnsmasq reads them.
 */
export function dnsmasqHosts(network: DataplaneNetwork, state: HostNetworkState): string {
  const dhcpSubnets = new Set(network.subnets.filter((s) => (s.ipVersion === 4 && s.enableDhcp) || v6Service(s)?.addresses).map((s) => s.id))
  const lines: string[] = []
  for (const port of state.ports.filter((p) => p.networkId === network.id)) {
    for (const ip of port.fixedIps.filter((f) => dhcpSubnets.has(f.subnetId))) {
      const v6 = ip.ipAddress.includes(':')
      lines.push(`${port.mac},host-${ip.ipAddress.replaceAll(/[.:]/g, '-')},${v6 ? `[${ip.ipAddress}]` : ip.ipAddress}`)
    }
  }
  return lines.join('\n') + (lines.length ? '\n' : '')
}

/** dnsmasq drops to `nobody`, which must reach its files: every directory above them must be searchable. */
function searchableByAll(dir: string): boolean {
  for (let d = dir; ; d = dirname(d)) {
    try {
      if ((statSync(d).mode & 0o001) === 0) return false
    } catch {
      return false
    }
    if (dirname(d) === d) return true
  }
}

export class DhcpServers {
  private readonly baseDir: string
  /** The DHCP ports' veths, by network. */
  private readonly converged = new Converged()

  constructor(
    root: string,
    private readonly namespaces: Namespaces,
    private readonly warn: (message: string, fields?: Record<string, unknown>) => void,
  ) {
    this.baseDir = join(root, 'var/lib/pcc/dhcp')
  }

  /** The networks that get a DHCP server on this host: a DHCP port, and guests of this host on the network. */
  static served(state: HostNetworkState): DataplaneNetwork[] {
    return state.networks.filter((n) => n.dhcp !== null && state.ports.some((p) => p.networkId === n.id))
  }

  /** Makes every served network's namespace, port and dnsmasq right; removes the servers of the others. */
  async converge(state: HostNetworkState): Promise<void> {
    const served = DhcpServers.served(state)
    const keep = new Set(served.map((n) => names.dhcpNamespace(n.id)))
    for (const ns of this.namespaces.list()) if (ns.startsWith('qdhcp-') && !keep.has(ns)) await this.remove(ns.slice('qdhcp-'.length))
    // One listing of the host's devices for all networks: each reads only its own veth end in it.
    const hostLinks = new Map((await links()).map((l) => [l.ifname, l]))
    for (const network of served) await this.ensure(network, state, hostLinks)
  }

  async remove(networkId: string): Promise<void> {
    const dir = join(this.baseDir, networkId)
    const pid = runningFrom(join(dir, 'pid'), join(dir, 'dnsmasq.conf'))
    if (pid) process.kill(pid, 'SIGTERM')
    this.converged.forget(networkId)
    await this.namespaces.remove(names.dhcpNamespace(networkId))
    rmSync(dir, { recursive: true, force: true })
  }

  private async ensure(network: DataplaneNetwork, state: HostNetworkState, hostLinks: Map<string, LinkInfo>): Promise<void> {
    const dhcp = network.dhcp!
    const ns = await this.namespaces.ensure(names.dhcpNamespace(network.id))
    const outside = names.tap(dhcp.portId)
    const inside = names.dhcpInside(dhcp.portId)
    const prefixes = new Map(network.subnets.map((s) => [s.id, prefixLength(s.cidr)]))
    const addressList = [...dhcp.fixedIps.filter((ip) => prefixes.has(ip.subnetId)).map((ip) => `${ip.ipAddress}/${prefixes.get(ip.subnetId)}`), `${METADATA_ADDRESS}/32`]
    const veth = { netns: ns, outside, inside, bridge: names.bridge(network.id), mtu: network.mtu, mac: dhcp.mac, addresses: addressList, isolated: true }
    // The veth as this process last made it, its host end still in the bridge: only dnsmasq is looked at (no command).
    const fingerprint = JSON.stringify(veth)
    if (!(hostLinks.get(outside)?.master === veth.bridge && this.converged.fresh(network.id, fingerprint))) {
      this.converged.forget(network.id)
      const nsLinks = new Map((await links(ns)).map((l) => [l.ifname, l]))
      // A DHCP port made again (its predecessor deleted through the API) comes with new names: the old veth goes.
      for (const name of nsLinks.keys()) if (name.startsWith('ns-') && name !== inside) await runIdempotent('ip', ['link', 'del', 'dev', name], GONE, { netns: ns })
      await plugVeth(veth, hostLinks, nsLinks)
      this.converged.done(network.id, fingerprint)
    }
    await this.ensureDnsmasq(network, state, ns, inside)
  }

  private async ensureDnsmasq(network: DataplaneNetwork, state: HostNetworkState, ns: string, device: string): Promise<void> {
    const dir = join(this.baseDir, network.id)
    mkdirSync(dir, { recursive: true })
    chmodSync(dir, 0o755)
    const dropPrivileges = searchableByAll(dir)
    if (!dropPrivileges) this.warn('the DHCP directory is not searchable by everyone: dnsmasq keeps root privileges', { dir })
    const confFile = join(dir, 'dnsmasq.conf')
    const hostsFile = join(dir, 'host')
    const conf = dnsmasqConf(network, dir, device, dropPrivileges)
    const hosts = dnsmasqHosts(network, state)
    const read = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8') : undefined)
    const hostsChanged = read(hostsFile) !== hosts
    if (hostsChanged) writeFileSync(hostsFile, hosts, { mode: 0o644 })
    let pid = runningFrom(join(dir, 'pid'), confFile)
    if (pid && read(confFile) !== conf) {
      process.kill(pid, 'SIGTERM')
      await waitGone(pid)
      pid = undefined
    }
    if (!pid) {
      writeFileSync(confFile, conf, { mode: 0o644 })
      await run('dnsmasq', [`--conf-file=${confFile}`], { netns: ns })
    } else if (hostsChanged) {
      process.kill(pid, 'SIGHUP')
    }
  }
}

async function waitGone(pid: number): Promise<void> {
  const deadline = Date.now() + 5000
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0)
    } catch {
      return
    }
    await new Promise((r) => setTimeout(r, 20))
  }
}
