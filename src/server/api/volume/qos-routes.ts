/**
 * QoS specs (Cinder's qos-specs, admins only): the sets, their keys, and their association with volume types.
 * Associating and disassociating are GETs with the type in the query, as Cinder has them.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppDeps } from '../../deps.js'
import type { ViewContext } from '../../volume/view.js'
import { links } from '../../volume/view.js'
import type { QosSpecs } from '../../volume/qos-specs.js'
import { boolParam, idParams, one, type IdRoute, type QueryRoute } from './params.js'
import type { FromSchema } from '../../http/route-types.js'
import { documented, noBody } from '../../http/openapi.js'
import { A, QUERY } from './answers.js'

function qosView(q: QosSpecs) {
  return { id: q.id, name: q.name, consumer: q.consumer, specs: q.specs }
}

const specValue = { type: 'string', maxLength: 255 } as const
const createBody = {
  type: 'object',
  required: ['qos_specs'],
  properties: {
    qos_specs: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1, maxLength: 255 }, consumer: specValue }, additionalProperties: specValue },
  },
} as const
const setBody = { type: 'object', required: ['qos_specs'], properties: { qos_specs: { type: 'object', minProperties: 1, additionalProperties: specValue } } } as const
const keysBody = { type: 'object', required: ['keys'], properties: { keys: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1, maxLength: 255 } } } } as const

export function qosRoutes(r: FastifyInstance, deps: AppDeps, ctx: (request: FastifyRequest) => ViewContext): void {
  const { qosSpecs } = deps.volumeServices
  const shown = (request: FastifyRequest, q: QosSpecs) => ({ qos_specs: qosView(q), links: links(ctx(request), 'qos-specs', q.id) })

  r.get('/qos-specs', documented({ summary: 'List QoS specs (admin)', response: { 200: A.qosSpecsList } }), async (request) => ({
    qos_specs: (await qosSpecs.list(request.principal)).map(qosView),
  }))
  r.post<{ Body: FromSchema<typeof createBody> }>('/qos-specs', { schema: { body: createBody }, ...documented({ summary: 'Create QoS specs (admin)', response: { 200: A.qosSpecs } }) }, async (request) => {
    const { name, ...specs } = request.body.qos_specs
    return shown(request, await qosSpecs.create(request.principal, name, specs))
  })
  r.get<IdRoute>('/qos-specs/:id', { schema: { params: idParams }, ...documented({ summary: 'Show QoS specs (admin)', response: { 200: A.qosSpecs } }) }, async (request) =>
    shown(request, await qosSpecs.get(request.principal, request.params.id)),
  )
  // Cinder answers with the keys as they were given.
  r.put<IdRoute & { Body: FromSchema<typeof setBody> }>('/qos-specs/:id', { schema: { params: idParams, body: setBody }, ...documented({ summary: 'Set keys of QoS specs (admin)', response: { 200: A.qosKeys } }) }, async (request) => {
    await qosSpecs.setKeys(request.principal, request.params.id, request.body.qos_specs)
    return { qos_specs: request.body.qos_specs }
  })
  r.put<IdRoute & { Body: FromSchema<typeof keysBody> }>(
    '/qos-specs/:id/delete_keys',
    { schema: { params: idParams, body: keysBody }, ...documented({ summary: 'Remove keys of QoS specs (admin)', response: { 202: noBody('Removed') } }) },
    async (request, reply) => {
      await qosSpecs.deleteKeys(request.principal, request.params.id, request.body.keys)
      return reply.code(202).send()
    },
  )
  r.delete<IdRoute & QueryRoute>('/qos-specs/:id', { schema: { params: idParams }, ...documented({ summary: 'Delete QoS specs (admin; force=true also when associated)', querystring: QUERY.deleteQos, response: { 202: noBody('Deleted') } }) }, async (request, reply) => {
    await qosSpecs.delete(request.principal, request.params.id, boolParam('force', request.query.force) ?? false)
    return reply.code(202).send()
  })
  r.get<IdRoute>('/qos-specs/:id/associations', { schema: { params: idParams }, ...documented({ summary: 'The volume types associated with QoS specs (admin)', response: { 200: A.qosAssociations } }) }, async (request) => ({
    qos_associations: await qosSpecs.associations(request.principal, request.params.id),
  }))
  r.get<IdRoute & QueryRoute>('/qos-specs/:id/associate', { schema: { params: idParams }, ...documented({ summary: 'Associate QoS specs with a volume type (admin)', querystring: QUERY.qosType, response: { 202: noBody('Associated') } }) }, async (request, reply) => {
    await qosSpecs.associate(request.principal, request.params.id, one(request.query.vol_type_id))
    return reply.code(202).send()
  })
  r.get<IdRoute & QueryRoute>('/qos-specs/:id/disassociate', { schema: { params: idParams }, ...documented({ summary: 'Disassociate QoS specs from a volume type (admin)', querystring: QUERY.qosType, response: { 202: noBody('Disassociated') } }) }, async (request, reply) => {
    await qosSpecs.disassociate(request.principal, request.params.id, one(request.query.vol_type_id))
    return reply.code(202).send()
  })
  r.get<IdRoute>('/qos-specs/:id/disassociate_all', { schema: { params: idParams }, ...documented({ summary: 'Disassociate QoS specs from every volume type (admin)', response: { 202: noBody('Disassociated') } }) }, async (request, reply) => {
    await qosSpecs.disassociateAll(request.principal, request.params.id)
    return reply.code(202).send()
  })
}
