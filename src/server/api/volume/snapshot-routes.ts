/** Volume snapshots and their metadata. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppDeps } from '../../deps.js'
import type { ViewContext } from '../../volume/view.js'
import { snapshotDetail, snapshotSummary } from '../../volume/view.js'
import { badRequest } from '../../../contracts/errors.js'
import { boolParam, countField, idParams, nextPageLinks, paging, nullableString, one, stringMap, type IdRoute, type QueryRoute } from './params.js'
import type { FromSchema } from '../../http/route-types.js'
import { metadataRoutes } from './metadata-routes.js'
import { documented, noBody } from '../../http/openapi.js'
import { A, QUERY, SNAPSHOT_ACTIONS } from './answers.js'

const createSnapshotBody = {
  type: 'object',
  required: ['snapshot'],
  properties: {
    snapshot: {
      type: 'object',
      required: ['volume_id'],
      properties: {
        volume_id: { type: 'string', maxLength: 64 },
        name: nullableString(),
        display_name: nullableString(),
        description: nullableString(),
        display_description: nullableString(),
        force: { anyOf: [{ type: 'boolean' }, { type: 'string' }, { type: 'null' }] },
        metadata: { anyOf: [stringMap, { type: 'null' }] },
      },
    },
  },
} as const
const updateSnapshotBody = { type: 'object', required: ['snapshot'], properties: { snapshot: { type: 'object', properties: { name: nullableString(), description: nullableString(), display_name: nullableString(), display_description: nullableString() } } } } as const
const actionBody = { type: 'object', minProperties: 1, maxProperties: 1 } as const

export function snapshotRoutes(r: FastifyInstance, deps: AppDeps, ctx: (request: FastifyRequest) => ViewContext): void {
  const { snapshots } = deps.volumeServices
  // ---- snapshots ----
  const listSnapshots = (detail: boolean) => async (request: FastifyRequest<QueryRoute>) => {
    const q = request.query
    const page = paging(q)
    const count = countField(request.volumeVersion, q)
    const result = await snapshots.list(request.principal, { allTenants: boolParam('all_tenants', q.all_tenants) ?? false, name: one(q.name), status: one(q.status), volumeId: one(q.volume_id), ...page })
    const c = ctx(request)
    const links = nextPageLinks(`${deps.urls.volume}/snapshots${detail ? '/detail' : ''}`, page.limit, result.snapshots)
    return { snapshots: result.snapshots.map((s) => (detail ? snapshotDetail(s, c) : snapshotSummary(s, c))), ...(links ? { snapshots_links: links } : {}), ...count(result.count) }
  }

  r.get<QueryRoute>('/snapshots', documented({ summary: 'List snapshots', querystring: QUERY.snapshots, response: { 200: A.snapshots(false) } }), listSnapshots(false))
  r.get<QueryRoute>('/snapshots/detail', documented({ summary: 'List snapshots with details', querystring: QUERY.snapshots, response: { 200: A.snapshots(true) } }), listSnapshots(true))
  r.post<{ Body: FromSchema<typeof createSnapshotBody> }>(
    '/snapshots',
    {
      schema: {
        body: createSnapshotBody,
      },
      ...documented({ summary: 'Create a snapshot of a volume', response: { 202: A.snapshot } }),
    },
    async (request, reply) => {
      const s = request.body.snapshot
      const str = (x: unknown) => (typeof x === 'string' ? x : null)
      const force = typeof s.force === 'boolean' ? s.force : typeof s.force === 'string' ? boolParam('force', s.force) : false
      const snapshot = await snapshots.create(request.principal, {
        volume_id: s.volume_id,
        name: str(s.name) ?? str(s.display_name),
        description: str(s.description) ?? str(s.display_description),
        force,
        metadata: s.metadata ?? {},
      })
      return reply.code(202).send({ snapshot: snapshotSummary(snapshot, ctx(request)) })
    },
  )
  r.get<IdRoute>('/snapshots/:id', { schema: { params: idParams }, ...documented({ summary: 'Show a snapshot', response: { 200: A.snapshot } }) }, async (request) => {
    const { id } = request.params
    return { snapshot: snapshotDetail(await snapshots.get(request.principal, id), ctx(request)) }
  })
  r.put<IdRoute & { Body: FromSchema<typeof updateSnapshotBody> }>(
    '/snapshots/:id',
    { schema: { params: idParams, body: updateSnapshotBody }, ...documented({ summary: 'Update a snapshot', response: { 200: A.snapshot } }) },
    async (request) => {
      const { id } = request.params
      const s = request.body.snapshot
      const snapshot = await snapshots.update(request.principal, id, {
        name: s.name !== undefined ? s.name : s.display_name,
        description: s.description !== undefined ? s.description : s.display_description,
      })
      return { snapshot: snapshotSummary(snapshot, ctx(request)) }
    },
  )
  r.delete<IdRoute>('/snapshots/:id', { schema: { params: idParams }, ...documented({ summary: 'Delete a snapshot', response: { 202: noBody('Deletion accepted') } }) }, async (request, reply) => {
    const { id } = request.params
    await snapshots.delete(request.principal, id)
    return reply.code(202).send()
  })
  // Admin actions on snapshots (Cinder's os-admin-actions extension).
  const actionDocs = documented({ summary: 'Run an action on a snapshot (admins: reset its status, force delete it; its creator: update its status)', body: SNAPSHOT_ACTIONS, response: { 202: noBody('Accepted') } })
  r.post<IdRoute & { Body: FromSchema<typeof actionBody> }>('/snapshots/:id/action', { schema: { params: idParams, body: actionBody }, ...actionDocs }, async (request, reply) => {
    const { id } = request.params
    const [action, args] = Object.entries(request.body)[0]
    const a = (args ?? {}) as Record<string, unknown>
    switch (action) {
      case 'os-reset_status':
        if (typeof a.status !== 'string') throw badRequest("Invalid input received: 'status' is required.")
        await snapshots.resetStatus(request.principal, id, a.status)
        return reply.code(202).send()
      case 'os-force_delete':
        await snapshots.delete(request.principal, id, true)
        return reply.code(202).send()
      case 'os-update_snapshot_status':
        if (typeof a.status !== 'string') throw badRequest("Invalid input received: 'status' is required.")
        if (a.progress !== undefined && (typeof a.progress !== 'string' || a.progress.length > 255)) throw badRequest("Invalid input received: 'progress' must be a string of at most 255 characters.")
        await snapshots.updateStatus(request.principal, id, a.status, a.progress)
        return reply.code(202).send()
      default:
        throw badRequest(`There is no such action: ${action}`)
    }
  })
  metadataRoutes(r, 'snapshots', snapshots)
}
