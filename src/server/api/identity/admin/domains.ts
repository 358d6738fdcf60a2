/** /v3/domains */
import type { FastifyInstance } from 'fastify'
import type { Static } from '@sinclair/typebox'
import * as domains from '../../../identity/repo/domains.repo.js'
import { collection, guard, queryFlag, type AdminContext } from './common.js'
import { DomainCreate, DomainUpdate, query } from './schemas.js'
import { domainView } from './views.js'

type IdParams = { Params: { id: string } }

export function domainRoutes(scope: FastifyInstance, ctx: AdminContext): void {
  scope.get<{ Querystring: { name?: string; enabled?: string } }>('/domains', { schema: { querystring: query(['name', 'enabled']) } }, async (request) => {
    guard(request, 'identity:list_domains')
    const rows = await domains.listDomains(ctx.db, { name: request.query.name, enabled: queryFlag(request.query.enabled) })
    return collection(ctx, request, 'domains', rows.map((d) => domainView(ctx, d)))
  })

  scope.get<IdParams>('/domains/:id', async (request) => {
    const row = await domains.getDomain(ctx.db, request.params.id)
    guard(request, 'identity:get_domain', { domainId: row.id })
    return { domain: domainView(ctx, row) }
  })

  scope.post<{ Body: Static<typeof DomainCreate> }>('/domains', { schema: { body: DomainCreate } }, async (request, reply) => {
    guard(request, 'identity:create_domain')
    const row = await ctx.write((tx) => domains.createDomain(tx, request.body.domain, ctx.now()))
    return reply.code(201).send({ domain: domainView(ctx, row) })
  })

  scope.patch<IdParams & { Body: Static<typeof DomainUpdate> }>('/domains/:id', { schema: { body: DomainUpdate } }, async (request) => {
    guard(request, 'identity:update_domain', { domainId: request.params.id })
    const row = await ctx.write((tx) => domains.updateDomain(tx, request.params.id, request.body.domain))
    return { domain: domainView(ctx, row) }
  })

  scope.delete<IdParams>('/domains/:id', async (request, reply) => {
    guard(request, 'identity:delete_domain', { domainId: request.params.id })
    await ctx.write((tx) => domains.deleteDomain(tx, request.params.id))
    return reply.code(204).send()
  })
}
