/**
 * What hosts' agents need for volumes, under {base}/resmgr/v1/hosts/{id}/…, authenticated by the host's own
 * credential (another host's id is 403, user tokens 401):
 *
 * - a storage host reports its export address and backends, reads the exports it should serve (with their keys),
 *   downloads the image a volume it creates is made from, and uploads the bytes of an image made from a volume;
 * - a hypervisor host fetches the connection info, key included, of an attachment it connects;
 * - any host fetches its access to Ceph (docs/ceph.md), when the cloud has one.
 *
 * Image bytes stream both ways: nothing is buffered, the image service's size limit applies to uploads.
 */
import type { FastifyInstance } from 'fastify'
import { notFound } from '../../../contracts/errors.js'
import type { AppDeps } from '../../deps.js'
import { documented, HOST_CREDENTIAL, mediaAnswer, noBody } from '../../http/openapi.js'
import { passThroughParser, uploadStream } from '../../http/upload-stream.js'
import { exportsForHost, receiveUploadFromHost, recordStorageReport, sourceImageForHost, type StorageReport } from '../../volume/storage-hosts.js'
import { hostAuth } from './host-auth.js'
import type { FromSchema } from '../../http/route-types.js'

const id = { type: 'string', maxLength: 64 } as const
const hostParams = { type: 'object', properties: { id }, required: ['id'] } as const
const volumeParams = { type: 'object', properties: { id, volume_id: id }, required: ['id', 'volume_id'] } as const
const imageParams = { type: 'object', properties: { id, image_id: id }, required: ['id', 'image_id'] } as const
const attachmentParams = { type: 'object', properties: { id, attachment_id: id }, required: ['id', 'attachment_id'] } as const
type Params<S> = { Params: FromSchema<S> }

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
} as const

const object = (properties: Record<string, unknown>, required: string[]) => ({ type: 'object', properties, required })
const DOCS = {
  report: documented({ ...HOST_CREDENTIAL, summary: "A storage host reports where its exports listen and its backends' capacity", response: { 204: noBody('Recorded') } }),
  exports: documented({
    ...HOST_CREDENTIAL,
    summary: 'The NBD exports the storage host should serve, with their keys',
    response: {
      200: object({ exports: { type: 'array', items: object({ volume_id: { type: 'string' }, snapshot_of: { type: ['string', 'null'] }, backend: { type: 'string' }, port: { type: 'integer' }, generations: { type: 'array', items: { type: 'integer' } }, keys: { type: 'array', items: object({ identity: { type: 'string' }, key: { type: 'string' } }, ['identity', 'key']) } }, ['volume_id', 'snapshot_of', 'backend', 'port', 'generations', 'keys']) } }, ['exports']),
    },
  }),
  sourceImage: documented({ ...HOST_CREDENTIAL, summary: 'The bytes of the image a volume on this host is being created from', response: { 200: mediaAnswer('application/octet-stream', 'The image data', { type: 'string', format: 'binary' }) } }),
  upload: documented({ ...HOST_CREDENTIAL, summary: "An image's bytes, uploaded by the storage host from one of its volumes", consumes: ['application/octet-stream'], body: { type: 'string', format: 'binary' }, response: { 204: noBody('Stored') } }),
  ceph: documented({
    ...HOST_CREDENTIAL,
    summary: "The host's access to the Ceph cluster: ceph.conf, its own cephx user and key, the pools (404 without Ceph)",
    response: { 200: object({ conf: { type: 'string' }, user: { type: 'string' }, key: { type: 'string' }, pools: object({ images: { type: 'string' }, volumes: { type: 'string' }, vms: { type: 'string' } }, ['images', 'volumes', 'vms']) }, ['conf', 'user', 'key', 'pools']) },
  }),
  connection: documented({ ...HOST_CREDENTIAL, summary: "An attachment's connection info with its key, for the hypervisor host it is connected on", response: { 200: object({ connection_info: { type: 'object' } }, ['connection_info']) } }),
}

export function storageHostRoutes(deps: AppDeps) {
  const requireHost = hostAuth(deps)
  const db = deps.store.db
  const { connections } = deps.volumeServices
  return async (scope: FastifyInstance): Promise<void> => {
    scope.addContentTypeParser('application/octet-stream', passThroughParser)
    const host = (request: { params: { id: string } }) => request.params.id.toLowerCase()
    const schema = (extra: Record<string, unknown>) => ({ tags: ['resmgr'], ...extra })

    scope.put<Params<typeof hostParams> & { Body: FromSchema<typeof reportSchema> }>('/v1/hosts/:id/storage', { onRequest: requireHost, schema: schema({ params: hostParams, body: reportSchema }), ...DOCS.report }, async (request, reply) => {
      await recordStorageReport(db, host(request), request.body satisfies StorageReport)
      return reply.code(204).send()
    })

    scope.get<Params<typeof hostParams>>('/v1/hosts/:id/storage/exports', { onRequest: requireHost, schema: schema({ params: hostParams }), ...DOCS.exports }, async (request, reply) => {
      reply.header('cache-control', 'no-store')
      const exports = await exportsForHost(db, deps.box, host(request))
      return { exports: exports.map((e) => ({ volume_id: e.volumeId, snapshot_of: e.snapshotOf ?? null, backend: e.backend, port: e.port, generations: e.generations, keys: e.keys })) }
    })

    scope.get<Params<typeof volumeParams>>('/v1/hosts/:id/storage/volumes/:volume_id/image', { onRequest: requireHost, schema: schema({ params: volumeParams }), ...DOCS.sourceImage }, async (request, reply) => {
      const { stream, size } = await sourceImageForHost(db, deps.images, host(request), request.params.volume_id)
      reply.header('content-type', 'application/octet-stream').header('content-length', String(size))
      return reply.send(stream)
    })

    scope.put<Params<typeof imageParams>>('/v1/hosts/:id/storage/images/:image_id', { onRequest: requireHost, schema: schema({ params: imageParams }), ...DOCS.upload }, async (request, reply) => {
      await receiveUploadFromHost(db, deps.images, host(request), request.params.image_id, uploadStream(request))
      return reply.code(204).send()
    })

    scope.get<Params<typeof hostParams>>('/v1/hosts/:id/ceph', { onRequest: requireHost, schema: schema({ params: hostParams }), ...DOCS.ceph }, async (request, reply) => {
      reply.header('cache-control', 'no-store')
      if (!deps.hostCeph) throw notFound('This cloud keeps no data on Ceph (PCC_CEPH_CONF is not set).')
      return deps.hostCeph.accessFor(host(request))
    })

    scope.get<Params<typeof attachmentParams>>('/v1/hosts/:id/volume-connections/:attachment_id', { onRequest: requireHost, schema: schema({ params: attachmentParams }), ...DOCS.connection }, async (request, reply) => {
      reply.header('cache-control', 'no-store')
      return { connection_info: await connections.forHost(host(request), request.params.attachment_id) }
    })
  }
}
