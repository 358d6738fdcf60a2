/**
 * The block storage API (Cinder v3 under {base}/volume). The catalog URL is `{base}/volume/v3`; every route is
 * also served under `/v3/{project_id}/…`, the form older clients build. Handlers are thin: parse, call the
 * service once, shape the answer for the request's microversion.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { AppError, badRequest } from '../../../contracts/errors.js'
import type { AppDeps } from '../../deps.js'
import { authHook } from '../../auth/http-auth.js'
import { authorize } from '../../policy/rules.js'
import { volumePolicy } from '../../policy/volume.policy.js'
import { atLeast, formatVersion, MAX_VOLUME_VERSION, MIN_VOLUME_VERSION, requestedVersion, type VolumeVersion } from '../../volume/microversion.js'
import { DEFAULT_QUOTAS, QUOTA_RESOURCES, quotaLimits, quotaUsage } from '../../volume/quotas.js'
import { callerOf, type VolumeListQuery } from '../../volume/service.js'
import { attachmentView, snapshotDetail, snapshotSummary, typeView, volumeDetail, volumeSummary, type ViewContext } from '../../volume/view.js'

declare module 'fastify' {
  interface FastifyRequest {
    volumeVersion: VolumeVersion
  }
}

const nullableString = (max = 255) => ({ type: ['string', 'null'], maxLength: max }) as const
const stringMap = { type: 'object', additionalProperties: { type: 'string', maxLength: 255 } } as const
const idParams = { type: 'object', properties: { id: { type: 'string', maxLength: 64 } }, required: ['id'] } as const

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

type CreateVolumeBody = { volume: Record<string, unknown> & { metadata?: Record<string, string> | null } }

function versionDoc(deps: AppDeps) {
  return {
    id: 'v3.0',
    status: 'CURRENT',
    version: MAX_VOLUME_VERSION,
    min_version: MIN_VOLUME_VERSION,
    updated: '2023-01-01T00:00:00Z',
    links: [
      { rel: 'describedby', type: 'text/html', href: 'https://docs.openstack.org/' },
      { rel: 'self', href: `${deps.urls.volume}/` },
    ],
    'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.volume+json;version=3' }],
  }
}

function one(value: unknown): string | undefined {
  return Array.isArray(value) ? String(value[value.length - 1]) : value === undefined ? undefined : String(value)
}

function intParam(name: string, value: unknown, min: number): number | undefined {
  const raw = one(value)
  if (raw === undefined) return undefined
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw badRequest(`Invalid value '${raw}' for '${name}': expected a whole number of at least ${min}.`)
  return Number(raw)
}

function boolParam(name: string, value: unknown): boolean | undefined {
  const raw = one(value)?.toLowerCase()
  if (raw === undefined) return undefined
  if (['true', '1', 'yes', 'on'].includes(raw)) return true
  if (['false', '0', 'no', 'off'].includes(raw)) return false
  throw badRequest(`Invalid value '${raw}' for '${name}': expected true or false.`)
}

/** cinderclient sends metadata filters as a Python dict literal; accept JSON too. */
function metadataParam(value: unknown): Record<string, string> | undefined {
  const raw = one(value)
  if (raw === undefined) return undefined
  for (const text of [raw, raw.replace(/'/g, '"')]) {
    try {
      const parsed = JSON.parse(text) as unknown
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, String(v)]))
    } catch {
      // try the next form
    }
  }
  throw badRequest(`Invalid value for 'metadata': expected a JSON object, got '${raw}'.`)
}

