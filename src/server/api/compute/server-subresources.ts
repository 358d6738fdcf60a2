/**
 * /servers/{id}/metadata, /servers/{id}/tags (2.26+) and /servers/{id}/os-server-password; /ips is with the other
 * network routes (server-network-routes.ts).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type as T } from '@sinclair/typebox'
import { badRequest, conflict, notFound } from '../../../contracts/errors.js'
import { P } from '../../../contracts/compute/params.js'
import type { ServerTable } from '../../storage/schema.js'
import { deleteSystemMetadata, PASSWORD_KEYS, postedPassword } from '../../compute/system-metadata.js'
import { addServerTag, deleteServerTag, deleteServerTags, hasServerTag, replaceServerTags, saveServerMetadata, serverTags } from '../../compute/server-rows.js'
import type { ServerRouteDeps } from './servers.js'
import { visibleServer } from './servers.js'
import { bodyObject, can, must, requireGate, validate } from './context.js'
import { documented, noBody } from '../../http/openapi.js'
import { A } from '../../../contracts/compute/answers.js'
import { versioned } from '../../../contracts/compute/schemas.js'

const WRITABLE_STATES = ['active', 'paused', 'suspended', 'stopped']
const metadataBody = () => T.Object({ metadata: P.metadata }, { additionalProperties: false })
const metaItemBody = () => T.Object({ meta: T.Record(T.String({ pattern: '^[a-zA-Z0-9-_:. ]{1,255}$' }), T.String({ maxLength: 255 }), { minProperties: 1, maxProperties: 1 }) }, { additionalProperties: false })
const tagsBody = () => T.Object({ tags: T.Array(P.tag, { maxItems: 50 }) }, { additionalProperties: false })
const MAX_TAGS = 50

/** Metadata and tag writes: the server must be at rest in a writable state and not locked (admins override). */
function checkWritable(request: FastifyRequest, row: ServerTable, what: string): void {
  if (row.locked === 1 && !can(request, 'servers:locked:override')) throw conflict(`Instance ${row.id} is locked`)
  if (!WRITABLE_STATES.includes(row.vm_state)) throw conflict(`Cannot '${what}' instance ${row.id} while it is in vm_state ${row.vm_state}`)
  if (row.task_state !== null) throw conflict(`Cannot '${what}' instance ${row.id} while it is in task_state ${row.task_state}`)
}

const DOCS = {
  metadata: documented({ summary: "Show a server's metadata", response: { 200: A.metadata } }),
  mergeMetadata: documented({ summary: "Add to or change a server's metadata", body: versioned(metadataBody), response: { 200: A.metadata } }),
  replaceMetadata: documented({ summary: "Replace a server's metadata", body: versioned(metadataBody), response: { 200: A.metadata } }),
  metaItem: documented({ summary: 'Show one metadata item', response: { 200: A.meta } }),
  setMetaItem: documented({ summary: 'Set one metadata item', body: versioned(metaItemBody), response: { 200: A.meta } }),
  deleteMetaItem: documented({ summary: 'Delete one metadata item', response: { 204: noBody('Deleted') } }),
  tags: documented({ summary: "List a server's tags (2.26+)", response: { 200: A.tags } }),
  replaceTags: documented({ summary: "Replace a server's tags (2.26+)", body: versioned(tagsBody), response: { 200: A.tags } }),
  deleteTags: documented({ summary: "Delete all of a server's tags (2.26+)", response: { 204: noBody('Deleted') } }),
  checkTag: documented({ summary: 'Check a tag (2.26+)', response: { 204: noBody('The server has the tag') } }),
  addTag: documented({ summary: 'Add a tag (2.26+)', response: { 201: noBody('Added'), 204: noBody('The server had the tag already') } }),
  deleteTag: documented({ summary: 'Delete a tag (2.26+)', response: { 204: noBody('Deleted') } }),
  password: documented({ summary: "The password the server's guest posted, encrypted with its key pair ('' when none)", response: { 200: A.serverPassword } }),
  clearPassword: documented({ summary: "Clear the password the server's guest posted", response: { 204: noBody('Cleared') } }),
}

