/**
 * Generic volume groups (volume/groups.ts): group types and their specs (3.11+), groups (3.13+; create-from-src
 * 3.14, reset_status 3.20) and group snapshots (3.14+; reset_status 3.19). Below its microversion a route is a 404,
 * as Cinder answers.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { AppError, badRequest } from '../../../contracts/errors.js'
import type { AppDeps } from '../../deps.js'
import type { FromSchema } from '../../http/route-types.js'
import { documented, noBody } from '../../http/openapi.js'
import { atLeast } from '../../volume/microversion.js'
import { volumeIdList } from '../../volume/groups.js'
import type { PublicFilter } from '../../volume/group-types.js'
import { groupDetail, groupSnapshotCreated, groupSnapshotDetail, groupSnapshotSummary, groupSummary, groupTypeView } from '../../volume/group-view.js'
import type { ViewContext } from '../../volume/view.js'
import { GA, GROUP_ACTIONS, GROUP_QUERY, GROUP_SNAPSHOT_ACTIONS } from './group-answers.js'
import { boolParam, idParams, keyParams, paging, nullableString, one, stringMap, type IdRoute, type KeyRoute, type QueryRoute } from './params.js'

const name = { type: 'string', minLength: 1, maxLength: 255 } as const
const groupTypeBody = {
  type: 'object',
  required: ['group_type'],
  properties: { group_type: { type: 'object', required: ['name'], properties: { name, description: nullableString(), is_public: { type: 'boolean' }, group_specs: stringMap } } },
} as const
const groupTypeUpdateBody = {
  type: 'object',
  required: ['group_type'],
  properties: { group_type: { type: 'object', properties: { name, description: nullableString(), is_public: { type: 'boolean' } } } },
} as const
const groupSpecsBody = { type: 'object', required: ['group_specs'], properties: { group_specs: { ...stringMap, minProperties: 1 } } } as const
const specBody = { ...stringMap, minProperties: 1 } as const
const createGroupBody = {
  type: 'object',
  required: ['group'],
  properties: {
    group: {
      type: 'object',
      required: ['group_type', 'volume_types'],
      properties: {
        name: nullableString(),
        description: nullableString(),
        group_type: { type: 'string', minLength: 1, maxLength: 255 },
        volume_types: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1, maxLength: 255 } },
        availability_zone: nullableString(),
      },
    },
  },
} as const
const fromSourceBody = {
  type: 'object',
  required: ['create-from-src'],
  properties: {
    'create-from-src': {
      type: 'object',
      properties: { name: nullableString(), description: nullableString(), group_snapshot_id: nullableString(64), source_group_id: nullableString(64) },
    },
  },
} as const
const updateGroupBody = {
  type: 'object',
  required: ['group'],
  properties: { group: { type: 'object', properties: { name: nullableString(), description: nullableString(), add_volumes: { type: ['string', 'null'] }, remove_volumes: { type: ['string', 'null'] } } } },
} as const
const createGroupSnapshotBody = {
  type: 'object',
  required: ['group_snapshot'],
  properties: { group_snapshot: { type: 'object', required: ['group_id'], properties: { group_id: { type: 'string', minLength: 1, maxLength: 64 }, name: nullableString(), description: nullableString() } } },
} as const
const actionBody = { type: 'object', minProperties: 1, maxProperties: 1 } as const

/** A 404 below the microversion a route came with. */
function since(request: FastifyRequest, version: string): void {
  if (!atLeast(request.volumeVersion, version)) throw new AppError('not_found', `The resource could not be found (it needs microversion ${version}).`)
}

/** Cinder's is_public filter of group types: absent is the public ones, `None` every one. */
function publicFilter(value: unknown): PublicFilter {
  const raw = one(value)
  if (raw === undefined) return 'public'
  if (raw.toLowerCase() === 'none') return 'all'
  return boolParam('is_public', raw) ? 'public' : 'private'
}

/** An action's one argument object: `{}` when the action carries none. */
function argsOf(args: unknown): Record<string, unknown> {
  if (args === null || args === undefined) return {}
  if (typeof args !== 'object' || Array.isArray(args)) throw badRequest('Invalid input received: the action takes an object.')
  return args as Record<string, unknown>
}

function statusArg(args: Record<string, unknown>): string {
  if (typeof args.status !== 'string') throw badRequest("Invalid input received: 'status' is required.")
  return args.status
}

