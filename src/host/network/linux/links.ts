/**
 * Layer 2 on a host (Neutron's linuxbridge agent; docs/network.md, "Choices", Linux bridge and VXLAN): per network a Linux bridge
 * `brq<net>`, its uplink — a VXLAN device `vxlan-<vni>` with head-end replication to the network's other hosts
 * from static FDB entries (l2population: an all-zero entry per peer for broadcast, one per remote MAC, learning
 * off), or the host interface mapped to a flat network's physical network — and a tap per guest port.
 *
 * Converging compares with what `ip -d link` shows and changes only what differs, so a restarted agent keeps
 * every device (and every guest's connectivity) that is already right.
 */
import type { DataplaneNetwork, HostNetworkState } from '../../../contracts/network/dataplane.js'
import { readFileSync, writeFileSync } from 'node:fs'
import { names, OWNED } from '../names.js'
import { addresses, GONE, links, run, runIdempotent, type LinkInfo } from './host-commands.js'

export interface LinkConfig {
  /** The VXLAN endpoint address of this host. */
  tunnelIp: string | null
  /** Physical network → host interface (agent.json `network.physical_interfaces`). */
  physicalInterfaces: Record<string, string>
  /** UDP port of the VXLAN tunnels (IANA's 4789 unless configured; every host must agree). */
  vxlanPort: number
  /** Reports what could not be made (a flat network without an interface, VXLAN without a tunnel address). */
  warn(message: string, fields?: Record<string, unknown>): void
}

interface Uplink {
  device: string
  bridge: string
  kind: 'vxlan' | 'physical'
  vni?: number
  /** The local tunnel address (VXLAN). */
  local?: string
  mtu: number
  peers: DataplaneNetwork['peers']
}

export interface L2Plan {
  bridges: Map<string, { mtu: number }>
  uplinks: Map<string, Uplink>
  taps: Map<string, { bridge: string; mtu: number; up: boolean; mac: string }>
  /** Veth bridge ends the DHCP and router modules make; kept here so pruning leaves them. */
  veths: Set<string>
}

/** What L2 must be: a pure function of the state and the host's configuration. */
export function l2Plan(state: HostNetworkState, config: LinkConfig): L2Plan {
  const plan: L2Plan = { bridges: new Map(), uplinks: new Map(), taps: new Map(), veths: new Set() }
  const tunnelIp = config.tunnelIp ?? state.tunnelIp
  for (const n of state.networks) {
    const bridge = names.bridge(n.id)
    plan.bridges.set(bridge, { mtu: n.mtu })
    if (n.type === 'vxlan' && n.segmentationId !== null) {
      const device = names.vxlan(n.segmentationId)
      if (tunnelIp) plan.uplinks.set(device, { device, bridge, kind: 'vxlan', vni: n.segmentationId, local: tunnelIp, mtu: n.mtu, peers: n.peers })
      else config.warn('no tunnel address: VXLAN network stays local to this host', { network: n.id })
    } else if (n.type === 'flat') {
      const device = n.physicalNetwork ? config.physicalInterfaces[n.physicalNetwork] : undefined
      if (device) plan.uplinks.set(device, { device, bridge, kind: 'physical', mtu: n.mtu, peers: [] })
      else config.warn('no interface for the physical network in agent.json network.physical_interfaces', { network: n.id, physicalNetwork: n.physicalNetwork })
    }
    if (n.dhcp && state.ports.some((p) => p.networkId === n.id)) plan.veths.add(names.tap(n.dhcp.portId))
  }
  const mtuOf = new Map(state.networks.map((n) => [n.id, n.mtu]))
  for (const p of state.ports) plan.taps.set(names.tap(p.id), { bridge: names.bridge(p.networkId), mtu: mtuOf.get(p.networkId) ?? 1500, up: p.adminStateUp, mac: p.mac })
  for (const r of state.routers) for (const port of [...r.interfaces, ...(r.gateway ? [r.gateway] : [])]) plan.veths.add(names.tap(port.portId))
  return plan
}

async function setMaster(link: LinkInfo | undefined, device: string, bridge: string): Promise<void> {
  if (link?.master !== bridge) await run('ip', ['link', 'set', 'dev', device, 'master', bridge])
}

async function setUp(link: LinkInfo | undefined, device: string, up: boolean, netns?: string): Promise<void> {
  const isUp = link?.flags.includes('UP') ?? false
  if (isUp !== up) await run('ip', ['link', 'set', 'dev', device, up ? 'up' : 'down'], { netns })
}

async function setMtu(link: LinkInfo | undefined, device: string, mtu: number, netns?: string): Promise<void> {
  if (link?.mtu !== mtu) await run('ip', ['link', 'set', 'dev', device, 'mtu', String(mtu)], { netns })
}

