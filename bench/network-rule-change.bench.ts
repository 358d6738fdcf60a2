/**
 * A security-group rule change taking effect on 100 ports: one agent host with the Linux back end and 100
 * stand-in guests bound to it, all in one security group without ingress rules, and a prober guest outside the
 * group. The prober tries TCP port 5000 on every guest every 50 ms (net-probes.ts: a refusal proves the SYN
 * passed the firewall, silence is a drop); the figure is the rule-create call → the last of the 100 guests
 * answering, and the same for the rule's removal (the last one falling silent is not observable directly, so
 * removal is measured to the rule leaving the loaded ruleset, read from nftables). The physical limit in the
 * same run: the same change loaded into the kernel by hand (`nft -f` of the group chain the agent rewrites). About
 * 60 s.
 */
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { firewallTables } from '../src/host/network/linux/firewall.js'
import { renderDelta, renderWhole } from '../src/host/network/linux/nft-script.js'
import type { HostNetworkAnswer } from '../src/contracts/network/dataplane.js'
import { until } from '../src/testkit/compute-api.js'
import { runIn, standInGuest, type StandInGuest } from '../src/testkit/stand-in-guest.js'
import type { BenchRun } from './harness.js'
import { onDataplane, probeIn } from './net-bench.js'

const GUESTS = 100

const connectProbe = async (prober: StandInGuest, ips: string[]) => (await probeIn<{ answeredAt: Record<string, number> }>(prober, ['connect', '5000', '20000', ...ips])).answeredAt

export const run: BenchRun = () =>
  onDataplane(async (c, guests) => {
    const neutron = c.neutron
    const host = c.hosts[0]
    const net = (await neutron('POST', '/networks', { network: { name: 'bench' } })).network
    await neutron('POST', '/subnets', { subnet: { network_id: net.id, ip_version: 4, cidr: '10.80.0.0/22', enable_dhcp: false } })
    const group = (await neutron('POST', '/security-groups', { security_group: { name: 'many' } })).security_group
    const bind = (portId: string) => neutron('PUT', `/ports/${portId}`, { port: { device_id: randomUUID(), device_owner: 'compute:nova', 'binding:host_id': host.hostname } })
    const ips: string[] = []
    for (let i = 0; i < GUESTS; i++) {
      const port = (await neutron('POST', '/ports', { port: { network_id: net.id, security_groups: [group.id] } })).port
      const guest = standInGuest(host.namespace, port.id, port.mac_address)
      guests.push(guest)
      await guest.address(`${port.fixed_ips[0].ip_address}/22`)
      await bind(port.id)
      ips.push(port.fixed_ips[0].ip_address)
    }
    const proberPort = (await neutron('POST', '/ports', { port: { network_id: net.id } })).port
    const prober = standInGuest(host.namespace, proberPort.id, proberPort.mac_address)
    guests.push(prober)
    await prober.address(`${proberPort.fixed_ips[0].ip_address}/22`)
    await bind(proberPort.id)
    const credential = (JSON.parse(readFileSync(join(host.root, 'etc/pcc/agent.json'), 'utf8')) as { credential: string }).credential
    const hostState = async () => {
      const res = await fetch(`${c.server.url}/resmgr/v1/hosts/${host.hostId}/network`, { headers: { authorization: `Bearer ${credential}` } })
      return (await res.json()) as HostNetworkAnswer
    }
    const applied = async (want: boolean) => {
      const chain = (await runIn(host.namespace, ['nft', 'list', 'chain', 'inet', 'pcc', `sg-${group.id}-ingress`])).stdout
      return chain.includes('dport 5000') === want ? true : undefined
    }
    await until('all 101 ports plumbed', 60_000, async () => ((await hostState()).state.ports.length === GUESTS + 1 ? true : undefined))
    // Every guest silent on 5000 first (no ingress rule).
    const before = await connectProbe(prober, ips.slice(0, 3)).catch(() => ({}))
    if (Object.keys(before).length > 0) throw new Error('port 5000 answered before any rule allowed it')

    const probing = connectProbe(prober, ips)
    await new Promise((r) => setTimeout(r, 300))
    const added = Date.now()
    const rule = (await neutron('POST', '/security-group-rules', { security_group_rule: { security_group_id: group.id, direction: 'ingress', protocol: 'tcp', port_range_min: 5000, port_range_max: 5000 } }))
      .security_group_rule
    const answered = await probing
    const times = ips.map((ip) => answered[ip])
    if (times.some((t) => t === undefined)) throw new Error(`${times.filter((t) => t === undefined).length} guests never answered`)
    const lastOpen = Math.max(...times) - added
    const firstOpen = Math.min(...times) - added

    const removed = Date.now()
    await neutron('DELETE', `/security-group-rules/${rule.id}`)
    await until('the removal applied', 20_000, () => applied(false), 10)
    const closedMs = Date.now() - removed

    // The kernel's share, by hand: the change as the agent loads it (the group's chain), and the whole ruleset.
    const state = (await hostState()).state
    const zones = { bridgePorts: state.ports.map((p) => `tap${p.id.slice(0, 11)}`), zones: new Map(state.networks.map((n) => [`brq${n.id.slice(0, 11)}`, 1])) }
    const opened = {
      ...state,
      securityGroups: state.securityGroups.map((g) => ({ ...g, rules: [...g.rules, { ...g.rules[0], id: 'x', direction: 'ingress' as const, protocol: 'tcp', portRangeMin: 5000, portRangeMax: 5000 }] })),
    }
    const nft = async (script: string) => {
      const t = Date.now()
      await new Promise<void>((resolve, reject) => {
        const child = spawn('ip', ['netns', 'exec', host.namespace, 'nft', '-f', '-'], { stdio: ['pipe', 'ignore', 'inherit'] })
        child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`nft exited ${code}`))))
        child.stdin.end(script)
      })
      return Date.now() - t
    }
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]
    const closedTables = firewallTables({ state, ...zones })
    const openedTables = firewallTables({ state: opened, ...zones })
    const whole = renderWhole(openedTables)
    const deltas: number[] = []
    const wholes: number[] = []
    for (let i = 0; i < 5; i++) {
      wholes.push(await nft(whole))
      deltas.push(await nft(renderDelta(openedTables, closedTables)!))
      deltas.push(await nft(renderDelta(closedTables, openedTables)!))
    }
    const note = `${GUESTS} guests in one group on one host; probed every 50 ms per guest`
    return [
      { figure: `rule added → open on all ${GUESTS} ports`, value: lastOpen, unit: 'ms', target: '< 1000 ms', note },
      { figure: `rule added → open on the first port`, value: firstOpen, unit: 'ms' },
      { figure: `rule removed → applied to all ${GUESTS} ports (ruleset read back)`, value: closedMs, unit: 'ms', target: '< 1000 ms', note: 'includes reading the chain every 10 ms' },
      { figure: 'physical limit: the same change loaded by hand (nft -f, one group chain), p50 of 10', value: median(deltas), unit: 'ms' },
      { figure: `reference: the whole ${GUESTS + 1}-port ruleset loaded by hand, p50 of 5`, value: median(wholes), unit: 'ms', note: `${whole.split('\n').length} lines` },
    ]
  })
