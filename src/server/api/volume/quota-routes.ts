/** Quotas and quota classes, absolute limits, availability zones and extensions. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppDeps } from '../../deps.js'
import type { ViewContext } from '../../volume/view.js'
import { badRequest } from '../../../contracts/errors.js'
import { authorize } from '../../policy/rules.js'
import { volumePolicy } from '../../policy/volume.policy.js'
import { classQuotas, defaultQuotas, projectQuotas, quotaKeys, quotaUsage, resetProjectQuotas, setQuotas } from '../../volume/quotas.js'
import { callerOf } from '../../volume/service.js'
import { boolParam, type QueryRoute } from './params.js'
import type { FromSchema } from '../../http/route-types.js'
import { documented, noBody } from '../../http/openapi.js'
import { A, QUERY } from './answers.js'
import { extensionsDocument } from '../../volume/extensions.js'

/** A quota set's resources: limits, or with `used` {limit, in_use, reserved, allocated} each. */
function quotaSet(limits: Record<string, number>, used?: Record<string, number>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(limits).map(([r, limit]) => [r, used ? { limit, in_use: used[r] ?? 0, reserved: 0, allocated: 0 } : limit]))
}

/** The limits a quota set body asks for, of the keys that exist; any other key is ignored, as Cinder does. */
function requestedLimits(body: Record<string, unknown>, keys: string[]): [string, number][] {
  const updates: [string, number][] = []
  for (const [key, value] of Object.entries(body)) {
    if (!keys.includes(key)) continue
    const n = Number(value)
    if (!Number.isInteger(n) || n < -1 || n > MAX_LIMIT) throw badRequest(`Invalid value for quota '${key}': expected a whole number from -1 to ${MAX_LIMIT}.`)
    updates.push([key, n])
  }
  return updates
}
/** Cinder's largest limit (its database's integer). */
const MAX_LIMIT = 2147483647

export function quotaRoutes(r: FastifyInstance, deps: AppDeps, _ctx: (request: FastifyRequest) => ViewContext): void {
  const { db } = deps.store
  // ---- quotas, limits, zones ----
  const quotaParams = { type: 'object', properties: { target: { type: 'string', maxLength: 64 } }, required: ['target'] } as const
  type QuotaRoute = { Params: FromSchema<typeof quotaParams> }
  const limitsMap = { type: 'object', additionalProperties: { anyOf: [{ type: 'integer' }, { type: 'string' }] } } as const
  const quotaSetBody = { type: 'object', required: ['quota_set'], properties: { quota_set: limitsMap } } as const
  r.get<QuotaRoute & QueryRoute>('/os-quota-sets/:target', { schema: { params: quotaParams }, ...documented({ summary: "A project's quotas (with usage=true, what is used)", querystring: QUERY.quota, response: { 200: A.quotaSet } }) }, async (request) => {
    const { target } = request.params
    authorize(volumePolicy, 'quota:show', request.principal, { projectId: target })
    const usage = boolParam('usage', request.query.usage) ?? false
    const [limits, used] = await Promise.all([projectQuotas(db, target), quotaUsage(db, target)])
    return { quota_set: { id: target, ...quotaSet(limits, usage ? used : undefined) } }
  })
  r.get<QuotaRoute>('/os-quota-sets/:target/defaults', { schema: { params: quotaParams }, ...documented({ summary: 'Default quotas (the quota class default)', response: { 200: A.quotaSet } }) }, async (request) => {
    const { target } = request.params
    return { quota_set: { id: target, ...quotaSet(await defaultQuotas(db)) } }
  })
  r.put<QuotaRoute & { Body: FromSchema<typeof quotaSetBody> }>(
    '/os-quota-sets/:target',
    { schema: { params: quotaParams, body: quotaSetBody }, ...documented({ summary: "Change a project's quotas (admin)", response: { 200: A.quotaSet } }) },
    async (request) => {
      const { target } = request.params
      authorize(volumePolicy, 'quota:update', request.principal)
      await setQuotas(db, { projectId: target }, requestedLimits(request.body.quota_set, await quotaKeys(db)))
      return { quota_set: quotaSet(await projectQuotas(db, target)) }
    },
  )
  // Back to the defaults (Cinder answers 200 with no body).
  r.delete<QuotaRoute>('/os-quota-sets/:target', { schema: { params: quotaParams }, ...documented({ summary: "Set a project's quotas back to the defaults (admin)", response: { 200: noBody('Back to the defaults') } }) }, async (request, reply) => {
    const { target } = request.params
    authorize(volumePolicy, 'quota:update', request.principal)
    await resetProjectQuotas(db, target)
    return reply.code(200).send()
  })
  // Quota classes: `default` is every project's defaults; other classes are kept and shown, as Cinder does, but no project uses them.
  const classParams = { type: 'object', properties: { name: { type: 'string', minLength: 1, maxLength: 255 } }, required: ['name'] } as const
  type ClassRoute = { Params: FromSchema<typeof classParams> }
  const classBody = { type: 'object', required: ['quota_class_set'], properties: { quota_class_set: limitsMap } } as const
  r.get<ClassRoute>('/os-quota-class-sets/:name', { schema: { params: classParams }, ...documented({ summary: "A quota class's limits (admin)", response: { 200: A.quotaClassSet } }) }, async (request) => {
    authorize(volumePolicy, 'quota_class:show', request.principal)
    const { name } = request.params
    return { quota_class_set: { id: name, ...(await classQuotas(db, name)) } }
  })
  r.put<ClassRoute & { Body: FromSchema<typeof classBody> }>(
    '/os-quota-class-sets/:name',
    { schema: { params: classParams, body: classBody }, ...documented({ summary: "Change a quota class's limits (admin); the class default changes every project's defaults", response: { 200: A.quotaClassSet } }) },
    async (request) => {
      authorize(volumePolicy, 'quota_class:update', request.principal)
      const { name } = request.params
      await setQuotas(db, { className: name }, requestedLimits(request.body.quota_class_set, await quotaKeys(db)))
      return { quota_class_set: await classQuotas(db, name) }
    },
  )
  r.get('/limits', documented({ summary: "The project's limits and usage", response: { 200: A.limits } }), async (request) => {
    const caller = callerOf(request.principal)
    const [limits, used] = await Promise.all([projectQuotas(db, caller.projectId), quotaUsage(db, caller.projectId)])
    return {
      limits: {
        rate: [],
        absolute: {
          maxTotalVolumes: limits.volumes,
          maxTotalSnapshots: limits.snapshots,
          maxTotalVolumeGigabytes: limits.gigabytes,
          maxTotalBackups: limits.backups,
          maxTotalBackupGigabytes: limits.backup_gigabytes,
          totalVolumesUsed: used.volumes,
          totalSnapshotsUsed: used.snapshots,
          totalGigabytesUsed: used.gigabytes,
          totalBackupsUsed: used.backups,
          totalBackupGigabytesUsed: used.backup_gigabytes,
        },
      },
    }
  })
  r.get('/os-availability-zone', documented({ summary: 'Availability zones', response: { 200: A.zones } }), async () => ({ availabilityZoneInfo: [{ zoneName: 'nova', zoneState: { available: true } }] }))
  r.get('/extensions', documented({ summary: 'The extensions this service implements', response: { 200: A.extensions } }), async () => extensionsDocument())
}
