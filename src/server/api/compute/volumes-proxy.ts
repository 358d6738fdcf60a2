/**
 * Nova's block storage proxies, `/os-volumes` and `/os-snapshots` (2.1–2.35; 404 from 2.36, where Nova removed
 * them): the block storage service's volumes and snapshots in Nova's shape, every call made with the caller's
 * principal (so the block storage rules and visibility hold).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type as T } from '@sinclair/typebox'
import { notFound } from '../../../contracts/errors.js'
import type { AppDeps } from '../../deps.js'
import { cinderTime, type SnapshotRecord, type VolumeRecord } from '../../volume/model.js'
import { bodyObject, requireBefore, validate } from './context.js'
import { documented, noBody } from '../../http/openapi.js'
import { A, PROXY } from '../../../contracts/compute/answers.js'
import { acceptedIn, envelope, listOf, Q, queryOf, versioned } from '../../../contracts/compute/schemas.js'
import type { SingleQuery } from '../../http/route-types.js'

const text = T.Union([T.String({ maxLength: 255 }), T.Null()])
const size = T.Union([T.Integer({ minimum: 1 }), T.String({ pattern: '^[1-9][0-9]*$' })])
const createVolumeBody = () =>
  T.Object(
    {
      volume: T.Object(
        {
          size,
          display_name: T.Optional(text),
          display_description: T.Optional(text),
          volume_type: T.Optional(text),
          availability_zone: T.Optional(text),
          snapshot_id: T.Optional(text),
          metadata: T.Optional(T.Record(T.String({ maxLength: 255 }), T.String({ maxLength: 255 }))),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  )
const createSnapshotBody = () =>
  T.Object(
    {
      snapshot: T.Object(
        { volume_id: T.String({ minLength: 1 }), force: T.Optional(T.Union([T.Boolean(), T.String()])), display_name: T.Optional(text), display_description: T.Optional(text) },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  )

const paging = queryOf({ limit: Q.count, offset: Q.count })
const DOCS = {
  volumes: (detail: boolean) =>
    documented({ summary: `List volumes through the block storage service${detail ? ', with details' : ''}${PROXY.summary}`, querystring: paging, response: { 200: envelope('volumes', listOf(A.proxyVolume)) } }),
  volume: documented({ summary: `Show a volume${PROXY.summary}`, response: { 200: envelope('volume', A.proxyVolume) } }),
  createVolume: documented({ summary: `Create a volume${PROXY.summary}`, body: acceptedIn(versioned(createVolumeBody), PROXY.versions), response: { 200: envelope('volume', A.proxyVolume) } }),
  deleteVolume: documented({ summary: `Delete a volume${PROXY.summary}`, response: { 202: noBody('Deletion accepted') } }),
  snapshots: (detail: boolean) =>
    documented({ summary: `List volume snapshots through the block storage service${detail ? ', with details' : ''}${PROXY.summary}`, querystring: paging, response: { 200: envelope('snapshots', listOf(A.proxySnapshot)) } }),
  snapshot: documented({ summary: `Show a volume snapshot${PROXY.summary}`, response: { 200: envelope('snapshot', A.proxySnapshot) } }),
  createSnapshot: documented({ summary: `Snapshot a volume${PROXY.summary}`, body: acceptedIn(versioned(createSnapshotBody), PROXY.versions), response: { 200: envelope('snapshot', A.proxySnapshot) } }),
  deleteSnapshot: documented({ summary: `Delete a volume snapshot${PROXY.summary}`, response: { 202: noBody('Deletion accepted') } }),
}

/** Nova's volume view: an unattached volume shows `attachments: [{}]`, as Nova does. */
function volumeView(v: VolumeRecord) {
  const attached = v.attachments.filter((a) => a.attachStatus === 'attached')
  return {
    id: v.id,
    status: v.status,
    size: v.size,
    availabilityZone: v.availabilityZone,
    createdAt: cinderTime(v.createdAt),
    attachments: attached.length > 0 ? attached.map((a) => ({ id: v.id, volumeId: v.id, serverId: a.serverId, ...(a.device ? { device: a.device } : {}) })) : [{}],
    displayName: v.name,
    displayDescription: v.description,
    volumeType: v.volumeTypeName,
    snapshotId: v.snapshotId,
    metadata: v.metadata,
  }
}

function snapshotView(s: SnapshotRecord) {
  return { id: s.id, volumeId: s.volumeId, status: s.status, size: s.size, createdAt: cinderTime(s.createdAt), displayName: s.name, displayDescription: s.description }
}

