/**
 * Routers on a host with the `network` role, as Neutron's L3 agent builds them (docs/network.md, "Choices", Routers): a namespace
 * `qrouter-<id>` that forwards, an interface `qr-<port>` on each attached network (the subnet's gateway address,
 * the port's MAC) and a gateway `qg-<port>` on the external network, each a veth whose other end sits in the
 * network's bridge; the default route through the external subnet's gateway; and in the namespace one nftables
 * table: floating IPs as DNAT in and SNAT out (the floating address held on `qg-` — added after its rules are
 * loaded, taken off before they go — and announced by gratuitous ARP), everything else leaving through the
 * gateway SNATed to the gateway's address when SNAT is enabled.
 */
import type { DataplaneRouter, DataplaneRouterPort, HostNetworkState } from '../../../contracts/network/dataplane.js'
import { names } from '../names.js'
import { Converged } from './converged.js'
import { addresses, GONE, links, run, runIdempotent, type LinkInfo } from './host-commands.js'
import { plugVeth } from './links.js'
import type { Namespaces } from './namespaces.js'

/** Marks, in the router's namespace, the first packet of a connection that came in from the external network. */
const FROM_OUTSIDE = '0x1'

/**
 * The namespace's NAT rules, whole, for one atomic `nft -f` inside it. A connection from inside to a floating IP
 * (a guest reaching its own floating address, or another guest's: hairpin) is DNATed to the fixed address and
 * leaves through a `qr-` port, not `qg-`; it is SNATed to the gateway address too, as Neutron's L3 agent does
 * (its `--ctstate DNAT` SNAT rule for what did not enter through the gateway), so the answer comes back through
 * the router and is un-NATed: without it a guest would get its own address as source (a martian, dropped), or
 * another guest would answer from its fixed address a connection made to a floating one.
 */
export function natRuleset(router: DataplaneRouter): string {
  const gw = router.gateway
  const pre: string[] = []
  const dnat: string[] = []
  const post: string[] = []
  if (gw) {
    const qg = names.routerGateway(gw.portId)
    pre.push(`iifname "${qg}" meta mark set ${FROM_OUTSIDE}`)
    for (const f of router.floatingIps) {
      dnat.push(`ip daddr ${f.floatingIpAddress} dnat to ${f.fixedIpAddress}`)
      post.push(`oifname "${qg}" ip saddr ${f.fixedIpAddress} snat to ${f.floatingIpAddress}`)
    }
    const gwIp = gw.addresses.map((a) => a.split('/')[0]).find((a) => !a.includes(':'))
    if (gwIp && router.floatingIps.length) post.push(`oifname != "${qg}" meta mark != ${FROM_OUTSIDE} ct status dnat snat to ${gwIp}`)
    if (gw.enableSnat && gwIp) post.push(`oifname "${qg}" snat to ${gwIp}`)
  }
  const chain = (name: string, hook: string, rules: string[]) => [`  chain ${name} {`, `    ${hook}`, ...rules.map((r) => `    ${r}`), '  }']
  return [
    'table ip pcc-nat',
    'delete table ip pcc-nat',
    'table ip pcc-nat {',
    ...chain('prerouting', 'type nat hook prerouting priority dstnat; policy accept;', [...pre, ...dnat]),
    ...chain('output', 'type nat hook output priority -100; policy accept;', dnat),
    ...chain('postrouting', 'type nat hook postrouting priority srcnat; policy accept;', post),
    '}',
    '',
  ].join('\n')
}

export class Routers {
  private readonly converged = new Converged()

  constructor(
    private readonly namespaces: Namespaces,
    private readonly warn: (message: string, fields?: Record<string, unknown>) => void,
  ) {}

  async converge(state: HostNetworkState): Promise<void> {
    const keep = new Set(state.routers.map((r) => names.routerNamespace(r.id)))
    for (const ns of this.namespaces.list()) {
      if (!ns.startsWith('qrouter-') || keep.has(ns)) continue
      await this.namespaces.remove(ns)
      this.converged.forget(ns)
    }
    const mtuOf = new Map(state.networks.map((n) => [n.id, n.mtu]))
    // One listing of the host's devices for all routers: each reads only its own veth ends in it.
    const hostLinks = new Map((await links()).map((l) => [l.ifname, l]))
    for (const router of state.routers) {
      const ns = names.routerNamespace(router.id)
      const ports = [...router.interfaces, ...(router.gateway ? [router.gateway] : [])]
      const fingerprint = JSON.stringify([router, ports.map((p) => mtuOf.get(p.networkId))])
      // A veth pair goes whole, so the host's end in its bridge tells that the namespace's end is there too.
      const intact = this.namespaces.exists(ns) && ports.every((p) => hostLinks.get(names.tap(p.portId))?.master === names.bridge(p.networkId))
      if (intact && this.converged.fresh(ns, fingerprint)) continue
      try {
        await this.ensure(router, mtuOf, hostLinks)
        this.converged.done(ns, fingerprint)
      } catch (err) {
        this.converged.forget(ns)
        // One router's failure (its external interface missing…) must not keep the others down.
        this.warn('router not converged', { router: router.id, error: (err as Error).message })
      }
    }
  }

