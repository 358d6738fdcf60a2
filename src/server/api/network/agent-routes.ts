/**
 * Neutron's agents (`/v2.0/agents`, extension `agent`): list, show, update (admin_state_up, description) and
 * delete. There is no create: agents are the network services of hosts' roles (network/agents.ts). Admin only
 * through the policy table; a member's list is empty and one agent is not found to it, as in Neutron.
 */
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { documented, noBody } from '../../http/openapi.js'
import * as agents from '../../network/agents.js'
import { fieldsOf, listResponse, projectFields, type Query } from '../../network/listing.js'
import { LIST_QUERY, many, one, SHOW_QUERY } from './answers.js'
import * as schemas from './schemas.js'
import type { FromSchema } from '../../http/route-types.js'

type IdParams = { id: string }

export function agentRoutes(api: FastifyInstance, deps: AppDeps): void {
  const service = deps.network
  const url = `${deps.urls.network}/v2.0/agents`
  const downAfterMs = () => deps.config.hostDownAfterSeconds * 1000

  api.get<{ Querystring: Query }>('/v2.0/agents', documented({ summary: 'List agents (admin; empty for others)', querystring: LIST_QUERY, response: { 200: many('agents', 'agent') } }), async (request) => {
    const items = await service.run(request.principal, (ctx, actor) => agents.listAgents(ctx, actor, downAfterMs()))
    const attributes = [...new Set(items.flatMap((i) => Object.keys(i)))]
    return listResponse(items, request.query, { collection: 'agents', url, attributes })
  })
  api.get<{ Params: IdParams; Querystring: Query }>('/v2.0/agents/:id', documented({ summary: 'Show an agent (admin)', querystring: SHOW_QUERY, response: { 200: one('agent') } }), async (request) => {
    const item = await service.run(request.principal, (ctx, actor) => agents.showAgent(ctx, actor, request.params.id, downAfterMs()))
    return { agent: projectFields(item, fieldsOf(request.query)) }
  })
  api.put<{ Params: IdParams; Body: FromSchema<typeof schemas.agentUpdate> }>('/v2.0/agents/:id', { schema: { body: schemas.agentUpdate }, ...documented({ summary: 'Set an agent up or down, or describe it (admin)', response: { 200: one('agent') } }) }, async (request) => {
    const item = await service.run(request.principal, (ctx, actor) => agents.updateAgent(ctx, actor, request.params.id, request.body.agent, downAfterMs()))
    return { agent: item }
  })
  api.delete<{ Params: IdParams }>('/v2.0/agents/:id', documented({ summary: "Delete an agent: forget what was set on it (admin)", response: { 204: noBody('Deleted') } }), async (request, reply: FastifyReply) => {
    await service.run(request.principal, (ctx, actor) => agents.deleteAgent(ctx, actor, request.params.id, downAfterMs()))
    return reply.code(204).send()
  })
}