export function groupRoutes(r: FastifyInstance, deps: AppDeps, ctx: (request: FastifyRequest) => ViewContext): void {
  groupTypeRoutes(r, deps, ctx)
  groupResourceRoutes(r, deps, ctx)
  groupSnapshotRoutes(r, deps, ctx)
}

function groupTypeRoutes(r: FastifyInstance, deps: AppDeps, ctx: (request: FastifyRequest) => ViewContext): void {
  const { groupTypes } = deps.volumeServices
  const V = '3.11'
  r.get<QueryRoute>('/group_types', documented({ summary: 'List group types (3.11+)', querystring: GROUP_QUERY.groupTypes, response: { 200: GA.groupTypes } }), async (request) => {
    since(request, V)
    const types = await groupTypes.list(request.principal, publicFilter(request.query.is_public), paging(request.query))
    return { group_types: types.map((t) => groupTypeView(t, ctx(request).isAdmin)) }
  })
  r.post<{ Body: FromSchema<typeof groupTypeBody> }>('/group_types', { schema: { body: groupTypeBody }, ...documented({ summary: 'Create a group type (admin, 3.11+)', response: { 202: GA.groupType } }) }, async (request, reply) => {
    since(request, V)
    const t = request.body.group_type
    const created = await groupTypes.create(request.principal, { name: t.name, description: t.description, isPublic: t.is_public, groupSpecs: t.group_specs })
    return reply.code(202).send({ group_type: groupTypeView(created, ctx(request).isAdmin) })
  })
  r.get<IdRoute>('/group_types/:id', { schema: { params: idParams }, ...documented({ summary: 'Show a group type (3.11+)', response: { 200: GA.groupType } }) }, async (request) => {
    since(request, V)
    return { group_type: groupTypeView(await groupTypes.get(request.principal, request.params.id), ctx(request).isAdmin) }
  })
  r.put<IdRoute & { Body: FromSchema<typeof groupTypeUpdateBody> }>(
    '/group_types/:id',
    { schema: { params: idParams, body: groupTypeUpdateBody }, ...documented({ summary: 'Update a group type (admin, 3.11+)', response: { 200: GA.groupType } }) },
    async (request) => {
      since(request, V)
      const t = request.body.group_type
      const updated = await groupTypes.update(request.principal, request.params.id, { name: t.name, description: t.description, isPublic: t.is_public })
      return { group_type: groupTypeView(updated, ctx(request).isAdmin) }
    },
  )
  r.delete<IdRoute>('/group_types/:id', { schema: { params: idParams }, ...documented({ summary: 'Delete a group type no group has (admin, 3.11+)', response: { 202: noBody('Deleted') } }) }, async (request, reply) => {
    since(request, V)
    await groupTypes.delete(request.principal, request.params.id)
    return reply.code(202).send()
  })
  r.get<IdRoute>('/group_types/:id/group_specs', { schema: { params: idParams }, ...documented({ summary: "A group type's group specs (admin, 3.11+)", response: { 200: GA.groupSpecs } }) }, async (request) => {
    since(request, V)
    return { group_specs: await groupTypes.specs(request.principal, request.params.id) }
  })
  // Cinder answers with the specs it was given (merged into the type's).
  r.post<IdRoute & { Body: FromSchema<typeof groupSpecsBody> }>(
    '/group_types/:id/group_specs',
    { schema: { params: idParams, body: groupSpecsBody }, ...documented({ summary: 'Set group specs of a group type (admin, 3.11+)', response: { 202: GA.groupSpecs } }) },
    async (request, reply) => {
      since(request, V)
      await groupTypes.setSpecs(request.principal, request.params.id, request.body.group_specs)
      return reply.code(202).send({ group_specs: request.body.group_specs })
    },
  )
  r.get<KeyRoute>('/group_types/:id/group_specs/:key', { schema: { params: keyParams }, ...documented({ summary: 'One group spec of a group type (admin, 3.11+)', response: { 200: stringMap } }) }, async (request) => {
    since(request, V)
    const { id, key } = request.params
    return { [key]: await groupTypes.spec(request.principal, id, key) }
  })
  r.put<KeyRoute & { Body: FromSchema<typeof specBody> }>(
    '/group_types/:id/group_specs/:key',
    { schema: { params: keyParams, body: specBody }, ...documented({ summary: 'Set one group spec of a group type (admin, 3.11+)', response: { 200: stringMap } }) },
    async (request) => {
      since(request, V)
      const { id, key } = request.params
      const body = request.body
      if (Object.keys(body).length > 1) throw badRequest('Request body contains too many items.')
      if (!(key in body)) throw badRequest('Request body and URI mismatch.')
      await groupTypes.setSpecs(request.principal, id, { [key]: body[key] })
      return { [key]: body[key] }
    },
  )
  r.delete<KeyRoute>('/group_types/:id/group_specs/:key', { schema: { params: keyParams }, ...documented({ summary: 'Remove one group spec of a group type (admin, 3.11+)', response: { 202: noBody('Removed') } }) }, async (request, reply) => {
    since(request, V)
    await groupTypes.deleteSpec(request.principal, request.params.id, request.params.key)
    return reply.code(202).send()
  })
}

