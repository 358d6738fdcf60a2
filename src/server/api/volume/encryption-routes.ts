/**
 * Volume type encryption (Cinder's `/types/{id}/encryption`, admins only): the spec a type's volumes are encrypted
 * with (volume/encryption.ts). Show answers `{}` for a type without one, as Cinder does.
 */
import type { FastifyInstance } from 'fastify'
import { notFound } from '../../../contracts/errors.js'
import type { AppDeps } from '../../deps.js'
import { CONTROL_LOCATIONS, encryptionDetail, encryptionFields } from '../../volume/encryption.js'
import type { FromSchema } from '../../http/route-types.js'
import { documented, noBody } from '../../http/openapi.js'
import { idParams, type IdRoute } from './params.js'
import { A } from './answers.js'

const fields = {
  provider: { type: 'string', minLength: 1, maxLength: 255 },
  cipher: { type: ['string', 'null'], maxLength: 255 },
  key_size: { type: ['integer', 'null'], minimum: 0 },
  control_location: { type: 'string', enum: CONTROL_LOCATIONS },
} as const
const createBody = {
  type: 'object',
  required: ['encryption'],
  properties: { encryption: { type: 'object', required: ['provider'], properties: fields, additionalProperties: false } },
} as const
const updateBody = { type: 'object', required: ['encryption'], properties: { encryption: { type: 'object', properties: fields, additionalProperties: false } } } as const
const specParams = { type: 'object', properties: { id: { type: 'string', maxLength: 64 }, key: { type: 'string', maxLength: 255 } }, required: ['id', 'key'] } as const
type SpecRoute = { Params: FromSchema<typeof specParams> }

export function typeEncryptionRoutes(r: FastifyInstance, deps: AppDeps): void {
  const { typeEncryption } = deps.volumeServices
  r.get<IdRoute>('/types/:id/encryption', { schema: { params: idParams }, ...documented({ summary: "A volume type's encryption (admin; {} when none)", response: { 200: A.typeEncryptionShown } }) }, async (request) => {
    const spec = await typeEncryption.get(request.principal, request.params.id)
    return spec ? encryptionDetail(spec) : {}
  })
  r.post<IdRoute & { Body: FromSchema<typeof createBody> }>(
    '/types/:id/encryption',
    { schema: { params: idParams, body: createBody }, ...documented({ summary: 'Encrypt the volumes of a volume type (admin)', response: { 200: A.typeEncryption } }) },
    async (request) => ({ encryption: encryptionFields(await typeEncryption.create(request.principal, request.params.id, request.body.encryption)) }),
  )
  // The key is the spec's field on GET; on PUT and DELETE it is the encryption_id, which Cinder does not check
  // (a type has one spec; Debian's Tempest 33 sends `provider` there).
  r.get<SpecRoute>('/types/:id/encryption/:key', { schema: { params: specParams }, ...documented({ summary: "One field of a volume type's encryption (admin)", response: { 200: A.typeEncryptionField } }) }, async (request) => {
    const { id, key } = request.params
    const spec = await typeEncryption.get(request.principal, id)
    const shown: Record<string, unknown> = spec ? encryptionDetail(spec) : {}
    if (!(key in shown)) throw notFound(`Volume type encryption of type ${id} has no field ${key}.`)
    return { [key]: shown[key] }
  })
  r.put<SpecRoute & { Body: FromSchema<typeof updateBody> }>(
    '/types/:id/encryption/:key',
    { schema: { params: specParams, body: updateBody }, ...documented({ summary: "Change a volume type's encryption (admin; no volumes of the type may exist)", response: { 200: A.typeEncryptionChange } }) },
    async (request) => {
      await typeEncryption.update(request.principal, request.params.id, request.body.encryption)
      // Cinder answers with the fields it was given.
      return { encryption: request.body.encryption }
    },
  )
  r.delete<SpecRoute>(
    '/types/:id/encryption/:key',
    { schema: { params: specParams }, ...documented({ summary: "Remove a volume type's encryption (admin; no volumes of the type may exist)", response: { 202: noBody('Removed') } }) },
    async (request, reply) => {
      await typeEncryption.delete(request.principal, request.params.id)
      return reply.code(202).send()
    },
  )
}
