/** Volume backups (Cinder's /backups): create, list, show, update (3.9+), delete, restore, actions, export and import. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { badRequest } from '../../../contracts/errors.js'
import type { AppDeps } from '../../deps.js'
import { atLeast } from '../../volume/microversion.js'
import { backupDetail, backupSummary, type ViewContext } from '../../volume/view.js'
import { boolParam, countField, idParams, nextPageLinks, since, paging, nullableString, one, stringMap, type IdRoute, type QueryRoute } from './params.js'
import type { FromSchema } from '../../http/route-types.js'
import { documented, noBody } from '../../http/openapi.js'
import { A, BACKUP_ACTIONS, QUERY } from './answers.js'

const boolish = { anyOf: [{ type: 'boolean' }, { type: 'string', maxLength: 16 }, { type: 'null' }] } as const
const createBackupBody = {
  type: 'object',
  required: ['backup'],
  properties: {
    backup: {
      type: 'object',
      required: ['volume_id'],
      additionalProperties: false,
      properties: {
        volume_id: { type: 'string', maxLength: 64 },
        snapshot_id: nullableString(64),
        container: nullableString(),
        name: nullableString(),
        description: nullableString(),
        incremental: boolish,
        force: boolish,
        metadata: { anyOf: [stringMap, { type: 'null' }] },
        availability_zone: nullableString(),
      },
    },
  },
} as const
const updateBackupBody = {
  type: 'object',
  required: ['backup'],
  properties: { backup: { type: 'object', additionalProperties: false, properties: { name: nullableString(), description: nullableString(), metadata: stringMap } } },
} as const
const restoreBody = {
  type: 'object',
  required: ['restore'],
  properties: { restore: { anyOf: [{ type: 'null' }, { type: 'object', additionalProperties: false, properties: { volume_id: nullableString(64), name: nullableString() } }] } },
} as const
const importBody = {
  type: 'object',
  required: ['backup-record'],
  properties: {
    'backup-record': {
      type: 'object',
      required: ['backup_service', 'backup_url'],
      properties: { backup_service: { type: 'string', maxLength: 255 }, backup_url: { type: 'string', maxLength: 16 * 1024 * 1024 } },
    },
  },
} as const
const actionBody = { type: 'object', minProperties: 1, maxProperties: 1 } as const

/** A flag Cinder accepts as a boolean or its string forms. */
function flag(name: string, value: boolean | string | null | undefined): boolean {
  if (typeof value === 'boolean') return value
  if (typeof value === 'string') return boolParam(name, value) ?? false
  return false
}

