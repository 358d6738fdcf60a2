/** /os-server-groups: affinity, anti-affinity and their soft variants (2.15); policy + rules from 2.64. */
import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type as T } from '@sinclair/typebox'
import { badRequest, forbidden, notFound } from '../../../contracts/errors.js'
import { project } from '../../../contracts/compute/fields.js'
import { serverGroupFields } from '../../../contracts/compute/server-group.fields.js'
import { P } from '../../../contracts/compute/params.js'
import { versionNumber, type VersionNumber } from '../../../contracts/compute/versions.js'
import type { ServerGroupTable } from '../../storage/schema.js'
import type { AppDeps } from '../../deps.js'
import { quotaLimits } from '../../compute/quotas.js'
import { countServerGroups, deleteServerGroup, findServerGroup, groupMembers, insertServerGroup, listServerGroups } from '../../compute/server-groups.js'
import { bodyObject, callerOf, can, must, validate, visibleProject } from './context.js'
import { documented, noBody } from '../../http/openapi.js'
import { envelope, fieldsSchema, listOf, Q, queryOf, versioned } from '../../../contracts/compute/schemas.js'
import type { SingleQuery } from '../../http/route-types.js'

const policies = (version: VersionNumber) =>
  T.Union((version >= versionNumber('2.15') ? ['affinity', 'anti-affinity', 'soft-affinity', 'soft-anti-affinity'] : ['affinity', 'anti-affinity']).map((p) => T.Literal(p)))

const createBody = (version: VersionNumber) =>
  T.Object(
    {
      server_group:
        version >= versionNumber('2.64')
          ? T.Object({ name: P.name, policy: policies(version), rules: T.Optional(T.Object({ max_server_per_host: T.Optional(P.positiveInt) }, { additionalProperties: false })) }, { additionalProperties: false })
          : T.Object({ name: P.name, policies: T.Array(policies(version), { minItems: 1, maxItems: 1 }) }, { additionalProperties: false }),
    },
    { additionalProperties: false },
  )

const group = envelope('server_group', fieldsSchema(serverGroupFields, 'group'))
const DOCS = {
  create: documented({ summary: 'Create a server group', body: versioned(createBody), response: { 200: group } }),
  list: documented({ summary: 'List server groups', querystring: queryOf({ all_projects: { type: 'string', description: 'admins: every project' }, limit: Q.count, offset: Q.count }), response: { 200: envelope('server_groups', listOf(fieldsSchema(serverGroupFields, 'group'))) } }),
  show: documented({ summary: 'Show a server group', response: { 200: group } }),
  delete: documented({ summary: 'Delete a server group', response: { 204: noBody('Deleted') } }),
}

export function serverGroupRoutes(deps: AppDeps) {
  const db = deps.store.db
  const render = async (request: FastifyRequest, groups: ServerGroupTable[]) => {
    const ids = groups.map((g) => g.id)
    const members = await groupMembers(db, ids)
    return groups.map((g) =>
      project(
        serverGroupFields,
        { id: g.id, name: g.name, policy: g.policy, rules: JSON.parse(g.rules) as Record<string, unknown>, members: members.filter((m) => m.group_id === g.id).map((m) => m.server_id), projectId: g.project_id, userId: g.user_id },
        { version: request.api.version, view: 'group', admin: false },
      ),
    )
  }
  const visible = async (request: FastifyRequest, id: string) => {
    const g = await findServerGroup(db, id)
    if (!g || !visibleProject(request, g.project_id)) throw notFound(`Instance group ${id} could not be found.`)
    return g
  }
  return async (scope: FastifyInstance): Promise<void> => {
    scope.post('/v2.1/os-server-groups', DOCS.create, async (request) => {
      const caller = callerOf(request)
      must(request, 'server_groups:write', { projectId: caller.projectId })
      const body = bodyObject(request)
      validate('server_group', request, createBody, body)
      const sg = body.server_group
      const policy = 'policy' in sg ? sg.policy : sg.policies[0]
      const rulesIn = 'rules' in sg ? sg.rules : undefined
      if (rulesIn && Object.keys(rulesIn).length && policy !== 'anti-affinity') throw badRequest(`Only anti-affinity policy supports rules.`)
      const limits = await quotaLimits(db, caller.projectId)
      if (limits.server_groups >= 0) {
        if ((await countServerGroups(db, caller.projectId)) >= limits.server_groups) throw forbidden('Quota exceeded, too many server groups.')
      }
      const rules = rulesIn ? Object.fromEntries(Object.entries(rulesIn).map(([k, v]) => [k, Number(v)])) : {}
      const row: ServerGroupTable = { id: randomUUID(), name: sg.name, project_id: caller.projectId, user_id: caller.userId, policy, rules: JSON.stringify(rules), created_at: Date.now() }
      await insertServerGroup(db, row)
      return { server_group: (await render(request, [row]))[0] }
    })
    scope.get<{ Querystring: SingleQuery }>('/v2.1/os-server-groups', DOCS.list, async (request) => {
      const caller = callerOf(request)
      const q = request.query
      must(request, 'server_groups:read', { projectId: caller.projectId })
      const projectId = q.all_projects !== undefined && can(request, 'server_groups:all_projects') ? undefined : caller.projectId
      for (const p of ['limit', 'offset'] as const) if (q[p] !== undefined && !/^\d+$/.test(q[p])) throw badRequest(`Invalid input for query parameters ${p}. Value: ${q[p]}.`)
      const page = { offset: q.offset ? Number(q.offset) : undefined, limit: q.limit !== undefined ? Math.min(Number(q.limit), 1000) : 1000 }
      return { server_groups: await render(request, await listServerGroups(db, projectId, page)) }
    })
    scope.get<{ Params: { id: string } }>('/v2.1/os-server-groups/:id', DOCS.show, async (request) => ({ server_group: (await render(request, [await visible(request, request.params.id)]))[0] }))
    scope.delete<{ Params: { id: string } }>('/v2.1/os-server-groups/:id', DOCS.delete, async (request, reply) => {
      const g = await visible(request, request.params.id)
      must(request, 'server_groups:write', { projectId: g.project_id })
      await deleteServerGroup(db, g.id)
      return reply.code(204).send()
    })
  }
}
