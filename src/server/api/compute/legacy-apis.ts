/**
 * Nova's smaller admin and legacy APIs: os-instance_usage_audit_log (compute/usage-audit-log.ts) and the fixed
 * /extensions list (compute/extensions.ts).
 */
import type { FastifyInstance } from 'fastify'
import { Type as T } from '@sinclair/typebox'
import { badRequest, notFound } from '../../../contracts/errors.js'
import { J } from '../../../contracts/compute/json-types.js'
import { plain } from '../../../contracts/compute/schemas.js'
import type { AppDeps } from '../../deps.js'
import { parseAuditTime, usageAuditLog } from '../../compute/usage-audit-log.js'
import { EXTENSION_COMMON, EXTENSIONS } from '../../compute/extensions.js'
import { must } from './context.js'
import { documented } from '../../http/openapi.js'

const auditLog = T.Object({
  hosts_not_run: T.Array(J.str),
  log: T.Record(J.str, T.Object({ state: J.str, instances: J.int, errors: J.int, message: J.str })),
  num_hosts: J.int,
  num_hosts_done: J.int,
  num_hosts_not_run: J.int,
  num_hosts_running: J.int,
  overall_status: J.str,
  period_beginning: J.str,
  period_ending: J.str,
  total_errors: J.int,
  total_instances: J.int,
})
const extension = T.Object({ alias: J.str, name: J.str, description: J.str, links: T.Array(T.Unknown()), namespace: J.str, updated: J.str })
const DOCS = {
  auditList: documented({ summary: "The instance usage audit of the last period (admin)", response: { 200: plain(T.Object({ instance_usage_audit_logs: auditLog })) } }),
  auditShow: documented({ summary: 'The instance usage audit of the period before a time (admin)', response: { 200: plain(T.Object({ instance_usage_audit_log: auditLog })) } }),
  extensions: documented({ summary: "Nova's legacy extension list", response: { 200: plain(T.Object({ extensions: T.Array(extension) })) } }),
  extension: documented({ summary: 'One extension of the legacy list, by alias', response: { 200: plain(T.Object({ extension })) } }),
}

const extensionView = ([alias, name, description]: readonly [string, string, string]) => ({ alias, name, description, ...EXTENSION_COMMON })

/** Built once: the list is fixed (as the network API's, docs/benchmarks.md). */
const extensionList = { extensions: EXTENSIONS.map(extensionView) }

export function legacyApiRoutes(deps: AppDeps) {
  const db = deps.store.db
  return async (scope: FastifyInstance): Promise<void> => {
    scope.get('/v2.1/os-instance_usage_audit_log', DOCS.auditList, async (request) => {
      must(request, 'os-instance-usage-audit-log:list')
      return { instance_usage_audit_logs: await usageAuditLog(db, Date.now()) }
    })
    scope.get<{ Params: { before: string } }>('/v2.1/os-instance_usage_audit_log/:before', DOCS.auditShow, async (request) => {
      must(request, 'os-instance-usage-audit-log:show')
      const before = parseAuditTime(request.params.before)
      if (before === undefined) throw badRequest(`Invalid timestamp for date ${request.params.before}`)
      return { instance_usage_audit_log: await usageAuditLog(db, before) }
    })
    scope.get('/v2.1/extensions', DOCS.extensions, async (request) => {
      must(request, 'extensions')
      return extensionList
    })
    scope.get<{ Params: { alias: string } }>('/v2.1/extensions/:alias', DOCS.extension, async (request) => {
      must(request, 'extensions')
      const found = EXTENSIONS.find(([alias]) => alias === request.params.alias)
      if (!found) throw notFound(`Extension ${request.params.alias} could not be found.`)
      return { extension: extensionView(found) }
    })
  }
}
