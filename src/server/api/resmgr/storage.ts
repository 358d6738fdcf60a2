/**
 * What hosts' agents need for volumes, under {base}/resmgr/v1/hosts/{id}/…, authenticated by the host's own
 * credential (another host's id is 403, user tokens 401):
 *
 * - a storage host reports its export address and backends, reads the exports it should serve (with their keys),
 *   downloads the image a volume it creates is made from, and uploads the bytes of an image made from a volume;
 * - a hypervisor host fetches the connection info, key included, of an attachment it connects.
 *
 * Image bytes stream both ways: nothing is buffered, the image service's size limit applies to uploads.
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { exportsForHost, receiveUploadFromHost, recordStorageReport, sourceImageForHost, type StorageReport } from '../../volume/storage-hosts.js'
import { hostAuth } from './host-auth.js'

const id = { type: 'string', maxLength: 64 }
const hostParams = { type: 'object', properties: { id }, required: ['id'] }
const params = (name: string) => ({ type: 'object', properties: { id, [name]: id }, required: ['id', name] })

const reportSchema = {
  type: 'object',
  required: ['export_address', 'backends'],
  properties: {
    export_address: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9.:-]+$' },
    backends: {
      type: 'object',
      maxProperties: 16,
      additionalProperties: { type: 'object', required: ['total_gb', 'free_gb'], properties: { total_gb: { type: 'integer', minimum: 0 }, free_gb: { type: 'integer', minimum: 0 } } },
    },
  },
}

export function storageHostRoutes(deps: AppDeps) {
  const requireHost = hostAuth(deps)
  const db = deps.store.db
  const { connections } = deps.volumeServices
  return async (scope: FastifyInstance): Promise<void> => {
    scope.addContentTypeParser('application/octet-stream', (_request, _payload, done) => done(null, undefined))
    const host = (request: { params: unknown }) => (request.params as { id: string }).id.toLowerCase()

    scope.put('/v1/hosts/:id/storage', { onRequest: requireHost, schema: { params: hostParams, body: reportSchema } }, async (request, reply) => {
      await recordStorageReport(db, host(request), request.body as StorageReport)
      return reply.code(204).send()
    })

    scope.get('/v1/hosts/:id/storage/exports', { onRequest: requireHost, schema: { params: hostParams } }, async (request, reply) => {
      reply.header('cache-control', 'no-store')
      const exports = await exportsForHost(db, deps.box, host(request))
      return { exports: exports.map((e) => ({ volume_id: e.volumeId, backend: e.backend, port: e.port, generations: e.generations, keys: e.keys })) }
    })

    scope.get('/v1/hosts/:id/storage/volumes/:volume_id/image', { onRequest: requireHost, schema: { params: params('volume_id') } }, async (request, reply) => {
      const { stream, size } = await sourceImageForHost(db, deps.images, host(request), (request.params as Record<string, string>).volume_id)
      reply.header('content-type', 'application/octet-stream').header('content-length', String(size))
      return reply.send(stream)
    })

    scope.put('/v1/hosts/:id/storage/images/:image_id', { onRequest: requireHost, schema: { params: params('image_id') } }, async (request, reply) => {
      await receiveUploadFromHost(db, deps.images, host(request), (request.params as Record<string, string>).image_id, request.raw)
      return reply.code(204).send()
    })

    scope.get('/v1/hosts/:id/volume-connections/:attachment_id', { onRequest: requireHost, schema: { params: params('attachment_id') } }, async (request, reply) => {
      reply.header('cache-control', 'no-store')
      return { connection_info: await connections.forHost(host(request), (request.params as Record<string, string>).attachment_id) }
    })
  }
}
