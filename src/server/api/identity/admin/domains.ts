/** /v3/domains */
import type { FastifyInstance } from 'fastify'
import type { Static } from '@sinclair/typebox'
import * as domains from '../../../identity/repo/domains.repo.js'
import { collection, guard, queryFlag, type AdminContext } from './common.js'
import { DomainCreate, DomainUpdate, query } from './schemas.js'
import { domainView } from './views.js'
import { documented, noBody } from '../../../http/openapi.js'
import { V, list, one } from '../answers.js'

type IdParams = { Params: { id: string } }

export function domainRoutes(scope: FastifyInstance, ctx: AdminContext): void {
  scope.get<{ Querystring: { name?: string; enabled?: string } }>('/domains', { ...documented({ summary: 'List domains', response: { 200: list('domains', V.domain) } }), schema: { querystring: query(['name', 'enabled']) } }, async (request) => {
    guard(request, 'identity:list_domains')
    const rows = await domains.listDomains(ctx.db, { name: request.query.name, enabled: queryFlag(request.query.enabled) })
    return collection(ctx, request, 'domains', rows.map((d) => domainView(ctx, d)))
  })

  scope.get<IdParams>('/domains/:id', documented({ summary: 'Show a domain', response: { 200: one('domain', V.domain) } }), async (request) => {
    const row = await domains.getDomain(ctx.db, request.params.id)
    guard(request, 'identity:get_domain', { domainId: row.id })
    return { domain: domainView(ctx, row) }
  })

  scope.post<{ Body: Static<typeof DomainCreate> }>('/domains', { ...documented({ summary: 'Create a domain', response: { 201: one('domain', V.domain) } }), schema: { body: DomainCreate } }, async (request, reply) => {
    guard(request, 'identity:create_domain')
    const row = await ctx.write((tx) => domains.createDomain(tx, request.body.domain, ctx.now()))
    return reply.code(201).send({ domain: domainView(ctx, row) })
  })

  scope.patch<IdParams & { Body: Static<typeof DomainUpdate> }>('/domains/:id', { ...documented({ summary: 'Update a domain', response: { 200: one('domain', V.domain) } }), schema: { body: DomainUpdate } }, async (request) => {
    guard(request, 'identity:update_domain', { domainId: request.params.id })
    const row = await ctx.write((tx) => domains.updateDomain(tx, request.params.id, request.body.domain))
    return { domain: domainView(ctx, row) }
  })

  scope.delete<IdParams>('/domains/:id', documented({ summary: 'Delete a disabled domain', response: { 204: noBody('Deleted') } }), async (request, reply) => {
    guard(request, 'identity:delete_domain', { domainId: request.params.id })
    await ctx.write((tx) => domains.deleteDomain(tx, request.params.id))
    return reply.code(204).send()
  })
}