export function backupRoutes(r: FastifyInstance, deps: AppDeps, ctx: (request: FastifyRequest) => ViewContext): void {
  const { backups } = deps.volumeServices
  const list = (detail: boolean) => async (request: FastifyRequest<QueryRoute>) => {
    const q = request.query
    const page = paging(q)
    const count = countField(request.volumeVersion, q)
    const found = await backups.list(request.principal, { allTenants: boolParam('all_tenants', q.all_tenants) ?? false, name: one(q.name), status: one(q.status), volumeId: one(q.volume_id), ...page })
    const c = ctx(request)
    const links = nextPageLinks(`${deps.urls.volume}/backups${detail ? '/detail' : ''}`, page.limit, found.backups)
    return { backups: found.backups.map((b) => (detail ? backupDetail(b, c) : backupSummary(b, c))), ...(links ? { backups_links: links } : {}), ...count(found.count) }
  }
  r.get<QueryRoute>('/backups', documented({ summary: 'List backups', querystring: QUERY.backups, response: { 200: A.backups(false) } }), list(false))
  r.get<QueryRoute>('/backups/detail', documented({ summary: 'List backups with details', querystring: QUERY.backups, response: { 200: A.backups(true) } }), list(true))

  r.post<{ Body: FromSchema<typeof createBackupBody> }>(
    '/backups',
    { schema: { body: createBackupBody }, ...documented({ summary: 'Back up a volume (or one of its snapshots)', response: { 202: A.backupSummary } }) },
    async (request, reply) => {
      const b = request.body.backup
      if (b.metadata && !atLeast(request.volumeVersion, '3.43')) throw badRequest("Invalid input received: 'metadata' needs microversion 3.43.")
      if (b.availability_zone && !atLeast(request.volumeVersion, '3.51')) throw badRequest("Invalid input received: 'availability_zone' needs microversion 3.51.")
      const backup = await backups.create(request.principal, {
        volumeId: b.volume_id,
        snapshotId: b.snapshot_id,
        name: b.name,
        description: b.description,
        container: b.container,
        incremental: flag('incremental', b.incremental),
        force: flag('force', b.force),
        metadata: b.metadata ?? undefined,
        availabilityZone: b.availability_zone,
      })
      return reply.code(202).send({ backup: backupSummary(backup, ctx(request)) })
    },
  )
  r.get<IdRoute>('/backups/:id', { schema: { params: idParams }, ...documented({ summary: 'Show a backup', response: { 200: A.backup } }) }, async (request) => ({
    backup: backupDetail(await backups.get(request.principal, request.params.id), ctx(request)),
  }))
  r.put<IdRoute & { Body: FromSchema<typeof updateBackupBody> }>(
    '/backups/:id',
    { schema: { params: idParams, body: updateBackupBody }, ...documented({ summary: "Update a backup's name and description (3.9+), metadata (3.43+)", response: { 200: A.backupSummary } }) },
    async (request) => {
      since(request, '3.9', 'updating a backup')
      const b = request.body.backup
      if (b.metadata && !atLeast(request.volumeVersion, '3.43')) throw badRequest("Invalid input received: 'metadata' needs microversion 3.43.")
      const backup = await backups.update(request.principal, request.params.id, { name: b.name, description: b.description, metadata: b.metadata })
      return { backup: backupSummary(backup, ctx(request)) }
    },
  )
  r.delete<IdRoute>('/backups/:id', { schema: { params: idParams }, ...documented({ summary: 'Delete a backup', response: { 202: noBody('Deletion accepted') } }) }, async (request, reply) => {
    await backups.delete(request.principal, request.params.id)
    return reply.code(202).send()
  })
  r.post<IdRoute & { Body: FromSchema<typeof restoreBody> }>(
    '/backups/:id/restore',
    { schema: { params: idParams, body: restoreBody }, ...documented({ summary: 'Restore a backup to a new volume or onto an available one', response: { 202: A.restore } }) },
    async (request, reply) => {
      const target = request.body.restore ?? {}
      const done = await backups.restore(request.principal, request.params.id, { volumeId: target.volume_id, name: target.name })
      return reply.code(202).send({ restore: { backup_id: request.params.id, volume_id: done.volumeId, volume_name: done.volumeName } })
    },
  )
  const actionDocs = documented({ summary: "Run an admin action on a backup: reset its status, force delete it", body: BACKUP_ACTIONS, response: { 202: noBody('Accepted') } })
  r.post<IdRoute & { Body: FromSchema<typeof actionBody> }>('/backups/:id/action', { schema: { params: idParams, body: actionBody }, ...actionDocs }, async (request, reply) => {
    const [action, args] = Object.entries(request.body)[0]
    const a = (args ?? {}) as Record<string, unknown>
    switch (action) {
      case 'os-reset_status':
        if (typeof a.status !== 'string') throw badRequest("Invalid input received: 'status' is required.")
        await backups.resetStatus(request.principal, request.params.id, a.status)
        return reply.code(202).send()
      case 'os-force_delete':
        await backups.delete(request.principal, request.params.id, true)
        return reply.code(202).send()
      default:
        throw badRequest(`There is no such action: ${action}`)
    }
  })
  r.get<IdRoute>('/backups/:id/export_record', { schema: { params: idParams }, ...documented({ summary: "Export a backup's record (admins)", response: { 200: A.backupRecord } }) }, async (request) => {
    const record = await backups.exportRecord(request.principal, request.params.id)
    return { 'backup-record': { backup_service: record.backupService, backup_url: record.backupUrl } }
  })
  r.post<{ Body: FromSchema<typeof importBody> }>(
    '/backups/import_record',
    { schema: { body: importBody }, ...documented({ summary: 'Import a backup record (admins)', response: { 201: A.backupSummary } }) },
    async (request, reply) => {
      const record = request.body['backup-record']
      const backup = await backups.importRecord(request.principal, record.backup_service, record.backup_url)
      return reply.code(201).send({ backup: backupSummary(backup, ctx(request)) })
    },
  )
}