function sortParam(query: Record<string, unknown>): VolumeListQuery['sort'] {
  const dirOf = (d: string | undefined): 'asc' | 'desc' => {
    const dir = (d ?? 'desc').toLowerCase()
    if (dir !== 'asc' && dir !== 'desc') throw badRequest(`Invalid sort direction '${d}': expected asc or desc.`)
    return dir
  }
  const sort = one(query.sort)
  if (sort !== undefined) {
    if (query.sort_key !== undefined || query.sort_dir !== undefined) throw badRequest("The 'sort' parameter cannot be combined with 'sort_key' or 'sort_dir'.")
    return sort.split(',').map((part) => {
      const [key, dir] = part.split(':')
      return { key: key.trim(), dir: dirOf(dir) }
    })
  }
  const key = one(query.sort_key)
  return [{ key: key ?? 'created_at', dir: dirOf(one(query.sort_dir)) }]
}

export function volumeRoutes(deps: AppDeps) {
  return async (scope: FastifyInstance): Promise<void> => {
    // cinderclient and keystoneauth read the unversioned root; Cinder answers it with 300.
    scope.get('/', async (_request, reply) => reply.code(300).send({ versions: [versionDoc(deps)] }))

    const v3 = async (api: FastifyInstance): Promise<void> => {
      api.get('/', async () => ({ versions: [versionDoc(deps)] }))

      await api.register(async (r) => {
        r.decorateRequest('volumeVersion', null as unknown as VolumeVersion)
        r.addHook('onRequest', async (request, reply) => {
          request.volumeVersion = requestedVersion(request.headers['openstack-api-version'])
          reply.header('openstack-api-version', `volume ${formatVersion(request.volumeVersion)}`).header('vary', 'OpenStack-API-Version')
        })
        r.addHook('onRequest', authHook(deps.tokens, deps.urls.identity))
        r.addHook('preHandler', async (request) => {
          const pathProject = (request.params as { project_id?: string }).project_id
          if (pathProject !== undefined && !request.principal.roles.includes('admin')) {
            const caller = callerOf(request.principal)
            if (caller.projectId !== pathProject) throw badRequest('Malformed request url: the project in the path is not the project of the token.')
          }
        })
        const ctx = (request: FastifyRequest): ViewContext => ({ version: request.volumeVersion, isAdmin: request.principal.roles.includes('admin'), baseUrl: deps.urls.volume })
        const { volumes, snapshots, volumeTypes } = deps.volumeServices

        // ---- volumes ----
        const listVolumes = (detail: boolean) => async (request: FastifyRequest) => {
          const q = request.query as Record<string, unknown>
          const limit = intParam('limit', q.limit, 1)
          const result = await volumes.list(request.principal, {
            allTenants: boolParam('all_tenants', q.all_tenants) ?? false,
            projectId: one(q.project_id),
            name: one(q.name) ?? one(q.display_name),
            status: one(q.status),
            bootable: boolParam('bootable', q.bootable),
            availabilityZone: one(q.availability_zone),
            metadata: metadataParam(q.metadata),
            limit,
            marker: one(q.marker),
            offset: intParam('offset', q.offset, 0),
            sort: sortParam(q),
          })
          const c = ctx(request)
          const body: Record<string, unknown> = { volumes: result.volumes.map((v) => (detail ? volumeDetail(v, c) : volumeSummary(v, c))) }
          if (result.more && limit !== undefined && result.volumes.length > 0) {
            const params = new URLSearchParams()
            for (const [k, v] of Object.entries(q)) if (k !== 'marker' && k !== 'offset' && v !== undefined) params.set(k, String(one(v)))
            params.set('marker', result.volumes[result.volumes.length - 1].id)
            body.volumes_links = [{ rel: 'next', href: `${deps.urls.volume}/volumes${detail ? '/detail' : ''}?${params}` }]
          }
          return body
        }
        r.get('/volumes', listVolumes(false))
        r.get('/volumes/detail', listVolumes(true))

        r.post('/volumes', { schema: { body: createVolumeBody } }, async (request, reply) => {
          const v = (request.body as CreateVolumeBody).volume
          const str = (x: unknown) => (typeof x === 'string' ? x : null)
          const volume = await volumes.create(request.principal, {
            size: typeof v.size === 'number' ? v.size : undefined,
            name: str(v.name) ?? str(v.display_name),
            description: str(v.description) ?? str(v.display_description),
            volume_type: str(v.volume_type),
            availability_zone: str(v.availability_zone),
            snapshot_id: str(v.snapshot_id),
            source_volid: str(v.source_volid),
            imageRef: str(v.imageRef),
            metadata: v.metadata ?? {},
          })
          if (str(v.backup_id)) throw badRequest('Restoring from backups is not supported.')
          return reply.code(202).send({ volume: volumeDetail(volume, ctx(request)) })
        })

        r.get('/volumes/:id', { schema: { params: idParams } }, async (request) => {
          const { id } = request.params as { id: string }
          return { volume: volumeDetail(await volumes.get(request.principal, id), ctx(request)) }
        })

        r.put(
          '/volumes/:id',
          {
            schema: {
              params: idParams,
              body: {
                type: 'object',
                required: ['volume'],
                properties: { volume: { type: 'object', properties: { name: nullableString(), description: nullableString(), display_name: nullableString(), display_description: nullableString(), metadata: stringMap } } },
              },
            },
          },
          async (request) => {
            const { id } = request.params as { id: string }
            const v = (request.body as { volume: { name?: string | null; description?: string | null; display_name?: string | null; display_description?: string | null; metadata?: Record<string, string> } }).volume
            const volume = await volumes.update(request.principal, id, {
              name: v.name !== undefined ? v.name : v.display_name,
              description: v.description !== undefined ? v.description : v.display_description,
              metadata: v.metadata,
            })
            return { volume: volumeDetail(volume, ctx(request)) }
          },
        )

        r.delete('/volumes/:id', { schema: { params: idParams } }, async (request, reply) => {
          const { id } = request.params as { id: string }
          const q = request.query as Record<string, unknown>
          await volumes.delete(request.principal, id, { cascade: boolParam('cascade', q.cascade) ?? false })
          return reply.code(202).send()
        })

        r.post('/volumes/:id/action', { schema: { params: idParams, body: { type: 'object', minProperties: 1, maxProperties: 1 } } }, async (request, reply) => {
          const { id } = request.params as { id: string }
          const [action, args] = Object.entries(request.body as Record<string, unknown>)[0]
          const a = (args ?? {}) as Record<string, unknown>
          switch (action) {
            case 'os-extend': {
              const newSize = typeof a.new_size === 'string' && /^\d+$/.test(a.new_size) ? Number(a.new_size) : a.new_size
              if (typeof newSize !== 'number' || !Number.isInteger(newSize)) throw badRequest("Invalid input received: 'new_size' must be a whole number.")
              await volumes.extend(request.principal, id, newSize)
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
              await volumes.retype(request.principal, id, a.new_type)
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
            case 'os-force_delete':
              await volumes.forceDelete(request.principal, id)
              return reply.code(202).send()
            default:
              throw badRequest(`There is no such action: ${action}`)
          }
        })

        // ---- volume metadata ----
        const metadataBody = { type: 'object', required: ['metadata'], properties: { metadata: stringMap } } as const
        r.get('/volumes/:id/metadata', { schema: { params: idParams } }, async (request) => {
          const { id } = request.params as { id: string }
          return { metadata: (await volumes.get(request.principal, id)).metadata }
        })
        r.post('/volumes/:id/metadata', { schema: { params: idParams, body: metadataBody } }, async (request) => {
          const { id } = request.params as { id: string }
          return { metadata: await volumes.setMetadata(request.principal, id, (request.body as { metadata: Record<string, string> }).metadata, false) }
        })
        r.put('/volumes/:id/metadata', { schema: { params: idParams, body: metadataBody } }, async (request) => {
          const { id } = request.params as { id: string }
          return { metadata: await volumes.setMetadata(request.principal, id, (request.body as { metadata: Record<string, string> }).metadata, true) }
        })
        const keyParams = { type: 'object', properties: { id: { type: 'string' }, key: { type: 'string', maxLength: 255 } }, required: ['id', 'key'] } as const
        r.get('/volumes/:id/metadata/:key', { schema: { params: keyParams } }, async (request) => {
          const { id, key } = request.params as { id: string; key: string }
          const metadata = (await volumes.get(request.principal, id)).metadata
          if (!(key in metadata)) throw new AppError('not_found', `Metadata item was not found: ${key}`)
          return { meta: { [key]: metadata[key] } }
        })
        r.put('/volumes/:id/metadata/:key', { schema: { params: keyParams, body: { type: 'object', required: ['meta'], properties: { meta: { ...stringMap, minProperties: 1, maxProperties: 1 } } } } }, async (request) => {
          const { id, key } = request.params as { id: string; key: string }
          const meta = (request.body as { meta: Record<string, string> }).meta
          if (!(key in meta)) throw badRequest('Request body and URI mismatch')
          await volumes.setMetadata(request.principal, id, meta, false)
          return { meta }
        })
        r.delete('/volumes/:id/metadata/:key', { schema: { params: keyParams } }, async (request, reply) => {
          const { id, key } = request.params as { id: string; key: string }
          await volumes.deleteMetadataKey(request.principal, id, key)
          return reply.code(200).send()
        })

        // ---- snapshots ----
        const listSnapshots = (detail: boolean) => async (request: FastifyRequest) => {
          const q = request.query as Record<string, unknown>
          const limit = intParam('limit', q.limit, 1)
          const sort = sortParam(q)
          const result = await snapshots.list(request.principal, {
            allTenants: boolParam('all_tenants', q.all_tenants) ?? false,
            name: one(q.name),
            status: one(q.status),
            volumeId: one(q.volume_id),
            limit,
            marker: one(q.marker),
            offset: intParam('offset', q.offset, 0),
            sortDir: sort[0].dir,
          })
          const c = ctx(request)
          const body: Record<string, unknown> = { snapshots: result.snapshots.map((s) => (detail ? snapshotDetail(s, c) : snapshotSummary(s, c))) }
          if (result.more && limit !== undefined && result.snapshots.length > 0) {
            const params = new URLSearchParams({ limit: String(limit), marker: result.snapshots[result.snapshots.length - 1].id })
            body.snapshots_links = [{ rel: 'next', href: `${deps.urls.volume}/snapshots${detail ? '/detail' : ''}?${params}` }]
          }
          return body
        }
        r.get('/snapshots', listSnapshots(false))
        r.get('/snapshots/detail', listSnapshots(true))
        r.post(
          '/snapshots',
          {
            schema: {
              body: {
                type: 'object',
                required: ['snapshot'],
                properties: {
                  snapshot: {
                    type: 'object',
                    required: ['volume_id'],
                    properties: {
                      volume_id: { type: 'string', maxLength: 64 },
                      name: nullableString(),
                      display_name: nullableString(),
                      description: nullableString(),
                      display_description: nullableString(),
                      force: { anyOf: [{ type: 'boolean' }, { type: 'string' }, { type: 'null' }] },
                      metadata: { anyOf: [stringMap, { type: 'null' }] },
                    },
                  },
                },
              },
            },
          },
          async (request, reply) => {
            const s = (request.body as { snapshot: Record<string, unknown> }).snapshot
            const str = (x: unknown) => (typeof x === 'string' ? x : null)
            const force = typeof s.force === 'boolean' ? s.force : typeof s.force === 'string' ? boolParam('force', s.force) : false
            const snapshot = await snapshots.create(request.principal, {
              volume_id: s.volume_id as string,
              name: str(s.name) ?? str(s.display_name),
              description: str(s.description) ?? str(s.display_description),
              force,
              metadata: (s.metadata as Record<string, string> | null) ?? {},
            })
            return reply.code(202).send({ snapshot: snapshotDetail(snapshot, ctx(request)) })
          },
        )
        r.get('/snapshots/:id', { schema: { params: idParams } }, async (request) => {
          const { id } = request.params as { id: string }
          return { snapshot: snapshotDetail(await snapshots.get(request.principal, id), ctx(request)) }
        })
        r.put(
          '/snapshots/:id',
          { schema: { params: idParams, body: { type: 'object', required: ['snapshot'], properties: { snapshot: { type: 'object', properties: { name: nullableString(), description: nullableString(), display_name: nullableString(), display_description: nullableString() } } } } } },
          async (request) => {
            const { id } = request.params as { id: string }
            const s = (request.body as { snapshot: Record<string, string | null | undefined> }).snapshot
            const snapshot = await snapshots.update(request.principal, id, {
              name: s.name !== undefined ? s.name : s.display_name,
              description: s.description !== undefined ? s.description : s.display_description,
            })
            return { snapshot: snapshotDetail(snapshot, ctx(request)) }
          },
        )
        r.delete('/snapshots/:id', { schema: { params: idParams } }, async (request, reply) => {
          const { id } = request.params as { id: string }
          await snapshots.delete(request.principal, id)
          return reply.code(202).send()
        })
        r.get('/snapshots/:id/metadata', { schema: { params: idParams } }, async (request) => {
          const { id } = request.params as { id: string }
          return { metadata: (await snapshots.get(request.principal, id)).metadata }
        })
        r.post('/snapshots/:id/metadata', { schema: { params: idParams, body: metadataBody } }, async (request) => {
          const { id } = request.params as { id: string }
          return { metadata: await snapshots.setMetadata(request.principal, id, (request.body as { metadata: Record<string, string> }).metadata, false) }
        })
        r.put('/snapshots/:id/metadata', { schema: { params: idParams, body: metadataBody } }, async (request) => {
          const { id } = request.params as { id: string }
          return { metadata: await snapshots.setMetadata(request.principal, id, (request.body as { metadata: Record<string, string> }).metadata, true) }
        })

        r.get('/snapshots/:id/metadata/:key', { schema: { params: keyParams } }, async (request) => {
          const { id, key } = request.params as { id: string; key: string }
          const metadata = (await snapshots.get(request.principal, id)).metadata
          if (!(key in metadata)) throw new AppError('not_found', `Metadata item was not found: ${key}`)
          return { meta: { [key]: metadata[key] } }
        })
        r.delete('/snapshots/:id/metadata/:key', { schema: { params: keyParams } }, async (request, reply) => {
          const { id, key } = request.params as { id: string; key: string }
          const metadata = { ...(await snapshots.get(request.principal, id)).metadata }
          if (!(key in metadata)) throw new AppError('not_found', `Metadata item was not found: ${key}`)
          delete metadata[key]
          await snapshots.setMetadata(request.principal, id, metadata, true)
          return reply.code(200).send()
        })

        // ---- attachments (3.27+): read-only here; attaching is compute's business ----
        const listAttachments = (detail: boolean) => async (request: FastifyRequest) => {
          if (!atLeast(request.volumeVersion, '3.27')) throw new AppError('not_found', 'The resource could not be found (attachments need microversion 3.27).')
          const q = request.query as Record<string, unknown>
          const rows = await volumes.listAttachments(request.principal, { allTenants: boolParam('all_tenants', q.all_tenants) ?? false, volumeId: one(q.volume_id), serverId: one(q.instance_id) })
          return { attachments: rows.map((a) => attachmentView(a, detail)) }
        }
        r.get('/attachments', listAttachments(false))
        r.get('/attachments/detail', listAttachments(true))
        r.get('/attachments/:id', { schema: { params: idParams } }, async (request) => {
          if (!atLeast(request.volumeVersion, '3.27')) throw new AppError('not_found', 'The resource could not be found (attachments need microversion 3.27).')
          const { id } = request.params as { id: string }
          const found = (await volumes.listAttachments(request.principal, { allTenants: request.principal.roles.includes('admin') })).find((a) => a.id === id)
          if (!found) throw new AppError('not_found', `VolumeAttachment ${id} could not be found.`)
          return { attachment: attachmentView(found, true) }
        })

        // ---- volume types ----
        r.get('/types', async (request) => ({ volume_types: (await volumeTypes.list(request.principal)).map((t) => typeView(t, ctx(request).isAdmin)) }))
        r.get('/types/default', async (request) => ({ volume_type: typeView(await volumeTypes.getDefault(), ctx(request).isAdmin) }))
        r.get('/types/:id', { schema: { params: idParams } }, async (request) => {
          const { id } = request.params as { id: string }
          return { volume_type: typeView(await volumeTypes.get(request.principal, id), ctx(request).isAdmin) }
        })
        const typeBody = {
          type: 'object',
          required: ['volume_type'],
          properties: {
            volume_type: {
              type: 'object',
              properties: { name: { type: 'string', minLength: 1, maxLength: 255 }, description: nullableString(), 'os-volume-type-access:is_public': { type: 'boolean' }, is_public: { type: 'boolean' }, extra_specs: stringMap },
            },
          },
        } as const
        type TypeInput = { name?: string; description?: string | null; 'os-volume-type-access:is_public'?: boolean; is_public?: boolean; extra_specs?: Record<string, string> }
        r.post('/types', { schema: { body: typeBody } }, async (request) => {
          const t = (request.body as { volume_type: TypeInput }).volume_type
          if (!t.name) throw badRequest("Invalid input received: 'name' is required.")
          const type = await volumeTypes.create(request.principal, { name: t.name, description: t.description, is_public: t['os-volume-type-access:is_public'] ?? t.is_public, extra_specs: t.extra_specs })
          return { volume_type: typeView(type, true) }
        })
        r.put('/types/:id', { schema: { params: idParams, body: typeBody } }, async (request) => {
          const { id } = request.params as { id: string }
          const t = (request.body as { volume_type: TypeInput }).volume_type
          return { volume_type: typeView(await volumeTypes.update(request.principal, id, { name: t.name, description: t.description, is_public: t['os-volume-type-access:is_public'] ?? t.is_public }), true) }
        })
        r.delete('/types/:id', { schema: { params: idParams } }, async (request, reply) => {
          const { id } = request.params as { id: string }
          await volumeTypes.delete(request.principal, id)
          return reply.code(202).send()
        })
        r.get('/types/:id/extra_specs', { schema: { params: idParams } }, async (request) => {
          const { id } = request.params as { id: string }
          authorize(volumePolicy, 'type:manage', request.principal)
          return { extra_specs: (await volumeTypes.get(request.principal, id)).extraSpecs }
        })
        r.post('/types/:id/extra_specs', { schema: { params: idParams, body: { type: 'object', required: ['extra_specs'], properties: { extra_specs: stringMap } } } }, async (request) => {
          const { id } = request.params as { id: string }
          return { extra_specs: await volumeTypes.setExtraSpecs(request.principal, id, (request.body as { extra_specs: Record<string, string> }).extra_specs) }
        })

        // ---- quotas, limits, zones ----
        const quotaParams = { type: 'object', properties: { target: { type: 'string', maxLength: 64 } }, required: ['target'] } as const
        r.get('/os-quota-sets/:target', { schema: { params: quotaParams } }, async (request) => {
          const { target } = request.params as { target: string }
          authorize(volumePolicy, 'quota:show', request.principal, { projectId: target })
          const usage = boolParam('usage', (request.query as Record<string, unknown>).usage) ?? false
          const [limits, used] = await Promise.all([quotaLimits(deps.store.db, target), quotaUsage(deps.store.db, target)])
          const quota_set: Record<string, unknown> = { id: target }
          for (const resource of QUOTA_RESOURCES) quota_set[resource] = usage ? { limit: limits[resource], in_use: used[resource], reserved: 0, allocated: 0 } : limits[resource]
          for (const [extra, value] of [['per_volume_gigabytes', -1], ['backups', 10], ['backup_gigabytes', 1000], ['groups', 10]] as const) {
            quota_set[extra] = usage ? { limit: value, in_use: 0, reserved: 0, allocated: 0 } : value
          }
          return { quota_set }
        })
        r.get('/os-quota-sets/:target/defaults', { schema: { params: quotaParams } }, async (request) => {
          const { target } = request.params as { target: string }
          return { quota_set: { id: target, ...DEFAULT_QUOTAS, per_volume_gigabytes: -1, backups: 10, backup_gigabytes: 1000, groups: 10 } }
        })
        r.put(
          '/os-quota-sets/:target',
          { schema: { params: quotaParams, body: { type: 'object', required: ['quota_set'], properties: { quota_set: { type: 'object', additionalProperties: { anyOf: [{ type: 'integer' }, { type: 'string' }] } } } } } },
          async (request) => {
            const { target } = request.params as { target: string }
            authorize(volumePolicy, 'quota:update', request.principal)
            const set = (request.body as { quota_set: Record<string, unknown> }).quota_set
            const updates: [string, number][] = []
            for (const [key, value] of Object.entries(set)) {
              if (key === 'tenant_id' || key === 'id') continue
              if (!(QUOTA_RESOURCES as readonly string[]).includes(key)) continue
              const n = Number(value)
              if (!Number.isInteger(n) || n < -1) throw badRequest(`Invalid value for quota '${key}': expected a whole number of at least -1.`)
              updates.push([key, n])
            }
            await deps.store.db.transaction().execute(async (tx) => {
              for (const [resource, hard_limit] of updates) {
                await tx
                  .insertInto('volume_quotas')
                  .values({ project_id: target, resource, hard_limit })
                  .onConflict((oc) => oc.columns(['project_id', 'resource']).doUpdateSet({ hard_limit }))
                  .execute()
              }
            })
            return { quota_set: { ...(await quotaLimits(deps.store.db, target)) } }
          },
        )
        r.get('/limits', async (request) => {
          const caller = callerOf(request.principal)
          const [limits, used] = await Promise.all([quotaLimits(deps.store.db, caller.projectId), quotaUsage(deps.store.db, caller.projectId)])
          return {
            limits: {
              rate: [],
              absolute: {
                maxTotalVolumes: limits.volumes,
                maxTotalSnapshots: limits.snapshots,
                maxTotalVolumeGigabytes: limits.gigabytes,
                maxTotalBackups: 10,
                maxTotalBackupGigabytes: 1000,
                totalVolumesUsed: used.volumes,
                totalSnapshotsUsed: used.snapshots,
                totalGigabytesUsed: used.gigabytes,
                totalBackupsUsed: 0,
                totalBackupGigabytesUsed: 0,
              },
            },
          }
        })
        r.get('/os-availability-zone', async () => ({ availabilityZoneInfo: [{ zoneName: 'nova', zoneState: { available: true } }] }))
        r.get('/extensions', async () => ({ extensions: [] }))
        // The simulated backend, as `openstack volume service list` shows it (admins).
        r.get('/os-services', async (request) => {
          authorize(volumePolicy, 'volume:all_tenants', request.principal)
          const updated_at = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000')
          return {
            services: [
              { binary: 'cinder-scheduler', host: 'pcc', zone: 'nova', status: 'enabled', state: 'up', updated_at, disabled_reason: null },
              { binary: 'cinder-volume', host: 'pcc@simulated', zone: 'nova', status: 'enabled', state: 'up', updated_at, disabled_reason: null },
            ],
          }
        })
      })
    }

    await scope.register(v3, { prefix: '/v3' })
    await scope.register(v3, { prefix: '/v3/:project_id' })
  }
}
