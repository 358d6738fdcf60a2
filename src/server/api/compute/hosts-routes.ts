/**
 * os-hypervisors and os-services: the hypervisor hosts as Nova shows them, for admins. Services can be
 * enabled, disabled (with a reason) and forced down, which the scheduler honours at once.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { badRequest, conflict, notFound } from '../../../contracts/errors.js'
import { authHook } from '../../auth/http-auth.js'
import type { AppDeps } from '../../deps.js'
import { atLeast, hypervisorDetail, hypervisorSummary, serviceView, uptime, type HostContext, type Version } from '../../hosts/host-views.js'
import { authorize } from '../../policy/rules.js'
import { COMPUTE_HOSTS_POLICY, type ComputeHostsOperation } from '../../policy/compute-hosts.policy.js'
import type { HostTable } from '../../storage/tables/compute.js'
import { computeHosts, deleteComputeHost, hostHasServers, serversOnHosts, setHostService } from '../../hosts/compute-hosts.js'
import { documented, noBody } from '../../http/openapi.js'
import { hostZones } from '../../compute/aggregates.js'
import { A } from '../../../contracts/compute/answers.js'
import { MAX_VERSION, MIN_VERSION } from '../../../contracts/compute/versions.js'
import { envelope, listOf, Q, queryOf } from '../../../contracts/compute/schemas.js'
import type { FromSchema } from '../../http/route-types.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const serviceUpdateSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { type: 'string', enum: ['enabled', 'disabled'] },
    disabled_reason: { type: ['string', 'null'], minLength: 1, maxLength: 255 },
    forced_down: { type: 'boolean' },
  },
} as const

const legacyServiceSchema = {
  type: 'object',
  required: ['host', 'binary'],
  properties: {
    host: { type: 'string', minLength: 1, maxLength: 255 },
    binary: { type: 'string', minLength: 1, maxLength: 255 },
    disabled_reason: { type: 'string', minLength: 1, maxLength: 255 },
    forced_down: { type: 'boolean' },
  },
} as const

const hypervisorQuery = queryOf({ limit: Q.count, marker: Q.str, hypervisor_hostname_pattern: Q.str, with_servers: Q.bool })
const DOCS = {
  list: documented({ summary: 'List hypervisors (admin)', querystring: hypervisorQuery, response: { 200: envelope('hypervisors', listOf(A.hypervisor)) } }),
  detail: documented({ summary: 'List hypervisors with details (admin)', querystring: hypervisorQuery, response: { 200: envelope('hypervisors', listOf(A.hypervisor)) } }),
  statistics: documented({ summary: 'Totals over every hypervisor (admin; below 2.88)', response: { 200: A.hypervisorStatistics } }),
  show: documented({ summary: 'Show a hypervisor (admin)', querystring: queryOf({ with_servers: Q.bool }), response: { 200: envelope('hypervisor', A.hypervisor) } }),
  uptime: documented({ summary: "A hypervisor's uptime (admin; below 2.88)", response: { 200: envelope('hypervisor', A.hypervisor) } }),
  search: documented({ summary: 'Hypervisors whose name contains a text (admin; below 2.53)', response: { 200: envelope('hypervisors', listOf(A.hypervisor)) } }),
  servers: documented({ summary: 'Servers on hypervisors matching a name (admin; below 2.53)', response: { 200: envelope('hypervisors', listOf(A.hypervisor)) } }),
  services: documented({ summary: 'List compute services (admin)', querystring: queryOf({ host: Q.str, binary: Q.str }), response: { 200: envelope('services', listOf(A.service)) } }),
  updateService: documented({
    summary: 'Enable, disable or force down a compute service (admin); below 2.53 the id is the action and the body names the host',
    body: { anyOf: [{ ...serviceUpdateSchema, 'x-microversions': { min: '2.53', max: MAX_VERSION } }, { ...legacyServiceSchema, 'x-microversions': { min: MIN_VERSION, max: '2.52' } }] },
    response: { 200: envelope('service', A.service) },
  }),
  deleteService: documented({ summary: 'Delete a compute service without servers (admin)', response: { 204: noBody('Deleted') } }),
}

export function hostRoutes(deps: AppDeps) {
  const db = deps.store.db
  const downAfterMs = deps.config.hostDownAfterSeconds * 1000

  async function context(): Promise<{ hosts: HostTable[]; ctx: HostContext }> {
    // A host's zone is its aggregate's when it is in one (os-services shows it).
    const zones = await hostZones(db)
    const hosts = (await computeHosts(db)).map((h) => ({ ...h, availability_zone: zones.get(h.hostname) ?? h.availability_zone }))
    const legacyIds = new Map(hosts.map((h, i) => [h.id, i + 1]))
    return { hosts, ctx: { now: Date.now(), downAfterMs, legacyIds } }
  }

  function allow(request: FastifyRequest, op: ComputeHostsOperation): Version {
    authorize(COMPUTE_HOSTS_POLICY, op, request.principal)
    return request.api.version
  }

  /** A host by the id form of the version (uuid from 2.53, integer below). */
  async function findHost(raw: string, v: Version): Promise<{ host: HostTable; ctx: HostContext }> {
    const { hosts, ctx } = await context()
    if (atLeast(v, 53)) {
      if (!UUID.test(raw)) throw badRequest(`Invalid uuid ${raw}`)
      const host = hosts.find((h) => h.id === raw)
      if (!host) throw notFound(`Hypervisor with ID ${raw} could not be found.`)
      return { host, ctx }
    }
    const host = /^\d+$/.test(raw) ? hosts.find((h) => ctx.legacyIds.get(h.id) === Number(raw)) : undefined
    if (!host) throw notFound(`Hypervisor with ID ${raw} could not be found.`)
    return { host, ctx }
  }

  async function serversOn(hostIds: string[]): Promise<Map<string, { name: string; uuid: string }[]>> {
    const out = new Map<string, { name: string; uuid: string }[]>(hostIds.map((id) => [id, []]))
    if (hostIds.length === 0) return out
    const rows = await serversOnHosts(db, hostIds)
    for (const r of rows) out.get(r.host_id!)?.push({ name: `instance-${r.display_id.toString(16).padStart(8, '0')}`, uuid: r.id })
    return out
  }

  async function listHypervisors(request: FastifyRequest<{ Querystring: Record<string, string> }>, detail: boolean) {
    const v = allow(request, detail ? 'os_compute_api:os-hypervisors:list-detail' : 'os_compute_api:os-hypervisors:list')
    const q = request.query
    let { hosts } = await context()
    const { ctx } = await context()
    const pattern = q.hypervisor_hostname_pattern
    if (pattern !== undefined) {
      if (!atLeast(v, 53)) throw badRequest('Invalid input: hypervisor_hostname_pattern requires microversion 2.53')
      if (q.limit !== undefined || q.marker !== undefined) throw badRequest('Paging over hypervisors with hypervisor_hostname_pattern is not supported.')
      hosts = hosts.filter((h) => h.hostname.includes(pattern))
      if (hosts.length === 0) throw notFound(`No hypervisor matching '${pattern}' could be found.`)
    }
    if (atLeast(v, 33)) {
      if (q.marker !== undefined) {
        const at = hosts.findIndex((h) => String(atLeast(v, 53) ? h.id : ctx.legacyIds.get(h.id)) === q.marker)
        if (at < 0) throw badRequest(`marker [${q.marker}] not found`)
        hosts = hosts.slice(at + 1)
      }
      if (q.limit !== undefined) {
        if (!/^\d+$/.test(q.limit)) throw badRequest('Invalid input: limit must be a non-negative integer')
        hosts = hosts.slice(0, Number(q.limit))
      }
    }
    const withServers = atLeast(v, 53) && (q.with_servers === 'true' || q.with_servers === '1' || q.with_servers === 'True')
    const servers = withServers || atLeast(v, 75) ? await serversOn(hosts.map((h) => h.id)) : undefined
    const hypervisors = hosts.map((h) => ({
      ...(detail ? hypervisorDetail(h, v, ctx) : hypervisorSummary(h, v, ctx)),
      ...(withServers && { servers: servers!.get(h.id) ?? [] }),
    }))
    return { hypervisors }
  }

  async function setService(host: HostTable, patch: Partial<Pick<HostTable, 'service_status' | 'disabled_reason' | 'forced_down'>>): Promise<HostTable> {
    return setHostService(db, host, patch)
  }

  return async (scope: FastifyInstance): Promise<void> => {
    scope.register(async (hosts) => {
      hosts.addHook('onRequest', authHook(deps.tokens, deps.urls.identity))

      hosts.get<{ Querystring: Record<string, string> }>('/v2.1/os-hypervisors', DOCS.list, (request) => listHypervisors(request, false))
      hosts.get<{ Querystring: Record<string, string> }>('/v2.1/os-hypervisors/detail', DOCS.detail, (request) => listHypervisors(request, true))

      hosts.get('/v2.1/os-hypervisors/statistics', DOCS.statistics, async (request) => {
        const v = allow(request, 'os_compute_api:os-hypervisors:statistics')
        if (atLeast(v, 88)) throw notFound('The resource could not be found.')
        const { hosts: all } = await context()
        const sum = (f: (h: HostTable) => number) => all.reduce((n, h) => n + f(h), 0)
        return {
          hypervisor_statistics: {
            count: all.length,
            vcpus: sum((h) => h.vcpus),
            memory_mb: sum((h) => h.memory_mb),
            local_gb: sum((h) => h.disk_gb),
            vcpus_used: sum((h) => h.vcpus_used),
            memory_mb_used: sum((h) => h.memory_mb_used),
            local_gb_used: sum((h) => h.disk_gb_used),
            free_ram_mb: sum((h) => h.memory_mb - h.memory_mb_used),
            free_disk_gb: sum((h) => h.disk_gb - h.disk_gb_used),
            current_workload: 0,
            running_vms: sum((h) => h.running_vms),
            disk_available_least: sum((h) => h.disk_gb - h.disk_gb_used),
          },
        }
      })

      hosts.get<{ Params: { id: string }; Querystring: Record<string, string> }>('/v2.1/os-hypervisors/:id', DOCS.show, async (request) => {
        const v = allow(request, 'os_compute_api:os-hypervisors:show')
        const { host, ctx } = await findHost(request.params.id, v)
        const withServers = atLeast(v, 53) && ['true', '1', 'True'].includes(request.query.with_servers ?? '')
        const servers = withServers ? (await serversOn([host.id])).get(host.id) : undefined
        return { hypervisor: { ...hypervisorDetail(host, v, ctx), ...(servers && { servers }) } }
      })

      hosts.get<{ Params: { id: string } }>('/v2.1/os-hypervisors/:id/uptime', DOCS.uptime, async (request) => {
        const v = allow(request, 'os_compute_api:os-hypervisors:uptime')
        if (atLeast(v, 88)) throw notFound('The resource could not be found.')
        const { host, ctx } = await findHost(request.params.id, v)
        return { hypervisor: { ...hypervisorSummary(host, v, ctx), uptime: uptime(host, ctx.now) } }
      })

      // Below 2.53 a hostname pattern selects hypervisors (?hypervisor_hostname_pattern= from 2.53 on).
      hosts.get<{ Params: { id: string } }>('/v2.1/os-hypervisors/:id/search', DOCS.search, async (request) => {
        const v = allow(request, 'os_compute_api:os-hypervisors:search')
        if (atLeast(v, 53)) throw notFound('The resource could not be found.')
        const { hosts: all, ctx } = await context()
        const matched = all.filter((h) => h.hostname.includes(request.params.id))
        if (matched.length === 0) throw notFound(`No hypervisor matching '${request.params.id}' could be found.`)
        return { hypervisors: matched.map((h) => hypervisorSummary(h, v, ctx)) }
      })

      hosts.get<{ Params: { id: string } }>('/v2.1/os-hypervisors/:id/servers', DOCS.servers, async (request) => {
        const v = allow(request, 'os_compute_api:os-hypervisors:servers')
        if (atLeast(v, 53)) throw notFound('The resource could not be found.')
        const { hosts: all, ctx } = await context()
        const matched = all.filter((h) => h.hostname.includes(request.params.id))
        if (matched.length === 0) throw notFound(`No hypervisor matching '${request.params.id}' could be found.`)
        const servers = await serversOn(matched.map((h) => h.id))
        return { hypervisors: matched.map((h) => ({ ...hypervisorSummary(h, v, ctx), servers: servers.get(h.id) ?? [] })) }
      })

      hosts.get<{ Querystring: { host?: string; binary?: string } }>('/v2.1/os-services', DOCS.services, async (request) => {
        const v = allow(request, 'os_compute_api:os-services:list')
        const { hosts: all, ctx } = await context()
        const { host, binary } = request.query
        const services = binary !== undefined && binary !== 'nova-compute' ? [] : all.filter((h) => host === undefined || h.hostname === host)
        return { services: services.map((h) => serviceView(h, v, ctx)) }
      })

      hosts.put<{ Params: { id: string }; Body: Record<string, unknown> }>('/v2.1/os-services/:id', { schema: { body: { type: 'object' } }, ...DOCS.updateService }, async (request) => {
        const v = allow(request, 'os_compute_api:os-services:update')
        const action = request.params.id
        if (!atLeast(v, 53)) return legacyUpdate(request, action, v)
        const { host, ctx } = await findService(request.params.id, v)
        const body: unknown = request.body
        validate(serviceUpdateSchema, body)
        const { status, disabled_reason: reason, forced_down: forced } = body
        if (status === undefined && forced === undefined) throw badRequest('Invalid input: at least one of status or forced_down must be given')
        if (reason !== undefined && status !== 'disabled') throw badRequest('Specifying a disabled_reason is only supported when the status is disabled.')
        const updated = await setService(host, {
          ...(status !== undefined && { service_status: status, disabled_reason: status === 'disabled' ? (reason ?? null) : null }),
          ...(forced !== undefined && { forced_down: forced ? 1 : 0 }),
        })
        return { service: serviceView(updated, v, ctx) }
      })

      hosts.delete<{ Params: { id: string } }>('/v2.1/os-services/:id', DOCS.deleteService, async (request, reply) => {
        const v = allow(request, 'os_compute_api:os-services:delete')
        const { host } = await findService(request.params.id, v)
        if (await hostHasServers(db, host.id)) throw conflict(`Unable to delete compute service that is hosting instances. Migrate or delete the instances first.`)
        await deleteComputeHost(db, host.id)
        deps.conductor.drivers.delete(host.id)
        return reply.code(204).send()
      })
    })
  }

  async function findService(raw: string, v: Version): Promise<{ host: HostTable; ctx: HostContext }> {
    try {
      return await findHost(raw, v)
    } catch (err) {
      if ((err as { code?: string }).code === 'not_found') throw notFound(`Service ${raw} could not be found.`)
      throw err
    }
  }

  /** The ≤2.52 form: PUT /os-services/{enable|disable|disable-log-reason|force-down} {host, binary, …}. */
  async function legacyUpdate(request: FastifyRequest<{ Body: Record<string, unknown> }>, action: string, v: Version) {
    if (!['enable', 'disable', 'disable-log-reason', 'force-down'].includes(action)) throw notFound(`Unknown action ${action}`)
    if (action === 'force-down' && !atLeast(v, 11)) throw notFound('The resource could not be found.')
    const body: unknown = request.body
    validate(legacyServiceSchema, body)
    const { hosts: all } = await context()
    const host = all.find((h) => h.hostname === body.host)
    if (!host || body.binary !== 'nova-compute') throw notFound(`Service ${body.binary} on host ${body.host} could not be found.`)
    if (action === 'force-down') {
      if (typeof body.forced_down !== 'boolean') throw badRequest("Invalid input: 'forced_down' is a required property")
      await setService(host, { forced_down: body.forced_down ? 1 : 0 })
      return { service: { host: host.hostname, binary: body.binary, forced_down: body.forced_down } }
    }
    if (action === 'disable-log-reason' && !body.disabled_reason) throw badRequest('Invalid input: disabled_reason is required')
    const status = action === 'enable' ? 'enabled' : 'disabled'
    const reason = action === 'disable-log-reason' ? body.disabled_reason! : null
    await setService(host, { service_status: status, disabled_reason: reason })
    return { service: { host: host.hostname, binary: body.binary, status, ...(action === 'disable-log-reason' && { disabled_reason: reason }) } }
  }
}

