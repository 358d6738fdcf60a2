/** Volumes: CRUD, actions (Cinder's attach records among them), metadata, and the attachments API (3.27+). */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppDeps } from '../../deps.js'
import type { ViewContext } from '../../volume/view.js'
import { AppError, badRequest } from '../../../contracts/errors.js'
import { atLeast, formatVersion } from '../../volume/microversion.js'
import { ViewCache } from '../../http/view-cache.js'
import { existingVolumeIds } from '../../volume/repo.js'
import { attachmentView, typeView, volumeDetail, volumeSummary, volumeView } from '../../volume/view.js'
import { cinderTime } from '../../volume/model.js'
import { boolParam, countField, idParams, nextPageLinks, since, paging, metadataParam, nullableString, one, stringMap, type IdRoute, type QueryRoute } from './params.js'
import type { FromSchema } from '../../http/route-types.js'
import { metadataRoutes } from './metadata-routes.js'
import { documented, noBody } from '../../http/openapi.js'
import { A, QUERY, VOLUME_ACTIONS } from './answers.js'
import { allows } from '../../policy/rules.js'
import type { AttachInput, AttachmentAnswer } from '../../volume/cinder-attachments.js'
import { volumePolicy } from '../../policy/volume.policy.js'

const createVolumeBody = {
  type: 'object',
  required: ['volume'],
  properties: {
    volume: {
      type: 'object',
      properties: {
        size: { type: ['integer', 'null'], minimum: 1, maximum: 2147483647 },
        name: nullableString(),
        description: nullableString(),
        display_name: nullableString(),
        display_description: nullableString(),
        volume_type: nullableString(),
        availability_zone: nullableString(),
        snapshot_id: nullableString(64),
        source_volid: nullableString(64),
        imageRef: nullableString(64),
        backup_id: nullableString(64),
        metadata: { anyOf: [stringMap, { type: 'null' }] },
        multiattach: { type: ['boolean', 'null'] },
        consistencygroup_id: nullableString(64),
        group_id: nullableString(64),
      },
    },
  },
} as const

const updateVolumeBody = {
  type: 'object',
  required: ['volume'],
  properties: { volume: { type: 'object', properties: { name: nullableString(), description: nullableString(), display_name: nullableString(), display_description: nullableString(), metadata: stringMap } } },
} as const
const actionBody = { type: 'object', minProperties: 1, maxProperties: 1 } as const

/** An action argument that may be absent (or null), else must be a non-empty string. */
function optionalString(args: Record<string, unknown>, key: string): string | undefined {
  const value = args[key]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string' || value === '' || value.length > 255) throw badRequest(`Invalid input received: '${key}' must be a non-empty string.`)
  return value
}

/** os-attach's arguments, as Cinder's schema takes them: a mountpoint, and the instance (or host) it is attached to. */
function attachInput(args: Record<string, unknown>): AttachInput {
  const mountpoint = optionalString(args, 'mountpoint')
  if (mountpoint === undefined) throw badRequest("Invalid input received: 'mountpoint' is required.")
  const mode = args.mode ?? 'rw'
  if (mode !== 'rw' && mode !== 'ro') throw badRequest(`Invalid input received: Invalid attaching mode '${String(mode)}': expected rw or ro.`)
  return { instanceUuid: optionalString(args, 'instance_uuid'), hostName: optionalString(args, 'host_name'), mountpoint, mode }
}

