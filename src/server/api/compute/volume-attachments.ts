/** /servers/{id}/os-volume_attachments: list, show, attach (200), update or swap (202), detach (202). Rules: compute/server-volumes.ts. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { forbidden } from '../../../contracts/errors.js'
import { projector } from '../../../contracts/compute/fields.js'
import { check } from '../../../contracts/compute/params.js'
import { volumeAttachmentFields } from '../../../contracts/compute/volume-attachment.fields.js'
import { attachBodySchema, attachmentListQuerySchema, updateAttachmentBodySchema } from '../../../contracts/compute/volume-attachment.params.js'
import { COMPUTE_VOLUMES_POLICY, type ComputeVolumesOperation } from '../../policy/compute-volumes.policy.js'
import { computeStorage } from '../../compute/storage.js'
import { attachmentModel, attachVolume, detachVolume, findAttachment, isSwap, listAttachments, updateAttachment, type VolumeOpDeps } from '../../compute/server-volumes.js'
import type { ServerTable } from '../../storage/tables/compute.js'
import type { ServerRouteDeps } from './servers.js'
import { visibleServer } from './servers.js'
import { bodyObject, serverCaller, validate } from './context.js'
import { documented, noBody } from '../../http/openapi.js'
import { envelope, fieldsSchema, listOf, versioned } from '../../../contracts/compute/schemas.js'
import type { SingleQuery } from '../../http/route-types.js'

function must(request: FastifyRequest, op: ComputeVolumesOperation, row: ServerTable): void {
  if (!COMPUTE_VOLUMES_POLICY[op](request.principal, { projectId: row.project_id })) throw forbidden(`Policy doesn't allow ${op} to be performed.`)
}

const DOCS = {
  list: documented({ summary: "A server's volume attachments", querystring: versioned(attachmentListQuerySchema), response: { 200: envelope('volumeAttachments', listOf(fieldsSchema(volumeAttachmentFields, 'list'))) } }),
  show: documented({ summary: 'One volume attachment', response: { 200: envelope('volumeAttachment', fieldsSchema(volumeAttachmentFields, 'show')) } }),
  attach: documented({ summary: 'Attach a volume', body: versioned(attachBodySchema), response: { 200: envelope('volumeAttachment', fieldsSchema(volumeAttachmentFields, 'attach')) } }),
  update: documented({ summary: 'Update an attachment or swap its volume', body: versioned(updateAttachmentBodySchema), response: { 202: noBody('Accepted') } }),
  detach: documented({ summary: 'Detach a volume', response: { 202: noBody('Accepted') } }),
}

export function volumeAttachmentRoutes(deps: ServerRouteDeps) {
  const ops: VolumeOpDeps = { db: deps.store.db, queue: deps.queue, storage: computeStorage(deps) }
  // The attachment table marks no field admin-only (were one added, its rule would decide `admin` here).
  const render = (request: FastifyRequest, view: 'list' | 'show' | 'attach') => projector(volumeAttachmentFields, { version: request.api.version, view, admin: false })
  return async (scope: FastifyInstance): Promise<void> => {
    type P1 = { Params: { id: string } }
    type P2 = { Params: { id: string; volumeId: string } }
    const base = '/v2.1/servers/:id/os-volume_attachments'

    scope.get<P1 & { Querystring: SingleQuery }>(base, DOCS.list, async (request) => {
      const row = await visibleServer(deps, request, request.params.id)
      must(request, 'os_compute_api:os-volumes-attachments:index', row)
      check('query', request.api.version, attachmentListQuerySchema, request.query)
      const q = request.query
      const page = await listAttachments(ops.db, row.id, { limit: q.limit === undefined ? undefined : Number(q.limit), offset: q.offset === undefined ? undefined : Number(q.offset) }, deps.config.computeMaxLimit)
      const shape = render(request, 'list')
      return { volumeAttachments: page.map((b) => shape(attachmentModel(b))) }
    })

    scope.get<P2>(`${base}/:volumeId`, DOCS.show, async (request) => {
      const row = await visibleServer(deps, request, request.params.id)
      must(request, 'os_compute_api:os-volumes-attachments:show', row)
      const bdm = await findAttachment(ops.db, row.id, request.params.volumeId)
      return { volumeAttachment: render(request, 'show')(attachmentModel(bdm)) }
    })

    scope.post<P1>(base, DOCS.attach, async (request) => {
      const body = bodyObject(request)
      validate('volumeAttachment', request, attachBodySchema, body)
      const row = await visibleServer(deps, request, request.params.id)
      must(request, 'os_compute_api:os-volumes-attachments:create', row)
      const bdm = await attachVolume(ops, request.api, serverCaller(request), row, body.volumeAttachment, request.id)
      deps.runner.wake()
      return { volumeAttachment: render(request, 'attach')(attachmentModel(bdm)) }
    })

    scope.put<P2>(`${base}/:volumeId`, DOCS.update, async (request, reply) => {
      const body = bodyObject(request)
      validate('volumeAttachment', request, updateAttachmentBodySchema, body)
      const row = await visibleServer(deps, request, request.params.id)
      const update = body.volumeAttachment
      must(request, isSwap(request.api, request.params.volumeId, update) ? 'os_compute_api:os-volumes-attachments:swap' : 'os_compute_api:os-volumes-attachments:update', row)
      await updateAttachment(ops, request.api, serverCaller(request), row, request.params.volumeId, update, request.id)
      deps.runner.wake()
      return reply.code(202).send()
    })

    scope.delete<P2>(`${base}/:volumeId`, DOCS.detach, async (request, reply) => {
      const row = await visibleServer(deps, request, request.params.id)
      must(request, 'os_compute_api:os-volumes-attachments:delete', row)
      await detachVolume(ops, request.api, serverCaller(request), row, request.params.volumeId, request.id)
      deps.runner.wake()
      return reply.code(202).send()
    })
  }
}
