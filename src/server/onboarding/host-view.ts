/** The resource manager's host object (Platform9 shape, docs/agent.md, "Host object") built from the shared host records. */
import { isUp } from '../hosts/host-status.js'
import type { StoredHostFacts } from '../../contracts/host/facts.js'
import { reportedProtocol } from '../hosts/host-protocol.js'
import type { HostRoleTable, HostTable } from '../storage/tables/compute.js'
import type { AgentHostTable } from '../storage/tables/onboarding.js'
import { roleStatus } from './roles.js'

const parse = <T>(text: string | null | undefined, fallback: T): T => {
  try {
    return text ? (JSON.parse(text) as T) : fallback
  } catch {
    return fallback
  }
}

export function hostView(host: HostTable, roles: Pick<HostRoleTable, 'role' | 'state'>[], agent: Pick<AgentHostTable, 'message'> | undefined, now: number, downAfterMs: number) {
  const facts = parse<StoredHostFacts>(host.facts, {})
  const ips = parse<string[]>(host.ip_addresses, [])
  const interfaces: Record<string, unknown> = {}
  for (const nic of facts.nics ?? []) {
    if (nic.name === undefined) continue
    interfaces[nic.name] = { mac: nic.mac, ifaces: (nic.ips ?? []).map((addr) => ({ addr })), ...(nic.bond && { bond: nic.bond }) }
  }
  const details: Record<string, string> = {}
  for (const r of roles) details[r.role] = r.state
  return {
    id: host.id,
    info: {
      hostname: host.hostname,
      os_family: 'Linux',
      arch: facts.arch ?? 'x86_64',
      os_info: facts.os_info?.pretty_name ?? '',
      responding: isUp(host, now, downAfterMs),
      last_response_time: host.last_heartbeat_at === null ? null : new Date(host.last_heartbeat_at).toISOString(),
      cpu_info: { count: facts.cpu?.count ?? host.vcpus, model: facts.cpu?.model ?? '', virtualization: facts.cpu?.virtualization ?? false },
    },
    roles: roles.map((r) => r.role).sort(),
    role_status: roleStatus(roles.map((r) => r.state)),
    roles_status_details: details,
    hypervisor_info: {
      vcpus: host.vcpus,
      memory_mb: host.memory_mb,
      disk_gb: host.disk_gb,
      running_vms: host.running_vms,
      // The scheduler places up to capacity × ratio (scheduler/claims.ts): what "full" means for this host.
      cpu_allocation_ratio: host.cpu_allocation_ratio,
      ram_allocation_ratio: host.ram_allocation_ratio,
      disk_allocation_ratio: host.disk_allocation_ratio,
    },
    extensions: { ip_address: { data: ips }, interfaces: { status: 'ok', data: interfaces } },
    agent_version: facts.agent_version ?? '',
    /** The host protocol its agent speaks; null for a host without an agent (in-process simulated hosts). */
    protocol_version: host.kind === 'agent' ? reportedProtocol(facts) : null,
    message: agent?.message ?? '',
  }
}

export type HostView = ReturnType<typeof hostView>
