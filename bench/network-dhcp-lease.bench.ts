/**
 * Port binding → the guest's DHCP lease, on a real data plane: a control plane on a private test network, one
 * agent host in its own namespace with the Linux back end, stand-in guests (namespaces plugged in by the port's
 * tap). For each port: a DHCP client starts in the guest (DISCOVER every 10 ms, net-probes.ts), then the port is
 * bound through the network API as Nova binds it; the figure is bind call → ACK. It includes the data-plane
 * revision poll (100 ms period), the agent's state read and apply (tap into the bridge, firewall, dnsmasq
 * hosts file + SIGHUP) and the DHCP exchange. The physical limit in the same run: the same client against the
 * already-plumbed port (dnsmasq's DISCOVER → ACK). About 30 s.
 */
import { randomUUID } from 'node:crypto'
import { standInGuest, type StandInGuest } from '../src/testkit/stand-in-guest.js'
import type { BenchRun } from './harness.js'
import { onDataplane, probeIn } from './net-bench.js'

const PORTS = 12

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]

type Lease = { discoverAt: number; offerAt?: number; ackAt?: number; ip?: string }
const probe = (guest: StandInGuest, mac: string) => probeIn<Lease>(guest, ['dhcp', mac, '15000'])

export const run: BenchRun = () =>
  onDataplane(async (c, guests) => {
    const neutron = c.neutron
    const net = (await neutron('POST', '/networks', { network: { name: 'bench' } })).network
    await neutron('POST', '/subnets', { subnet: { network_id: net.id, ip_version: 4, cidr: '10.70.0.0/24' } })
    const host = c.hosts[0]
    const bindToLease: number[] = []
    const floor: number[] = []
    for (let i = 0; i < PORTS; i++) {
      const port = (await neutron('POST', '/ports', { port: { network_id: net.id } })).port
      const guest = standInGuest(host.namespace, port.id, port.mac_address)
      guests.push(guest)
      // No address yet: a route to send the broadcast DISCOVER through.
      await guest.exec(['ip', 'route', 'add', 'default', 'dev', 'eth0'])
      const leased = probe(guest, port.mac_address)
      await new Promise((r) => setTimeout(r, 50))
      const bound = Date.now()
      await neutron('PUT', `/ports/${port.id}`, { port: { device_id: randomUUID(), device_owner: 'compute:nova', 'binding:host_id': host.hostname } })
      const lease = await leased
      if (!lease.ackAt || lease.ip !== port.fixed_ips[0].ip_address) throw new Error(`port ${i}: no lease for ${port.fixed_ips[0].ip_address} (${JSON.stringify(lease)})`)
      bindToLease.push(lease.ackAt - bound)
      const again = await probe(guest, port.mac_address)
      if (!again.ackAt) throw new Error(`port ${i}: no second lease`)
      floor.push(again.ackAt - again.discoverAt)
    }
    // The first port of the network on the host also makes its DHCP port, namespace and dnsmasq.
    const first = bindToLease[0]
    const rest = bindToLease.slice(1).sort((a, b) => a - b)
    floor.sort((a, b) => a - b)
    const note = `${PORTS - 1} ports bound one at a time on one host; DISCOVER every 10 ms from before the bind call`
    return [
      { figure: 'port binding → DHCP lease, p50', value: percentile(rest, 50), unit: 'ms', note },
      { figure: 'port binding → DHCP lease, p95', value: percentile(rest, 95), unit: 'ms' },
      { figure: "first port of a network on the host → DHCP lease (makes the DHCP port, namespace and dnsmasq)", value: first, unit: 'ms' },
      { figure: 'physical limit: DISCOVER → ACK on a plumbed port, p50', value: percentile(floor, 50), unit: 'ms', note: 'the same client and dnsmasq, the port already in place' },
    ]
  })
