/**
 * os-migrations (every move of every server, for admins) and /servers/{id}/migrations (2.23: a server's live
 * migration in progress; 2.22 force-complete and 2.24 abort of one, compute/migration-control.ts). The conductor
 * writes the rows as the moves run (compute/migrations.ts).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type as T } from '@sinclair/typebox'
import { badRequest, notFound } from '../../../contracts/errors.js'
import { isoMicros, parseIsoTime } from '../../../contracts/compute/time.js'
import { J } from '../../../contracts/compute/json-types.js'
import { versionNumber } from '../../../contracts/compute/versions.js'
import { plain, Q, queryOf, versioned } from '../../../contracts/compute/schemas.js'
import type { ServerMigrationTable } from '../../storage/tables/compute.js'
import type { AppDeps } from '../../deps.js'
import { findMigrationByUuid, IN_PROGRESS, listMigrations, serverMigrationsInProgress, type MigrationFilters } from '../../compute/migrations.js'
import { hostAddresses } from '../../hosts/compute-hosts.js'
import { visibleServer } from './servers.js'
import { bodyObject, callerOf, must, requireGate, validate } from './context.js'
import { controlLiveMigration, type ControlContext } from '../../compute/migration-control.js'
import { documented, noBody } from '../../http/openapi.js'
import type { SingleQuery } from '../../http/route-types.js'

const nint = T.Union([J.int, T.Null()])
const migration = T.Object({
  id: J.int,
  uuid: T.Optional(J.str),
  status: J.nstr,
  instance_uuid: T.Optional(J.nstr),
  server_uuid: T.Optional(J.str),
  source_node: J.nstr,
  source_compute: J.nstr,
  dest_node: J.nstr,
  dest_compute: J.nstr,
  dest_host: J.nstr,
  old_instance_type_id: T.Optional(nint),
  new_instance_type_id: T.Optional(nint),
  migration_type: T.Optional(J.str),
  links: T.Optional(J.links),
  memory_total_bytes: T.Optional(nint),
  memory_processed_bytes: T.Optional(nint),
  memory_remaining_bytes: T.Optional(nint),
  disk_total_bytes: T.Optional(nint),
  disk_processed_bytes: T.Optional(nint),
  disk_remaining_bytes: T.Optional(nint),
  user_id: T.Optional(J.str),
  project_id: T.Optional(J.str),
  created_at: J.str,
  updated_at: J.nstr,
})
const listQuery = queryOf({
  host: Q.str,
  status: Q.str,
  instance_uuid: Q.str,
  migration_type: Q.str,
  source_compute: Q.str,
  hidden: Q.str,
  limit: Q.count,
  marker: Q.str,
  'changes-since': Q.str,
  'changes-before': Q.str,
  user_id: Q.str,
  project_id: Q.str,
})
const DOCS = {
  list: documented({ summary: 'List migrations of every server (admin)', querystring: listQuery, response: { 200: plain(T.Object({ migrations: T.Array(migration) })) } }),
  serverList: documented({ summary: "A server's live migrations in progress (admin; 2.23)", response: { 200: plain(T.Object({ migrations: T.Array(migration) })) } }),
  serverShow: documented({ summary: "One of a server's live migrations in progress (admin; 2.23)", response: { 200: plain(T.Object({ migration })) } }),
  forceComplete: documented({ summary: 'Force a running live migration to complete: the guest pauses on its source (admin; 2.22)', body: versioned(() => forceCompleteBody), response: { 202: noBody('Accepted') } }),
  abort: documented({ summary: 'Abort a running live migration (admin; 2.24), or a queued one (2.65): the server stays on its source', response: { 202: noBody('Accepted') } }),
}

const forceCompleteBody = T.Object({ force_complete: T.Null() }, { additionalProperties: false })

const at = (request: FastifyRequest, v: string) => request.api.version >= versionNumber(v)
/** Nova's flavor ids here are integers; a flavor whose id is not one has none to show. */
const flavorNumber = (id: string | null) => (id !== null && /^\d{1,9}$/.test(id) ? Number(id) : null)