/** The bridge port flag that keeps two ports from talking (uplink ↔ local DHCP server). */
export async function setIsolated(link: LinkInfo | undefined, device: string): Promise<void> {
  if (link?.linkinfo?.info_slave_data?.isolated !== true) await run('ip', ['link', 'set', 'dev', device, 'type', 'bridge_slave', 'isolated', 'on'])
}

/** The host takes no part in tenant networks: no IPv6 link-local address on a device of theirs. */
export function disableIpv6(device: string): void {
  const file = `/proc/sys/net/ipv6/conf/${device}/disable_ipv6`
  try {
    if (readFileSync(file, 'utf8').trim() !== '1') writeFileSync(file, '1')
  } catch {
    // No IPv6 on this host (or the device is gone): nothing to disable.
  }
}

/** A port of a namespace (a DHCP server's, a router's) on a network's bridge: a veth, one end in each. */
export interface VethPort {
  /** The namespace file of the inner end. */
  netns: string
  /** The bridge end (`tap<port>`) and the inner end (`ns-`, `qr-`, `qg-<port>`). */
  outside: string
  inside: string
  bridge: string
  mtu: number
  /** The port's MAC and addresses (address/prefix), on the inner end. */
  mac: string
  addresses: string[]
  /** An isolated bridge port (a DHCP server, which the uplink must never reach). */
  isolated: boolean
}

/**
 * Makes a namespace's port what `port` says, changing only what differs from the devices listed (`hostLinks`,
 * `nsLinks`; a veth made again leaves their maps). A missing end means a new veth, both ends made again.
 */
export async function plugVeth(port: VethPort, hostLinks: Map<string, LinkInfo>, nsLinks: Map<string, LinkInfo>): Promise<void> {
  const { netns, outside, inside, bridge, mtu } = port
  if (!hostLinks.has(outside) || !nsLinks.has(inside)) {
    await runIdempotent('ip', ['link', 'del', 'dev', outside], GONE)
    await runIdempotent('ip', ['link', 'del', 'dev', inside], GONE, { netns })
    await run('ip', ['link', 'add', outside, 'type', 'veth', 'peer', 'name', inside, 'netns', netns])
    hostLinks.delete(outside)
    nsLinks.delete(inside)
  }
  disableIpv6(outside)
  const out = hostLinks.get(outside)
  await setMaster(out, outside, bridge)
  if (port.isolated) await setIsolated(out?.master === bridge ? out : undefined, outside)
  await setMtu(out, outside, mtu)
  await setUp(out, outside, true)
  const inLink = nsLinks.get(inside)
  if (inLink?.address !== port.mac) await run('ip', ['link', 'set', 'dev', inside, 'address', port.mac], { netns })
  await setMtu(inLink, inside, mtu, netns)
  const have = await addresses(inside, netns)
  for (const a of have) if (!port.addresses.includes(a)) await run('ip', ['addr', 'del', a, 'dev', inside], { netns })
  for (const a of port.addresses) if (!have.includes(a)) await run('ip', ['addr', 'add', a, 'dev', inside], { netns })
  await setUp(inLink, inside, true, netns)
}

/**
 * Taps of ports this host no longer has, before the firewall forgets them (so none passes unfiltered): the
 * persistent taps this back end made are deleted; any other device with a tap name — one QEMU made for a guest
 * arriving before its port is bound here, or leaving after it moved — is only taken out of the bridge and
 * downed, never deleted under its owner.
 */
export async function removeStaleTaps(plan: L2Plan): Promise<void> {
  for (const link of await links()) {
    if (!OWNED.tap.test(link.ifname) || plan.taps.has(link.ifname) || plan.veths.has(link.ifname)) continue
    if (link.linkinfo?.info_kind === 'tun' && link.linkinfo.info_data?.persist === true) {
      await runIdempotent('ip', ['link', 'del', 'dev', link.ifname], GONE)
    } else if (link.master && OWNED.bridge.test(link.master)) {
      await runIdempotent('ip', ['link', 'set', 'dev', link.ifname, 'nomaster', 'down'], GONE)
    }
  }
}