  private async ensure(router: DataplaneRouter, mtuOf: Map<string, number>, hostLinks: Map<string, LinkInfo>): Promise<void> {
    const ns = await this.namespaces.ensure(names.routerNamespace(router.id))
    // Forwarding on; ICMP redirects off (Neutron's L3 agent too): a hairpinned packet leaves by the port it came
    // in, and a redirect would tell the guest to reach a floating IP's fixed address directly, past the NAT.
    await run('sh', ['-c', 'echo 1 > /proc/sys/net/ipv4/ip_forward; for f in /proc/sys/net/ipv4/conf/*/send_redirects; do echo 0 > "$f"; done'], { netns: ns })
    const nsLinks = new Map((await links(ns)).map((l) => [l.ifname, l]))
    const ports: [DataplaneRouterPort, string, string[]][] = router.interfaces.map((p) => [p, names.routerInterface(p.portId), p.addresses])
    // Floating addresses follow their NAT rules (Neutron's L3 agent too): a new one is added only once the ruleset
    // that DNATs it is loaded, and one that goes is taken off before the ruleset without it. An address held with no
    // DNAT rule would be the router's own: it would answer pings and connections for the floating IP — a floating
    // IP just moved here would answer before its server's guest is up.
    let newFloating: string[] = []
    if (router.gateway) {
      const qg = names.routerGateway(router.gateway.portId)
      const floating = router.floatingIps.map((f) => `${f.floatingIpAddress}/32`)
      // Held only if the veth stays: a veth made again (either end missing) holds nothing.
      const held = nsLinks.has(qg) && hostLinks.has(names.tap(router.gateway.portId)) ? await addresses(qg, ns) : []
      newFloating = floating.filter((f) => !held.includes(f))
      // Now: the gateway's own addresses and the floating ones it keeps; those that went are taken off here.
      ports.push([router.gateway, qg, [...router.gateway.addresses, ...floating.filter((f) => held.includes(f))]])
    }
    for (const [port, inside, wanted] of ports) {
      const veth = { netns: ns, outside: names.tap(port.portId), inside, bridge: names.bridge(port.networkId), mtu: mtuOf.get(port.networkId) ?? 1500 }
      await plugVeth({ ...veth, mac: port.mac, addresses: wanted, isolated: false }, hostLinks, nsLinks)
    }
    // Ports the router no longer has: their veths go (the bridge end with them).
    const wantedInside = new Set(ports.map(([, inside]) => inside))
    for (const l of nsLinks.values()) if (/^(qr|qg)-/.test(l.ifname) && !wantedInside.has(l.ifname)) await runIdempotent('ip', ['link', 'del', 'dev', l.ifname], GONE, { netns: ns })
    await this.ensureRoutes(router, ns)
    await run('nft', ['-f', '-'], { netns: ns, input: natRuleset(router) })
    if (router.gateway && newFloating.length) {
      // The rules are in: the new floating addresses now, each announced by gratuitous ARP so the external
      // network's neighbours learn it at once.
      const qg = names.routerGateway(router.gateway.portId)
      for (const a of newFloating) await runIdempotent('ip', ['addr', 'add', a, 'dev', qg], /File exists/, { netns: ns })
      for (const a of newFloating) void run('busybox', ['arping', '-U', '-c', '1', '-I', qg, a.split('/')[0]], { netns: ns }).catch(() => {})
    }
  }

  private async ensureRoutes(router: DataplaneRouter, ns: string): Promise<void> {
    const want = new Map<string, string>()
    if (router.gateway?.nexthop) want.set('default', router.gateway.nexthop)
    for (const r of router.routes) if (!r.destination.includes(':')) want.set(r.destination === '0.0.0.0/0' ? 'default' : r.destination, r.nexthop)
    const routes = JSON.parse((await run('ip', ['-j', 'route', 'show'], { netns: ns })) || '[]') as { dst: string; gateway?: string; protocol?: string }[]
    for (const r of routes) {
      if (r.gateway && want.get(r.dst) !== r.gateway) await runIdempotent('ip', ['route', 'del', r.dst, 'via', r.gateway], /No such process/, { netns: ns })
    }
    for (const [dst, via] of want) {
      if (!routes.some((r) => r.dst === dst && r.gateway === via)) {
        try {
          await run('ip', ['route', 'replace', dst, 'via', via], { netns: ns })
        } catch (err) {
          this.warn('route not added (next hop unreachable?)', { router: router.id, dst, via, error: (err as Error).message })
        }
      }
    }
  }
}
