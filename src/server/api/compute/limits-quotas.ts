/** /limits, /os-quota-sets and /os-quota-class-sets (the `default` class is every project's defaults). */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type as T } from '@sinclair/typebox'
import { badRequest } from '../../../contracts/errors.js'
import { project } from '../../../contracts/compute/fields.js'
import { absoluteLimitFields, quotaSetFields } from '../../../contracts/compute/quota.fields.js'
import { versionNumber, type VersionNumber } from '../../../contracts/compute/versions.js'
import type { AppDeps } from '../../deps.js'
import { defaultQuotas, projectExists, QUOTA_RESOURCES, quotaClassLimits, quotaLimits, resetQuotaLimits, setQuotaClassLimits, setQuotaLimits, usageOf } from '../../compute/quotas.js'
import { bodyObject, callerOf, can, must, validate } from './context.js'
import { documented, noBody } from '../../http/openapi.js'
import { A } from '../../../contracts/compute/answers.js'
import { envelope, fieldsSchema, queryOf, versioned } from '../../../contracts/compute/schemas.js'
import type { SingleQuery } from '../../http/route-types.js'

/** Nova's largest quota limit (a 32-bit signed integer). */
const MAX_QUOTA = 2147483647

/**
 * Nova-network's quotas, still accepted below 2.36 (Tempest sends them). They belong to the network service here, so
 * they are taken and have no effect; quota sets show them as -1 below 2.36 (quota.fields.ts).
 */
const LEGACY_NETWORK_QUOTAS = ['fixed_ips', 'floating_ips', 'security_groups', 'security_group_rules', 'networks']

const updateBody = (version: VersionNumber) => {
  const limit = T.Optional(T.Union([T.Integer({ minimum: -1, maximum: MAX_QUOTA }), T.String({ pattern: '^-?[0-9]+$' })]))
  const resources = [...QUOTA_RESOURCES, ...(version < versionNumber('2.36') ? LEGACY_NETWORK_QUOTAS : [])]
  return T.Object({ quota_set: T.Object({ ...Object.fromEntries(resources.map((r) => [r, limit])), force: T.Optional(T.Boolean()) }, { additionalProperties: false }) }, { additionalProperties: false })
}

/** A quota class takes the nova-network resources until 2.50, and injected files until 2.57, as Nova's. */
const classBody = (version: VersionNumber) => {
  const limit = T.Optional(T.Integer({ minimum: -1, maximum: MAX_QUOTA }))
  const injected = ['injected_files', 'injected_file_content_bytes', 'injected_file_path_bytes']
  const resources = [
    ...QUOTA_RESOURCES.filter((r) => version < versionNumber('2.57') || !injected.includes(r)),
    ...(version < versionNumber('2.50') ? LEGACY_NETWORK_QUOTAS : []),
  ]
  return T.Object({ quota_class_set: T.Object(Object.fromEntries(resources.map((r) => [r, limit])), { additionalProperties: false }) }, { additionalProperties: false })
}
/** Nova's quota class names: up to 255 characters. */
const CLASS_NAME = /^[\s\S]{1,255}$/

const quotaSet = envelope('quota_set', fieldsSchema(quotaSetFields, 'set'))
const quotaClassSet = envelope('quota_class_set', fieldsSchema(quotaSetFields, 'set'))
const DOCS = {
  limits: documented({ summary: "The project's limits and usage", querystring: queryOf({ tenant_id: { type: 'string', description: 'admins: another project' } }), response: { 200: A.limits } }),
  defaults: documented({ summary: 'Default quotas', response: { 200: quotaSet } }),
  detail: documented({ summary: "A project's quotas with usage", response: { 200: quotaSet } }),
  show: documented({ summary: "A project's quotas", response: { 200: quotaSet } }),
  update: documented({ summary: "Change a project's quotas (admin)", body: versioned(updateBody), response: { 200: quotaSet } }),
  classShow: documented({ summary: "A quota class's limits (admin); the default class's are every project's defaults", response: { 200: quotaClassSet } }),
  classUpdate: documented({ summary: "Change a quota class's limits (admin)", body: versioned(classBody), response: { 200: quotaClassSet } }),
  reset: documented({ summary: "Reset a project's quotas to the defaults (admin)", response: { 202: noBody('Reset') } }),
}