export function volumeResourceRoutes(r: FastifyInstance, deps: AppDeps, ctx: (request: FastifyRequest) => ViewContext): void {
  const { volumes } = deps.volumeServices
  // ---- volumes ----
  const listVolumes = (detail: boolean) => async (request: FastifyRequest<QueryRoute>) => {
    const q = request.query
    const page = paging(q)
    const count = countField(request.volumeVersion, q)
    const result = await volumes.list(request.principal, {
      allTenants: boolParam('all_tenants', q.all_tenants) ?? false,
      projectId: one(q.project_id),
      name: one(q.name) ?? one(q.display_name),
      status: one(q.status),
      bootable: boolParam('bootable', q.bootable),
      availabilityZone: one(q.availability_zone),
      metadata: metadataParam(q.metadata),
      ...page,
    })
    const c = ctx(request)
    // The next page keeps the request's filters.
    const filters = new URLSearchParams()
    for (const [k, v] of Object.entries(q)) if (k !== 'marker' && k !== 'offset' && v !== undefined) filters.set(k, String(one(v)))
    const links = nextPageLinks(`${deps.urls.volume}/volumes${detail ? '/detail' : ''}`, page.limit, result.volumes, filters)
    return { volumes: result.volumes.map((v) => (detail ? volumeDetail(v, c) : volumeSummary(v, c))), ...(links ? { volumes_links: links } : {}), ...count(result.count) }
  }
  r.get<QueryRoute>('/volumes', documented({ summary: 'List volumes', querystring: QUERY.volumes, response: { 200: A.volumes(false) } }), listVolumes(false))
  r.get<QueryRoute>('/volumes/detail', documented({ summary: 'List volumes with details', querystring: QUERY.volumes, response: { 200: A.volumes(true) } }), listVolumes(true))

  r.post<{ Body: FromSchema<typeof createVolumeBody> }>('/volumes', { schema: { body: createVolumeBody }, ...documented({ summary: 'Create a volume', response: { 202: A.volume } }) }, async (request, reply) => {
    const v = request.body.volume
    const str = (x: unknown) => (typeof x === 'string' ? x : null)
    const input = {
      multiattach: v.multiattach === true,
      size: typeof v.size === 'number' ? v.size : undefined,
      name: str(v.name) ?? str(v.display_name),
      description: str(v.description) ?? str(v.display_description),
      volume_type: str(v.volume_type),
      availability_zone: str(v.availability_zone),
      snapshot_id: str(v.snapshot_id),
      source_volid: str(v.source_volid),
      imageRef: str(v.imageRef),
      metadata: v.metadata ?? {},
      // Cinder reads group_id from 3.13 (generic volume groups) and ignores it before.
      group_id: atLeast(request.volumeVersion, '3.13') ? str(v.group_id) : null,
    }
    // 3.47: a volume made from a backup (restored into it); before, Cinder's schema has no backup_id.
    const backupId = atLeast(request.volumeVersion, '3.47') ? str(v.backup_id) : null
    const volume = backupId ? await deps.volumeServices.backups.createVolume(request.principal, backupId, input) : await volumes.create(request.principal, input)
    return reply.code(202).send({ volume: volumeView(volume, ctx(request)) })
  })

  // 3.12: how many volumes the caller sees and their total size; from 3.36 the metadata keys with their values.
  r.get<QueryRoute>('/volumes/summary', documented({ summary: 'How many volumes the caller sees and their total size (3.12+)', querystring: QUERY.volumeSummary, response: { 200: A.volumeSummary } }), async (request) => {
    if (!atLeast(request.volumeVersion, '3.12')) throw new AppError('not_found', 'Volume summary could not be found.')
    const q = request.query
    const { volumes: all } = await volumes.list(request.principal, { allTenants: boolParam('all_tenants', q.all_tenants) ?? false, sort: [{ key: 'id', dir: 'asc' }] })
    const metadata: Record<string, string[]> = {}
    for (const v of all) for (const [key, value] of Object.entries(v.metadata)) if (!(metadata[key] ??= []).includes(value)) metadata[key].push(value)
    return {
      'volume-summary': {
        total_size: all.reduce((n, v) => n + v.size, 0),
        total_count: all.length,
        ...(atLeast(request.volumeVersion, '3.36') ? { metadata } : {}),
      },
    }
  })

  // Kept views per volume revision (http/view-cache.ts, migration 0128). The view depends on the microversion and
  // on admin or not (ViewContext); its links on the public URL only, which is the same for every request.
  const views = new ViewCache({ budgetBytes: deps.config.viewCacheMb * 1024 * 1024, live: (ids) => existingVolumeIds(deps.store.db, ids) })
  r.get<IdRoute>('/volumes/:id', { schema: { params: idParams }, ...documented({ summary: 'Show a volume', response: { 200: A.volume } }) }, async (request, reply) => {
    const { id } = request.params
    const c = ctx(request)
    const stamp = await volumes.viewStamp(request.principal, id)
    const variant = `volume|${formatVersion(c.version)}|${c.isAdmin ? 'admin' : 'member'}`
    const body = await views.keep(variant, id, stamp, async () => ({ volume: volumeDetail(await volumes.get(request.principal, id), c) }))
    // The header Fastify gives the object this route answered before its view was kept.
    return reply.type('application/json; charset=utf-8').send(body)
  })

  r.put<IdRoute & { Body: FromSchema<typeof updateVolumeBody> }>(
    '/volumes/:id',
    {
      schema: { params: idParams, body: updateVolumeBody },
      ...documented({ summary: 'Update a volume', response: { 200: A.volume } }),
    },
    async (request) => {
      const { id } = request.params
      const v = request.body.volume
      const volume = await volumes.update(request.principal, id, {
        name: v.name !== undefined ? v.name : v.display_name,
        description: v.description !== undefined ? v.description : v.display_description,
        metadata: v.metadata,
      })
      return { volume: volumeView(volume, ctx(request)) }
    },
  )

  r.delete<IdRoute & QueryRoute>('/volumes/:id', { schema: { params: idParams }, ...documented({ summary: 'Delete a volume', querystring: QUERY.deleteVolume, response: { 202: noBody('Deletion accepted') } }) }, async (request, reply) => {
    const { id } = request.params
    const q = request.query
    await volumes.delete(request.principal, id, { cascade: boolParam('cascade', q.cascade) ?? false })
    return reply.code(202).send()
  })

  const actionDocs = documented({
    summary: 'Run an action on a volume (extend, set bootable, reset status, retype, image metadata, upload to an image…)',
    body: VOLUME_ACTIONS,
    response: { 200: { anyOf: [A.metadata, { type: 'null' }] }, 202: { description: 'Accepted; os-volume_upload_image answers the image it makes', anyOf: [A.uploadedImage, { type: 'null' }] } },
  })
  r.post<IdRoute & { Body: FromSchema<typeof actionBody> }>('/volumes/:id/action', { schema: { params: idParams, body: actionBody }, ...actionDocs }, async (request, reply) => {
    const { id } = request.params
    const [action, args] = Object.entries(request.body)[0]
    const a = (args ?? {}) as Record<string, unknown>
    switch (action) {
      case 'os-extend': {
        const newSize = typeof a.new_size === 'string' && /^\d+$/.test(a.new_size) ? Number(a.new_size) : a.new_size
        if (typeof newSize !== 'number' || !Number.isInteger(newSize)) throw badRequest("Invalid input received: 'new_size' must be a whole number.")
        // Extending an attached volume is Cinder's 3.42.
        await volumes.extend(request.principal, id, newSize, atLeast(request.volumeVersion, '3.42'), request.id)
        return reply.code(202).send()
      }
      case 'os-set_bootable': {
        const flag = typeof a.bootable === 'boolean' ? a.bootable : boolParam('bootable', a.bootable)
        if (flag === undefined) throw badRequest("Invalid input received: 'bootable' is required.")
        await volumes.setBootable(request.principal, id, flag)
        return reply.code(200).send()
      }
      case 'os-reset_status': {
        if (typeof a.status !== 'string') throw badRequest("Invalid input received: 'status' is required.")
        await volumes.resetStatus(request.principal, id, a.status)
        return reply.code(202).send()
      }
      case 'os-update_readonly_flag': {
        const flag = typeof a.readonly === 'boolean' ? a.readonly : boolParam('readonly', a.readonly)
        if (flag === undefined) throw badRequest("Invalid input received: 'readonly' is required.")
        await volumes.setMetadata(request.principal, id, { readonly: flag ? 'True' : 'False' }, false)
        return reply.code(202).send()
      }
      case 'os-retype': {
        if (typeof a.new_type !== 'string') throw badRequest("Invalid input received: 'new_type' is required.")
        const policy = a.migration_policy ?? 'never'
        if (policy !== 'never' && policy !== 'on-demand') throw badRequest(`Invalid input received: migration_policy must be never or on-demand, not ${String(policy)}.`)
        await volumes.retype(request.principal, id, a.new_type, policy)
        return reply.code(202).send()
      }
      case 'os-set_image_metadata': {
        const metadata = a.metadata
        if (!metadata || typeof metadata !== 'object' || Object.values(metadata).some((v) => typeof v !== 'string')) {
          throw badRequest("Invalid input received: 'metadata' must be an object of strings.")
        }
        return { metadata: await volumes.changeImageMetadata(request.principal, id, { set: metadata as Record<string, string> }) }
      }
      case 'os-unset_image_metadata': {
        if (typeof a.key !== 'string') throw badRequest("Invalid input received: 'key' is required.")
        await volumes.changeImageMetadata(request.principal, id, { unset: a.key })
        return reply.code(200).send()
      }
      case 'os-show_image_metadata':
        return { metadata: (await volumes.get(request.principal, id)).imageMetadata ?? {} }
      case 'os-volume_upload_image': {
        if (typeof a.image_name !== 'string' || a.image_name === '') throw badRequest("Invalid input received: 'image_name' is required.")
        const force = typeof a.force === 'boolean' ? a.force : (boolParam('force', a.force) ?? false)
        const diskFormat = typeof a.disk_format === 'string' ? a.disk_format : 'raw'
        const containerFormat = typeof a.container_format === 'string' ? a.container_format : 'bare'
        const visibility = a.visibility ?? 'private'
        if (visibility !== 'private' && visibility !== 'shared') throw badRequest(`Invalid input received: visibility ${String(visibility)} is not allowed for an image from a volume (private or shared).`)
        const { volume, image } = await volumes.uploadToImage(request.principal, id, { imageName: a.image_name, diskFormat, containerFormat, force, visibility })
        return reply.code(202).send({
          'os-volume_upload_image': {
            id: volume.id,
            updated_at: cinderTime(volume.updatedAt),
            status: volume.status,
            display_description: volume.description,
            size: volume.size,
            volume_type: typeView(await deps.volumeServices.volumeTypes.get(request.principal, volume.volumeTypeId), false),
            image_id: image.id,
            container_format: containerFormat,
            disk_format: diskFormat,
            image_name: image.name,
          },
        })
      }
      case 'os-reserve':
      case 'os-unreserve':
        await volumes.reserve(request.principal, id, action === 'os-reserve')
        return reply.code(202).send()
      case 'os-force_delete':
        await volumes.forceDelete(request.principal, id)
        return reply.code(202).send()
      case 'os-attach':
        await deps.volumeServices.attachActions.attach(request.principal, id, attachInput(a))
        return reply.code(202).send()
      case 'os-detach':
        await deps.volumeServices.attachActions.detach(request.principal, id, optionalString(a, 'attachment_id'))
        return reply.code(202).send()
      case 'os-force_detach':
        await deps.volumeServices.attachActions.forceDetach(request.principal, id, optionalString(a, 'attachment_id'))
        return reply.code(202).send()
      default:
        throw badRequest(`There is no such action: ${action}`)
    }
  })

  // ---- volume metadata ----
  metadataRoutes(r, 'volumes', volumes)

  // ---- attachments (3.27+): compute's and the consumers' of the attachments API ----
  const listAttachments = (detail: boolean) => async (request: FastifyRequest<QueryRoute>) => {
    if (!atLeast(request.volumeVersion, '3.27')) throw new AppError('not_found', 'The resource could not be found (attachments need microversion 3.27).')
    const q = request.query
    const rows = await volumes.listAttachments(request.principal, { allTenants: boolParam('all_tenants', q.all_tenants) ?? false, volumeId: one(q.volume_id), serverId: one(q.instance_id) })
    return { attachments: rows.map((a) => attachmentView(a, detail)) }
  }
  r.get<QueryRoute>('/attachments', documented({ summary: 'List attachments (3.27+)', querystring: QUERY.attachments, response: { 200: A.attachments } }), listAttachments(false))
  r.get<QueryRoute>('/attachments/detail', documented({ summary: 'List attachments with details (3.27+)', querystring: QUERY.attachments, response: { 200: A.attachments } }), listAttachments(true))
  r.get<IdRoute>('/attachments/:id', { schema: { params: idParams }, ...documented({ summary: 'Show an attachment (3.27+)', response: { 200: A.attachment } }) }, async (request) => {
    if (!atLeast(request.volumeVersion, '3.27')) throw new AppError('not_found', 'The resource could not be found (attachments need microversion 3.27).')
    const { id } = request.params
    const found = (await volumes.listAttachments(request.principal, { allTenants: allows(volumePolicy, 'volume:all_tenants', request.principal) })).find((a) => a.id === id)
    if (!found) throw new AppError('not_found', `VolumeAttachment ${id} could not be found.`)
    return { attachment: attachmentView(found, true) }
  })
  attachmentWriteRoutes(r, deps)
}

