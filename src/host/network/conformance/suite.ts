/**
 * The network back-end conformance suite: what the agent relies on from every NetworkBackend (backend.ts),
 * checked with the same tests on each implementation (backend.linux.test.ts, backend.simulated.test.ts).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { EMPTY_STATE, expectedInventory, type NetworkBackend, type NetworkInventory } from '../backend.js'
import type { HostNetworkState } from '../../../contracts/network/dataplane.js'
import { fullState, ID, shrunkState } from './states.js'

export interface BackendUnderTest {
  backend: NetworkBackend
  /** The tunnel address the back end was given (null: VXLAN devices cannot exist). */
  tunnelIp: string | null
  close(): Promise<void>
}

const NOTHING: NetworkInventory = { bridges: [], tunnels: [], taps: [], namespaces: [], dhcpServers: [], firewallPorts: [] }

export function networkBackendConformance(name: string, setup: () => Promise<BackendUnderTest>, options: { skip?: string } = {}): void {
  describe(`network back-end conformance (${name})`, { skip: options.skip }, () => {
    let t: BackendUnderTest
    const expected = (state: HostNetworkState) => expectedInventory(state, { tunnels: t.tunnelIp !== null })
    before(async () => {
      t = await setup()
    })
    after(async () => {
      await t?.backend.teardown().catch(() => {})
      await t?.close()
    })

    it('holds nothing before the first state', async () => {
      assert.deepEqual(await t.backend.inventory(), NOTHING)
    })

    it('converges to a state: bridges, tunnels, taps, DHCP and router namespaces, firewall rules', async () => {
      const state = fullState(t.tunnelIp)
      await t.backend.apply(state)
      const inventory = await t.backend.inventory()
      assert.deepEqual(inventory, expected(state))
      assert.ok(inventory.dhcpServers.includes(ID.netA), 'network A has DHCP and guests here')
      assert.ok(!inventory.firewallPorts.includes(ID.port2), 'a port without port security has no rules')
    })

    it('is idempotent: the same state again changes nothing', async () => {
      const state = fullState(t.tunnelIp)
      const before = await t.backend.inventory()
      await t.backend.apply(state)
      await t.backend.apply(state)
      assert.deepEqual(await t.backend.inventory(), before)
    })

    it('removes what the state no longer names', async () => {
      const state = shrunkState(t.tunnelIp)
      await t.backend.apply(state)
      const inventory = await t.backend.inventory()
      assert.deepEqual(inventory, expected(state))
      assert.ok(!inventory.bridges.some((b) => b.startsWith(`brq${ID.netB.slice(0, 11)}`)))
    })

    it('keeps going when a flat network has no interface on this host', async () => {
      const state = fullState(t.tunnelIp)
      const unmapped: HostNetworkState = { ...state, networks: state.networks.map((n) => (n.type === 'flat' ? { ...n, physicalNetwork: 'nowhere' } : n)) }
      await t.backend.apply(unmapped)
      assert.deepEqual(await t.backend.inventory(), expected(unmapped))
    })

    it('holds nothing after the empty state', async () => {
      await t.backend.apply(EMPTY_STATE)
      assert.deepEqual(await t.backend.inventory(), NOTHING)
    })

    it('leaves nothing after teardown (a decommissioned host)', async () => {
      await t.backend.apply(fullState(t.tunnelIp))
      await t.backend.teardown()
      assert.deepEqual(await t.backend.inventory(), NOTHING)
    })
  })
}
