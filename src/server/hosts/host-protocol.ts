/**
 * The host protocol, store side: what a host agent (or an in-process simulated host) calls to register
 * itself, report capacity and heartbeat. The calls are idempotent upserts keyed by hostname, so an agent can
 * repeat them after any failure.
 */
import { randomUUID } from 'node:crypto'
import type { Db } from '../storage/store.js'
import type { HostTable } from '../storage/tables/compute.js'

/**
 * The host protocol (src/contracts/host/commands.ts) an agent reported in its facts (`protocol_version`, sent at
 * registration and in heartbeats); agents from before protocol versions report none and speak protocol 1.
 */
export function reportedProtocol(facts: { protocol_version?: unknown }): number {
  const reported = facts.protocol_version
  return typeof reported === 'number' && Number.isInteger(reported) && reported >= 1 ? reported : 1
}

/** The protocol a registered host's agent speaks (1 for a host that never reported one). */
export async function hostProtocol(db: Db, hostId: string): Promise<number> {
  const host = await db.selectFrom('hosts').select('facts').where('id', '=', hostId).executeTakeFirst()
  return host ? reportedProtocol(JSON.parse(host.facts) as Record<string, unknown>) : 1
}

export interface HostRegistration {
  /** The id a new host gets (an agent host keeps the id it chose); random when absent. */
  id?: string
  hostname: string
  kind: 'simulated' | 'agent'
  driver: string
  availabilityZone?: string
  cell?: string
  ipAddresses?: string[]
  facts?: Record<string, unknown>
  vcpus: number
  memoryMb: number
  diskGb: number
  cpuAllocationRatio?: number
  ramAllocationRatio?: number
  diskAllocationRatio?: number
  /** Roles to ensure on the host, with their state (e.g. {hypervisor: 'ok'}). */
  roles?: Record<string, string>
}

/**
 * Creates the host or refreshes its reported facts and capacity. Allocation ratios, AZ and cell set by an
 * operator are kept on re-registration unless the registration names them.
 */
export async function registerHost(db: Db, reg: HostRegistration, now = Date.now()): Promise<HostTable> {
  const existing = await db.selectFrom('hosts').selectAll().where('hostname', '=', reg.hostname).executeTakeFirst()
  let host: HostTable
  if (existing) {
    const update = {
      kind: reg.kind,
      driver: reg.driver,
      ...(reg.availabilityZone !== undefined && { availability_zone: reg.availabilityZone }),
      ...(reg.cell !== undefined && { cell: reg.cell }),
      ...(reg.ipAddresses !== undefined && { ip_addresses: JSON.stringify(reg.ipAddresses) }),
      ...(reg.facts !== undefined && { facts: JSON.stringify(reg.facts) }),
      ...(reg.cpuAllocationRatio !== undefined && { cpu_allocation_ratio: reg.cpuAllocationRatio }),
      ...(reg.ramAllocationRatio !== undefined && { ram_allocation_ratio: reg.ramAllocationRatio }),
      ...(reg.diskAllocationRatio !== undefined && { disk_allocation_ratio: reg.diskAllocationRatio }),
      vcpus: reg.vcpus,
      memory_mb: reg.memoryMb,
      disk_gb: reg.diskGb,
      last_heartbeat_at: now,
      updated_at: now,
    }
    await db.updateTable('hosts').set(update).where('id', '=', existing.id).execute()
    host = { ...existing, ...update }
  } else {
    host = {
      id: reg.id ?? randomUUID(),
      hostname: reg.hostname,
      kind: reg.kind,
      driver: reg.driver,
      availability_zone: reg.availabilityZone ?? 'nova',
      cell: reg.cell ?? 'cell1',
      ip_addresses: JSON.stringify(reg.ipAddresses ?? []),
      facts: JSON.stringify(reg.facts ?? {}),
      vcpus: reg.vcpus,
      memory_mb: reg.memoryMb,
      disk_gb: reg.diskGb,
      cpu_allocation_ratio: reg.cpuAllocationRatio ?? 4,
      ram_allocation_ratio: reg.ramAllocationRatio ?? 1,
      disk_allocation_ratio: reg.diskAllocationRatio ?? 1,
      vcpus_used: 0,
      memory_mb_used: 0,
      disk_gb_used: 0,
      running_vms: 0,
      service_status: 'enabled',
      disabled_reason: null,
      forced_down: 0,
      last_heartbeat_at: now,
      created_at: now,
      updated_at: now,
    }
    try {
      await db.insertInto('hosts').values(host).execute()
    } catch (err) {
      // Another process registered the same hostname at the same moment: take its row.
      const raced = await db.selectFrom('hosts').selectAll().where('hostname', '=', reg.hostname).executeTakeFirst()
      if (!raced) throw err
      host = raced
    }
  }
  for (const [role, state] of Object.entries(reg.roles ?? {})) await setHostRole(db, host.id, role, state, now)
  return host
}

export async function setHostRole(db: Db, hostId: string, role: string, state: string, now = Date.now()): Promise<void> {
  const updated = await db.updateTable('host_roles').set({ state, updated_at: now }).where('host_id', '=', hostId).where('role', '=', role).executeTakeFirst()
  if (updated.numUpdatedRows > 0n) return
  try {
    await db.insertInto('host_roles').values({ host_id: hostId, role, state, updated_at: now }).execute()
  } catch {
    await db.updateTable('host_roles').set({ state, updated_at: now }).where('host_id', '=', hostId).where('role', '=', role).execute()
  }
}

/** Records that the host is alive; answers false when the host is unknown (it must register again). */
export async function heartbeat(db: Db, hostId: string, now = Date.now()): Promise<boolean> {
  const result = await db.updateTable('hosts').set({ last_heartbeat_at: now }).where('id', '=', hostId).executeTakeFirst()
  return result.numUpdatedRows > 0n
}
