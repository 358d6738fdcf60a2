/**
 * The scheduler's view of a host: capacity, usage and placement facts, loaded from the store in one query
 * per batch and updated in memory as this scheduler claims. Another process's claims show up on reload; the
 * claim itself (claims.ts) is what guarantees capacity, not this view.
 */
import type { Db } from '../storage/store.js'
import type { HostTable } from '../storage/tables/compute.js'
import type { StoredHostFacts } from '../../contracts/host/facts.js'
import { isUp } from '../hosts/host-status.js'
import { HYPERVISOR_TYPES } from '../hosts/host-views.js'
import { hostAggregateMetadata, listAggregates, zonesOf } from '../compute/aggregates.js'

export interface HostState {
  id: string
  hostname: string
  availabilityZone: string
  cell: string
  ips: string[]
  vcpus: number
  memoryMb: number
  diskGb: number
  cpuRatio: number
  ramRatio: number
  diskRatio: number
  vcpusUsed: number
  memoryMbUsed: number
  diskGbUsed: number
  runningVms: number
  up: boolean
  enabled: boolean
  /** The host carries the `hypervisor` role in state ok. */
  hypervisor: boolean
  hypervisorType: string
  /** Metadata of the aggregates the host is in, each key with every value it has there (aggregates.ts). */
  aggregateMetadata: Record<string, string[]>
  /** The facts the host reported (JSON), read only by the filters that need them (moves: ImagesTypeFilter). */
  facts: string
}

/** Where a host keeps guests' disks (its `images_type` fact: qcow2 or rbd), or null when it did not say (simulated). */
export function imagesTypeOf(facts: string): string | null {
  try {
    return (JSON.parse(facts) as StoredHostFacts).images_type ?? null
  } catch {
    return null
  }
}

/** `zone` and `aggregateMetadata` come from the host's aggregates; without them, its own zone and none. */
export function toHostState(row: HostTable, hypervisorRoleOk: boolean, now: number, downAfterMs: number, zone?: string, aggregateMetadata: Record<string, string[]> = {}): HostState {
  let ips: string[] = []
  try {
    ips = JSON.parse(row.ip_addresses) as string[]
  } catch {
    ips = []
  }
  return {
    id: row.id,
    hostname: row.hostname,
    availabilityZone: zone ?? row.availability_zone,
    cell: row.cell,
    ips,
    vcpus: row.vcpus,
    memoryMb: row.memory_mb,
    diskGb: row.disk_gb,
    cpuRatio: row.cpu_allocation_ratio,
    ramRatio: row.ram_allocation_ratio,
    diskRatio: row.disk_allocation_ratio,
    vcpusUsed: row.vcpus_used,
    memoryMbUsed: row.memory_mb_used,
    diskGbUsed: row.disk_gb_used,
    runningVms: row.running_vms,
    up: isUp(row, now, downAfterMs),
    enabled: row.service_status === 'enabled',
    hypervisor: hypervisorRoleOk,
    hypervisorType: HYPERVISOR_TYPES[row.driver] ?? row.driver,
    facts: row.facts,
    aggregateMetadata,
  }
}

export async function loadHostStates(db: Db, downAfterMs: number, now = Date.now()): Promise<HostState[]> {
  const [rows, roles, aggregates] = await Promise.all([
    db.selectFrom('hosts').selectAll().orderBy('hostname').execute(),
    db.selectFrom('host_roles').select('host_id').where('role', '=', 'hypervisor').where('state', '=', 'ok').execute(),
    listAggregates(db),
  ])
  const ok = new Set(roles.map((r) => r.host_id))
  const zones = zonesOf(rows, aggregates)
  const metadata = hostAggregateMetadata(aggregates)
  return rows.map((row) => toHostState(row, ok.has(row.id), now, downAfterMs, zones.get(row.hostname), metadata.get(row.hostname)))
}

/** What a flavor takes on a host: vCPUs, RAM and disk (root + ephemeral + swap rounded up to GB). */
export interface Resources {
  vcpus: number
  memoryMb: number
  diskGb: number
}

export function freeRamMb(h: HostState): number {
  return h.memoryMb * h.ramRatio - h.memoryMbUsed
}

export function fits(h: HostState, r: Resources): boolean {
  return h.vcpusUsed + r.vcpus <= h.vcpus * h.cpuRatio && h.memoryMbUsed + r.memoryMb <= h.memoryMb * h.ramRatio && h.diskGbUsed + r.diskGb <= h.diskGb * h.diskRatio
}
