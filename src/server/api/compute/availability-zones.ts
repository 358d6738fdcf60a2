/** /os-availability-zone[/detail]: the zones of the hosts (`nova` when there are none). */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { isoMicros } from '../../../contracts/compute/time.js'
import { must } from './context.js'
import { zonesWithHosts } from '../../compute/availability-zones.js'
import { documented } from '../../http/openapi.js'
import { A } from '../../../contracts/compute/answers.js'

const DOCS = {
  list: documented({ summary: 'Availability zones', response: { 200: A.availabilityZones } }),
  detail: documented({ summary: 'Availability zones with their hosts (admin)', response: { 200: A.availabilityZones } }),
}

export function availabilityZoneRoutes(deps: AppDeps) {
  const zones = () => zonesWithHosts(deps.store.db)
  const available = (hosts: { service_status: string }[]) => hosts.length === 0 || hosts.some((h) => h.service_status === 'enabled')
  return async (scope: FastifyInstance): Promise<void> => {
    scope.get('/v2.1/os-availability-zone', DOCS.list, async (request) => {
      must(request, 'availability_zone:list')
      return { availabilityZoneInfo: (await zones()).map(([zoneName, hosts]) => ({ zoneName, zoneState: { available: available(hosts) }, hosts: null })) }
    })
    scope.get('/v2.1/os-availability-zone/detail', DOCS.detail, async (request) => {
      must(request, 'availability_zone:detail')
      return {
        availabilityZoneInfo: (await zones()).map(([zoneName, hosts]) => ({
          zoneName,
          zoneState: { available: available(hosts) },
          hosts: available(hosts)
            ? Object.fromEntries(
                hosts.map((h) => [
                  h.hostname,
                  { 'nova-compute': { available: h.service_status === 'enabled' && !h.forced_down, active: h.service_status === 'enabled', updated_at: isoMicros(h.last_heartbeat_at ?? h.updated_at) } },
                ]),
              )
            : null,
        })),
      }
    })
  }
}
