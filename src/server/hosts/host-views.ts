/**
 * The os-hypervisors and os-services representations of a host record, by microversion (docs/conductor.md,
 * "Hosts"). Below 2.53 hypervisors and services have integer ids: the host's position by creation.
 */
import type { StoredHostFacts } from '../../contracts/host/facts.js'
import type { HostTable } from '../storage/tables/compute.js'
import { isUp } from './host-status.js'
import type { VersionNumber } from '../../contracts/compute/versions.js'

/** The request's compute microversion, as the compute scope parsed it (request.api.version). */
export type Version = VersionNumber

/** What each driver reports as `hypervisor_type`: QEMU for QEMU (KVM or TCG, said in cpu_info), Nova's fake driver's word for simulated hosts. */
export const HYPERVISOR_TYPES: Record<string, string> = { qemu: 'QEMU', simulated: 'fake' }

export const atLeast = (v: Version, minor: number) => v >= 2000 + minor

export interface HostContext {
  now: number
  downAfterMs: number
  /** Integer id of each host (below 2.53). */
  legacyIds: Map<string, number>
}

export function hostId(host: HostTable, v: Version, ctx: HostContext): string | number {
  return atLeast(v, 53) ? host.id : (ctx.legacyIds.get(host.id) ?? 0)
}

function facts(host: HostTable): StoredHostFacts {
  try {
    return JSON.parse(host.facts) as StoredHostFacts
  } catch {
    return {}
  }
}

function ips(host: HostTable): string[] {
  try {
    return JSON.parse(host.ip_addresses) as string[]
  } catch {
    return []
  }
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString().replace('Z', '').replace(/\.(\d{3})$/, '.$1000'))

export function hypervisorSummary(host: HostTable, v: Version, ctx: HostContext) {
  return {
    id: hostId(host, v, ctx),
    hypervisor_hostname: host.hostname,
    state: isUp(host, ctx.now, ctx.downAfterMs) ? 'up' : 'down',
    status: host.service_status,
  }
}

export function hypervisorDetail(host: HostTable, v: Version, ctx: HostContext) {
  const f = facts(host)
  const base = {
    ...hypervisorSummary(host, v, ctx),
    hypervisor_type: f.hypervisor_type ?? HYPERVISOR_TYPES[host.driver] ?? host.driver,
    hypervisor_version: f.hypervisor_version ?? 1000000,
    host_ip: ips(host)[0] ?? null,
    service: { id: hostId(host, v, ctx), host: host.hostname, disabled_reason: host.disabled_reason },
  }
  if (atLeast(v, 88)) return { ...base, uptime: uptime(host, ctx.now) }
  const cpuInfo = f.cpu_info ?? {}
  return {
    ...base,
    vcpus: host.vcpus,
    memory_mb: host.memory_mb,
    local_gb: host.disk_gb,
    vcpus_used: host.vcpus_used,
    memory_mb_used: host.memory_mb_used,
    local_gb_used: host.disk_gb_used,
    free_ram_mb: host.memory_mb - host.memory_mb_used,
    free_disk_gb: host.disk_gb - host.disk_gb_used,
    current_workload: 0,
    running_vms: host.running_vms,
    disk_available_least: host.disk_gb - host.disk_gb_used,
    cpu_info: atLeast(v, 28) ? cpuInfo : JSON.stringify(cpuInfo),
  }
}

export function uptime(host: HostTable, now: number): string {
  const up = Math.max(0, Math.floor((now - host.created_at) / 1000))
  const days = Math.floor(up / 86400)
  const hh = String(Math.floor((up % 86400) / 3600)).padStart(2, '0')
  const mm = String(Math.floor((up % 3600) / 60)).padStart(2, '0')
  return ` ${new Date(now).toISOString().slice(11, 19)} up ${days} days, ${hh}:${mm},  1 user,  load average: 0.00, 0.00, 0.00`
}

export function serviceView(host: HostTable, v: Version, ctx: HostContext) {
  return {
    id: hostId(host, v, ctx),
    binary: 'nova-compute',
    host: host.hostname,
    zone: host.availability_zone,
    status: host.service_status,
    state: isUp(host, ctx.now, ctx.downAfterMs) ? 'up' : 'down',
    updated_at: iso(host.last_heartbeat_at ?? host.updated_at),
    disabled_reason: host.disabled_reason,
    ...(atLeast(v, 11) && { forced_down: !!host.forced_down }),
  }
}
