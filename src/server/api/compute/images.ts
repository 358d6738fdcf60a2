/**
 * Nova's image proxy, `/images` (2.1–2.35; 404 from 2.36, where Nova removed it): list, detail, show and delete the
 * image service's images, and their metadata (the images' free-form properties). Every call goes through the image
 * service with the caller's principal, so Glance's visibility and ownership rules hold.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { AppError, badRequest, notFound } from '../../../contracts/errors.js'
import type { AppDeps } from '../../deps.js'
import type { ImageRecord } from '../../image/model.js'
import { imageDetail, imageSummary, proxyPage } from '../../compute/image-proxy.js'
import { checkMetadataQuota } from '../../compute/quotas.js'
import { bodyObject, callerOf, requireBefore } from './context.js'
import { documented, noBody } from '../../http/openapi.js'
import { A, PROXY } from '../../../contracts/compute/answers.js'
import { envelope, listOf, plain, Q, queryOf } from '../../../contracts/compute/schemas.js'
import { J } from '../../../contracts/compute/json-types.js'
import type { SingleQuery } from '../../http/route-types.js'

type P1 = { Params: { id: string } }
type P2 = { Params: { id: string; key: string } }

/** A metadata body: `{<wrapper>: {key: string, …}}`. */
function metadataOf(request: FastifyRequest, wrapper: 'metadata' | 'meta'): Record<string, string> {
  const value = bodyObject(request)[wrapper]
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw badRequest(`Malformed request body: '${wrapper}' must be an object.`)
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== 'string' || key.length === 0 || key.length > 255 || v.length > 255) throw badRequest(`Invalid metadata: '${key}' must be a string of 1 to 255 characters with a string value of at most 255.`)
  }
  return value as Record<string, string>
}

const below = PROXY.summary
const DOCS = {
  list: (detail: boolean) =>
    documented({
      summary: `List images through the image service${detail ? ', with details' : ''}${below}`,
      querystring: queryOf({ limit: Q.count, marker: Q.str, name: Q.str, status: Q.str, type: Q.str, server: Q.str, minRam: Q.count, minDisk: Q.count, 'changes-since': Q.time }),
      response: { 200: envelope('images', listOf(detail ? A.imageDetail : A.imageSummary), { images_links: plain(J.links) }) },
    }),
  show: documented({ summary: `Show an image${below}`, response: { 200: envelope('image', A.imageDetail) } }),
  delete: documented({ summary: `Delete an image${below}`, response: { 204: noBody('Deleted') } }),
  metadata: documented({ summary: `An image's properties${below}`, response: { 200: A.metadata } }),
  mergeMetadata: documented({ summary: `Add to an image's properties${below}`, body: A.metadata, response: { 200: A.metadata } }),
  replaceMetadata: documented({ summary: `Replace an image's properties${below}`, body: A.metadata, response: { 200: A.metadata } }),
  metaItem: documented({ summary: `One property of an image${below}`, response: { 200: A.meta } }),
  setMetaItem: documented({ summary: `Set one property of an image${below}`, body: A.meta, response: { 200: A.meta } }),
  deleteMetaItem: documented({ summary: `Delete one property of an image${below}`, response: { 204: noBody('Deleted') } }),
}

