/**
 * /v3/OS-OAUTH1/consumers (Keystone's OAuth 1.0a consumers): a consumer is an id, a description and a secret
 * made by the server, answered once when created and sealed at rest. Deleting one deletes its request and access
 * tokens. The token flow is api/identity/auth/oauth1-routes.ts (docs/identity.md, "OAuth 1.0a delegation").
 */
import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import type { Static } from '@sinclair/typebox'
import { badRequest } from '../../../../contracts/errors.js'
import * as consumers from '../../../identity/repo/oauth-consumers.repo.js'
import { extraOf } from '../../../identity/repo/write.js'
import { collection, guard, type AdminContext } from './common.js'
import { ConsumerCreate, ConsumerUpdate } from './schemas.js'
import { consumerView } from './views.js'
import { documented, noBody } from '../../../http/openapi.js'
import { V, list, one } from '../answers.js'

type IdParams = { Params: { id: string } }
const COLUMNS = ['description', 'secret'] as const

export function oauthConsumerRoutes(scope: FastifyInstance, ctx: AdminContext): void {
  scope.get('/OS-OAUTH1/consumers', documented({ summary: 'List OAuth 1.0a consumers', response: { 200: list('consumers', V.consumer) } }), async (request) => {
    guard(request, 'identity:list_consumers')
    const rows = await consumers.listOAuthConsumers(ctx.db)
    return collection(ctx, request, 'consumers', rows.map((c) => consumerView(ctx, c)))
  })
  scope.get<IdParams>('/OS-OAUTH1/consumers/:id', documented({ summary: 'Show an OAuth 1.0a consumer', response: { 200: one('consumer', V.consumer) } }), async (request) => {
    guard(request, 'identity:get_consumer')
    return { consumer: consumerView(ctx, await consumers.getOAuthConsumer(ctx.db, request.params.id)) }
  })
  scope.post<{ Body: Static<typeof ConsumerCreate> }>('/OS-OAUTH1/consumers', { ...documented({ summary: 'Create an OAuth 1.0a consumer (answers its secret, once)', response: { 201: one('consumer', V.consumer) } }), schema: { body: ConsumerCreate } }, async (request, reply) => {
    guard(request, 'identity:create_consumer')
    const body = request.body.consumer
    const secret = randomBytes(32).toString('base64url')
    const row = await consumers.createOAuthConsumer(ctx.db, { description: body.description ?? null, sealedSecret: ctx.deps.box.seal(secret), extra: extraOf(body, COLUMNS) }, ctx.now())
    return reply.code(201).send({ consumer: { ...consumerView(ctx, row), secret } })
  })
  scope.patch<IdParams & { Body: Static<typeof ConsumerUpdate> }>('/OS-OAUTH1/consumers/:id', { ...documented({ summary: 'Update an OAuth 1.0a consumer', response: { 200: one('consumer', V.consumer) } }), schema: { body: ConsumerUpdate } }, async (request) => {
    guard(request, 'identity:update_consumer')
    const body = request.body.consumer
    if ('secret' in body) throw badRequest('The secret of a consumer cannot be changed.')
    const row = await consumers.updateOAuthConsumer(ctx.db, request.params.id, { description: body.description, extra: extraOf(body, COLUMNS) })
    return { consumer: consumerView(ctx, row) }
  })
  scope.delete<IdParams>('/OS-OAUTH1/consumers/:id', documented({ summary: 'Delete an OAuth 1.0a consumer', response: { 204: noBody('Deleted') } }), async (request, reply) => {
    guard(request, 'identity:delete_consumer')
    await consumers.deleteOAuthConsumer(ctx.db, request.params.id)
    return reply.code(204).send()
  })
}
