/**
 * The image API (Glance v2 paths under {base}/image). Handlers are thin: they read the request, call the
 * ImageService once and shape the answer. Uploads are streamed: the octet-stream parser of this scope hands
 * the raw request through untouched, so the global body limit does not apply and nothing is buffered; the
 * service enforces the image size limit instead.
 */
import type { FastifyInstance } from 'fastify'
import { uploadStream } from '../../http/upload-stream.js'
import type { AppDeps } from '../../deps.js'
import { authHook } from '../../auth/http-auth.js'
import type { ImageQuery } from '../../image/listing.js'
import type { FromSchema } from '../../http/route-types.js'
import { IMAGE_SCHEMA, IMAGES_SCHEMA, MEMBER_SCHEMA, MEMBERS_SCHEMA } from '../../image/schemas.js'
import { imageView, memberView } from '../../image/view.js'
import { ViewCache } from '../../http/view-cache.js'
import { documented, mediaAnswer, noBody, OPEN, type JsonSchema } from '../../http/openapi.js'
import { fromDraft4 } from '../../image/patch.js'
import { metadefRoutes } from './metadefs-routes.js'
import { loneSurrogateInJson, nulInJson } from '../../http/json-body.js'

const DRAFT4_PATCH_TYPE = 'application/openstack-images-v2.0-json-patch'
const JSON_PATCH_TYPES = ['application/openstack-images-v2.1-json-patch', DRAFT4_PATCH_TYPE]
const GLANCE_VERSIONS = ['2.9', '2.8', '2.7', '2.6', '2.5', '2.4', '2.3', '2.2', '2.1', '2.0']

const idParams = { type: 'object', properties: { id: { type: 'string', maxLength: 64 } }, required: ['id'] } as const
const tagParams = { type: 'object', properties: { id: { type: 'string' }, tag: { type: 'string', minLength: 1, maxLength: 255 } }, required: ['id', 'tag'] } as const
const memberParams = { type: 'object', properties: { id: { type: 'string' }, member: { type: 'string' } }, required: ['id', 'member'] } as const
const addMemberBody = { type: 'object', properties: { member: { type: 'string', minLength: 1, maxLength: 255 } }, required: ['member'] } as const
const memberStatusBody = { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] } as const
type IdRoute = { Params: FromSchema<typeof idParams> }
type MemberRoute = { Params: FromSchema<typeof memberParams> }
const createBody = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: ['string', 'null'], maxLength: 255 },
    visibility: { type: 'string' },
    protected: { type: 'boolean' },
    os_hidden: { type: 'boolean' },
    disk_format: { type: ['string', 'null'] },
    container_format: { type: ['string', 'null'] },
    min_disk: { type: 'integer', minimum: 0 },
    min_ram: { type: 'integer', minimum: 0 },
    tags: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 255 } },
  },
} as const

/** Glance's own schema documents describe the answers (their `name` and `links` are Glance's, not JSON Schema's). */
const answer = ({ name: _name, links: _links, ...schema }: JsonSchema): JsonSchema => ({ type: 'object', ...schema })
const IMAGE = answer(IMAGE_SCHEMA)
const MEMBER = answer(MEMBER_SCHEMA)
const text = { type: 'string' }
const LIST_QUERY = {
  type: 'object',
  additionalProperties: { type: 'string', description: 'a property filter: value, eq:value or in:a,b' },
  properties: {
    limit: { type: 'string', pattern: '^[0-9]+$' },
    marker: text,
    sort: { type: 'string', description: 'key[:asc|desc],…' },
    sort_key: text,
    sort_dir: { type: 'string', enum: ['asc', 'desc'] },
    name: text,
    visibility: text,
    status: text,
    owner: text,
    member_status: text,
    tag: { type: 'string', description: 'repeatable' },
    size_min: { type: 'string', pattern: '^[0-9]+$' },
    size_max: { type: 'string', pattern: '^[0-9]+$' },
    protected: text,
    os_hidden: text,
  },
}
const patchBody = {
  type: 'array',
  description: 'RFC 6902 operations on image attributes',
  items: { type: 'object', properties: { op: { type: 'string', enum: ['add', 'replace', 'remove'] }, path: { type: 'string' }, value: {} }, required: ['op', 'path'] },
}
const DOCS = {
  versions: (status: number) => documented({ ...OPEN, summary: 'Image API versions', response: { [status]: answer({ properties: { versions: { type: 'array', items: { type: 'object' } } } }) } }),
  redirect: documented({ summary: 'Redirects to /v2/', response: { 302: noBody('Location: the v2 root') } }),
  schema: (which: string) => documented({ summary: `Glance's JSON Schema of ${which}`, response: { 200: { type: 'object' } } }),
  list: documented({
    summary: 'List images',
    querystring: LIST_QUERY,
    response: { 200: answer({ properties: { images: { type: 'array', items: IMAGE }, first: text, next: text, schema: text }, required: ['images'] }) },
  }),
  create: documented({ summary: 'Create an image record (upload its data with PUT /file)', response: { 201: IMAGE } }),
  show: documented({ summary: 'Show an image', response: { 200: IMAGE } }),
  update: documented({ summary: 'Change an image with JSON patch operations', consumes: JSON_PATCH_TYPES, body: patchBody, response: { 200: IMAGE } }),
  delete: documented({ summary: 'Delete an image', response: { 204: noBody('Deleted') } }),
  upload: documented({ summary: "Upload an image's data", consumes: ['application/octet-stream'], body: { type: 'string', format: 'binary' }, response: { 204: noBody('Stored') } }),
  download: documented({ summary: "Download an image's data", response: { 200: mediaAnswer('application/octet-stream', 'The image data', { type: 'string', format: 'binary' }), 204: noBody('The image has no data') } }),
  action: (action: string) => documented({ summary: `${action[0].toUpperCase()}${action.slice(1)} an image (admin)`, response: { 204: noBody('Done') } }),
  addTag: documented({ summary: 'Tag an image', response: { 204: noBody('Tagged') } }),
  deleteTag: documented({ summary: 'Remove a tag from an image', response: { 204: noBody('Removed') } }),
  members: documented({ summary: "An image's members (projects it is shared with)", response: { 200: answer({ properties: { members: { type: 'array', items: MEMBER }, schema: text }, required: ['members'] }) } }),
  addMember: documented({ summary: 'Share an image with a project', response: { 200: MEMBER } }),
  member: documented({ summary: 'One member of an image', response: { 200: MEMBER } }),
  updateMember: documented({ summary: "Accept or reject a shared image (the member's status)", response: { 200: MEMBER } }),
  deleteMember: documented({ summary: 'Stop sharing an image with a project', response: { 204: noBody('Removed') } }),
}