function groupResourceRoutes(r: FastifyInstance, deps: AppDeps, ctx: (request: FastifyRequest) => ViewContext): void {
  const { groups } = deps.volumeServices
  const V = '3.13'
  const list = (detail: boolean) => async (request: FastifyRequest<QueryRoute>) => {
    since(request, V)
    const q = request.query
    const rows = await groups.list(request.principal, { allTenants: boolParam('all_tenants', q.all_tenants) ?? false, ...paging(q) })
    const c = ctx(request)
    const listVolumes = boolParam('list_volume', q.list_volume) ?? false
    return { groups: rows.map((g) => (detail ? groupDetail(g, c, listVolumes) : groupSummary(g))) }
  }
  r.get<QueryRoute>('/groups', documented({ summary: 'List groups (3.13+)', querystring: GROUP_QUERY.groups, response: { 200: GA.groups(false) } }), list(false))
  r.get<QueryRoute>('/groups/detail', documented({ summary: 'List groups with details (3.13+)', querystring: GROUP_QUERY.groups, response: { 200: GA.groups(true) } }), list(true))
  r.post<{ Body: FromSchema<typeof createGroupBody> }>('/groups', { schema: { body: createGroupBody }, ...documented({ summary: 'Create a group of a group type and volume types (3.13+)', response: { 202: GA.createdGroup } }) }, async (request, reply) => {
    since(request, V)
    const g = request.body.group
    const created = await groups.create(request.principal, { name: g.name ?? null, description: g.description ?? null, groupType: g.group_type, volumeTypes: g.volume_types, availabilityZone: g.availability_zone ?? null })
    return reply.code(202).send({ group: groupSummary(created) })
  })
  r.post<{ Body: FromSchema<typeof fromSourceBody> }>(
    '/groups/action',
    { schema: { body: fromSourceBody }, ...documented({ summary: 'Create a group from a group snapshot or another group: its volumes are made from theirs (3.14+)', response: { 202: GA.createdGroup } }) },
    async (request, reply) => {
      since(request, '3.14')
      const s = request.body['create-from-src']
      const created = await groups.createFromSource(request.principal, { name: s.name ?? null, description: s.description ?? null, groupSnapshotId: s.group_snapshot_id ?? null, sourceGroupId: s.source_group_id ?? null })
      return reply.code(202).send({ group: groupSummary(created) })
    },
  )
  r.get<IdRoute & QueryRoute>('/groups/:id', { schema: { params: idParams }, ...documented({ summary: 'Show a group (3.13+)', querystring: GROUP_QUERY.group, response: { 200: GA.group } }) }, async (request) => {
    since(request, V)
    const group = await groups.get(request.principal, request.params.id)
    return { group: groupDetail(group, ctx(request), boolParam('list_volume', request.query.list_volume) ?? false) }
  })
  r.put<IdRoute & { Body: FromSchema<typeof updateGroupBody> }>(
    '/groups/:id',
    { schema: { params: idParams, body: updateGroupBody }, ...documented({ summary: 'Rename a group, add or remove volumes (comma-separated ids) (3.13+)', response: { 202: noBody('Updated') } }) },
    async (request, reply) => {
      since(request, V)
      const g = request.body.group
      await groups.update(request.principal, request.params.id, { name: g.name, description: g.description, addVolumes: volumeIdList(g.add_volumes), removeVolumes: volumeIdList(g.remove_volumes) })
      return reply.code(202).send()
    },
  )
  r.post<IdRoute & { Body: FromSchema<typeof actionBody> }>(
    '/groups/:id/action',
    { schema: { params: idParams, body: actionBody }, ...documented({ summary: 'Delete a group (with its volumes: delete-volumes), or reset its status (admin, 3.20+) (3.13+)', body: GROUP_ACTIONS, response: { 202: noBody('Accepted') } }) },
    async (request, reply) => {
      since(request, V)
      const [action, raw] = Object.entries(request.body)[0]
      const args = argsOf(raw)
      switch (action) {
        case 'delete': {
          const flag = args['delete-volumes']
          const deleteVolumes = typeof flag === 'boolean' ? flag : flag === undefined || flag === null ? false : boolParam('delete-volumes', flag)
          await groups.delete(request.principal, request.params.id, deleteVolumes ?? false)
          return reply.code(202).send()
        }
        case 'reset_status':
          since(request, '3.20')
          await groups.resetStatus(request.principal, request.params.id, statusArg(args))
          return reply.code(202).send()
        default:
          throw badRequest(`There is no such action: ${action}`)
      }
    },
  )
}

