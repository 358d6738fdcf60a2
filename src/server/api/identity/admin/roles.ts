/** /v3/roles, implied roles (/v3/roles/{prior}/implies/{implied}) and /v3/role_inferences. */
import type { FastifyInstance } from 'fastify'
import type { Static } from '@sinclair/typebox'
import { notFound } from '../../../../contracts/errors.js'
import * as roles from '../../../identity/repo/roles.repo.js'
import { collection, guard, type AdminContext } from './common.js'
import { RoleCreate, RoleUpdate, query } from './schemas.js'
import { roleRef, roleView } from './views.js'
import { documented, noBody } from '../../../http/openapi.js'
import { A, V, list, one } from '../answers.js'

type IdParams = { Params: { id: string } }
type ImplyParams = { Params: { id: string; implied: string } }

export function roleRoutes(scope: FastifyInstance, ctx: AdminContext): void {
  scope.get<{ Querystring: { name?: string; domain_id?: string } }>('/roles', { ...documented({ summary: 'List roles', response: { 200: list('roles', V.role) } }), schema: { querystring: query(['name', 'domain_id']) } }, async (request) => {
    guard(request, 'identity:list_roles', { domainId: request.query.domain_id })
    const rows = await roles.listRoles(ctx.db, { name: request.query.name, domainId: request.query.domain_id })
    return collection(ctx, request, 'roles', rows.map((r) => roleView(ctx, r)))
  })

  scope.get<IdParams>('/roles/:id', documented({ summary: 'Show a role', response: { 200: one('role', V.role) } }), async (request) => {
    const row = await roles.getRole(ctx.db, request.params.id)
    guard(request, 'identity:get_role', { domainId: row.domain_id || undefined })
    return { role: roleView(ctx, row) }
  })

  scope.post<{ Body: Static<typeof RoleCreate> }>('/roles', { ...documented({ summary: 'Create a role', response: { 201: one('role', V.role) } }), schema: { body: RoleCreate } }, async (request, reply) => {
    guard(request, 'identity:create_role')
    const row = await ctx.write((tx) => roles.createRole(tx, request.body.role, ctx.now()))
    return reply.code(201).send({ role: roleView(ctx, row) })
  })

  scope.patch<IdParams & { Body: Static<typeof RoleUpdate> }>('/roles/:id', { ...documented({ summary: 'Update a role', response: { 200: one('role', V.role) } }), schema: { body: RoleUpdate } }, async (request) => {
    guard(request, 'identity:update_role')
    const row = await ctx.write((tx) => roles.updateRole(tx, request.params.id, request.body.role))
    return { role: roleView(ctx, row) }
  })

  scope.delete<IdParams>('/roles/:id', documented({ summary: 'Delete a role', response: { 204: noBody('Deleted') } }), async (request, reply) => {
    guard(request, 'identity:delete_role')
    await ctx.write((tx) => roles.deleteRole(tx, request.params.id))
    return reply.code(204).send()
  })

  const inference = (prior: roles.RoleRow, implied: roles.RoleRow) => ({
    role_inference: { prior_role: roleRef(ctx, prior), implies: roleRef(ctx, implied) },
    links: ctx.link(`roles/${prior.id}/implies/${implied.id}`),
  })

  scope.get<IdParams>('/roles/:id/implies', documented({ summary: 'The roles a role implies', response: { 200: A.inference } }), async (request) => {
    guard(request, 'identity:list_implied_roles')
    const prior = await roles.getRole(ctx.db, request.params.id)
    const implied = await roles.rolesById(ctx.db, (await roles.listImplications(ctx.db, prior.id)).map((i) => i.implied_role_id))
    return {
      role_inference: { prior_role: roleRef(ctx, prior), implies: [...implied.values()].map((r) => roleRef(ctx, r)) },
      links: ctx.link(`roles/${prior.id}/implies`),
    }
  })

  scope.route<ImplyParams>({
    method: ['GET', 'HEAD'],
    url: '/roles/:id/implies/:implied',
    ...documented({ summary: 'Show (or, with HEAD, check) a role implication', response: { 200: A.inference } }),
    handler: async (request, reply) => {
      guard(request, 'identity:get_implied_role')
      const prior = await roles.getRole(ctx.db, request.params.id)
      const implied = await roles.getRole(ctx.db, request.params.implied)
      if (!(await roles.hasImplication(ctx.db, prior.id, implied.id))) throw notFound(`Could not find implied role: ${prior.id} does not imply ${implied.id}.`)
      if (request.method === 'HEAD') return reply.code(204).send()
      return inference(prior, implied)
    },
  })

  scope.put<ImplyParams>('/roles/:id/implies/:implied', documented({ summary: 'Make a role imply another', response: { 201: A.inference } }), async (request, reply) => {
    guard(request, 'identity:create_implied_role')
    const prior = await roles.getRole(ctx.db, request.params.id)
    const implied = await roles.getRole(ctx.db, request.params.implied)
    await ctx.write((tx) => roles.createImplication(tx, prior, implied))
    return reply.code(201).send(inference(prior, implied))
  })

  scope.delete<ImplyParams>('/roles/:id/implies/:implied', documented({ summary: 'Remove a role implication', response: { 204: noBody('Removed') } }), async (request, reply) => {
    guard(request, 'identity:delete_implied_role')
    await roles.getRole(ctx.db, request.params.id)
    await roles.getRole(ctx.db, request.params.implied)
    await ctx.write((tx) => roles.deleteImplication(tx, request.params.id, request.params.implied))
    return reply.code(204).send()
  })

  scope.get('/role_inferences', documented({ summary: 'Every role implication', response: { 200: A.inferences } }), async (request) => {
    guard(request, 'identity:list_role_inference_rules')
    const all = await roles.listImplications(ctx.db)
    const byId = await roles.rolesById(ctx.db, all.flatMap((i) => [i.prior_role_id, i.implied_role_id]))
    const priors = [...new Set(all.map((i) => i.prior_role_id))]
    return {
      role_inferences: priors.map((p) => ({
        prior_role: roleRef(ctx, byId.get(p)!),
        implies: all.filter((i) => i.prior_role_id === p).map((i) => roleRef(ctx, byId.get(i.implied_role_id)!)),
      })),
      links: ctx.link('role_inferences'),
    }
  })
}