export function imageRoutes(deps: AppDeps) {
  return async (scope: FastifyInstance): Promise<void> => {
    const versionsDoc = () => ({
      versions: GLANCE_VERSIONS.map((v, n) => ({ id: `v${v}`, status: n === 0 ? 'CURRENT' : 'SUPPORTED', links: [{ rel: 'self', href: `${deps.urls.image}/v2/` }] })),
    })
    // Glance answers its root with 300 Multiple Choices; keystoneauth's discovery reads either.
    scope.get('/', DOCS.versions(300), async (_request, reply) => reply.code(300).send(versionsDoc()))
    scope.get('/versions', DOCS.versions(200), async () => versionsDoc())

    await scope.register(async (v2) => {
      const images = deps.images
      v2.addHook('onRequest', authHook(deps.tokens, deps.urls.identity))
      v2.addContentTypeParser('application/octet-stream', (_request, _payload, done) => done(null, undefined))
      v2.addContentTypeParser<string>(JSON_PATCH_TYPES, { parseAs: 'string', bodyLimit: deps.config.bodyLimitBytes }, (_request, body, done) => {
        const nul = nulInJson(body)
        if (nul) return done(nul, undefined)
        let value: unknown
        try {
          value = JSON.parse(body)
        } catch {
          return done(Object.assign(new Error('The request body is not valid JSON.'), { statusCode: 400 }), undefined)
        }
        const surrogate = loneSurrogateInJson(body, value)
        done(surrogate ?? null, surrogate ? undefined : value)
      })

      v2.get('/v2', DOCS.redirect, async (_request, reply) => reply.redirect(`${deps.urls.image}/v2/`))
      v2.get('/v2/schemas/image', DOCS.schema('an image'), async () => IMAGE_SCHEMA)
      v2.get('/v2/schemas/images', DOCS.schema('the image list'), async () => IMAGES_SCHEMA)
      v2.get('/v2/schemas/member', DOCS.schema('a member'), async () => MEMBER_SCHEMA)
      v2.get('/v2/schemas/members', DOCS.schema('the member list'), async () => MEMBERS_SCHEMA)
      await metadefRoutes(deps)(v2)

      v2.get<{ Querystring: ImageQuery }>('/v2/images', DOCS.list, async (request) => {
        const page = await images.list(request.principal, request.query)
        return {
          images: page.images.map(imageView),
          first: '/v2/images',
          schema: '/v2/schemas/images',
          ...(page.nextQuery ? { next: `/v2/images?${page.nextQuery}` } : {}),
        }
      })

      v2.post<{ Body: FromSchema<typeof createBody> }>('/v2/images', { schema: { body: createBody }, ...DOCS.create }, async (request, reply) => {
        const image = await images.create(request.principal, request.body)
        return reply.code(201).header('location', `${deps.urls.image}/v2/images/${image.id}`).send(imageView(image))
      })

      // Kept views per image revision (http/view-cache.ts, migration 0128); the view is the same for every caller
      // who may see the image (no microversion, no role-dependent field, links relative), so one variant.
      const views = new ViewCache({ budgetBytes: deps.config.viewCacheMb * 1024 * 1024, live: (ids) => images.existing(ids) })
      v2.get<IdRoute>('/v2/images/:id', { schema: { params: idParams }, ...DOCS.show }, async (request, reply) => {
        const { id } = request.params
        const stamp = await images.viewStamp(request.principal, id)
        const body = await views.keep('image', id, stamp, async () => imageView(await images.get(request.principal, id)))
        // The header Fastify gives the object this route answered before its view was kept.
        return reply.type('application/json; charset=utf-8').send(body)
      })

      v2.patch<IdRoute>('/v2/images/:id', { schema: { params: idParams }, ...DOCS.update }, async (request, reply) => {
        const contentType = (request.headers['content-type'] ?? '').split(';')[0].trim()
        if (!JSON_PATCH_TYPES.includes(contentType)) {
          return reply
            .code(415)
            .header('accept-patch', JSON_PATCH_TYPES[0])
            .send({ message: `Unsupported Content-Type: use ${JSON_PATCH_TYPES[0]}`, code: '415 Unsupported Media Type', title: 'Unsupported Media Type' })
        }
        const { id } = request.params
        const operations = contentType === DRAFT4_PATCH_TYPE ? fromDraft4(request.body) : request.body
        return imageView(await images.update(request.principal, id, operations))
      })

      v2.delete<IdRoute>('/v2/images/:id', { schema: { params: idParams }, ...DOCS.delete }, async (request, reply) => {
        const { id } = request.params
        await images.delete(request.principal, id)
        return reply.code(204).send()
      })

      v2.put<IdRoute>('/v2/images/:id/file', { schema: { params: idParams }, ...DOCS.upload }, async (request, reply) => {
        const { id } = request.params
        await images.upload(request.principal, id, uploadStream(request))
        return reply.code(204).send()
      })

      v2.get<IdRoute>('/v2/images/:id/file', { schema: { params: idParams }, ...DOCS.download }, async (request, reply) => {
        const { id } = request.params
        const result = await images.download(request.principal, id)
        if (!result.stream) return reply.code(204).send()
        reply.header('content-type', 'application/octet-stream').header('content-length', String(result.size))
        if (result.image.checksum) reply.header('content-md5', result.image.checksum)
        return reply.send(result.stream)
      })

      for (const action of ['deactivate', 'reactivate'] as const) {
        v2.post<IdRoute>(`/v2/images/:id/actions/${action}`, { schema: { params: idParams }, ...DOCS.action(action) }, async (request, reply) => {
          const { id } = request.params
          await images.setStatusAction(request.principal, id, action)
          return reply.code(204).send()
        })
      }

      v2.put<{ Params: FromSchema<typeof tagParams> }>('/v2/images/:id/tags/:tag', { schema: { params: tagParams }, ...DOCS.addTag }, async (request, reply) => {
        const { id, tag } = request.params
        await images.addTag(request.principal, id, tag)
        return reply.code(204).send()
      })
      v2.delete<{ Params: FromSchema<typeof tagParams> }>('/v2/images/:id/tags/:tag', { schema: { params: tagParams }, ...DOCS.deleteTag }, async (request, reply) => {
        const { id, tag } = request.params
        await images.deleteTag(request.principal, id, tag)
        return reply.code(204).send()
      })

      v2.get<IdRoute>('/v2/images/:id/members', { schema: { params: idParams }, ...DOCS.members }, async (request) => {
        const { id } = request.params
        return { members: (await images.listMembers(request.principal, id)).map(memberView), schema: '/v2/schemas/members' }
      })
      v2.post<IdRoute & { Body: FromSchema<typeof addMemberBody> }>(
        '/v2/images/:id/members',
        { schema: { params: idParams, body: addMemberBody }, ...DOCS.addMember },
        async (request) => {
          const { id } = request.params
          return memberView(await images.addMember(request.principal, id, request.body.member))
        },
      )
      v2.get<MemberRoute>('/v2/images/:id/members/:member', { schema: { params: memberParams }, ...DOCS.member }, async (request) => {
        const { id, member } = request.params
        return memberView(await images.getMember(request.principal, id, member))
      })
      v2.put<MemberRoute & { Body: FromSchema<typeof memberStatusBody> }>(
        '/v2/images/:id/members/:member',
        { schema: { params: memberParams, body: memberStatusBody }, ...DOCS.updateMember },
        async (request) => {
          const { id, member } = request.params
          return memberView(await images.updateMember(request.principal, id, member, request.body.status))
        },
      )
      v2.delete<MemberRoute>('/v2/images/:id/members/:member', { schema: { params: memberParams }, ...DOCS.deleteMember }, async (request, reply) => {
        const { id, member } = request.params
        await images.deleteMember(request.principal, id, member)
        return reply.code(204).send()
      })
    })
  }
}
