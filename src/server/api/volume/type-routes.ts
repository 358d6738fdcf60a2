/** Volume types (admins manage, everyone lists) and their extra specs. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppDeps } from '../../deps.js'
import type { ViewContext } from '../../volume/view.js'
import { badRequest, notFound } from '../../../contracts/errors.js'
import { authorize } from '../../policy/rules.js'
import { volumePolicy } from '../../policy/volume.policy.js'
import { typeView } from '../../volume/view.js'
import { idParams, nullableString, stringMap, type IdRoute } from './params.js'
import type { FromSchema } from '../../http/route-types.js'
import { documented, noBody } from '../../http/openapi.js'
import { A } from './answers.js'

export function volumeTypeRoutes(r: FastifyInstance, deps: AppDeps, ctx: (request: FastifyRequest) => ViewContext): void {
  const { volumeTypes } = deps.volumeServices
  // ---- volume types ----
  r.get('/types', documented({ summary: 'List volume types', response: { 200: A.types } }), async (request) => ({ volume_types: (await volumeTypes.list(request.principal)).map((t) => typeView(t, ctx(request).isAdmin)) }))
  r.get('/types/default', documented({ summary: 'The default volume type', response: { 200: A.type } }), async (request) => ({ volume_type: typeView(await volumeTypes.getDefault(request.principal), ctx(request).isAdmin) }))
  r.get<IdRoute>('/types/:id', { schema: { params: idParams }, ...documented({ summary: 'Show a volume type', response: { 200: A.type } }) }, async (request) => {
    const { id } = request.params
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
  type TypeBody = { Body: FromSchema<typeof typeBody> }
  r.post<TypeBody>('/types', { schema: { body: typeBody }, ...documented({ summary: 'Create a volume type (admin)', response: { 200: A.type } }) }, async (request) => {
    const t = request.body.volume_type
    if (!t.name) throw badRequest("Invalid input received: 'name' is required.")
    const type = await volumeTypes.create(request.principal, { name: t.name, description: t.description, is_public: t['os-volume-type-access:is_public'] ?? t.is_public, extra_specs: t.extra_specs })
    return { volume_type: typeView(type, true, 'create') }
  })
  r.put<IdRoute & TypeBody>('/types/:id', { schema: { params: idParams, body: typeBody }, ...documented({ summary: 'Update a volume type (admin)', response: { 200: A.type } }) }, async (request) => {
    const { id } = request.params
    const t = request.body.volume_type
    return { volume_type: typeView(await volumeTypes.update(request.principal, id, { name: t.name, description: t.description, is_public: t['os-volume-type-access:is_public'] ?? t.is_public }), true, 'update') }
  })
  r.delete<IdRoute>('/types/:id', { schema: { params: idParams }, ...documented({ summary: 'Delete a volume type (admin)', response: { 202: noBody('Deleted') } }) }, async (request, reply) => {
    const { id } = request.params
    await volumeTypes.delete(request.principal, id)
    return reply.code(202).send()
  })
  r.get<IdRoute>('/types/:id/extra_specs', { schema: { params: idParams }, ...documented({ summary: "A volume type's extra specs (admin)", response: { 200: A.extraSpecs } }) }, async (request) => {
    const { id } = request.params
    authorize(volumePolicy, 'type:manage', request.principal)
    return { extra_specs: (await volumeTypes.get(request.principal, id)).extraSpecs }
  })
  // Cinder answers a POST with the specs it was given (merged into the type's).
  const extraSpecsBody = { type: 'object', required: ['extra_specs'], properties: { extra_specs: stringMap } } as const
  r.post<IdRoute & { Body: FromSchema<typeof extraSpecsBody> }>('/types/:id/extra_specs', { schema: { params: idParams, body: extraSpecsBody }, ...documented({ summary: 'Set extra specs of a volume type (admin)', response: { 200: A.extraSpecs } }) }, async (request) => {
    const { id } = request.params
    const specs = request.body.extra_specs
    await volumeTypes.setExtraSpecs(request.principal, id, specs)
    return { extra_specs: specs }
  })
  // One spec: GET {key: value}, PUT {key: value} (exactly the key of the URL), DELETE.
  const specParams = { type: 'object', properties: { id: { type: 'string' }, key: { type: 'string', maxLength: 255 } }, required: ['id', 'key'] } as const
  type SpecRoute = { Params: FromSchema<typeof specParams> }
  const specBody = { ...stringMap, minProperties: 1 } as const
  r.get<SpecRoute>('/types/:id/extra_specs/:key', { schema: { params: specParams }, ...documented({ summary: 'One extra spec of a volume type (admin)', response: { 200: stringMap } }) }, async (request) => {
    const { id, key } = request.params
    authorize(volumePolicy, 'type:manage', request.principal)
    const specs = (await volumeTypes.get(request.principal, id)).extraSpecs
    if (!(key in specs)) throw notFound(`Volume Type ${id} has no extra specs with key ${key}.`)
    return { [key]: specs[key] }
  })
  r.put<SpecRoute & { Body: FromSchema<typeof specBody> }>('/types/:id/extra_specs/:key', { schema: { params: specParams, body: specBody }, ...documented({ summary: 'Set one extra spec of a volume type (admin)', response: { 200: stringMap } }) }, async (request) => {
    const { id, key } = request.params
    const body = request.body
    if (Object.keys(body).length > 1) throw badRequest('Request body contains too many items.')
    if (!(key in body)) throw badRequest('Request body and URI mismatch.')
    await volumeTypes.setExtraSpecs(request.principal, id, body)
    return { [key]: body[key] }
  })
  r.delete<SpecRoute>('/types/:id/extra_specs/:key', { schema: { params: specParams }, ...documented({ summary: 'Remove one extra spec of a volume type (admin)', response: { 202: noBody('Removed') } }) }, async (request, reply) => {
    const { id, key } = request.params
    await volumeTypes.deleteExtraSpec(request.principal, id, key)
    return reply.code(202).send()
  })
  // ---- private types' project access (os-volume-type-access) ----
  r.get<IdRoute>('/types/:id/os-volume-type-access', { schema: { params: idParams }, ...documented({ summary: 'The projects a private volume type is granted to (admin)', response: { 200: A.typeAccess } }) }, async (request) => {
    const { id } = request.params
    const grants = await volumeTypes.listAccess(request.principal, id)
    return { volume_type_access: grants.map((g) => ({ volume_type_id: g.volumeTypeId, project_id: g.projectId })) }
  })
  const project = { type: 'object', required: ['project'], properties: { project: { type: 'string', minLength: 1, maxLength: 64 } } } as const
  const accessBody = { type: 'object', minProperties: 1, maxProperties: 1, additionalProperties: false, properties: { addProjectAccess: project, removeProjectAccess: project } } as const
  r.post<IdRoute & { Body: FromSchema<typeof accessBody> }>(
    '/types/:id/action',
    { schema: { params: idParams, body: accessBody }, ...documented({ summary: 'Grant a project a private volume type, or take it back (admin)', response: { 202: noBody('Done') } }) },
    async (request, reply) => {
      const { id } = request.params
      const { addProjectAccess, removeProjectAccess } = request.body
      if (addProjectAccess) await volumeTypes.addAccess(request.principal, id, addProjectAccess.project)
      if (removeProjectAccess) await volumeTypes.removeAccess(request.principal, id, removeProjectAccess.project)
      return reply.code(202).send()
    },
  )
}
