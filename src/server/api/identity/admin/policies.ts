/**
 * /v3/policies (Keystone's policy blobs): stored and served for the clients that keep policy documents in the
 * identity service. pcc never evaluates them: its own policy is the tables in src/server/policy/.
 */
import type { FastifyInstance } from 'fastify'
import type { Static } from '@sinclair/typebox'
import * as policies from '../../../identity/repo/policies.repo.js'
import { extraOf } from '../../../identity/repo/write.js'
import { collection, guard, type AdminContext } from './common.js'
import { PolicyCreate, PolicyUpdate, query } from './schemas.js'
import { policyView } from './views.js'
import { documented, noBody } from '../../../http/openapi.js'
import { V, list, one } from '../answers.js'

type IdParams = { Params: { id: string } }
const COLUMNS = ['type', 'blob'] as const

export function policyRoutes(scope: FastifyInstance, ctx: AdminContext): void {
  scope.get<{ Querystring: { type?: string } }>('/policies', { ...documented({ summary: 'List policy blobs', response: { 200: list('policies', V.policy) } }), schema: { querystring: query(['type']) } }, async (request) => {
    guard(request, 'identity:list_policies')
    const rows = await policies.listPolicyBlobs(ctx.db, { type: request.query.type })
    return collection(ctx, request, 'policies', rows.map((p) => policyView(ctx, p)))
  })
  scope.get<IdParams>('/policies/:id', documented({ summary: 'Show a policy blob', response: { 200: one('policy', V.policy) } }), async (request) => {
    guard(request, 'identity:get_policy')
    return { policy: policyView(ctx, await policies.getPolicyBlob(ctx.db, request.params.id)) }
  })
  scope.post<{ Body: Static<typeof PolicyCreate> }>('/policies', { ...documented({ summary: 'Create a policy blob', response: { 201: one('policy', V.policy) } }), schema: { body: PolicyCreate } }, async (request, reply) => {
    guard(request, 'identity:create_policy')
    const body = request.body.policy
    const row = await policies.createPolicyBlob(ctx.db, { type: body.type, blob: body.blob, extra: extraOf(body, COLUMNS) }, ctx.now())
    return reply.code(201).send({ policy: policyView(ctx, row) })
  })
  scope.patch<IdParams & { Body: Static<typeof PolicyUpdate> }>('/policies/:id', { ...documented({ summary: 'Update a policy blob', response: { 200: one('policy', V.policy) } }), schema: { body: PolicyUpdate } }, async (request) => {
    guard(request, 'identity:update_policy')
    const body = request.body.policy
    const row = await policies.updatePolicyBlob(ctx.db, request.params.id, { type: body.type, blob: body.blob, extra: extraOf(body, COLUMNS) })
    return { policy: policyView(ctx, row) }
  })
  scope.delete<IdParams>('/policies/:id', documented({ summary: 'Delete a policy blob', response: { 204: noBody('Deleted') } }), async (request, reply) => {
    guard(request, 'identity:delete_policy')
    await policies.deletePolicyBlob(ctx.db, request.params.id)
    return reply.code(204).send()
  })
}
