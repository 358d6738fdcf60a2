/**
 * Projects' default volume types (Cinder's default-types API, 3.62+; volume/default-types.ts): an admin sets
 * (PUT), shows, lists and unsets (DELETE) the type a project's volumes get when they name none.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppDeps } from '../../deps.js'
import type { DefaultTypeRecord } from '../../volume/default-types.js'
import type { FromSchema } from '../../http/route-types.js'
import { documented, noBody } from '../../http/openapi.js'
import { since } from './params.js'
import { A } from './answers.js'

/** The microversion the API came with. */
const SINCE = '3.62'

const projectParams = { type: 'object', properties: { id: { type: 'string', minLength: 1, maxLength: 64 } }, required: ['id'] } as const
type ProjectRoute = { Params: FromSchema<typeof projectParams> }
// Cinder's schema: a type's id or name (a name: 1 to 255 characters, no leading or trailing blanks).
const setBody = {
  type: 'object',
  required: ['default_type'],
  properties: {
    default_type: {
      type: 'object',
      required: ['volume_type'],
      additionalProperties: false,
      properties: { volume_type: { type: 'string', minLength: 1, maxLength: 255, pattern: '^\\S(.*\\S)?$' } },
    },
  },
} as const

const view = (d: DefaultTypeRecord) => ({ project_id: d.projectId, volume_type_id: d.volumeTypeId })

export function defaultTypeRoutes(r: FastifyInstance, deps: AppDeps): void {
  const { defaultTypes } = deps.volumeServices
  // Checked before the body is: below 3.62 the resource does not exist, whatever is sent (Cinder's 404).
  const gate = { preValidation: async (request: FastifyRequest) => since(request, SINCE, 'default-types') }
  r.put<ProjectRoute & { Body: FromSchema<typeof setBody> }>(
    '/default-types/:id',
    { schema: { params: projectParams, body: setBody }, ...gate, ...documented({ summary: "Set a project's default volume type (admin, 3.62+)", response: { 200: A.defaultType } }) },
    async (request) => {
      return { default_type: view(await defaultTypes.set(request.principal, request.params.id, request.body.default_type.volume_type)) }
    },
  )
  r.get('/default-types', { ...gate, ...documented({ summary: "List projects' default volume types (admin, 3.62+)", response: { 200: A.defaultTypes } }) }, async (request) => {
    return { default_types: (await defaultTypes.list(request.principal)).map(view) }
  })
  r.get<ProjectRoute>('/default-types/:id', { schema: { params: projectParams }, ...gate, ...documented({ summary: "A project's default volume type (admin, 3.62+)", response: { 200: A.defaultType } }) }, async (request) => {
    return { default_type: view(await defaultTypes.get(request.principal, request.params.id)) }
  })
  r.delete<ProjectRoute>('/default-types/:id', { schema: { params: projectParams }, ...gate, ...documented({ summary: "Unset a project's default volume type (admin, 3.62+)", response: { 204: noBody('Unset') } }) }, async (request, reply) => {
    await defaultTypes.unset(request.principal, request.params.id)
    return reply.code(204).send()
  })
}
