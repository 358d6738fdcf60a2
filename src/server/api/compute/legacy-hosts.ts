/**
 * os-hosts, which Nova removed at 2.43 (os-services and os-hypervisors replace it): the compute hosts with their
 * zone, a host's capacity and what each project's servers take of it, and enabling or disabling its service.
 * Powering a host on, off or rebooting it, or its maintenance mode, is not something the compute service does here
 * (nor in Nova with libvirt, which answers 501): those are refused with a 4xx that says so.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type as T } from '@sinclair/typebox'
import { badRequest, conflict, notFound } from '../../../contracts/errors.js'
import { J } from '../../../contracts/compute/json-types.js'
import { plain, queryOf, Q } from '../../../contracts/compute/schemas.js'
import type { AppDeps } from '../../deps.js'
import { authorize } from '../../policy/rules.js'
import { COMPUTE_HOSTS_POLICY, type ComputeHostsOperation } from '../../policy/compute-hosts.policy.js'
import { computeHosts, serverFlavorsOnHost, setHostService } from '../../hosts/compute-hosts.js'
import { hostZones } from '../../compute/aggregates.js'
import { parseFlavor } from '../../compute/server-model.js'
import { documented } from '../../http/openapi.js'
import { bodyObject, requireBefore, validate } from './context.js'
import type { HostTable } from '../../storage/tables/compute.js'
import type { SingleQuery } from '../../http/route-types.js'

const updateBody = () =>
  T.Object(
    { status: T.Optional(T.Union([T.Literal('enable'), T.Literal('disable')])), maintenance_mode: T.Optional(T.Union([T.Literal('enable'), T.Literal('disable')])) },
    { additionalProperties: false, minProperties: 1 },
  )

const resource = T.Object({ resource: T.Object({ host: J.str, project: J.str, cpu: J.int, memory_mb: J.int, disk_gb: J.int }) })
const DOCS = {
  list: documented({
    summary: 'List compute hosts with their zone (admin; below 2.43)',
    querystring: queryOf({ zone: Q.str }),
    response: { 200: plain(T.Object({ hosts: T.Array(T.Object({ host_name: J.str, service: J.str, zone: J.str })) })) },
  }),
  show: documented({ summary: "A host's capacity and each project's use of it (admin; below 2.43)", response: { 200: plain(T.Object({ host: T.Array(resource) })) } }),
  update: documented({ summary: "Enable or disable a host's compute service (admin; below 2.43)", body: updateBody(), response: { 200: plain(T.Object({ host: J.str, status: T.Optional(J.str), maintenance_mode: T.Optional(J.str) })) } }),
  power: documented({ summary: 'Power action on a host (startup, shutdown, reboot): refused, the compute service does not power hosts (admin; below 2.43)', response: { 409: { type: 'object', description: 'Always: hosts are not powered through the compute API' } } }),
}

const POWER_ACTIONS: Record<string, ComputeHostsOperation> = { startup: 'os_compute_api:os-hosts:start', shutdown: 'os_compute_api:os-hosts:shutdown', reboot: 'os_compute_api:os-hosts:reboot' }

export function legacyHostRoutes(deps: AppDeps) {
  const db = deps.store.db
  const allow = (request: FastifyRequest, op: ComputeHostsOperation) => {
    requireBefore(request, 'noOsHosts')
    authorize(COMPUTE_HOSTS_POLICY, op, request.principal)
  }
  async function findHost(name: string): Promise<HostTable> {
    const host = (await computeHosts(db)).find((h) => h.hostname === name)
    if (!host) throw notFound(`Compute host ${name} could not be found.`)
    return host
  }
  return async (scope: FastifyInstance): Promise<void> => {
    scope.get<{ Querystring: SingleQuery }>('/v2.1/os-hosts', DOCS.list, async (request) => {
      allow(request, 'os_compute_api:os-hosts:list')
      const zones = await hostZones(db)
      const hosts = (await computeHosts(db)).map((h) => ({ host_name: h.hostname, service: 'compute', zone: zones.get(h.hostname) ?? h.availability_zone }))
      // An empty zone is no filter, as Nova's.
      const zone = request.query.zone
      return { hosts: zone ? hosts.filter((h) => h.zone === zone) : hosts }
    })
    scope.get<{ Params: { host: string } }>('/v2.1/os-hosts/:host', DOCS.show, async (request) => {
      allow(request, 'os_compute_api:os-hosts:show')
      const host = await findHost(request.params.host)
      const servers = await serverFlavorsOnHost(db, host.id)
      const byProject = new Map<string, { cpu: number; memory_mb: number; disk_gb: number }>()
      const max = { cpu: 0, memory_mb: 0, disk_gb: 0 }
      for (const s of servers) {
        const f = parseFlavor(s.flavor)
        const use = byProject.get(s.project_id) ?? { cpu: 0, memory_mb: 0, disk_gb: 0 }
        for (const sum of [use, max]) {
          sum.cpu += f.vcpus
          sum.memory_mb += f.ram
          sum.disk_gb += f.disk + (f.ephemeral ?? 0)
        }
        byProject.set(s.project_id, use)
      }
      const row = (project: string, r: { cpu: number; memory_mb: number; disk_gb: number }) => ({ resource: { host: host.hostname, project, ...r } })
      return {
        host: [
          row('(total)', { cpu: host.vcpus, memory_mb: host.memory_mb, disk_gb: host.disk_gb }),
          row('(used_now)', { cpu: host.vcpus_used, memory_mb: host.memory_mb_used, disk_gb: host.disk_gb_used }),
          row('(used_max)', max),
          ...[...byProject.entries()].map(([project, use]) => row(project, use)),
        ],
      }
    })
    scope.put<{ Params: { host: string } }>('/v2.1/os-hosts/:host', DOCS.update, async (request) => {
      allow(request, 'os_compute_api:os-hosts:update')
      const body = bodyObject(request)
      validate('host', request, updateBody, body)
      const host = await findHost(request.params.host)
      const { status, maintenance_mode: maintenance } = body
      // Nova's libvirt driver has no maintenance mode either; checked before anything is written.
      if (maintenance !== undefined) throw badRequest('Maintenance mode of a host is not supported: disable its service instead.')
      if (status === undefined) throw badRequest("Invalid input: 'status' or 'maintenance_mode' is required")
      await setHostService(db, host, { service_status: status === 'enable' ? 'enabled' : 'disabled', disabled_reason: null })
      return { host: host.hostname, status: status === 'enable' ? 'enabled' : 'disabled' }
    })
    scope.get<{ Params: { host: string; action: string } }>('/v2.1/os-hosts/:host/:action', DOCS.power, async (request) => {
      const op = POWER_ACTIONS[request.params.action]
      if (!op) throw notFound('The resource could not be found.')
      allow(request, op)
      await findHost(request.params.host)
      throw conflict(`Host power action ${request.params.action} is not supported: the compute service does not power hosts.`)
    })
  }
}
