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
  // Keys computed once per host, then one sort: this runs for every decision over every candidate.
  const keyed = hosts.map((h) => ({ h, g: soft !== 0 ? soft * (group!.hosts.get(h.id) ?? 0) : 0, r: ram * freeRamMb(h) }))
  keyed.sort((a, b) => b.g - a.g || b.r - a.r || (a.h.hostname < b.h.hostname ? -1 : a.h.hostname > b.h.hostname ? 1 : 0))
  return keyed.map((k) => k.h)
}