export function imageProxyRoutes(deps: AppDeps) {
  const images = deps.images
  const urls = { compute: deps.urls.compute, image: deps.urls.image }

  /** The image, or Nova's 404 (another project's private image included). */
  const load = async (request: FastifyRequest, id: string): Promise<ImageRecord> => {
    requireBefore(request, 'noProxyApis')
    try {
      return await images.get(request.principal, id)
    } catch (err) {
      if (err instanceof AppError && err.code === 'not_found') throw notFound('Image not found.')
      throw err
    }
  }

  /** Every image the caller sees, in the image service's order (newest first). */
  const visible = async (request: FastifyRequest): Promise<ImageRecord[]> => {
    const all: ImageRecord[] = []
    let marker: string | undefined
    for (;;) {
      const page = await images.list(request.principal, { limit: '1000', ...(marker ? { marker } : {}) })
      all.push(...page.images)
      if (!page.nextQuery) return all
      marker = page.images[page.images.length - 1].id
    }
  }

  /** Sets the image's properties to `next` (Glance JSON patch through the image service). */
  const writeProperties = async (request: FastifyRequest, image: ImageRecord, next: Record<string, string>) => {
    await checkMetadataQuota(deps.store.db, callerOf(request).projectId, Object.keys(next).length)
    const removed = Object.keys(image.properties).filter((k) => !(k in next))
    const operations = [...removed.map((k) => ({ op: 'remove', path: `/${k}` })), ...Object.entries(next).map(([k, value]) => ({ op: 'add', path: `/${k}`, value }))]
    return (await images.update(request.principal, image.id, operations)).properties
  }

  return async (scope: FastifyInstance): Promise<void> => {
    for (const detail of [false, true]) {
      scope.get<{ Querystring: SingleQuery }>(`/v2.1/images${detail ? '/detail' : ''}`, DOCS.list(detail), async (request) => {
        requireBefore(request, 'noProxyApis')
        const page = proxyPage(await visible(request), request.query)
        return {
          images: page.images.map((i) => (detail ? imageDetail(i, urls) : imageSummary(i, urls))),
          ...(page.nextQuery ? { images_links: [{ rel: 'next', href: `${urls.compute}/images${detail ? '/detail' : ''}?${page.nextQuery}` }] } : {}),
        }
      })
    }
    scope.get<P1>('/v2.1/images/:id', DOCS.show, async (request) => ({ image: imageDetail(await load(request, request.params.id), urls) }))
    scope.delete<P1>('/v2.1/images/:id', DOCS.delete, async (request, reply) => {
      const image = await load(request, request.params.id)
      await images.delete(request.principal, image.id)
      return reply.code(204).send()
    })

    scope.get<P1>('/v2.1/images/:id/metadata', DOCS.metadata, async (request) => ({ metadata: (await load(request, request.params.id)).properties }))
    scope.post<P1>('/v2.1/images/:id/metadata', DOCS.mergeMetadata, async (request) => {
      const image = await load(request, request.params.id)
      return { metadata: await writeProperties(request, image, { ...image.properties, ...metadataOf(request, 'metadata') }) }
    })
    scope.put<P1>('/v2.1/images/:id/metadata', DOCS.replaceMetadata, async (request) => {
      const image = await load(request, request.params.id)
      return { metadata: await writeProperties(request, image, metadataOf(request, 'metadata')) }
    })
    scope.get<P2>('/v2.1/images/:id/metadata/:key', DOCS.metaItem, async (request) => {
      const { properties } = await load(request, request.params.id)
      if (!(request.params.key in properties)) throw notFound('Invalid metadata key')
      return { meta: { [request.params.key]: properties[request.params.key] } }
    })
    scope.put<P2>('/v2.1/images/:id/metadata/:key', DOCS.setMetaItem, async (request) => {
      const image = await load(request, request.params.id)
      const meta = metadataOf(request, 'meta')
      if (Object.keys(meta).length > 1) throw badRequest('Request body contains too many items')
      if (!(request.params.key in meta)) throw badRequest('Request body and URI mismatch')
      await writeProperties(request, image, { ...image.properties, ...meta })
      return { meta }
    })
    scope.delete<P2>('/v2.1/images/:id/metadata/:key', DOCS.deleteMetaItem, async (request, reply) => {
      const image = await load(request, request.params.id)
      if (!(request.params.key in image.properties)) throw notFound('Invalid metadata key')
      const { [request.params.key]: _removed, ...rest } = image.properties
      await writeProperties(request, image, rest)
      return reply.code(204).send()
    })
  }
}
