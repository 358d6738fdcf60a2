/**
 * The filters, in Nova's names and order: each removes hosts a request cannot use. They run over the
 * in-memory host states; the last one that empties the list is named in the no-valid-host fault.
 */
import { fits, imagesTypeOf, type HostState } from './host-state.js'
import { compileJsonQuery, hostPassesQuery, parseJsonQuery } from './json-filter.js'
import { asList, type RequestSpec } from './request-spec.js'

export interface Filter {
  name: string
  /** Whether the filter has anything to check for this request (cheap skip). */
  applies(spec: RequestSpec): boolean
  /** Builds the per-request predicate once (parses the query, the CIDR…). */
  prepare(spec: RequestSpec): (host: HostState) => boolean
}

function ipv4ToInt(ip: string): number | null {
  const parts = ip.split('.')
  if (parts.length !== 4) return null
  let n = 0
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null
    n = n * 256 + Number(p)
  }
  return n
}

/** True when `ip` is in `base/prefix` (IPv4). */
export function inCidr(ip: string, base: string, prefix: number): boolean {
  const a = ipv4ToInt(ip)
  const b = ipv4ToInt(base)
  if (a === null || b === null) return false
  if (prefix <= 0) return true
  const size = 2 ** (32 - Math.min(prefix, 32))
  return Math.floor(a / size) === Math.floor(b / size)
}

/** The scope of the flavor extra specs that name aggregate metadata a host must have. */
const AGGREGATE_SCOPE = 'aggregate_instance_extra_specs:'

/**
 * The flavor's `aggregate_instance_extra_specs:key=value` pairs as [key, value]. Only the scoped form counts: an
 * unscoped key (Nova's legacy form) is left to the driver, so flavors with free-form extra specs stay bootable.
 */
function aggregateSpecs(s: RequestSpec): [string, string][] {
  return Object.entries(s.extraSpecs)
    .filter(([key]) => key.startsWith(AGGREGATE_SCOPE))
    .map(([key, value]) => [key.slice(AGGREGATE_SCOPE.length), value])
}

export const FILTERS: Filter[] = [
  { name: 'ComputeFilter', applies: () => true, prepare: () => (h) => h.up && h.enabled },
  { name: 'HypervisorRoleFilter', applies: () => true, prepare: () => (h) => h.hypervisor },
  { name: 'IgnoreHostsFilter', applies: (s) => s.ignoreHosts.size > 0, prepare: (s) => (h) => !s.ignoreHosts.has(h.id) },
  {
    name: 'AvailabilityZoneFilter',
    applies: (s) => s.availabilityZone !== null,
    prepare: (s) => (h) => h.availabilityZone === s.availabilityZone,
  },
  {
    name: 'AggregateInstanceExtraSpecsFilter',
    applies: (s) => aggregateSpecs(s).length > 0,
    prepare: (s) => {
      const wanted = aggregateSpecs(s)
      return (h) => wanted.every(([key, value]) => (h.aggregateMetadata[key] ?? []).includes(value))
    },
  },
  {
    name: 'ForcedHostFilter',
    applies: (s) => s.forcedHost !== null || s.forcedNode !== null,
    prepare: (s) => (h) => (s.forcedHost === null || h.hostname === s.forcedHost) && (s.forcedNode === null || h.hostname === s.forcedNode),
  },
  {
    // pcc's own: a server's disks in Ceph are opened where they are, files travel only between file hosts.
    name: 'ImagesTypeFilter',
    applies: (s) => s.imagesType !== null,
    prepare: (s) => (h) => imagesTypeOf(h.facts) === s.imagesType,
  },
  { name: 'ResourcesFilter', applies: () => true, prepare: (s) => (h) => fits(h, s.resources) },
  {
    name: 'ServerGroupAffinityFilter',
    applies: (s) => s.group?.policy === 'affinity',
    // The first member goes anywhere; the others follow it.
    prepare: (s) => (h) => s.group!.hosts.size === 0 || (s.group!.hosts.get(h.id) ?? 0) > 0,
  },
  {
    name: 'ServerGroupAntiAffinityFilter',
    applies: (s) => s.group?.policy === 'anti-affinity',
    prepare: (s) => (h) => (s.group!.hosts.get(h.id) ?? 0) < s.group!.maxPerHost,
  },
  {
    name: 'SameHostFilter',
    applies: (s) => asList(s.hints.same_host).length > 0,
    prepare: (s) => {
      const hosts = new Set(asList(s.hints.same_host).map((id) => s.instanceHosts.get(id)))
      return (h) => hosts.has(h.id)
    },
  },
  {
    name: 'DifferentHostFilter',
    applies: (s) => asList(s.hints.different_host).length > 0,
    prepare: (s) => {
      const hosts = new Set(asList(s.hints.different_host).map((id) => s.instanceHosts.get(id)))
      return (h) => !hosts.has(h.id)
    },
  },
  {
    name: 'JsonFilter',
    applies: (s) => typeof s.hints.query === 'string' && s.hints.query !== '',
    prepare: (s) => {
      let compiled: ReturnType<typeof compileJsonQuery>
      try {
        compiled = compileJsonQuery(parseJsonQuery(s.hints.query!))
      } catch {
        return () => false
      }
      return (h) => hostPassesQuery(compiled, h)
    },
  },
  {
    name: 'SimpleCIDRAffinityFilter',
    applies: (s) => typeof s.hints.build_near_host_ip === 'string' && s.hints.build_near_host_ip !== '',
    prepare: (s) => {
      const prefix = Number(String(s.hints.cidr ?? '/24').replace(/^\//, ''))
      const base = s.hints.build_near_host_ip!
      return (h) => h.ips.some((ip) => inCidr(ip, base, Number.isFinite(prefix) ? prefix : 24))
    },
  },
  {
    name: 'DifferentCellFilter',
    applies: (s) => asList(s.hints.different_cell).length > 0,
    prepare: (s) => {
      const cells = new Set(asList(s.hints.different_cell))
      return (h) => !cells.has(h.cell)
    },
  },
  {
    name: 'TargetCellFilter',
    applies: (s) => typeof s.hints.target_cell === 'string' && s.hints.target_cell !== '',
    prepare: (s) => (h) => h.cell === s.hints.target_cell,
  },
]

export interface FilterResult {
  hosts: HostState[]
  /** The filter that left no host, when none is left. */
  emptiedBy?: string
}

export function filterHosts(hosts: HostState[], spec: RequestSpec, filters: Filter[] = FILTERS): FilterResult {
  let left = hosts
  for (const f of filters) {
    if (!f.applies(spec)) continue
    const pass = f.prepare(spec)
    left = left.filter(pass)
    if (left.length === 0) return { hosts: left, emptiedBy: f.name }
  }
  return { hosts: left }
}
