/** Volume snapshots and their metadata. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppDeps } from '../../deps.js'
import type { ViewContext } from '../../volume/view.js'
import { AppError } from '../../../contracts/errors.js'
import { snapshotDetail, snapshotSummary } from '../../volume/view.js'
import { boolParam, idParams, intParam, keyParams, metadataBody, nullableString, one, sortParam, stringMap } from './params.js'
import { documented, noBody } from '../../http/openapi.js'
import { A, QUERY } from './answers.js'

export function snapshotRoutes(r: FastifyInstance, deps: AppDeps, ctx: (request: FastifyRequest) => ViewContext): void {
  const { snapshots } = deps.volumeServices
  // ---- snapshots ----
  const listSnapshots = (detail: boolean) => async (request: FastifyRequest) => {
    const q = request.query as Record<string, unknown>
    const limit = intParam('limit', q.limit, 1)
    const sort = sortParam(q)
    const result = await snapshots.list(request.principal, {
      allTenants: boolParam('all_tenants', q.all_tenants) ?? false,
      name: one(q.name),
      status: one(q.status),
      volumeId: one(q.volume_id),
      limit,
      marker: one(q.marker),
      offset: intParam('offset', q.offset, 0),
      sortDir: sort[0].dir,
    })
    const c = ctx(request)
    const body: Record<string, unknown> = { snapshots: result.snapshots.map((s) => (detail ? snapshotDetail(s, c) : snapshotSummary(s, c))) }
    if (result.more && limit !== undefined && result.snapshots.length > 0) {
      const params = new URLSearchParams({ limit: String(limit), marker: result.snapshots[result.snapshots.length - 1].id })
      body.snapshots_links = [{ rel: 'next', href: `${deps.urls.volume}/snapshots${detail ? '/detail' : ''}?${params}` }]
    }
    return body
  }
  r.get('/snapshots', documented({ summary: 'List snapshots', querystring: QUERY.snapshots, response: { 200: A.snapshots(false) } }), listSnapshots(false))
  r.get('/snapshots/detail', documented({ summary: 'List snapshots with details', querystring: QUERY.snapshots, response: { 200: A.snapshots(true) } }), listSnapshots(true))
  r.post(
    '/snapshots',
    {
      schema: {
        body: {
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
        },
      },
      ...documented({ summary: 'Create a snapshot of a volume', response: { 202: A.snapshot } }),
    },
    async (request, reply) => {
      const s = (request.body as { snapshot: Record<string, unknown> }).snapshot
      const str = (x: unknown) => (typeof x === 'string' ? x : null)
      const force = typeof s.force === 'boolean' ? s.force : typeof s.force === 'string' ? boolParam('force', s.force) : false
      const snapshot = await snapshots.create(request.principal, {
        volume_id: s.volume_id as string,
        name: str(s.name) ?? str(s.display_name),
        description: str(s.description) ?? str(s.display_description),
        force,
        metadata: (s.metadata as Record<string, string> | null) ?? {},
      })
      return reply.code(202).send({ snapshot: snapshotDetail(snapshot, ctx(request)) })
    },
  )
  r.get('/snapshots/:id', { schema: { params: idParams }, ...documented({ summary: 'Show a snapshot', response: { 200: A.snapshot } }) }, async (request) => {
    const { id } = request.params as { id: string }
    return { snapshot: snapshotDetail(await snapshots.get(request.principal, id), ctx(request)) }
  })
  r.put(
    '/snapshots/:id',
    { schema: { params: idParams, body: { type: 'object', required: ['snapshot'], properties: { snapshot: { type: 'object', properties: { name: nullableString(), description: nullableString(), display_name: nullableString(), display_description: nullableString() } } } } }, ...documented({ summary: 'Update a snapshot', response: { 200: A.snapshot } }) },
    async (request) => {
      const { id } = request.params as { id: string }
      const s = (request.body as { snapshot: Record<string, string | null | undefined> }).snapshot
      const snapshot = await snapshots.update(request.principal, id, {
        name: s.name !== undefined ? s.name : s.display_name,
        description: s.description !== undefined ? s.description : s.display_description,
      })
      return { snapshot: snapshotDetail(snapshot, ctx(request)) }
    },
  )
  r.delete('/snapshots/:id', { schema: { params: idParams }, ...documented({ summary: 'Delete a snapshot', response: { 202: noBody('Deletion accepted') } }) }, async (request, reply) => {
    const { id } = request.params as { id: string }
    await snapshots.delete(request.principal, id)
    return reply.code(202).send()
  })
  r.get('/snapshots/:id/metadata', { schema: { params: idParams }, ...documented({ summary: "A snapshot's metadata", response: { 200: A.metadata } }) }, async (request) => {
    const { id } = request.params as { id: string }
    return { metadata: (await snapshots.get(request.principal, id)).metadata }
  })
  r.post('/snapshots/:id/metadata', { schema: { params: idParams, body: metadataBody }, ...documented({ summary: "Add to a snapshot's metadata", response: { 200: A.metadata } }) }, async (request) => {
    const { id } = request.params as { id: string }
    return { metadata: await snapshots.setMetadata(request.principal, id, (request.body as { metadata: Record<string, string> }).metadata, false) }
  })
  r.put('/snapshots/:id/metadata', { schema: { params: idParams, body: metadataBody }, ...documented({ summary: "Replace a snapshot's metadata", response: { 200: A.metadata } }) }, async (request) => {
    const { id } = request.params as { id: string }
    return { metadata: await snapshots.setMetadata(request.principal, id, (request.body as { metadata: Record<string, string> }).metadata, true) }
  })

  r.get('/snapshots/:id/metadata/:key', { schema: { params: keyParams }, ...documented({ summary: 'One metadata item of a snapshot', response: { 200: A.meta } }) }, async (request) => {
    const { id, key } = request.params as { id: string; key: string }
    const metadata = (await snapshots.get(request.principal, id)).metadata
    if (!(key in metadata)) throw new AppError('not_found', `Metadata item was not found: ${key}`)
    return { meta: { [key]: metadata[key] } }
  })
  r.delete('/snapshots/:id/metadata/:key', { schema: { params: keyParams }, ...documented({ summary: 'Delete one metadata item of a snapshot', response: { 200: noBody('Deleted') } }) }, async (request, reply) => {
    const { id, key } = request.params as { id: string; key: string }
    const metadata = { ...(await snapshots.get(request.principal, id)).metadata }
    if (!(key in metadata)) throw new AppError('not_found', `Metadata item was not found: ${key}`)
    delete metadata[key]
    await snapshots.setMetadata(request.principal, id, metadata, true)
    return reply.code(200).send()
  })
}
