/**
 * Weighers order the hosts that passed the filters. RAM decides by default: spread puts a server on the host
 * with the most free RAM (Nova's ram_weight_multiplier 1.0), pack on the one with the least (-1.0). Soft
 * server-group policies weigh first, as Nova's soft (anti-)affinity weighers dominate when set.
 */
import { freeRamMb, type HostState } from './host-state.js'
import type { RequestSpec } from './request-spec.js'

export type WeigherName = 'spread' | 'pack'

export function weighHosts(hosts: HostState[], spec: RequestSpec, weigher: WeigherName): HostState[] {
  const ram = weigher === 'spread' ? 1 : -1
  const group = spec.group
  const soft = group?.policy === 'soft-affinity' ? 1 : group?.policy === 'soft-anti-affinity' ? -1 : 0
  const score = (h: HostState) => (soft !== 0 ? soft * (group!.hosts.get(h.id) ?? 0) : 0)
  return [...hosts].sort((a, b) => score(b) - score(a) || ram * (freeRamMb(b) - freeRamMb(a)) || a.hostname.localeCompare(b.hostname))
}
