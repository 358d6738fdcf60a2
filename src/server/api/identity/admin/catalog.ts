/** /v3/regions, /v3/services, /v3/endpoints */
import type { FastifyInstance } from 'fastify'
import type { Static } from '@sinclair/typebox'
import * as catalog from '../../../identity/repo/catalog.repo.js'
import { collection, guard, type AdminContext } from './common.js'
import { EndpointCreate, EndpointUpdate, RegionCreate, RegionUpdate, ServiceCreate, ServiceUpdate, query } from './schemas.js'
import { endpointView, regionView, serviceView } from './views.js'
import { documented, noBody } from '../../../http/openapi.js'
import { V, list, one } from '../answers.js'

type IdParams = { Params: { id: string } }

export function catalogRoutes(scope: FastifyInstance, ctx: AdminContext): void {
  scope.get<{ Querystring: { parent_region_id?: string } }>('/regions', { ...documented({ summary: 'List regions', response: { 200: list('regions', V.region) } }), schema: { querystring: query(['parent_region_id']) } }, async (request) => {
    guard(request, 'identity:list_regions')
    const rows = await catalog.listRegions(ctx.db, { parentRegionId: request.query.parent_region_id })
    return collection(ctx, request, 'regions', rows.map((r) => regionView(ctx, r)))
  })
  scope.get<IdParams>('/regions/:id', documented({ summary: 'Show a region', response: { 200: one('region', V.region) } }), async (request) => {
    guard(request, 'identity:get_region')
    return { region: regionView(ctx, await catalog.getRegion(ctx.db, request.params.id)) }
  })
  scope.post<{ Body: Static<typeof RegionCreate> }>('/regions', { ...documented({ summary: 'Create a region', response: { 201: one('region', V.region) } }), schema: { body: RegionCreate } }, async (request, reply) => {
    guard(request, 'identity:create_region')
    const row = await ctx.write((tx) => catalog.createRegion(tx, request.body.region))
    return reply.code(201).send({ region: regionView(ctx, row) })
  })
  // Keystone also creates a region with a chosen id by PUT.
  scope.put<IdParams & { Body: Static<typeof RegionUpdate> }>('/regions/:id', { ...documented({ summary: 'Create a region with the given id', response: { 201: one('region', V.region) } }), schema: { body: RegionUpdate } }, async (request, reply) => {
    guard(request, 'identity:create_region')
    const row = await ctx.write((tx) => catalog.createRegion(tx, { ...request.body.region, id: request.params.id }))
    return reply.code(201).send({ region: regionView(ctx, row) })
  })
  scope.patch<IdParams & { Body: Static<typeof RegionUpdate> }>('/regions/:id', { ...documented({ summary: 'Update a region', response: { 200: one('region', V.region) } }), schema: { body: RegionUpdate } }, async (request) => {
    guard(request, 'identity:update_region')
    return { region: regionView(ctx, await ctx.write((tx) => catalog.updateRegion(tx, request.params.id, request.body.region))) }
  })
  scope.delete<IdParams>('/regions/:id', documented({ summary: 'Delete a region', response: { 204: noBody('Deleted') } }), async (request, reply) => {
    guard(request, 'identity:delete_region')
    await ctx.write((tx) => catalog.deleteRegion(tx, request.params.id))
    return reply.code(204).send()
  })

  scope.get<{ Querystring: { type?: string; name?: string } }>('/services', { ...documented({ summary: 'List catalog services', response: { 200: list('services', V.service) } }), schema: { querystring: query(['type', 'name']) } }, async (request) => {
    guard(request, 'identity:list_services')
    const rows = await catalog.listServices(ctx.db, request.query)
    return collection(ctx, request, 'services', rows.map((s) => serviceView(ctx, s)))
  })
  scope.get<IdParams>('/services/:id', documented({ summary: 'Show a catalog service', response: { 200: one('service', V.service) } }), async (request) => {
    guard(request, 'identity:get_service')
    return { service: serviceView(ctx, await catalog.getService(ctx.db, request.params.id)) }
  })
  scope.post<{ Body: Static<typeof ServiceCreate> }>('/services', { ...documented({ summary: 'Create a catalog service', response: { 201: one('service', V.service) } }), schema: { body: ServiceCreate } }, async (request, reply) => {
    guard(request, 'identity:create_service')
    const row = await ctx.write((tx) => catalog.createService(tx, request.body.service))
    return reply.code(201).send({ service: serviceView(ctx, row) })
  })
  scope.patch<IdParams & { Body: Static<typeof ServiceUpdate> }>('/services/:id', { ...documented({ summary: 'Update a catalog service', response: { 200: one('service', V.service) } }), schema: { body: ServiceUpdate } }, async (request) => {
    guard(request, 'identity:update_service')
    return { service: serviceView(ctx, await ctx.write((tx) => catalog.updateService(tx, request.params.id, request.body.service))) }
  })
  scope.delete<IdParams>('/services/:id', documented({ summary: 'Delete a catalog service', response: { 204: noBody('Deleted') } }), async (request, reply) => {
    guard(request, 'identity:delete_service')
    await ctx.write((tx) => catalog.deleteService(tx, request.params.id))
    return reply.code(204).send()
  })

  scope.get<{ Querystring: { service_id?: string; interface?: string; region_id?: string } }>(
    '/endpoints',
    { ...documented({ summary: 'List endpoints', response: { 200: list('endpoints', V.endpoint) } }), schema: { querystring: query(['service_id', 'interface', 'region_id']) } },
    async (request) => {
      guard(request, 'identity:list_endpoints')
      const rows = await catalog.listEndpoints(ctx.db, { serviceId: request.query.service_id, interface: request.query.interface, regionId: request.query.region_id })
      return collection(ctx, request, 'endpoints', rows.map((e) => endpointView(ctx, e)))
    },
  )
  scope.get<IdParams>('/endpoints/:id', documented({ summary: 'Show an endpoint', response: { 200: one('endpoint', V.endpoint) } }), async (request) => {
    guard(request, 'identity:get_endpoint')
    return { endpoint: endpointView(ctx, await catalog.getEndpoint(ctx.db, request.params.id)) }
  })
  scope.post<{ Body: Static<typeof EndpointCreate> }>('/endpoints', { ...documented({ summary: 'Create an endpoint', response: { 201: one('endpoint', V.endpoint) } }), schema: { body: EndpointCreate } }, async (request, reply) => {
    guard(request, 'identity:create_endpoint')
    const row = await ctx.write((tx) => catalog.createEndpoint(tx, request.body.endpoint))
    return reply.code(201).send({ endpoint: endpointView(ctx, row) })
  })
  scope.patch<IdParams & { Body: Static<typeof EndpointUpdate> }>('/endpoints/:id', { ...documented({ summary: 'Update an endpoint', response: { 200: one('endpoint', V.endpoint) } }), schema: { body: EndpointUpdate } }, async (request) => {
    guard(request, 'identity:update_endpoint')
    return { endpoint: endpointView(ctx, await ctx.write((tx) => catalog.updateEndpoint(tx, request.params.id, request.body.endpoint))) }
  })
  scope.delete<IdParams>('/endpoints/:id', documented({ summary: 'Delete an endpoint', response: { 204: noBody('Deleted') } }), async (request, reply) => {
    guard(request, 'identity:delete_endpoint')
    await ctx.write((tx) => catalog.deleteEndpoint(tx, request.params.id))
    return reply.code(204).send()
  })
}
