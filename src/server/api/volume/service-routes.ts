/**
 * The block storage services and hosts (admins): os-services (list, enable, disable, freeze, thaw) and os-hosts
 * (each service's host, and what a volume service's backend holds), the scheduler's pools and the backends'
 * capabilities. volume/volume-services.ts and volume/pools.ts keep the rules.
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { badRequest, notFound } from '../../../contracts/errors.js'
import { authorize } from '../../policy/rules.js'
import { volumePolicy } from '../../policy/volume.policy.js'
import { cinderTime } from '../../volume/model.js'
import { hostUsage, listServices, serviceView, setEnabled, setFrozen, VOLUME_BINARY, type ServiceScope } from '../../volume/volume-services.js'
import { boolParam, nullableString, one, type QueryRoute } from './params.js'
import { backendCapabilities, listPools } from '../../volume/pools.js'
import type { FromSchema } from '../../http/route-types.js'
import { documented, noBody } from '../../http/openapi.js'
import { A } from './answers.js'

export function serviceScope(deps: AppDeps): ServiceScope {
  return { downAfterMs: deps.config.hostDownAfterSeconds * 1000, controllerBackends: deps.config.cephConf === undefined ? ['file'] : ['file', 'ceph'] }
}

const SERVICE_ACTIONS = ['enable', 'disable', 'disable-log-reason'] as const

export function serviceRoutes(r: FastifyInstance, deps: AppDeps): void {
  const { db } = deps.store
  // The scheduler and one volume service per backend of each storage place, as `openstack volume service list` shows them.
  r.get<QueryRoute>('/os-services', documented({ summary: 'Block storage services (admin)', response: { 200: A.services } }), async (request) => {
    authorize(volumePolicy, 'service:get', request.principal)
    // Cinder's filters: ?binary= and ?host= (a host matches with or without its @backend part).
    const binary = one(request.query.binary)
    const host = one(request.query.host)
    const services = await listServices(db, serviceScope(deps))
    return { services: services.filter((s) => (binary === undefined || s.binary === binary) && (host === undefined || s.host === host || s.host.split('@')[0] === host)).map(serviceView) }
  })

  const actionBody = {
    type: 'object',
    properties: { host: { type: 'string', minLength: 1, maxLength: 255 }, binary: { type: 'string', maxLength: 255 }, service: { type: 'string', maxLength: 255 }, disabled_reason: nullableString() },
  } as const
  type ActionBody = { Body: FromSchema<typeof actionBody> }
  const hostOf = (body: FromSchema<typeof actionBody>): string => {
    if (body.host === undefined) throw badRequest("Invalid input received: 'host' is required.")
    return body.host
  }
  // Freeze and thaw name a host's volume services: `<place>@<backend>`, or a place for all its backends.
  for (const action of ['freeze', 'thaw'] as const) {
    r.put<ActionBody>(
      `/os-services/${action}`,
      { schema: { body: actionBody }, ...documented({ summary: `${action === 'freeze' ? 'Freeze' : 'Thaw'} the volume services of a host (admin)`, response: { 200: noBody('Done') } }) },
      async (request, reply) => {
        authorize(volumePolicy, 'service:update', request.principal)
        await setFrozen(db, serviceScope(deps), hostOf(request.body), action === 'freeze')
        return reply.code(200).send()
      },
    )
  }
  const actionParams = { type: 'object', properties: { action: { type: 'string', maxLength: 64 } }, required: ['action'] } as const
  r.put<{ Params: FromSchema<typeof actionParams> } & ActionBody>(
    '/os-services/:action',
    { schema: { params: actionParams, body: actionBody }, ...documented({ summary: 'Enable or disable (with a reason) a block storage service (admin)', response: { 200: A.serviceChange } }) },
    async (request) => {
      authorize(volumePolicy, 'service:update', request.principal)
      const action = request.params.action as (typeof SERVICE_ACTIONS)[number]
      if (!SERVICE_ACTIONS.includes(action)) throw notFound(`Unknown action: ${request.params.action}.`)
      const host = hostOf(request.body)
      const binary = request.body.binary ?? request.body.service
      if (!binary) throw badRequest("Invalid input received: 'binary' is required.")
      const reason = request.body.disabled_reason?.trim()
      if (action === 'disable-log-reason' && !reason) throw badRequest('Invalid input received: a disabled reason is required (a string of 1 to 255 characters).')
      const service = await setEnabled(db, serviceScope(deps), { host, binary }, action === 'enable', action === 'disable-log-reason' ? reason : null)
      const answer = { disabled: service.disabled, status: service.disabled ? 'disabled' : 'enabled', host: service.host, service: service.binary, binary: service.binary }
      // Cinder's answers: enable and disable-log-reason name the reason, disable does not.
      return action === 'disable' ? answer : { ...answer, disabled_reason: service.disabledReason }
    },
  )

  r.get('/os-hosts', documented({ summary: 'The hosts of the block storage services (admin)', response: { 200: A.hosts } }), async (request) => {
    authorize(volumePolicy, 'host:get', request.principal)
    const services = await listServices(db, serviceScope(deps))
    return {
      hosts: services.map((s) => ({
        service: s.binary,
        host_name: s.host,
        zone: s.zone,
        'service-state': s.disabled ? 'disabled' : 'enabled',
        'service-status': s.up ? 'available' : 'unavailable',
        'last-update': cinderTime(s.updatedAt),
      })),
    }
  })
  const hostParams = { type: 'object', properties: { host: { type: 'string', maxLength: 255 } }, required: ['host'] } as const
  r.get<{ Params: FromSchema<typeof hostParams> }>(
    '/os-hosts/:host',
    { schema: { params: hostParams }, ...documented({ summary: "What an enabled volume service's backend holds, in total and per project (admin)", response: { 200: A.host } }) },
    async (request) => {
      authorize(volumePolicy, 'host:get', request.principal)
      const { host } = request.params
      // Cinder shows only enabled volume services' hosts.
      const service = (await listServices(db, serviceScope(deps))).find((s) => s.binary === VOLUME_BINARY && s.host === host && !s.disabled)
      if (!service) throw notFound(`Host ${host} could not be found.`)
      const usage = await hostUsage(db, host)
      const resource = (project: string, u: { volumes: number; volumeGb: number; snapshots: number; snapshotGb: number }) => ({
        resource: { host, project, volume_count: String(u.volumes), total_volume_gb: String(u.volumeGb), snapshot_count: String(u.snapshots), total_snapshot_gb: String(u.snapshotGb) },
      })
      return { host: [resource('(total)', usage.total), ...usage.projects.map((p) => resource(p.projectId, p))] }
    },
  )

  // ---- the scheduler's pools and the backends' capabilities ----
  r.get<QueryRoute>('/scheduler-stats/get_pools', documented({ summary: 'The pools new volumes may go to, with detail=true their capacity (admin)', response: { 200: A.pools } }), async (request) => {
    authorize(volumePolicy, 'pool:get', request.principal)
    const detail = boolParam('detail', request.query.detail) ?? false
    const pools = await listPools(db, deps.volumeServices.places, serviceScope(deps))
    return { pools: pools.map((p) => (detail ? p : { name: p.name })) }
  })
  r.get<{ Params: FromSchema<typeof hostParams> }>(
    '/capabilities/:host',
    { schema: { params: hostParams }, ...documented({ summary: "A volume service's backend capabilities (admin)", response: { 200: A.capabilities } }) },
    async (request) => {
      authorize(volumePolicy, 'capabilities:get', request.principal)
      return backendCapabilities(db, serviceScope(deps), request.params.host)
    },
  )
}
