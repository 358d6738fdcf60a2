/**
 * The embedded hypervisors: `PCC_SIMULATED_HOSTS` hosts named sim-host-1…N, each with an in-process simulated
 * driver, registered and heartbeating through the same host-protocol calls a real agent makes. Registration
 * is idempotent, so every process sharing a store serves the same simulated hosts.
 */
import type { Logger } from 'pino'
import type { Config } from '../config/settings.js'
import type { GuestInfo } from '../../contracts/host/compute-driver.js'
import type { DriverRegistry } from '../hosts/driver-registry.js'
import { SimulatedDriver } from '../../host/compute/simulated/simulated-driver.js'
import type { Store } from '../storage/store.js'
import type { FlavorSnapshot } from '../../contracts/host/compute-driver.js'
import { heartbeat, registerHost } from '../hosts/host-protocol.js'
import { recordSamples } from '../metrics/metric-history.js'
import { SAMPLE_INTERVAL_MS } from '../../contracts/host/metrics.js'
import { simulatedHostSample } from '../../host/compute/simulated/simulated-metrics.js'

export interface SimulatedHostSpec {
  hostname: string
  vcpus?: number
  memoryMb?: number
  diskGb?: number
  availabilityZone?: string
  cell?: string
  ipAddresses?: string[]
  cpuAllocationRatio?: number
  ramAllocationRatio?: number
  diskAllocationRatio?: number
  /** Per-host failure injection, overriding the process-wide rate. */
  failureRate?: number
  delayMs?: number
}

export interface SimulatedHost {
  hostId: string
  hostname: string
  driver: SimulatedDriver
  /** Stops heartbeating (the host will go DOWN after the timeout). */
  stop(): void
}

/** Default size of an embedded host: a modest two-socket server. */
export const SIMULATED_DEFAULTS = { vcpus: 32, memoryMb: 131072, diskGb: 2000 }

async function resolveGuest(store: Store, hostId: string, serverId: string): Promise<GuestInfo | undefined> {
  const row = await store.db
    .selectFrom('servers')
    .select(['id', 'flavor', 'power_state', 'vm_state', 'launched_at'])
    .where('id', '=', serverId)
    .where('host_id', '=', hostId)
    .where('deleted', '=', 0)
    .executeTakeFirst()
  if (!row || row.launched_at === null) return undefined
  const flavor = JSON.parse(row.flavor) as FlavorSnapshot
  return { serverId: row.id, powerState: row.power_state, rescued: row.vm_state === 'rescued', vcpus: flavor.vcpus, memoryMb: flavor.ram, diskGb: flavor.disk, boots: 1 }
}

export async function startSimulatedHost(
  ctx: { store: Store; config: Config; drivers: DriverRegistry; logger: Logger },
  spec: SimulatedHostSpec,
): Promise<SimulatedHost> {
  const vcpus = spec.vcpus ?? SIMULATED_DEFAULTS.vcpus
  const memoryMb = spec.memoryMb ?? SIMULATED_DEFAULTS.memoryMb
  const diskGb = spec.diskGb ?? SIMULATED_DEFAULTS.diskGb
  let hostId = ''
  const driver = new SimulatedDriver({
    hostname: spec.hostname,
    vcpus,
    memoryMb,
    diskGb,
    delayMs: spec.delayMs ?? ctx.config.simulatedDelayMs,
    failureRate: spec.failureRate ?? ctx.config.simulatedFailureRate,
    resolve: (serverId) => resolveGuest(ctx.store, hostId, serverId),
  })
  const capacity = await driver.capacity()
  const host = await registerHost(ctx.store.db, {
    hostname: spec.hostname,
    kind: 'simulated',
    driver: 'simulated',
    availabilityZone: spec.availabilityZone,
    cell: spec.cell,
    ipAddresses: spec.ipAddresses,
    facts: { hypervisor_type: capacity.hypervisorType, hypervisor_version: capacity.hypervisorVersion, cpu_info: capacity.cpuInfo, os: 'pcc-simulated' },
    vcpus: capacity.vcpus,
    memoryMb: capacity.memoryMb,
    diskGb: capacity.diskGb,
    cpuAllocationRatio: spec.cpuAllocationRatio,
    ramAllocationRatio: spec.ramAllocationRatio,
    diskAllocationRatio: spec.diskAllocationRatio,
    roles: { hypervisor: 'ok' },
  })
  hostId = host.id
  ctx.drivers.set(host.id, driver)
  const timer = setInterval(() => {
    heartbeat(ctx.store.db, host.id).catch((err: unknown) => ctx.logger.warn({ err, host: spec.hostname }, 'simulated host heartbeat failed'))
  }, ctx.config.hostHeartbeatSeconds * 1000)
  timer.unref()
  // Metrics as an agent samples them (docs/metrics.md), from the simulated driver's load model.
  const startedAt = Date.now()
  const sampler = setInterval(() => {
    sampleSimulatedHost(ctx.store, host.id, driver, startedAt).catch((err: unknown) => ctx.logger.warn({ err, host: spec.hostname }, 'simulated host metrics failed'))
  }, SAMPLE_INTERVAL_MS)
  sampler.unref()
  const stop = () => {
    clearInterval(timer)
    clearInterval(sampler)
  }
  return { hostId: host.id, hostname: host.hostname, driver, stop }
}

/** One sample of a simulated host and its guests, recorded as an agent's heartbeat records it. */
export async function sampleSimulatedHost(store: Store, hostId: string, driver: SimulatedDriver, startedAt: number): Promise<void> {
  const guests = await driver.sampleGuests()
  const capacity = await driver.capacity()
  await recordSamples(store.db, hostId, { host: simulatedHostSample(guests, capacity.vcpus, capacity.memoryMb, startedAt), guests })
}

/** Registers sim-host-1…N (AZ nova, cell1, addresses 192.0.2.11…). */
export async function startSimulatedHosts(ctx: Parameters<typeof startSimulatedHost>[0], count: number): Promise<SimulatedHost[]> {
  const hosts: SimulatedHost[] = []
  for (let i = 1; i <= count; i++) {
    hosts.push(await startSimulatedHost(ctx, { hostname: `sim-host-${i}`, ipAddresses: [`192.0.2.${10 + (i % 240)}`] }))
  }
  return hosts
}