/** The subset of JSON Schema the two service-update bodies use, which validate() checks. */
interface BodySchema {
  properties: Record<string, { type: string | readonly string[]; enum?: readonly string[]; maxLength?: number; minLength?: number }>
  required?: readonly string[]
  additionalProperties?: boolean
}

/**
 * Small structural check of a JSON body against one of the schemas above, naming the field. The route takes either
 * form (which one depends on the microversion), so the body is checked here rather than by the route's schema, and
 * it is typed from the schema it passed (FromSchema).
 */
function validate<S extends BodySchema>(schema: S, body: unknown): asserts body is FromSchema<S> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('Invalid input: the body must be a JSON object')
  const obj = body as Record<string, unknown>
  for (const key of schema.required ?? []) if (!(key in obj)) throw badRequest(`Invalid input: '${key}' is a required property`)
  for (const [key, value] of Object.entries(obj)) {
    const prop = schema.properties[key]
    if (!prop) {
      if (schema.additionalProperties === false) throw badRequest(`Invalid input: additional property '${key}' is not allowed`)
      continue
    }
    const types = ([] as string[]).concat(prop.type)
    const actual = value === null ? 'null' : typeof value
    if (!types.includes(actual)) throw badRequest(`Invalid input: '${key}' must be ${types.join(' or ')}`)
    if (prop.enum && !prop.enum.includes(value as string)) throw badRequest(`Invalid input: '${key}' must be one of ${prop.enum.join(', ')}`)
    if (typeof value === 'string' && ((prop.maxLength !== undefined && value.length > prop.maxLength) || (prop.minLength !== undefined && value.length < prop.minLength))) {
      throw badRequest(`Invalid input: '${key}' must be ${prop.minLength ?? 0} to ${prop.maxLength} characters`)
    }
  }
}
