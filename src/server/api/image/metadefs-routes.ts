/**
 * Glance's metadata definitions API (/v2/metadefs/…) and its schema documents. Handlers authorize with the image
 * policy (reads for readers, writes for admins), then call image/metadefs.ts with the caller's view of private
 * namespaces.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppDeps } from '../../deps.js'
import type { FromSchema } from '../../http/route-types.js'
import { documented, noBody } from '../../http/openapi.js'
import { allows, authorize, visibilityOf } from '../../policy/rules.js'
import { imagePolicy } from '../../policy/image.policy.js'
import * as md from '../../image/metadefs.js'
import { METADEF_SCHEMAS } from '../../image/metadef-schemas.js'
import { associationView, namespaceView, objectView, propertyView, resourceTypeView, tagView } from '../../image/metadef-view.js'

const name80 = { type: 'string', minLength: 1, maxLength: 80 } as const
const nullableText = { type: ['string', 'null'], maxLength: 65535 } as const
const associationBody = {
  type: 'object',
  additionalProperties: false,
  properties: { name: name80, prefix: { type: ['string', 'null'], maxLength: 80 }, properties_target: { type: ['string', 'null'], maxLength: 80 }, created_at: {}, updated_at: {} },
  required: ['name'],
} as const
const propertyBody = {
  type: 'object',
  properties: { name: { type: 'string', minLength: 1, maxLength: 255 }, title: { type: 'string', minLength: 1, maxLength: 255 }, type: { type: 'string', enum: ['array', 'boolean', 'integer', 'number', 'object', 'string'] } },
  required: ['name', 'title', 'type'],
} as const
const objectBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 255 },
    description: nullableText,
    required: { type: 'array', items: { type: 'string' } },
    properties: { type: 'object', additionalProperties: { type: 'object', properties: { title: { type: 'string' }, type: { type: 'string' } }, required: ['title', 'type'] } },
    created_at: {}, updated_at: {}, schema: {}, self: {},
  },
  required: ['name'],
} as const
const tagBody = { type: 'object', additionalProperties: false, properties: { name: { type: 'string', minLength: 1, maxLength: 255 }, created_at: {}, updated_at: {} }, required: ['name'] } as const
const namespaceBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    namespace: name80,
    display_name: { type: ['string', 'null'], maxLength: 80 },
    description: { type: ['string', 'null'], maxLength: 500 },
    visibility: { type: 'string', enum: ['public', 'private'] },
    protected: { type: 'boolean' },
    owner: { type: ['string', 'null'], maxLength: 255 },
    resource_type_associations: { type: 'array', items: associationBody },
    properties: { type: 'object', additionalProperties: { type: 'object', properties: propertyBody.properties, required: ['title', 'type'] } },
    objects: { type: 'array', items: objectBody },
    tags: { type: 'array', items: tagBody },
    created_at: {}, updated_at: {}, schema: {}, self: {},
  },
  required: ['namespace'],
} as const
const tagsBody = { type: 'object', additionalProperties: false, properties: { tags: { type: 'array', items: tagBody } }, required: ['tags'] } as const
const listQuery = { type: 'object', properties: { visibility: { type: 'string', enum: ['public', 'private'] }, resource_types: { type: 'string' }, limit: { type: 'string' }, marker: { type: 'string' }, sort_key: { type: 'string' }, sort_dir: { type: 'string' } } } as const

const answer = (summary: string, status = 200) => documented({ summary, response: { [status]: { type: 'object' } } })
const deleted = (summary: string) => documented({ summary, response: { 204: noBody('Deleted') } })

type Ns = { Params: { ns: string } }
type NsName = { Params: { ns: string; name: string } }
const KINDS = { objects: 'metadef_objects', properties: 'metadef_properties', tags: 'metadef_tags' } as const

export function metadefRoutes(deps: AppDeps) {
  const db = deps.store.db
  const now = () => Date.now()
  const viewer = (request: FastifyRequest): md.MetadefViewer => ({
    projectId: request.principal.scope.type === 'project' ? request.principal.scope.projectId : undefined,
    visibility: visibilityOf(allows(imagePolicy, 'metadefs:all_projects', request.principal)),
  })
  /**
   * The namespace named in the path, and the operation's rule (reads: reader; writes: admin). The namespace is
   * looked up first, so another project's private one is 404 to every operation, never a 403 that tells it exists.
   */
  const namespaceFor = async (request: FastifyRequest<Ns>, write = false) => {
    const row = await md.getNamespace(db, viewer(request), request.params.ns)
    authorize(imagePolicy, write ? 'modify_metadef' : 'get_metadef', request.principal)
    return row
  }
  const fullView = async (row: md.NamespaceRow) => {
    const [associations, properties, objects, tags] = await Promise.all([md.listAssociations(db, row), md.listMembers(db, KINDS.properties, row), md.listMembers(db, KINDS.objects, row), md.listMembers(db, KINDS.tags, row)])
    return namespaceView(row, {
      associations: associations.map(associationView),
      properties: Object.fromEntries(properties.map((p) => [p.name, p.definition])),
      objects: objects.map((o) => objectView(row.namespace, o)),
      tags: tags.map(tagView),
    })
  }

  return async (v2: FastifyInstance): Promise<void> => {
    for (const [which, schema] of Object.entries(METADEF_SCHEMAS)) {
      v2.get(`/v2/schemas/metadefs/${which}`, documented({ summary: `Glance's JSON Schema of metadefs ${which}`, response: { 200: { type: 'object' } } }), async () => schema)
    }

    v2.get<{ Querystring: FromSchema<typeof listQuery> }>('/v2/metadefs/namespaces', { ...answer('List metadata definition namespaces'), schema: { querystring: listQuery } }, async (request) => {
      authorize(imagePolicy, 'get_metadef', request.principal)
      const resourceTypes = request.query.resource_types?.split(',').filter((t) => t !== '')
      const rows = await md.listNamespaces(db, viewer(request), { visibility: request.query.visibility, resourceTypes })
      const associations = await Promise.all(rows.map((r) => md.listAssociations(db, r)))
      return { namespaces: rows.map((r, i) => namespaceView(r, { associations: associations[i].map(associationView) })), first: '/v2/metadefs/namespaces', schema: '/v2/schemas/metadefs/namespaces' }
    })
    v2.post<{ Body: FromSchema<typeof namespaceBody> }>('/v2/metadefs/namespaces', { ...answer('Create a metadata definition namespace', 201), schema: { body: namespaceBody } }, async (request, reply) => {
      authorize(imagePolicy, 'modify_metadef', request.principal)
      const owner = request.body.owner ?? (request.principal.scope.type === 'project' ? request.principal.scope.projectId : null)
      const row = await md.createNamespace(db, { ...request.body, owner }, now())
      return reply.code(201).send(await fullView(row))
    })
    v2.get<Ns>('/v2/metadefs/namespaces/:ns', answer('Show a metadata definition namespace with what it holds'), async (request) => fullView(await namespaceFor(request)))
    v2.put<Ns & { Body: FromSchema<typeof namespaceBody> }>('/v2/metadefs/namespaces/:ns', { ...answer('Update a metadata definition namespace'), schema: { body: namespaceBody } }, async (request) => {
      const row = await md.updateNamespace(db, await namespaceFor(request, true), request.body, now())
      return namespaceView(row, { associations: (await md.listAssociations(db, row)).map(associationView) })
    })
    v2.delete<Ns>('/v2/metadefs/namespaces/:ns', deleted('Delete a metadata definition namespace (not a protected one)'), async (request, reply) => {
      await md.deleteNamespace(db, await namespaceFor(request, true))
      return reply.code(204).send()
    })

    // Objects
    v2.get<Ns>('/v2/metadefs/namespaces/:ns/objects', answer("A namespace's objects"), async (request) => {
      const ns = await namespaceFor(request)
      return { objects: (await md.listMembers(db, KINDS.objects, ns)).map((o) => objectView(ns.namespace, o)), schema: '/v2/schemas/metadefs/objects' }
    })
    v2.post<Ns & { Body: FromSchema<typeof objectBody> }>('/v2/metadefs/namespaces/:ns/objects', { ...answer('Create an object in a namespace', 201), schema: { body: objectBody } }, async (request, reply) => {
      const ns = await namespaceFor(request, true)
      const { name, ...definition } = definitionOf(request.body)
      await md.putMember(db, KINDS.objects, ns, name, definition, now())
      return reply.code(201).send(objectView(ns.namespace, await md.getMember(db, KINDS.objects, ns, name)))
    })
    v2.get<NsName>('/v2/metadefs/namespaces/:ns/objects/:name', answer('Show an object of a namespace'), async (request) => {
      const ns = await namespaceFor(request)
      return objectView(ns.namespace, await md.getMember(db, KINDS.objects, ns, request.params.name))
    })
    v2.put<NsName & { Body: FromSchema<typeof objectBody> }>('/v2/metadefs/namespaces/:ns/objects/:name', { ...answer('Replace an object of a namespace'), schema: { body: objectBody } }, async (request) => {
      const ns = await namespaceFor(request, true)
      const { name, ...definition } = definitionOf(request.body)
      await md.replaceMember(db, KINDS.objects, ns, request.params.name, name, definition, now())
      return objectView(ns.namespace, await md.getMember(db, KINDS.objects, ns, name))
    })

    // Properties
    v2.get<Ns>('/v2/metadefs/namespaces/:ns/properties', answer("A namespace's properties"), async (request) => {
      const ns = await namespaceFor(request)
      return { properties: Object.fromEntries((await md.listMembers(db, KINDS.properties, ns)).map((p) => [p.name, p.definition])), schema: '/v2/schemas/metadefs/properties' }
    })
    v2.post<Ns & { Body: FromSchema<typeof propertyBody> }>('/v2/metadefs/namespaces/:ns/properties', { ...answer('Create a property in a namespace', 201), schema: { body: propertyBody } }, async (request, reply) => {
      const ns = await namespaceFor(request, true)
      const { name, ...definition } = definitionOf(request.body)
      await md.putMember(db, KINDS.properties, ns, name, definition, now())
      return reply.code(201).send(propertyView(await md.getMember(db, KINDS.properties, ns, name)))
    })
    v2.get<NsName>('/v2/metadefs/namespaces/:ns/properties/:name', answer('Show a property of a namespace'), async (request) => {
      const ns = await namespaceFor(request)
      return propertyView(await md.getMember(db, KINDS.properties, ns, request.params.name))
    })
    v2.put<NsName & { Body: FromSchema<typeof propertyBody> }>('/v2/metadefs/namespaces/:ns/properties/:name', { ...answer('Replace a property of a namespace'), schema: { body: propertyBody } }, async (request) => {
      const ns = await namespaceFor(request, true)
      const { name, ...definition } = definitionOf(request.body)
      await md.replaceMember(db, KINDS.properties, ns, request.params.name, name, definition, now())
      return propertyView(await md.getMember(db, KINDS.properties, ns, name))
    })

    // Tags
    v2.get<Ns>('/v2/metadefs/namespaces/:ns/tags', answer("A namespace's tags"), async (request) => {
      const ns = await namespaceFor(request)
      return { tags: (await md.listMembers(db, KINDS.tags, ns)).map(tagView) }
    })
    v2.post<Ns & { Body: FromSchema<typeof tagsBody> }>('/v2/metadefs/namespaces/:ns/tags', { ...answer("Set a namespace's tags (X-Openstack-Append: true adds them)", 201), schema: { body: tagsBody } }, async (request, reply) => {
      const ns = await namespaceFor(request, true)
      const append = String(request.headers['x-openstack-append'] ?? '').toLowerCase() === 'true'
      await md.setTags(db, ns, request.body.tags.map((t) => t.name), append, now())
      return reply.code(201).send({ tags: (await md.listMembers(db, KINDS.tags, ns)).map(tagView) })
    })
    v2.post<NsName>('/v2/metadefs/namespaces/:ns/tags/:name', answer('Add a tag to a namespace', 201), async (request, reply) => {
      const ns = await namespaceFor(request, true)
      await md.putMember(db, KINDS.tags, ns, request.params.name, {}, now())
      return reply.code(201).send(tagView(await md.getMember(db, KINDS.tags, ns, request.params.name)))
    })
    v2.get<NsName>('/v2/metadefs/namespaces/:ns/tags/:name', answer('Show a tag of a namespace'), async (request) => {
      const ns = await namespaceFor(request)
      return tagView(await md.getMember(db, KINDS.tags, ns, request.params.name))
    })
    v2.put<NsName & { Body: FromSchema<typeof tagBody> }>('/v2/metadefs/namespaces/:ns/tags/:name', { ...answer('Rename a tag of a namespace'), schema: { body: tagBody } }, async (request) => {
      const ns = await namespaceFor(request, true)
      await md.replaceMember(db, KINDS.tags, ns, request.params.name, request.body.name, {}, now())
      return tagView(await md.getMember(db, KINDS.tags, ns, request.body.name))
    })

    // One member, or all of one kind, deleted.
    for (const [path, kind] of Object.entries(KINDS)) {
      v2.delete<NsName>(`/v2/metadefs/namespaces/:ns/${path}/:name`, deleted(`Delete one of a namespace's ${path}`), async (request, reply) => {
        await md.deleteMember(db, kind, await namespaceFor(request, true), request.params.name)
        return reply.code(204).send()
      })
      v2.delete<Ns>(`/v2/metadefs/namespaces/:ns/${path}`, deleted(`Delete every one of a namespace's ${path}`), async (request, reply) => {
        await md.deleteAllMembers(db, kind, await namespaceFor(request, true))
        return reply.code(204).send()
      })
    }

    // Resource types and their associations with namespaces.
    v2.get('/v2/metadefs/resource_types', answer('List resource types'), async (request) => {
      authorize(imagePolicy, 'get_metadef', request.principal)
      return { resource_types: (await md.listResourceTypes(db)).map(resourceTypeView) }
    })
    v2.get<Ns>('/v2/metadefs/namespaces/:ns/resource_types', answer("A namespace's resource type associations"), async (request) => {
      const ns = await namespaceFor(request)
      return { resource_type_associations: (await md.listAssociations(db, ns)).map(associationView) }
    })
    v2.post<Ns & { Body: FromSchema<typeof associationBody> }>('/v2/metadefs/namespaces/:ns/resource_types', { ...answer('Associate a resource type with a namespace', 201), schema: { body: associationBody } }, async (request, reply) => {
      const ns = await namespaceFor(request, true)
      await db.transaction().execute((tx) => md.associate(tx, ns, request.body, now()))
      const made = (await md.listAssociations(db, ns)).find((a) => a.resource_type === request.body.name)!
      return reply.code(201).send(associationView(made))
    })
    v2.delete<NsName>('/v2/metadefs/namespaces/:ns/resource_types/:name', deleted('Dissociate a resource type from a namespace'), async (request, reply) => {
      await md.dissociate(db, await namespaceFor(request, true), request.params.name)
      return reply.code(204).send()
    })
  }
}

/** A body without the fields the server sets (times, links): the name and the definition. */
function definitionOf(body: { name: string } & Record<string, unknown>): { name: string } & Record<string, unknown> {
  const { created_at: _c, updated_at: _u, schema: _s, self: _l, ...rest } = body
  return rest
}
