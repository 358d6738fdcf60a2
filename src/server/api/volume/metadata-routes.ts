/**
 * Metadata of volumes and of snapshots: Cinder serves both with the same six routes and the same answers.
 * GET/POST (merge)/PUT (replace) `/{collection}/{id}/metadata`, GET/PUT/DELETE `/{collection}/{id}/metadata/{key}`.
 */
import type { FastifyInstance } from 'fastify'
import type { Principal } from '../../auth/principal.js'
import { AppError, badRequest } from '../../../contracts/errors.js'
import { idParams, keyParams, metadataBody, stringMap, type IdRoute, type KeyRoute } from './params.js'
import type { FromSchema } from '../../http/route-types.js'
import { documented, noBody } from '../../http/openapi.js'
import { A } from './answers.js'

/** What the routes need of the service that owns the records (the volume and snapshot services). */
export interface MetadataOwner {
  get(principal: Principal, id: string): Promise<{ metadata: Record<string, string> }>
  /** `replace` drops the keys not given (PUT); otherwise merges (POST). Returns the result. */
  setMetadata(principal: Principal, id: string, metadata: Record<string, string>, replace: boolean): Promise<Record<string, string>>
  /** 404 when the key is not set. */
  deleteMetadataKey(principal: Principal, id: string, key: string): Promise<void>
}

const itemBody = { type: 'object', required: ['meta'], properties: { meta: { ...stringMap, minProperties: 1, maxProperties: 1 } } } as const

export function metadataRoutes(r: FastifyInstance, collection: 'volumes' | 'snapshots', owner: MetadataOwner): void {
  const base = `/${collection}/:id/metadata`
  const of = collection === 'volumes' ? 'a volume' : 'a snapshot'
  r.get<IdRoute>(base, { schema: { params: idParams }, ...documented({ summary: `The metadata of ${of}`, response: { 200: A.metadata } }) }, async (request) => {
    const { id } = request.params
    return { metadata: (await owner.get(request.principal, id)).metadata }
  })
  for (const [method, replace] of [['POST', false], ['PUT', true]] as const) {
    r.route<IdRoute & { Body: FromSchema<typeof metadataBody> }>({
      method,
      url: base,
      schema: { params: idParams, body: metadataBody },
      ...documented({ summary: `${replace ? 'Replace' : 'Add to'} the metadata of ${of}`, response: { 200: A.metadata } }),
      handler: async (request) => {
        const { id } = request.params
        return { metadata: await owner.setMetadata(request.principal, id, request.body.metadata, replace) }
      },
    })
  }
  r.get<KeyRoute>(`${base}/:key`, { schema: { params: keyParams }, ...documented({ summary: `One metadata item of ${of}`, response: { 200: A.meta } }) }, async (request) => {
    const { id, key } = request.params
    const metadata = (await owner.get(request.principal, id)).metadata
    if (!(key in metadata)) throw new AppError('not_found', `Metadata item was not found: ${key}`)
    return { meta: { [key]: metadata[key] } }
  })
  r.put<KeyRoute & { Body: FromSchema<typeof itemBody> }>(`${base}/:key`, { schema: { params: keyParams, body: itemBody }, ...documented({ summary: `Set one metadata item of ${of}`, response: { 200: A.meta } }) }, async (request) => {
    const { id, key } = request.params
    const meta = request.body.meta
    if (!(key in meta)) throw badRequest('Request body and URI mismatch')
    await owner.setMetadata(request.principal, id, meta, false)
    return { meta }
  })
  r.delete<KeyRoute>(`${base}/:key`, { schema: { params: keyParams }, ...documented({ summary: `Delete one metadata item of ${of}`, response: { 200: noBody('Deleted') } }) }, async (request, reply) => {
    const { id, key } = request.params
    await owner.deleteMetadataKey(request.principal, id, key)
    return reply.code(200).send()
  })
}
