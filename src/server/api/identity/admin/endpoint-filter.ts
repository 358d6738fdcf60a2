/**
 * /v3/OS-EP-FILTER (Keystone's endpoint filtering): endpoint groups, and the endpoints and endpoint groups
 * associated with projects. Associations narrow the catalog of the project's tokens (identity/endpoint-filter.ts,
 * applied by the identity snapshot), so every write here is an identity write.
 */
import type { FastifyInstance } from 'fastify'
import { Type as T, type Static } from '@sinclair/typebox'
import { notFound } from '../../../../contracts/errors.js'
import * as catalog from '../../../identity/repo/catalog.repo.js'
import * as projects from '../../../identity/repo/projects.repo.js'
import * as filter from '../../../identity/repo/endpoint-filter.repo.js'
import { checkFilters, endpointMatches } from '../../../identity/endpoint-filter.js'
import { collection, guard, type AdminContext } from './common.js'
import { query } from './schemas.js'
import { endpointView, projectView } from './views.js'
import { documented, noBody } from '../../../http/openapi.js'
import { V, list, one } from '../answers.js'

const Filters = T.Record(T.String(), T.String({ minLength: 1, maxLength: 255 }))
const Description = T.Union([T.String({ maxLength: 65535 }), T.Null()])
const open = { additionalProperties: true }
const GroupCreate = T.Object({ endpoint_group: T.Object({ name: T.String({ minLength: 1, maxLength: 255 }), description: T.Optional(Description), filters: Filters }, open) })
const GroupUpdate = T.Object({ endpoint_group: T.Object({ name: T.Optional(T.String({ minLength: 1, maxLength: 255 })), description: T.Optional(Description), filters: T.Optional(Filters) }, open) })

const BASE = '/OS-EP-FILTER'
type GroupParams = { Params: { id: string } }
type GroupProjectParams = { Params: { id: string; project_id: string } }
type EndpointProjectParams = { Params: { project_id: string; endpoint_id: string } }