export function serverSubresourceRoutes(deps: ServerRouteDeps) {
  const db = deps.store.db
  const load = async (request: FastifyRequest, id: string, write: boolean, what = 'update metadata') => {
    const row = await visibleServer(deps, request, id)
    must(request, write ? 'servers:metadata:write' : 'servers:show', { projectId: row.project_id })
    if (write) checkWritable(request, row, what)
    return row
  }
  const saveMetadata = (row: ServerTable, metadata: Record<string, string>) => saveServerMetadata(db, row, metadata)
  return async (scope: FastifyInstance): Promise<void> => {
    type P1 = { Params: { id: string } }
    type P2 = { Params: { id: string; key: string } }

    // The password a guest posted to a metadata service (encrypted with its key pair); '' when none was posted.
    scope.get<P1>('/v2.1/servers/:id/os-server-password', DOCS.password, async (request) => {
      const row = await load(request, request.params.id, false)
      return { password: await postedPassword(db, row.id) }
    })
    scope.delete<P1>('/v2.1/servers/:id/os-server-password', DOCS.clearPassword, async (request, reply) => {
      const row = await visibleServer(deps, request, request.params.id)
      must(request, 'servers:password:clear', { projectId: row.project_id })
      await deleteSystemMetadata(db, row.id, [...PASSWORD_KEYS])
      return reply.code(204).send()
    })

    scope.get<P1>('/v2.1/servers/:id/metadata', DOCS.metadata, async (request) => {
      const row = await load(request, request.params.id, false)
      return { metadata: JSON.parse(row.metadata) }
    })
    scope.post<P1>('/v2.1/servers/:id/metadata', DOCS.mergeMetadata, async (request) => {
      const body = bodyObject(request)
      validate('metadata', request, metadataBody, body)
      const row = await load(request, request.params.id, true)
      const merged = { ...JSON.parse(row.metadata), ...body.metadata }
      await saveMetadata(row, merged)
      return { metadata: merged }
    })
    scope.put<P1>('/v2.1/servers/:id/metadata', DOCS.replaceMetadata, async (request) => {
      const body = bodyObject(request)
      validate('metadata', request, metadataBody, body)
      const row = await load(request, request.params.id, true)
      await saveMetadata(row, body.metadata)
      return { metadata: body.metadata }
    })
    scope.get<P2>('/v2.1/servers/:id/metadata/:key', DOCS.metaItem, async (request) => {
      const row = await load(request, request.params.id, false)
      const metadata = JSON.parse(row.metadata) as Record<string, string>
      if (!(request.params.key in metadata)) throw notFound('Metadata item was not found')
      return { meta: { [request.params.key]: metadata[request.params.key] } }
    })
    scope.put<P2>('/v2.1/servers/:id/metadata/:key', DOCS.setMetaItem, async (request) => {
      const body = bodyObject(request)
      validate('meta', request, metaItemBody, body)
      const meta = body.meta
      if (!(request.params.key in meta)) throw badRequest('Request body and URI mismatch')
      const row = await load(request, request.params.id, true)
      await saveMetadata(row, { ...JSON.parse(row.metadata), ...meta })
      return { meta }
    })
    scope.delete<P2>('/v2.1/servers/:id/metadata/:key', DOCS.deleteMetaItem, async (request, reply) => {
      const row = await load(request, request.params.id, true)
      const metadata = JSON.parse(row.metadata) as Record<string, string>
      if (!(request.params.key in metadata)) throw notFound('Metadata item was not found')
      delete metadata[request.params.key]
      await saveMetadata(row, metadata)
      return reply.code(204).send()
    })

    // Tags.
    scope.get<P1>('/v2.1/servers/:id/tags', DOCS.tags, async (request) => {
      requireGate(request, 'serverTags')
      const row = await load(request, request.params.id, false)
      return { tags: await serverTags(db, row.id) }
    })
    scope.put<P1>('/v2.1/servers/:id/tags', DOCS.replaceTags, async (request) => {
      requireGate(request, 'serverTags')
      const body = bodyObject(request)
      validate('tags', request, tagsBody, body)
      const row = await load(request, request.params.id, true, 'update tags')
      const tags = [...new Set(body.tags)]
      await replaceServerTags(db, row.id, tags)
      return { tags: tags.sort() }
    })
    scope.delete<P1>('/v2.1/servers/:id/tags', DOCS.deleteTags, async (request, reply) => {
      requireGate(request, 'serverTags')
      const row = await load(request, request.params.id, true, 'delete tags')
      await deleteServerTags(db, row.id)
      return reply.code(204).send()
    })
    scope.get<{ Params: { id: string; tag: string } }>('/v2.1/servers/:id/tags/:tag', DOCS.checkTag, async (request, reply) => {
      requireGate(request, 'serverTags')
      const row = await load(request, request.params.id, false)
      if (!(await hasServerTag(db, row.id, request.params.tag))) throw notFound(`Tag ${request.params.tag} could not be found.`)
      return reply.code(204).send()
    })
    scope.put<{ Params: { id: string; tag: string } }>('/v2.1/servers/:id/tags/:tag', DOCS.addTag, async (request, reply) => {
      requireGate(request, 'serverTags')
      const tag = request.params.tag
      if (tag.length < 1 || tag.length > 60 || /[,/]/.test(tag)) throw badRequest(`Invalid input for field/attribute tag. Value: ${tag}.`)
      const row = await load(request, request.params.id, true, 'update tag')
      const tags = await serverTags(db, row.id)
      if (tags.includes(tag)) return reply.code(204).send()
      if (tags.length >= MAX_TAGS) throw badRequest(`The number of tags exceeded the per-server limit ${MAX_TAGS}`)
      await addServerTag(db, row.id, tag)
      return reply.code(201).header('location', `${deps.urls.compute}/servers/${row.id}/tags/${encodeURIComponent(tag)}`).send()
    })
    scope.delete<{ Params: { id: string; tag: string } }>('/v2.1/servers/:id/tags/:tag', DOCS.deleteTag, async (request, reply) => {
      requireGate(request, 'serverTags')
      const row = await load(request, request.params.id, true, 'delete tag')
      if (!(await deleteServerTag(db, row.id, request.params.tag))) throw notFound(`Tag ${request.params.tag} could not be found.`)
      return reply.code(204).send()
    })
  }
}