/** Nova's `limit` and `offset` on these lists. */
function window<R>(records: R[], request: FastifyRequest<{ Querystring: SingleQuery }>): R[] {
  const q = request.query
  const offset = q.offset !== undefined && /^\d+$/.test(q.offset) ? Number(q.offset) : 0
  const limit = q.limit !== undefined && /^\d+$/.test(q.limit) ? Number(q.limit) : undefined
  return records.slice(offset, limit === undefined ? undefined : offset + limit)
}

export function volumeProxyRoutes(deps: AppDeps) {
  const { volumes, snapshots } = deps.volumeServices
  /** The id in the URL; `/os-volumes/` names none (Nova's router has no such route). */
  const idOf = (request: FastifyRequest<{ Params: { id: string } }>) => {
    requireBefore(request, 'noProxyApis')
    if (request.params.id === '') throw notFound('The resource could not be found.')
    return request.params.id
  }
  const listVolumes = async (request: FastifyRequest<{ Querystring: SingleQuery }>) => {
    requireBefore(request, 'noProxyApis')
    const { volumes: all } = await volumes.list(request.principal, { allTenants: false, sort: [{ key: 'created_at', dir: 'desc' }] })
    return { volumes: window(all, request).map(volumeView) }
  }
  const listSnapshots = async (request: FastifyRequest<{ Querystring: SingleQuery }>) => {
    requireBefore(request, 'noProxyApis')
    const { snapshots: all } = await snapshots.list(request.principal, { allTenants: false, sort: [{ key: 'created_at', dir: 'desc' }] })
    return { snapshots: window(all, request).map(snapshotView) }
  }

  return async (scope: FastifyInstance): Promise<void> => {
    type P1 = { Params: { id: string } }
    // Nova's list and detail are the same here: both answer the full view.
    scope.get<{ Querystring: SingleQuery }>('/v2.1/os-volumes', DOCS.volumes(false), listVolumes)
    scope.get<{ Querystring: SingleQuery }>('/v2.1/os-volumes/detail', DOCS.volumes(true), listVolumes)
    scope.get<P1>('/v2.1/os-volumes/:id', DOCS.volume, async (request) => ({ volume: volumeView(await volumes.get(request.principal, idOf(request))) }))
    scope.post('/v2.1/os-volumes', DOCS.createVolume, async (request) => {
      requireBefore(request, 'noProxyApis')
      const body = bodyObject(request)
      validate('volume', request, createVolumeBody, body)
      const v = body.volume
      const created = await volumes.create(request.principal, {
        size: Number(v.size),
        name: v.display_name ?? null,
        description: v.display_description ?? null,
        volume_type: v.volume_type ?? null,
        availability_zone: v.availability_zone ?? null,
        snapshot_id: v.snapshot_id ?? null,
        metadata: v.metadata ?? {},
      })
      return { volume: volumeView(created) }
    })
    scope.delete<P1>('/v2.1/os-volumes/:id', DOCS.deleteVolume, async (request, reply) => {
      await volumes.delete(request.principal, idOf(request), { cascade: false })
      return reply.code(202).send()
    })

    scope.get<{ Querystring: SingleQuery }>('/v2.1/os-snapshots', DOCS.snapshots(false), listSnapshots)
    scope.get<{ Querystring: SingleQuery }>('/v2.1/os-snapshots/detail', DOCS.snapshots(true), listSnapshots)
    scope.get<P1>('/v2.1/os-snapshots/:id', DOCS.snapshot, async (request) => ({ snapshot: snapshotView(await snapshots.get(request.principal, idOf(request))) }))
    scope.post('/v2.1/os-snapshots', DOCS.createSnapshot, async (request) => {
      requireBefore(request, 'noProxyApis')
      const body = bodyObject(request)
      validate('snapshot', request, createSnapshotBody, body)
      const s = body.snapshot
      const force = s.force === true || (typeof s.force === 'string' && ['true', '1', 'yes', 'on'].includes(s.force.toLowerCase()))
      const created = await snapshots.create(request.principal, {
        volume_id: s.volume_id,
        name: s.display_name ?? null,
        description: s.display_description ?? null,
        force,
      })
      return { snapshot: snapshotView(created) }
    })
    scope.delete<P1>('/v2.1/os-snapshots/:id', DOCS.deleteSnapshot, async (request, reply) => {
      await snapshots.delete(request.principal, idOf(request))
      return reply.code(202).send()
    })
  }
}
