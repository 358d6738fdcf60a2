/**
 * The bytes a host moves through the control plane with its host credential (src/server/onboarding/host-data.ts):
 * image downloads for its guests, snapshot uploads into queued images, and the disks of a cold migration.
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { passThroughParser, uploadStream } from '../../http/upload-stream.js'
import { hostAuth } from './host-auth.js'
import { documented, HOST_CREDENTIAL, mediaAnswer, noBody } from '../../http/openapi.js'

const uuid = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
const id = { type: 'string', maxLength: 64 }
const imageParams = { type: 'object', properties: { id, imageId: { type: 'string', pattern: uuid } }, required: ['id', 'imageId'] }
const transferParams = {
  type: 'object',
  properties: { id, serverId: { type: 'string', pattern: uuid }, disk: { type: 'string', enum: ['disk', 'disk.local'] } },
  required: ['id', 'serverId', 'disk'],
}
const format = { type: 'string', pattern: '^[a-z0-9]{1,16}$' }
const rbdSnapshotBody = {
  type: 'object',
  properties: { snapshot: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$' }, disk_format: format, container_format: format },
  required: ['snapshot', 'disk_format', 'container_format'],
  additionalProperties: false,
}

const bytes = (what: string) => mediaAnswer('application/octet-stream', what, { type: 'string', format: 'binary' })

export function hostDataRoutes(deps: AppDeps) {
  return async (scope: FastifyInstance): Promise<void> => {
    await scope.register(async (data) => {
      const requireHost = hostAuth(deps)
      const service = deps.hostData
      data.addContentTypeParser('application/octet-stream', passThroughParser)

      data.get<{ Params: { id: string; imageId: string } }>('/v1/hosts/:id/images/:imageId/file', { onRequest: requireHost, schema: { params: imageParams }, ...documented({ ...HOST_CREDENTIAL, summary: "An image's bytes, for the host's image cache", response: { 200: bytes('The image data') } }) }, async (request, reply) => {
        const { stream, size } = await service.openImage(request.params.id.toLowerCase(), request.params.imageId.toLowerCase())
        return reply.header('content-type', 'application/octet-stream').header('content-length', String(size)).send(stream)
      })

      data.put<{ Params: { id: string; imageId: string }; Querystring: { disk_format: string; container_format: string } }>(
        '/v1/hosts/:id/images/:imageId/file',
        {
          onRequest: requireHost,
          schema: { params: imageParams, querystring: { type: 'object', properties: { disk_format: format, container_format: format }, required: ['disk_format', 'container_format'] } },
          ...documented({ ...HOST_CREDENTIAL, summary: "A server snapshot's bytes, uploaded by the host into its image", consumes: ['application/octet-stream'], body: { type: 'string', format: 'binary' }, response: { 204: noBody('Stored') } }),
        },
        async (request, reply) => {
          const formats = { diskFormat: request.query.disk_format, containerFormat: request.query.container_format }
          await service.storeSnapshot(request.params.id.toLowerCase(), request.params.imageId.toLowerCase(), uploadStream(request), formats)
          return reply.code(204).send()
        },
      )

      data.put<{ Params: { id: string; imageId: string }; Body: { snapshot: string; disk_format: string; container_format: string } }>(
        '/v1/hosts/:id/images/:imageId/rbd-snapshot',
        {
          onRequest: requireHost,
          schema: { params: imageParams, body: rbdSnapshotBody },
          ...documented({ ...HOST_CREDENTIAL, summary: "A server snapshot that stays in Ceph: the host's RBD snapshot of the server's root disk, copied into its image", response: { 204: noBody('Stored') } }),
        },
        async (request, reply) => {
          const { snapshot, disk_format: diskFormat, container_format: containerFormat } = request.body
          await service.storeRbdSnapshot(request.params.id.toLowerCase(), request.params.imageId.toLowerCase(), snapshot, { diskFormat, containerFormat })
          return reply.code(204).send()
        },
      )

      data.put<{ Params: { id: string; serverId: string; disk: string } }>('/v1/hosts/:id/transfers/:serverId/:disk', { onRequest: requireHost, schema: { params: transferParams }, ...documented({ ...HOST_CREDENTIAL, summary: "A migrating server's disk, uploaded by its source host", consumes: ['application/octet-stream'], body: { type: 'string', format: 'binary' }, response: { 204: noBody('Stored') } }) }, async (request, reply) => {
        await service.putTransfer(request.params.id.toLowerCase(), request.params.serverId.toLowerCase(), request.params.disk, uploadStream(request))
        return reply.code(204).send()
      })

      data.get<{ Params: { id: string; serverId: string; disk: string } }>('/v1/hosts/:id/transfers/:serverId/:disk', { onRequest: requireHost, schema: { params: transferParams }, ...documented({ ...HOST_CREDENTIAL, summary: "A migrating server's disk, for its destination host", response: { 200: bytes('The disk') } }) }, async (request, reply) => {
        const { stream, size } = await service.openTransfer(request.params.id.toLowerCase(), request.params.serverId.toLowerCase(), request.params.disk)
        return reply.header('content-type', 'application/octet-stream').header('content-length', String(size)).send(stream)
      })
    })
  }
}
