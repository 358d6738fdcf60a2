/**
 * /os-aggregates: host aggregates for admins (docs/compute.md, "Host aggregates and availability zones"). Their
 * `availability_zone` metadata is the zone of their hosts, and the scheduler matches their other metadata against
 * flavors' `aggregate_instance_extra_specs:` extra specs.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type as T } from '@sinclair/typebox'
import { badRequest } from '../../../contracts/errors.js'
import { isoMicros } from '../../../contracts/compute/time.js'
import { P } from '../../../contracts/compute/params.js'
import { versionNumber } from '../../../contracts/compute/versions.js'
import { A } from '../../../contracts/compute/answers.js'
import { envelope, listOf } from '../../../contracts/compute/schemas.js'
import type { AppDeps } from '../../deps.js'
import { addHost, createAggregate, deleteAggregate, findAggregate, listAggregates, removeHost, setMetadata, updateAggregate, zoneOf, type Aggregate } from '../../compute/aggregates.js'
import { bodyObject, must, validate } from './context.js'
import { documented, noBody } from '../../http/openapi.js'

const zone = T.Union([T.Null(), P.name])
const createBody = () => T.Object({ aggregate: T.Object({ name: P.name, availability_zone: T.Optional(zone) }, { additionalProperties: false }) }, { additionalProperties: false })
const updateBody = () =>
  T.Object({ aggregate: T.Object({ name: T.Optional(P.name), availability_zone: T.Optional(zone) }, { additionalProperties: false, minProperties: 1 }) }, { additionalProperties: false })
const hostBody = T.Object({ host: P.hostLike }, { additionalProperties: false })
const metadataValue = T.Union([T.Null(), T.String({ maxLength: 255 })])
const metadataBody = T.Object({ metadata: T.Record(T.String({ pattern: '^[a-zA-Z0-9-_:. ]{1,255}$' }), metadataValue, { additionalProperties: false, minProperties: 1 }) }, { additionalProperties: false })
const actionBody = () =>
  T.Union([
    T.Object({ add_host: hostBody }, { additionalProperties: false }),
    T.Object({ remove_host: hostBody }, { additionalProperties: false }),
    T.Object({ set_metadata: metadataBody }, { additionalProperties: false }),
  ])

const one = envelope('aggregate', A.aggregate)
const DOCS = {
  list: documented({ summary: 'List host aggregates (admin)', response: { 200: envelope('aggregates', listOf(A.aggregate)) } }),
  create: documented({ summary: 'Create a host aggregate, optionally an availability zone (admin)', body: createBody(), response: { 200: one } }),
  show: documented({ summary: 'Show a host aggregate (admin)', response: { 200: one } }),
  update: documented({ summary: "Rename a host aggregate or change its availability zone (admin)", body: updateBody(), response: { 200: one } }),
  delete: documented({ summary: 'Delete an empty host aggregate (admin)', response: { 200: noBody('Deleted') } }),
  action: documented({ summary: 'Add or remove a host, or set metadata, of a host aggregate (admin)', body: actionBody(), response: { 200: one } }),
}

/** Nova's aggregate view; create's answer has no hosts and metadata. */
function view(request: FastifyRequest, a: Aggregate, full = true) {
  return {
    id: a.id,
    ...(request.api.version >= versionNumber('2.41') && { uuid: a.uuid }),
    name: a.name,
    availability_zone: zoneOf(a),
    ...(full && { hosts: a.hosts, metadata: a.metadata }),
    created_at: isoMicros(a.created_at)!,
    updated_at: isoMicros(a.updated_at),
    deleted_at: null,
    deleted: false,
  }
}

export function aggregateRoutes(deps: AppDeps) {
  const db = deps.store.db
  return async (scope: FastifyInstance): Promise<void> => {
    scope.get('/v2.1/os-aggregates', DOCS.list, async (request) => {
      must(request, 'os-aggregates:index')
      return { aggregates: (await listAggregates(db)).map((a) => view(request, a)) }
    })
    scope.post('/v2.1/os-aggregates', DOCS.create, async (request) => {
      must(request, 'os-aggregates:create')
      const body = bodyObject(request)
      validate('aggregate', request, createBody, body)
      const { name, availability_zone: az } = body.aggregate
      return { aggregate: view(request, await createAggregate(db, name, az ?? null), false) }
    })
    scope.get<{ Params: { id: string } }>('/v2.1/os-aggregates/:id', DOCS.show, async (request) => {
      must(request, 'os-aggregates:show')
      return { aggregate: view(request, await findAggregate(db, request.params.id)) }
    })
    scope.put<{ Params: { id: string } }>('/v2.1/os-aggregates/:id', DOCS.update, async (request) => {
      must(request, 'os-aggregates:update')
      const body = bodyObject(request)
      validate('aggregate', request, updateBody, body)
      const patch = body.aggregate
      const aggregate = await findAggregate(db, request.params.id)
      const updated = await updateAggregate(db, aggregate, { name: patch.name, ...('availability_zone' in patch && { zone: patch.availability_zone ?? null }) })
      return { aggregate: view(request, updated) }
    })
    scope.delete<{ Params: { id: string } }>('/v2.1/os-aggregates/:id', DOCS.delete, async (request, reply) => {
      must(request, 'os-aggregates:delete')
      await deleteAggregate(db, await findAggregate(db, request.params.id))
      return reply.code(200).send()
    })
    scope.post<{ Params: { id: string } }>('/v2.1/os-aggregates/:id/action', DOCS.action, async (request) => {
      const body = bodyObject(request)
      const name = Object.keys(body)[0]
      if (name === 'add_host') must(request, 'os-aggregates:add_host')
      else if (name === 'remove_host') must(request, 'os-aggregates:remove_host')
      else if (name === 'set_metadata') must(request, 'os-aggregates:set_metadata')
      else throw badRequest('Invalid input: the body must name one of add_host, remove_host, set_metadata')
      validate('aggregate action', request, actionBody, body)
      const aggregate = await findAggregate(db, request.params.id)
      if ('add_host' in body) return { aggregate: view(request, await addHost(db, aggregate, body.add_host.host)) }
      if ('remove_host' in body) return { aggregate: view(request, await removeHost(db, aggregate, body.remove_host.host)) }
      return { aggregate: view(request, await setMetadata(db, aggregate, body.set_metadata.metadata)) }
    })
  }
}