export function endpointFilterRoutes(scope: FastifyInstance, ctx: AdminContext): void {
  const view = (g: filter.EndpointGroupRow) => ({ id: g.id, name: g.name, description: g.description, filters: filter.groupFilters(g), links: ctx.link(`OS-EP-FILTER/endpoint_groups/${g.id}`) })
  /** The catalog's endpoints a group's filters match. */
  const endpointsOf = async (g: filter.EndpointGroupRow) => {
    const filters = filter.groupFilters(g)
    return (await catalog.listEndpoints(ctx.db, {})).filter((e) => endpointMatches(filters, { id: e.id, serviceId: e.service_id, interface: e.interface, regionId: e.region_id }))
  }
  const projectViews = async (ids: string[]) => (await Promise.all(ids.map((id) => projects.findProject(ctx.db, id)))).filter((p) => p !== undefined).map((p) => projectView(ctx, p))

  scope.get<{ Querystring: { name?: string } }>(`${BASE}/endpoint_groups`, { ...documented({ summary: 'List endpoint groups', response: { 200: list('endpoint_groups', V.endpointGroup) } }), schema: { querystring: query(['name']) } }, async (request) => {
    guard(request, 'identity:list_endpoint_groups')
    return collection(ctx, request, 'endpoint_groups', (await filter.listEndpointGroups(ctx.db, request.query)).map(view))
  })
  scope.post<{ Body: Static<typeof GroupCreate> }>(`${BASE}/endpoint_groups`, { ...documented({ summary: 'Create an endpoint group', response: { 201: one('endpoint_group', V.endpointGroup) } }), schema: { body: GroupCreate } }, async (request, reply) => {
    guard(request, 'identity:create_endpoint_group')
    const body = request.body.endpoint_group
    const filters = checkFilters(body.filters)
    const row = await ctx.write((tx) => filter.createEndpointGroup(tx, { name: body.name, description: body.description ?? null, filters }, ctx.now()))
    return reply.code(201).send({ endpoint_group: view(row) })
  })
  scope.get<GroupParams>(`${BASE}/endpoint_groups/:id`, documented({ summary: 'Show an endpoint group', response: { 200: one('endpoint_group', V.endpointGroup) } }), async (request) => {
    guard(request, 'identity:get_endpoint_group')
    return { endpoint_group: view(await filter.getEndpointGroup(ctx.db, request.params.id)) }
  })
  scope.patch<GroupParams & { Body: Static<typeof GroupUpdate> }>(`${BASE}/endpoint_groups/:id`, { ...documented({ summary: 'Update an endpoint group', response: { 200: one('endpoint_group', V.endpointGroup) } }), schema: { body: GroupUpdate } }, async (request) => {
    guard(request, 'identity:update_endpoint_group')
    const body = request.body.endpoint_group
    const filters = body.filters === undefined ? undefined : checkFilters(body.filters)
    const row = await ctx.write((tx) => filter.updateEndpointGroup(tx, request.params.id, { name: body.name, description: body.description, filters }))
    return { endpoint_group: view(row) }
  })
  scope.delete<GroupParams>(`${BASE}/endpoint_groups/:id`, documented({ summary: 'Delete an endpoint group', response: { 204: noBody('Deleted') } }), async (request, reply) => {
    guard(request, 'identity:delete_endpoint_group')
    await ctx.write((tx) => filter.deleteEndpointGroup(tx, request.params.id))
    return reply.code(204).send()
  })
  scope.get<GroupParams>(`${BASE}/endpoint_groups/:id/endpoints`, documented({ summary: "The endpoints an endpoint group's filters match", response: { 200: list('endpoints', V.endpoint) } }), async (request) => {
    guard(request, 'identity:list_endpoints_associated_with_endpoint_group')
    const group = await filter.getEndpointGroup(ctx.db, request.params.id)
    return collection(ctx, request, 'endpoints', (await endpointsOf(group)).map((e) => endpointView(ctx, e)))
  })
  scope.get<GroupParams>(`${BASE}/endpoint_groups/:id/projects`, documented({ summary: 'The projects an endpoint group is associated with', response: { 200: list('projects', V.project) } }), async (request) => {
    guard(request, 'identity:list_projects_associated_with_endpoint_group')
    await filter.getEndpointGroup(ctx.db, request.params.id)
    return collection(ctx, request, 'projects', await projectViews(await filter.projectsOfEndpointGroup(ctx.db, request.params.id)))
  })

  scope.put<GroupProjectParams>(`${BASE}/endpoint_groups/:id/projects/:project_id`, documented({ summary: 'Associate an endpoint group with a project', response: { 204: noBody('Associated') } }), async (request, reply) => {
    guard(request, 'identity:add_endpoint_group_to_project')
    const { id, project_id: projectId } = request.params
    await ctx.write(async (tx) => {
      await filter.getEndpointGroup(tx, id)
      await projects.getProject(tx, projectId)
      await filter.associateEndpointGroup(tx, id, projectId)
    })
    return reply.code(204).send()
  })
  scope.get<GroupProjectParams>(`${BASE}/endpoint_groups/:id/projects/:project_id`, documented({ summary: 'The project, when the endpoint group is associated with it', response: { 200: one('project', V.project) } }), async (request) => {
    guard(request, 'identity:get_endpoint_group_in_project')
    const { id, project_id: projectId } = request.params
    await filter.getEndpointGroup(ctx.db, id)
    const project = await projects.getProject(ctx.db, projectId)
    if (!(await filter.isEndpointGroupAssociated(ctx.db, id, projectId))) throw notAssociated(`endpoint group ${id}`, projectId)
    return { project: projectView(ctx, project) }
  })
  scope.delete<GroupProjectParams>(`${BASE}/endpoint_groups/:id/projects/:project_id`, documented({ summary: 'Dissociate an endpoint group from a project', response: { 204: noBody('Dissociated') } }), async (request, reply) => {
    guard(request, 'identity:remove_endpoint_group_from_project')
    await ctx.write((tx) => filter.dissociateEndpointGroup(tx, request.params.id, request.params.project_id))
    return reply.code(204).send()
  })
  scope.get<{ Params: { project_id: string } }>(`${BASE}/projects/:project_id/endpoint_groups`, documented({ summary: 'The endpoint groups associated with a project', response: { 200: list('endpoint_groups', V.endpointGroup) } }), async (request) => {
    guard(request, 'identity:list_endpoint_groups_for_project')
    await projects.getProject(ctx.db, request.params.project_id)
    return collection(ctx, request, 'endpoint_groups', (await filter.endpointGroupsOfProject(ctx.db, request.params.project_id)).map(view))
  })

  scope.put<EndpointProjectParams>(`${BASE}/projects/:project_id/endpoints/:endpoint_id`, documented({ summary: 'Associate an endpoint with a project', response: { 204: noBody('Associated') } }), async (request, reply) => {
    guard(request, 'identity:add_endpoint_to_project')
    const { project_id: projectId, endpoint_id: endpointId } = request.params
    await ctx.write(async (tx) => {
      await projects.getProject(tx, projectId)
      await catalog.getEndpoint(tx, endpointId)
      await filter.associateEndpoint(tx, endpointId, projectId)
    })
    return reply.code(204).send()
  })
  scope.get<EndpointProjectParams>(`${BASE}/projects/:project_id/endpoints/:endpoint_id`, documented({ summary: 'Check that an endpoint is associated with a project', response: { 204: noBody('Associated') } }), async (request, reply) => {
    guard(request, 'identity:check_endpoint_in_project')
    const { project_id: projectId, endpoint_id: endpointId } = request.params
    await projects.getProject(ctx.db, projectId)
    await catalog.getEndpoint(ctx.db, endpointId)
    if (!(await filter.isEndpointAssociated(ctx.db, endpointId, projectId))) throw notAssociated(`endpoint ${endpointId}`, projectId)
    return reply.code(204).send()
  })
  scope.delete<EndpointProjectParams>(`${BASE}/projects/:project_id/endpoints/:endpoint_id`, documented({ summary: 'Dissociate an endpoint from a project', response: { 204: noBody('Dissociated') } }), async (request, reply) => {
    guard(request, 'identity:remove_endpoint_from_project')
    await ctx.write((tx) => filter.dissociateEndpoint(tx, request.params.endpoint_id, request.params.project_id))
    return reply.code(204).send()
  })
  scope.get<{ Params: { project_id: string } }>(`${BASE}/projects/:project_id/endpoints`, documented({ summary: "The endpoints of a project's catalog: associated directly or through its endpoint groups", response: { 200: list('endpoints', V.endpoint) } }), async (request) => {
    guard(request, 'identity:list_endpoints_for_project')
    const projectId = request.params.project_id
    await projects.getProject(ctx.db, projectId)
    const direct = await filter.directEndpointIds(ctx.db, projectId)
    const viaGroups = (await Promise.all((await filter.endpointGroupsOfProject(ctx.db, projectId)).map(endpointsOf))).flat()
    const all = await catalog.listEndpoints(ctx.db, {})
    const ids = new Set([...direct, ...viaGroups.map((e) => e.id)])
    return collection(ctx, request, 'endpoints', all.filter((e) => ids.has(e.id)).map((e) => endpointView(ctx, e)))
  })
  scope.get<{ Params: { endpoint_id: string } }>(`${BASE}/endpoints/:endpoint_id/projects`, documented({ summary: 'The projects an endpoint is associated with directly', response: { 200: list('projects', V.project) } }), async (request) => {
    guard(request, 'identity:list_projects_for_endpoint')
    await catalog.getEndpoint(ctx.db, request.params.endpoint_id)
    return collection(ctx, request, 'projects', await projectViews(await filter.projectsOfEndpoint(ctx.db, request.params.endpoint_id)))
  })
}

const notAssociated = (what: string, projectId: string) => notFound(`The ${what} is not associated with the project ${projectId}.`)
