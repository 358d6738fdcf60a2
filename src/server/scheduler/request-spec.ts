/** What the scheduler must place: one server's needs and constraints, built from its row and hints. */
import type { Resources } from './host-state.js'

export interface SchedulerHints {
  same_host?: string | string[]
  different_host?: string | string[]
  group?: string
  query?: string
  build_near_host_ip?: string
  cidr?: string
  different_cell?: string | string[]
  target_cell?: string
  /** Written by the API for `az:host[:node]`, `host` and `hypervisor_hostname` (admin only). */
  force_host?: string
  force_node?: string
}

export interface GroupInfo {
  id: string
  policy: 'affinity' | 'anti-affinity' | 'soft-affinity' | 'soft-anti-affinity'
  /** Most members on one host for anti-affinity (Nova's max_server_per_host rule, default 1). */
  maxPerHost: number
  /** Host id → members of the group on it (this batch's placements included). */
  hosts: Map<string, number>
}

export interface RequestSpec {
  serverId: string
  projectId: string
  resources: Resources
  /** The flavor's extra specs (the target flavor's for a resize): AggregateInstanceExtraSpecsFilter reads them. */
  extraSpecs: Record<string, string>
  /** The zone requested (`az`, without host/node parts), or null for any. */
  availabilityZone: string | null
  /** A forced host or node (`az:host`, `az:host:node`, `az::node`, or the admin `host` of migrate/evacuate). */
  forcedHost: string | null
  forcedNode: string | null
  hints: SchedulerHints
  group: GroupInfo | null
  /** Host id of each server the hints name (same_host/different_host), absent when not placed. */
  instanceHosts: Map<string, string>
  /** Hosts the request must not land on (the source of a migration). */
  ignoreHosts: Set<string>
  /** A move's disks stay where they are (Ceph) or travel as files: the destination keeps them the same way (its `images_type`). */
  imagesType: string | null
}

export function asList(v: string | string[] | undefined): string[] {
  if (v === undefined || v === null) return []
  return Array.isArray(v) ? v : [v]
}

/** Splits Nova's availability_zone forms: az, az:host, az:host:node, az::node. */
export function parseAvailabilityZone(raw: string | null): { zone: string | null; host: string | null; node: string | null } {
  if (!raw) return { zone: null, host: null, node: null }
  const [zone, host, node] = raw.split(':')
  return { zone: zone || null, host: host || null, node: node || null }
}