export function migrationRoutes(deps: AppDeps) {
  const db = deps.store.db

  function common(request: FastifyRequest, m: ServerMigrationTable, addresses: Map<string, string | null>) {
    return {
      id: m.id,
      ...(at(request, '2.59') && { uuid: m.uuid }),
      status: m.status,
      source_node: m.source_host,
      source_compute: m.source_host,
      dest_node: m.dest_host,
      dest_compute: m.dest_host,
      dest_host: m.dest_host ? (addresses.get(m.dest_host) ?? null) : null,
      ...(at(request, '2.80') && { user_id: m.user_id, project_id: m.project_id }),
      created_at: isoMicros(m.created_at)!,
      updated_at: isoMicros(m.updated_at),
    }
  }

  const control = (request: FastifyRequest): ControlContext => ({
    db,
    askSource: (serverId, what) => deps.conductor.controlLiveMigration(serverId, what),
    caller: callerOf(request),
    requestId: request.id,
  })

  const selfLink = (m: ServerMigrationTable) => `${deps.urls.compute}/servers/${m.server_id}/migrations/${m.id}`

  function listView(request: FastifyRequest, m: ServerMigrationTable, addresses: Map<string, string | null>) {
    const inProgressLive = m.migration_type === 'live-migration' && IN_PROGRESS.includes(m.status)
    return {
      ...common(request, m, addresses),
      instance_uuid: m.server_id,
      old_instance_type_id: flavorNumber(m.old_flavor_id),
      new_instance_type_id: flavorNumber(m.new_flavor_id),
      ...(at(request, '2.23') && {
        migration_type: m.migration_type,
        ...(inProgressLive && { links: [{ rel: 'self', href: selfLink(m) }, { rel: 'bookmark', href: selfLink(m) }] }),
      }),
    }
  }

  /** The progress fields of a live migration in progress: pcc's hosts report none while copying. */
  function serverView(request: FastifyRequest, m: ServerMigrationTable, addresses: Map<string, string | null>) {
    const unknown = null
    return {
      ...common(request, m, addresses),
      server_uuid: m.server_id,
      memory_total_bytes: unknown,
      memory_processed_bytes: unknown,
      memory_remaining_bytes: unknown,
      disk_total_bytes: unknown,
      disk_processed_bytes: unknown,
      disk_remaining_bytes: unknown,
    }
  }

  function filters(request: FastifyRequest<{ Querystring: SingleQuery }>): MigrationFilters {
    const q = request.query
    const time = (name: 'changes-since' | 'changes-before') => {
      const raw = q[name]
      if (raw === undefined) return undefined
      const ms = parseIsoTime(raw)
      if (ms === undefined) throw badRequest(`Invalid input for query parameters ${name}. Value: ${raw}. '${raw}' is not a 'date-time'`)
      return ms
    }
    const f: MigrationFilters = {
      host: q.host,
      status: q.status,
      instanceUuid: q.instance_uuid,
      migrationType: q.migration_type,
      sourceCompute: q.source_compute,
      ...(at(request, '2.59') && { changesSince: time('changes-since') }),
      ...(at(request, '2.66') && { changesBefore: time('changes-before') }),
      ...(at(request, '2.80') && { userId: q.user_id, projectId: q.project_id }),
    }
    if (f.changesSince !== undefined && f.changesBefore !== undefined && f.changesBefore < f.changesSince) throw badRequest('The value of changes-since must be less than or equal to changes-before.')
    return f
  }

  return async (scope: FastifyInstance): Promise<void> => {
    scope.get<{ Querystring: SingleQuery }>('/v2.1/os-migrations', DOCS.list, async (request) => {
      must(request, 'os-migrations:index')
      const q = request.query
      const page: { limit?: number; beforeId?: number } = {}
      if (at(request, '2.59')) {
        if (q.limit !== undefined) {
          if (!/^\d+$/.test(q.limit)) throw badRequest(`Invalid input for query parameters limit. Value: ${q.limit}.`)
          page.limit = Math.min(Number(q.limit), 1000)
        }
        if (q.marker !== undefined) {
          const marker = await findMigrationByUuid(db, q.marker)
          if (!marker) throw badRequest(`Marker ${q.marker} could not be found.`)
          page.beforeId = marker.id
        }
      }
      const addresses = await hostAddresses(db)
      return { migrations: (await listMigrations(db, filters(request), page)).map((m) => listView(request, m, addresses)) }
    })
    scope.get<{ Params: { id: string } }>('/v2.1/servers/:id/migrations', DOCS.serverList, async (request) => {
      requireGate(request, 'serverMigrations')
      const server = await visibleServer(deps, request, request.params.id)
      must(request, 'servers:migrations:index', { projectId: server.project_id })
      const addresses = await hostAddresses(db)
      return { migrations: (await serverMigrationsInProgress(db, server.id)).map((m) => serverView(request, m, addresses)) }
    })
    scope.get<{ Params: { id: string; migrationId: string } }>('/v2.1/servers/:id/migrations/:migrationId', DOCS.serverShow, async (request) => {
      requireGate(request, 'serverMigrations')
      const server = await visibleServer(deps, request, request.params.id)
      must(request, 'servers:migrations:show', { projectId: server.project_id })
      const m = (await serverMigrationsInProgress(db, server.id)).find((r) => String(r.id) === request.params.migrationId)
      if (!m) throw notFound(`In-progress live migration ${request.params.migrationId} is not found for server ${server.id}.`)
      return { migration: serverView(request, m, await hostAddresses(db)) }
    })
    scope.post<{ Params: { id: string; migrationId: string } }>('/v2.1/servers/:id/migrations/:migrationId/action', DOCS.forceComplete, async (request, reply) => {
      requireGate(request, 'forceCompleteMigration')
      const server = await visibleServer(deps, request, request.params.id)
      must(request, 'servers:migrations:force_complete', { projectId: server.project_id })
      const body = bodyObject(request)
      validate('force_complete', request, () => forceCompleteBody, body)
      await controlLiveMigration(control(request), server, request.params.migrationId, 'forceComplete', { inQueue: false })
      return reply.code(202).send()
    })
    scope.delete<{ Params: { id: string; migrationId: string } }>('/v2.1/servers/:id/migrations/:migrationId', DOCS.abort, async (request, reply) => {
      requireGate(request, 'abortMigration')
      const server = await visibleServer(deps, request, request.params.id)
      must(request, 'servers:migrations:delete', { projectId: server.project_id })
      await controlLiveMigration(control(request), server, request.params.migrationId, 'cancel', { inQueue: request.api.has('abortQueuedMigration') })
      return reply.code(202).send()
    })
  }
}
