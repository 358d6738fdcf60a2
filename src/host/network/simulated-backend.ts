/**
 * The network back end of simulated hosts: no devices, the desired state kept in memory so the agent's protocol
 * (long poll, apply, restart) runs exactly as on a real host. It holds what the naming rules say a real host
 * would hold, so it passes the same conformance suite.
 */
import type { HostNetworkState } from '../../contracts/network/dataplane.js'
import { EMPTY_STATE, expectedInventory, type NetworkBackend, type NetworkInventory } from './backend.js'

export class SimulatedNetworkBackend implements NetworkBackend {
  readonly name = 'simulated'
  private state: HostNetworkState = EMPTY_STATE

  async apply(state: HostNetworkState): Promise<void> {
    this.state = state
  }

  async inventory(): Promise<NetworkInventory> {
    return expectedInventory(this.state, { tunnels: this.state.tunnelIp !== null })
  }

  async teardown(): Promise<void> {
    this.state = EMPTY_STATE
  }
}
