/**
 * The seam between the agent and a host's guest networking: a back end converges the host to the control
 * plane's desired state (contracts/network/dataplane.ts) and says what it holds. Two implementations, one
 * conformance suite (test/agent/network/backend-conformance.ts):
 *
 * - `linux` (linux/linux-backend.ts): bridges, VXLAN, taps, nftables, dnsmasq and namespaces on the host;
 * - `simulated` (simulated-backend.ts): holds the state in memory, for simulated hosts (no data plane at all).
 *
 * Guarantees every implementation gives:
 * - `apply` is idempotent and converges: what the state names exists afterwards, what it no longer names is
 *   gone, and what was already right is left untouched (a restarted agent applying the same state changes
 *   nothing and cuts no guest off);
 * - calls are serialised by the caller (never two `apply`s at once);
 * - `inventory` reports exactly what `expectedInventory` derives from the last state applied;
 * - `teardown` leaves nothing of the back end's on the host (a decommissioned host).
 */
import type { HostNetworkState } from '../../contracts/network/dataplane.js'
import { DhcpServers } from './linux/dhcp.js'
import { names } from './names.js'

/** What a back end holds, by the names operators see (all sorted). */
export interface NetworkInventory {
  bridges: string[]
  tunnels: string[]
  /** Guest taps and the bridge ends of DHCP and router veths. */
  taps: string[]
  namespaces: string[]
  /** Networks whose DHCP server runs on this host. */
  dhcpServers: string[]
  /** Ports whose anti-spoofing and security-group rules are loaded. */
  firewallPorts: string[]
}

export interface NetworkBackend {
  readonly name: string
  /** Converges the host to `state` (see the guarantees above). Throws when a step failed; applying again retries. */
  apply(state: HostNetworkState): Promise<void>
  inventory(): Promise<NetworkInventory>
  /** Removes everything the back end made. */
  teardown(): Promise<void>
}

export const EMPTY_STATE: HostNetworkState = { tunnelIp: null, networks: [], ports: [], securityGroups: [], groupMembers: [], routers: [] }

export interface InventoryOptions {
  /** Whether VXLAN devices can exist (the host has a tunnel address). */
  tunnels: boolean
}

/** What a back end must hold for `state`: the naming rules applied to it. */
export function expectedInventory(state: HostNetworkState, options: InventoryOptions): NetworkInventory {
  const sort = (items: string[]) => [...new Set(items)].sort()
  const served = DhcpServers.served(state)
  return {
    bridges: sort(state.networks.map((n) => names.bridge(n.id))),
    tunnels: options.tunnels ? sort(state.networks.filter((n) => n.type === 'vxlan' && n.segmentationId !== null).map((n) => names.vxlan(n.segmentationId!))) : [],
    taps: sort([
      ...state.ports.map((p) => names.tap(p.id)),
      ...served.map((n) => names.tap(n.dhcp!.portId)),
      ...state.routers.flatMap((r) => [...r.interfaces, ...(r.gateway ? [r.gateway] : [])].map((p) => names.tap(p.portId))),
    ]),
    namespaces: sort([...served.map((n) => names.dhcpNamespace(n.id)), ...state.routers.map((r) => names.routerNamespace(r.id))]),
    dhcpServers: sort(served.map((n) => n.id)),
    firewallPorts: sort(state.ports.filter((p) => p.portSecurityEnabled).map((p) => p.id)),
  }
}