/** Creates and corrects bridges, uplinks, taps and FDB entries. */
export async function ensureLinks(plan: L2Plan, config: LinkConfig): Promise<void> {
  let observed = new Map((await links()).map((l) => [l.ifname, l]))
  for (const bridge of plan.bridges.keys()) {
    if (!observed.has(bridge)) await run('ip', ['link', 'add', bridge, 'type', 'bridge'])
  }
  for (const [device, up] of plan.uplinks) {
    const link = observed.get(device)
    if (up.kind === 'vxlan') {
      const data = link?.linkinfo?.info_data
      if (link && (link.linkinfo?.info_kind !== 'vxlan' || data?.id !== up.vni || data?.local !== up.local || data?.port !== config.vxlanPort)) {
        await run('ip', ['link', 'del', 'dev', device])
        observed.delete(device)
      }
      if (!observed.has(device)) {
        await run('ip', ['link', 'add', device, 'type', 'vxlan', 'id', String(up.vni), 'local', up.local!, 'dstport', String(config.vxlanPort), 'nolearning'])
      }
    } else if (!link) {
      config.warn('the interface of a physical network does not exist', { device })
      plan.uplinks.delete(device)
    }
  }
  for (const [tap, want] of plan.taps) {
    // A tap may exist already: made by an earlier run, or by QEMU itself (a transient one when none was ready).
    if (!observed.has(tap)) {
      await run('ip', ['tuntap', 'add', 'dev', tap, 'mode', 'tap', 'vnet_hdr'])
      // As libvirt does: the host end's MAC differs from the guest's (fe: instead of fa:), so the bridge never
      // takes the guest's address as its own.
      await run('ip', ['link', 'set', 'dev', tap, 'address', `fe${want.mac.slice(2)}`])
    }
  }
  observed = new Map((await links()).map((l) => [l.ifname, l]))
  // The host takes no part in tenant networks: no IPv6 link-local address on their devices (the bridge's own
  // frames are dropped by the firewall's bridge input chain, ARP included).
  for (const device of [...plan.bridges.keys(), ...plan.taps.keys(), ...[...plan.uplinks.values()].filter((u) => u.kind === 'vxlan').map((u) => u.device)]) disableIpv6(device)
  for (const [bridge, want] of plan.bridges) {
    await setMtu(observed.get(bridge), bridge, want.mtu)
    await setUp(observed.get(bridge), bridge, true)
  }
  for (const [device, up] of plan.uplinks) {
    const link = observed.get(device)
    if (up.kind === 'vxlan') await setMtu(link, device, up.mtu)
    await setMaster(link, device, up.bridge)
    await setIsolated(link?.master === up.bridge ? link : undefined, device)
    await setUp(link, device, true)
    if (up.kind === 'vxlan') await ensureFdb(device, up.peers)
  }
  for (const [tap, want] of plan.taps) {
    const link = observed.get(tap)
    await setMtu(link, tap, want.mtu)
    await setMaster(link, tap, want.bridge)
    await setUp(link, tap, want.up)
  }
}

interface FdbEntry {
  mac: string
  dst?: string
  flags: string[]
}

/** Head-end replication and remote MACs on a VXLAN device: exactly the peers' entries, nothing stale. */
async function ensureFdb(device: string, peers: DataplaneNetwork['peers']): Promise<void> {
  const entries = (JSON.parse((await run('bridge', ['-j', 'fdb', 'show', 'dev', device])) || '[]') as FdbEntry[]).filter((e) => e.dst !== undefined && e.flags.includes('self'))
  const want = new Set<string>()
  for (const peer of peers) {
    want.add(`00:00:00:00:00:00 ${peer.tunnelIp}`)
    for (const mac of peer.macs) want.add(`${mac} ${peer.tunnelIp}`)
  }
  const have = new Set(entries.map((e) => `${e.mac} ${e.dst}`))
  for (const e of entries) {
    if (!want.has(`${e.mac} ${e.dst}`)) await runIdempotent('bridge', ['fdb', 'del', e.mac, 'dev', device, 'dst', e.dst!, 'self'], /No such file|not found/i)
  }
  for (const key of want) {
    if (have.has(key)) continue
    const [mac, dst] = key.split(' ')
    // Several all-zero entries (one per peer) need append; a MAC lives behind one peer, so replace.
    await run('bridge', ['fdb', mac === '00:00:00:00:00:00' ? 'append' : 'replace', mac, 'dev', device, 'dst', dst, 'self', 'permanent'])
  }
}

/** Deletes bridges and VXLAN devices no network needs; physical interfaces are only released, never deleted. */
export async function pruneLinks(plan: L2Plan): Promise<void> {
  const observed = await links()
  for (const link of observed) {
    if (OWNED.vxlan.test(link.ifname) && !plan.uplinks.has(link.ifname)) await runIdempotent('ip', ['link', 'del', 'dev', link.ifname], GONE)
  }
  for (const link of observed) {
    const staleUplink = link.master && OWNED.bridge.test(link.master) && !OWNED.tap.test(link.ifname) && !OWNED.vxlan.test(link.ifname) && plan.uplinks.get(link.ifname)?.bridge !== link.master
    if (staleUplink) await runIdempotent('ip', ['link', 'set', 'dev', link.ifname, 'nomaster'], GONE)
  }
  for (const link of observed) {
    if (OWNED.bridge.test(link.ifname) && !plan.bridges.has(link.ifname)) await runIdempotent('ip', ['link', 'del', 'dev', link.ifname], GONE)
  }
}