const connector = { type: ['object', 'null'], additionalProperties: true } as const
const createAttachmentBody = {
  type: 'object',
  required: ['attachment'],
  properties: {
    attachment: {
      type: 'object',
      required: ['volume_uuid'],
      properties: { volume_uuid: { type: 'string', minLength: 1, maxLength: 64 }, instance_uuid: nullableString(64), connector, mode: { type: 'string', enum: ['rw', 'ro'] } },
    },
  },
} as const
const updateAttachmentBody = { type: 'object', required: ['attachment'], properties: { attachment: { type: 'object', required: ['connector'], properties: { connector: { type: 'object', additionalProperties: true } } } } } as const
const attachmentActionBody = { type: 'object', required: ['os-complete'], properties: { 'os-complete': { type: 'null' } }, additionalProperties: false } as const

/** The attachments API's writes (docs/image-volume.md, "The attachments API"), each from its microversion. */
function attachmentWriteRoutes(r: FastifyInstance, deps: AppDeps): void {
  const actions = deps.volumeServices.attachActions
  const answer = ({ attachment, connectionInfo }: AttachmentAnswer) => ({ attachment: { ...attachmentView(attachment, true), ...(connectionInfo ? { connection_info: connectionInfo } : {}) } })

  r.post<{ Body: FromSchema<typeof createAttachmentBody> }>(
    '/attachments',
    { schema: { body: createAttachmentBody }, ...documented({ summary: 'Attach a volume to an instance for a consumer (3.27+; connected when a connector is given)', response: { 200: A.attachment } }) },
    async (request) => {
      since(request, '3.27', 'attachments')
      const { volume_uuid, instance_uuid, connector, mode } = request.body.attachment
      if (mode !== undefined && !atLeast(request.volumeVersion, '3.54')) throw badRequest("Invalid input received: 'mode' needs microversion 3.54.")
      if (instance_uuid === undefined || instance_uuid === null) throw badRequest('Invalid input received: pcc records attachments to instances; instance_uuid is required.')
      return answer(await actions.createAttachment(request.principal, { volumeId: volume_uuid, instanceUuid: instance_uuid, connector: connector ?? undefined, mode: mode ?? 'rw' }))
    },
  )
  r.put<IdRoute & { Body: FromSchema<typeof updateAttachmentBody> }>(
    '/attachments/:id',
    { schema: { params: idParams, body: updateAttachmentBody }, ...documented({ summary: "Connect an attachment for its consumer's connector (3.27+)", response: { 200: A.attachment } }) },
    async (request) => {
      since(request, '3.27', 'attachments')
      return answer(await actions.updateAttachment(request.principal, request.params.id, request.body.attachment.connector))
    },
  )
  r.post<IdRoute & { Body: FromSchema<typeof attachmentActionBody> }>(
    '/attachments/:id/action',
    { schema: { params: idParams, body: attachmentActionBody }, ...documented({ summary: 'Mark an attachment complete (os-complete, 3.44+)', response: { 204: noBody('Completed') } }) },
    async (request, reply) => {
      since(request, '3.44', 'os-complete')
      await actions.completeAttachment(request.principal, request.params.id)
      return reply.code(204).send()
    },
  )
  r.delete<IdRoute>('/attachments/:id', { schema: { params: idParams }, ...documented({ summary: "Delete an attachment and its consumer's connection (3.27+)", response: { 200: A.attachments } }) }, async (request) => {
    since(request, '3.27', 'attachments')
    const left = await actions.deleteAttachment(request.principal, request.params.id)
    return { attachments: left.map((a) => attachmentView(a, false)) }
  })
}