function groupSnapshotRoutes(r: FastifyInstance, deps: AppDeps, ctx: (request: FastifyRequest) => ViewContext): void {
  const { groupSnapshots } = deps.volumeServices
  const V = '3.14'
  const list = (detail: boolean) => async (request: FastifyRequest<QueryRoute>) => {
    since(request, V)
    const q = request.query
    const rows = await groupSnapshots.list(request.principal, { allTenants: boolParam('all_tenants', q.all_tenants) ?? false, groupId: one(q.group_id), ...paging(q) })
    const c = ctx(request)
    return { group_snapshots: rows.map((g) => (detail ? groupSnapshotDetail(g, c) : groupSnapshotSummary(g))) }
  }
  r.get<QueryRoute>('/group_snapshots', documented({ summary: 'List group snapshots (3.14+)', querystring: GROUP_QUERY.groupSnapshots, response: { 200: GA.groupSnapshots(false) } }), list(false))
  r.get<QueryRoute>('/group_snapshots/detail', documented({ summary: 'List group snapshots with details (3.14+)', querystring: GROUP_QUERY.groupSnapshots, response: { 200: GA.groupSnapshots(true) } }), list(true))
  r.post<{ Body: FromSchema<typeof createGroupSnapshotBody> }>(
    '/group_snapshots',
    { schema: { body: createGroupSnapshotBody }, ...documented({ summary: 'Snapshot every volume of a group (3.14+)', response: { 202: GA.createdGroupSnapshot } }) },
    async (request, reply) => {
      since(request, V)
      const g = request.body.group_snapshot
      const created = await groupSnapshots.create(request.principal, { groupId: g.group_id, name: g.name ?? null, description: g.description ?? null })
      return reply.code(202).send({ group_snapshot: groupSnapshotCreated(created) })
    },
  )
  r.get<IdRoute>('/group_snapshots/:id', { schema: { params: idParams }, ...documented({ summary: 'Show a group snapshot (3.14+)', response: { 200: GA.groupSnapshot } }) }, async (request) => {
    since(request, V)
    return { group_snapshot: groupSnapshotDetail(await groupSnapshots.get(request.principal, request.params.id), ctx(request)) }
  })
  r.delete<IdRoute>('/group_snapshots/:id', { schema: { params: idParams }, ...documented({ summary: 'Delete a group snapshot with its member snapshots (3.14+)', response: { 202: noBody('Deletion accepted') } }) }, async (request, reply) => {
    since(request, V)
    await groupSnapshots.delete(request.principal, request.params.id)
    return reply.code(202).send()
  })
  r.post<IdRoute & { Body: FromSchema<typeof actionBody> }>(
    '/group_snapshots/:id/action',
    { schema: { params: idParams, body: actionBody }, ...documented({ summary: "Reset a group snapshot's status (admin, 3.19+)", body: GROUP_SNAPSHOT_ACTIONS, response: { 202: noBody('Accepted') } }) },
    async (request, reply) => {
      since(request, '3.19')
      const [action, raw] = Object.entries(request.body)[0]
      if (action !== 'reset_status') throw badRequest(`There is no such action: ${action}`)
      await groupSnapshots.resetStatus(request.principal, request.params.id, statusArg(argsOf(raw)))
      return reply.code(202).send()
    },
  )
}
