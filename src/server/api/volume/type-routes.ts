/** Volume types (admins manage, everyone lists) and their extra specs. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppDeps } from '../../deps.js'
import type { ViewContext } from '../../volume/view.js'
import { badRequest, notFound } from '../../../contracts/errors.js'
import { authorize } from '../../policy/rules.js'
import { volumePolicy } from '../../policy/volume.policy.js'
import { typeView } from '../../volume/view.js'
import { idParams, nullableString, stringMap } from './params.js'
import { documented, noBody } from '../../http/openapi.js'
import { A } from './answers.js'

export function volumeTypeRoutes(r: FastifyInstance, deps: AppDeps, ctx: (request: FastifyRequest) => ViewContext): void {
  const { volumeTypes } = deps.volumeServices
  // ---- volume types ----
  r.get('/types', documented({ summary: 'List volume types', response: { 200: A.types } }), async (request) => ({ volume_types: (await volumeTypes.list(request.principal)).map((t) => typeView(t, ctx(request).isAdmin)) }))
  r.get('/types/default', documented({ summary: 'The default volume type', response: { 200: A.type } }), async (request) => ({ volume_type: typeView(await volumeTypes.getDefault(), ctx(request).isAdmin) }))
  r.get('/types/:id', { schema: { params: idParams }, ...documented({ summary: 'Show a volume type', response: { 200: A.type } }) }, async (request) => {
    const { id } = request.params as { id: string }
    return { volume_type: typeView(await volumeTypes.get(request.principal, id), ctx(request).isAdmin) }
  })
  const typeBody = {
    type: 'object',
    required: ['volume_type'],
    properties: {
      volume_type: {
        type: 'object',
        properties: { name: { type: 'string', minLength: 1, maxLength: 255 }, description: nullableString(), 'os-volume-type-access:is_public': { type: 'boolean' }, is_public: { type: 'boolean' }, extra_specs: stringMap },
      },
    },
  } as const
  type TypeInput = { name?: string; description?: string | null; 'os-volume-type-access:is_public'?: boolean; is_public?: boolean; extra_specs?: Record<string, string> }
  r.post('/types', { schema: { body: typeBody }, ...documented({ summary: 'Create a volume type (admin)', response: { 200: A.type } }) }, async (request) => {
    const t = (request.body as { volume_type: TypeInput }).volume_type
    if (!t.name) throw badRequest("Invalid input received: 'name' is required.")
    const type = await volumeTypes.create(request.principal, { name: t.name, description: t.description, is_public: t['os-volume-type-access:is_public'] ?? t.is_public, extra_specs: t.extra_specs })
    return { volume_type: typeView(type, true, 'create') }
  })
  r.put('/types/:id', { schema: { params: idParams, body: typeBody }, ...documented({ summary: 'Update a volume type (admin)', response: { 200: A.type } }) }, async (request) => {
    const { id } = request.params as { id: string }
    const t = (request.body as { volume_type: TypeInput }).volume_type
    return { volume_type: typeView(await volumeTypes.update(request.principal, id, { name: t.name, description: t.description, is_public: t['os-volume-type-access:is_public'] ?? t.is_public }), true, 'update') }
  })
  r.delete('/types/:id', { schema: { params: idParams }, ...documented({ summary: 'Delete a volume type (admin)', response: { 202: noBody('Deleted') } }) }, async (request, reply) => {
    const { id } = request.params as { id: string }
    await volumeTypes.delete(request.principal, id)
    return reply.code(202).send()
  })
  r.get('/types/:id/extra_specs', { schema: { params: idParams }, ...documented({ summary: "A volume type's extra specs (admin)", response: { 200: A.extraSpecs } }) }, async (request) => {
    const { id } = request.params as { id: string }
    authorize(volumePolicy, 'type:manage', request.principal)
    return { extra_specs: (await volumeTypes.get(request.principal, id)).extraSpecs }
  })
  // Cinder answers a POST with the specs it was given (merged into the type's).
  r.post('/types/:id/extra_specs', { schema: { params: idParams, body: { type: 'object', required: ['extra_specs'], properties: { extra_specs: stringMap } } }, ...documented({ summary: 'Set extra specs of a volume type (admin)', response: { 200: A.extraSpecs } }) }, async (request) => {
    const { id } = request.params as { id: string }
    const specs = (request.body as { extra_specs: Record<string, string> }).extra_specs
    await volumeTypes.setExtraSpecs(request.principal, id, specs)
    return { extra_specs: specs }
  })
  // One spec: GET {key: value}, PUT {key: value} (exactly the key of the URL), DELETE.
  const specParams = { type: 'object', properties: { id: { type: 'string' }, key: { type: 'string', maxLength: 255 } }, required: ['id', 'key'] } as const
  r.get('/types/:id/extra_specs/:key', { schema: { params: specParams }, ...documented({ summary: 'One extra spec of a volume type (admin)', response: { 200: stringMap } }) }, async (request) => {
    const { id, key } = request.params as { id: string; key: string }
    authorize(volumePolicy, 'type:manage', request.principal)
    const specs = (await volumeTypes.get(request.principal, id)).extraSpecs
    if (!(key in specs)) throw notFound(`Volume Type ${id} has no extra specs with key ${key}.`)
    return { [key]: specs[key] }
  })
  r.put('/types/:id/extra_specs/:key', { schema: { params: specParams, body: { ...stringMap, minProperties: 1 } }, ...documented({ summary: 'Set one extra spec of a volume type (admin)', response: { 200: stringMap } }) }, async (request) => {
    const { id, key } = request.params as { id: string; key: string }
    const body = request.body as Record<string, string>
    if (Object.keys(body).length > 1) throw badRequest('Request body contains too many items.')
    if (!(key in body)) throw badRequest('Request body and URI mismatch.')
    await volumeTypes.setExtraSpecs(request.principal, id, body)
    return { [key]: body[key] }
  })
  r.delete('/types/:id/extra_specs/:key', { schema: { params: specParams }, ...documented({ summary: 'Remove one extra spec of a volume type (admin)', response: { 202: noBody('Removed') } }) }, async (request, reply) => {
    const { id, key } = request.params as { id: string; key: string }
    await volumeTypes.deleteExtraSpec(request.principal, id, key)
    return reply.code(202).send()
  })
}
