/** Quotas, absolute limits, availability zones, services and extensions. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppDeps } from '../../deps.js'
import type { ViewContext } from '../../volume/view.js'
import { badRequest } from '../../../contracts/errors.js'
import { authorize } from '../../policy/rules.js'
import { backendServices } from '../../volume/placement.js'
import { volumePolicy } from '../../policy/volume.policy.js'
import { ALL_QUOTAS, DEFAULT_QUOTAS, projectQuotas, quotaLimits, quotaUsage, resetProjectQuotas, setProjectQuotas, UNCOUNTED_QUOTAS } from '../../volume/quotas.js'
import { callerOf } from '../../volume/service.js'
import { boolParam, one, type QueryRoute } from './params.js'
import type { FromSchema } from '../../http/route-types.js'
import { documented, noBody } from '../../http/openapi.js'
import { A, QUERY } from './answers.js'
import { extensionsDocument } from '../../volume/extensions.js'

/** A quota set's resources: limits, or with `used` {limit, in_use, reserved, allocated} each. */
function quotaSet(limits: Record<string, number>, used?: Record<string, number>): Record<string, unknown> {
  return Object.fromEntries(ALL_QUOTAS.map((r) => [r, used ? { limit: limits[r], in_use: used[r] ?? 0, reserved: 0, allocated: 0 } : limits[r]]))
}

export function quotaRoutes(r: FastifyInstance, deps: AppDeps, _ctx: (request: FastifyRequest) => ViewContext): void {
  // ---- quotas, limits, zones ----
  const quotaParams = { type: 'object', properties: { target: { type: 'string', maxLength: 64 } }, required: ['target'] } as const
  type QuotaRoute = { Params: FromSchema<typeof quotaParams> }
  const quotaSetBody = { type: 'object', required: ['quota_set'], properties: { quota_set: { type: 'object', additionalProperties: { anyOf: [{ type: 'integer' }, { type: 'string' }] } } } } as const
  r.get<QuotaRoute & QueryRoute>('/os-quota-sets/:target', { schema: { params: quotaParams }, ...documented({ summary: "A project's quotas (with usage=true, what is used)", querystring: QUERY.quota, response: { 200: A.quotaSet } }) }, async (request) => {
    const { target } = request.params
    authorize(volumePolicy, 'quota:show', request.principal, { projectId: target })
    const usage = boolParam('usage', request.query.usage) ?? false
    const [limits, used] = await Promise.all([projectQuotas(deps.store.db, target), quotaUsage(deps.store.db, target)])
    return { quota_set: { id: target, ...quotaSet(limits, usage ? used : undefined) } }
  })
  r.get<QuotaRoute>('/os-quota-sets/:target/defaults', { schema: { params: quotaParams }, ...documented({ summary: 'Default quotas', response: { 200: A.quotaSet } }) }, async (request) => {
    const { target } = request.params
    return { quota_set: { id: target, ...quotaSet({ ...UNCOUNTED_QUOTAS, ...DEFAULT_QUOTAS }) } }
  })
  r.put<QuotaRoute & { Body: FromSchema<typeof quotaSetBody> }>(
    '/os-quota-sets/:target',
    { schema: { params: quotaParams, body: quotaSetBody }, ...documented({ summary: "Change a project's quotas (admin)", response: { 200: A.quotaSet } }) },
    async (request) => {
      const { target } = request.params
      authorize(volumePolicy, 'quota:update', request.principal)
      const set = request.body.quota_set
      const updates: [string, number][] = []
      for (const [key, value] of Object.entries(set)) {
        if (key === 'tenant_id' || key === 'id') continue
        if (!ALL_QUOTAS.includes(key)) continue
        const n = Number(value)
        if (!Number.isInteger(n) || n < -1) throw badRequest(`Invalid value for quota '${key}': expected a whole number of at least -1.`)
        updates.push([key, n])
      }
      await setProjectQuotas(deps.store.db, target, updates)
      return { quota_set: quotaSet(await projectQuotas(deps.store.db, target)) }
    },
  )
  // Back to the defaults (Cinder answers 200 with no body).
  r.delete<QuotaRoute>('/os-quota-sets/:target', { schema: { params: quotaParams }, ...documented({ summary: "Set a project's quotas back to the defaults (admin)", response: { 200: noBody('Back to the defaults') } }) }, async (request, reply) => {
    const { target } = request.params
    authorize(volumePolicy, 'quota:update', request.principal)
    await resetProjectQuotas(deps.store.db, target)
    return reply.code(200).send()
  })
  r.get('/limits', documented({ summary: "The project's limits and usage", response: { 200: A.limits } }), async (request) => {
    const caller = callerOf(request.principal)
    const [limits, used] = await Promise.all([quotaLimits(deps.store.db, caller.projectId), quotaUsage(deps.store.db, caller.projectId)])
    return {
      limits: {
        rate: [],
        absolute: {
          maxTotalVolumes: limits.volumes,
          maxTotalSnapshots: limits.snapshots,
          maxTotalVolumeGigabytes: limits.gigabytes,
          maxTotalBackups: 10,
          maxTotalBackupGigabytes: 1000,
          totalVolumesUsed: used.volumes,
          totalSnapshotsUsed: used.snapshots,
          totalGigabytesUsed: used.gigabytes,
          totalBackupsUsed: 0,
          totalBackupGigabytesUsed: 0,
        },
      },
    }
  })
  r.get('/os-availability-zone', documented({ summary: 'Availability zones', response: { 200: A.zones } }), async () => ({ availabilityZoneInfo: [{ zoneName: 'nova', zoneState: { available: true } }] }))
  r.get('/extensions', documented({ summary: 'The extensions this service implements', response: { 200: A.extensions } }), async () => extensionsDocument())
  // The scheduler and one volume service per backend of each storage place, as `openstack volume service list` shows them (admins).
  r.get<QueryRoute>('/os-services', documented({ summary: 'Block storage services (admin)', response: { 200: A.services } }), async (request) => {
    authorize(volumePolicy, 'volume:all_tenants', request.principal)
    const time = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000')
    const backends = await backendServices(deps.store.db, deps.config.hostDownAfterSeconds * 1000, deps.config.cephConf === undefined ? ['file'] : ['file', 'ceph'])
    const services = [
      { binary: 'cinder-scheduler', host: 'pcc', zone: 'nova', status: 'enabled', state: 'up', updated_at: time(Date.now()), disabled_reason: null },
      ...backends.map((b) => ({ binary: 'cinder-volume', host: b.host, zone: 'nova', status: 'enabled', state: b.up ? 'up' : 'down', updated_at: time(b.updatedAt), disabled_reason: null })),
    ]
    // Cinder's filters: ?binary= and ?host= (a host matches with or without its @backend part).
    const q = request.query
    const binary = one(q.binary)
    const host = one(q.host)
    return { services: services.filter((s) => (binary === undefined || s.binary === binary) && (host === undefined || s.host === host || s.host.split('@')[0] === host)) }
  })
}