export function limitQuotaRoutes(deps: AppDeps) {
  const db = deps.store.db
  const knownProject = async (id: string) => {
    if (!(await projectExists(db, id))) throw badRequest(`Project ID ${id} is not a valid project.`)
  }
  const set = (request: FastifyRequest, values: Record<string, unknown>) => project(quotaSetFields, values, { version: request.api.version, view: 'set', admin: true })
  return async (scope: FastifyInstance): Promise<void> => {
    scope.get<{ Querystring: SingleQuery }>('/v2.1/limits', DOCS.limits, async (request) => {
      const caller = callerOf(request)
      const q = request.query
      let projectId = caller.projectId
      if (q.tenant_id && q.tenant_id !== caller.projectId && can(request, 'limits:other_project')) projectId = q.tenant_id
      const limits = await quotaLimits(db, projectId)
      const used = await usageOf(db, projectId, caller.userId)
      const source = { ...limits, used_cores: used.cores, used_instances: used.instances, used_ram: used.ram, used_server_groups: used.server_groups }
      return { limits: { rate: [], absolute: project(absoluteLimitFields, source, { version: request.api.version, view: 'set', admin: false }) } }
    })

    scope.get<{ Params: { projectId: string } }>('/v2.1/os-quota-sets/:projectId/defaults', DOCS.defaults, async (request) => {
      return { quota_set: set(request, { id: request.params.projectId, ...(await defaultQuotas(db)) }) }
    })
    scope.get<{ Params: { projectId: string } }>('/v2.1/os-quota-sets/:projectId/detail', DOCS.detail, async (request) => {
      must(request, 'quotas:show', { projectId: request.params.projectId })
      const limits = await quotaLimits(db, request.params.projectId)
      const used = await usageOf(db, request.params.projectId, callerOf(request).userId)
      const detail = Object.fromEntries(Object.entries(limits).map(([k, limit]) => [k, { in_use: used[k] ?? 0, limit, reserved: 0 }]))
      const legacy = { limit: -1, in_use: 0, reserved: 0 }
      return { quota_set: set(request, { id: request.params.projectId, ...detail, fixed_ips: legacy, floating_ips: legacy, security_groups: legacy, security_group_rules: legacy }) }
    })
    scope.get<{ Params: { projectId: string } }>('/v2.1/os-quota-sets/:projectId', DOCS.show, async (request) => {
      must(request, 'quotas:show', { projectId: request.params.projectId })
      return { quota_set: set(request, { id: request.params.projectId, ...(await quotaLimits(db, request.params.projectId)) }) }
    })
    scope.put<{ Params: { projectId: string } }>('/v2.1/os-quota-sets/:projectId', DOCS.update, async (request) => {
      must(request, 'quotas:update', { projectId: request.params.projectId })
      const body = bodyObject(request)
      validate('quota_set', request, updateBody, body)
      await knownProject(request.params.projectId)
      const values = body.quota_set
      const force = values.force === true
      const used = await usageOf(db, request.params.projectId, undefined)
      const limits = Object.entries(values)
        .filter(([resource]) => resource !== 'force' && !LEGACY_NETWORK_QUOTAS.includes(resource))
        .map(([resource, raw]) => ({ resource, limit: Number(raw) }))
      // Every value is checked before any is written: a refused update changes nothing (found by the fuzz suite).
      for (const { resource, limit } of limits) {
        // Nova's bounds, which the decimal-string form of a value must meet too (a 500 on PostgreSQL without them;
        // Nova's validator reads such strings as numbers for minimum and maximum).
        if (limit > MAX_QUOTA) throw badRequest(`Quota limit ${limit} for ${resource} must be less than or equal to ${MAX_QUOTA}.`)
        if (limit < -1) throw badRequest(`Quota limit ${limit} for ${resource} must be -1 or greater.`)
        const inUse = used[resource] ?? 0
        if (!force && limit >= 0 && limit < inUse) throw badRequest(`Quota value ${limit} for ${resource} is less than already used and reserved ${inUse}`)
      }
      await setQuotaLimits(db, request.params.projectId, limits)
      return { quota_set: set(request, { ...(await quotaLimits(db, request.params.projectId)) }) }
    })
    scope.get<{ Params: { className: string } }>('/v2.1/os-quota-class-sets/:className', DOCS.classShow, async (request) => {
      must(request, 'os-quota-class-sets:show')
      const name = request.params.className
      if (!CLASS_NAME.test(name)) throw badRequest('Invalid input: a quota class name is 1 to 255 characters')
      return { quota_class_set: set(request, { id: name, ...(await quotaClassLimits(db, name)) }) }
    })
    scope.put<{ Params: { className: string } }>('/v2.1/os-quota-class-sets/:className', DOCS.classUpdate, async (request) => {
      must(request, 'os-quota-class-sets:update')
      const name = request.params.className
      if (!CLASS_NAME.test(name)) throw badRequest('Invalid input: a quota class name is 1 to 255 characters')
      const body = bodyObject(request)
      validate('quota_class_set', request, classBody, body)
      const values = body.quota_class_set
      await setQuotaClassLimits(db, name, Object.entries(values).flatMap(([resource, limit]) => (limit === undefined ? [] : [{ resource, limit }])))
      return { quota_class_set: set(request, await quotaClassLimits(db, name)) }
    })
    scope.delete<{ Params: { projectId: string } }>('/v2.1/os-quota-sets/:projectId', DOCS.reset, async (request, reply) => {
      must(request, 'quotas:update', { projectId: request.params.projectId })
      await knownProject(request.params.projectId)
      await resetQuotaLimits(db, request.params.projectId)
      return reply.code(202).send()
    })
  }
}
