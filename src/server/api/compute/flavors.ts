/** /flavors, /flavors/{id}/os-extra_specs, /flavors/{id}/os-flavor-access and the flavor access actions. */
import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { queryAsSent, rowsStamp, ViewCache } from '../../http/view-cache.js'
import { Type as T } from '@sinclair/typebox'
import { badRequest, conflict, notFound } from '../../../contracts/errors.js'
import { project } from '../../../contracts/compute/fields.js'
import { flavorFields, type FlavorModel, type FlavorView } from '../../../contracts/compute/flavor.fields.js'
import { onlyAt, P } from '../../../contracts/compute/params.js'
import type { VersionNumber } from '../../../contracts/compute/versions.js'
import { versionNumber } from '../../../contracts/compute/versions.js'
import type { FlavorTable } from '../../storage/schema.js'
import { bookmarkBase } from '../../compute/server-model.js'
import { addFlavorAccess, deleteFlavor, findFlavorClash, findUsableFlavor, flavorAccess, flavorsWithAccess, insertFlavor, removeFlavorAccess, saveExtraSpecs, setFlavorDescription } from '../../compute/flavors.js'
import type { AppDeps } from '../../deps.js'
import { bodyObject, callerOf, can, must, requireGate, validate } from './context.js'
import { visibilityOf } from '../../policy/rules.js'
import { documented, noBody } from '../../http/openapi.js'
import { A } from '../../../contracts/compute/answers.js'
import { envelope, fieldsSchema, listOf, plain, Q, queryOf, versioned } from '../../../contracts/compute/schemas.js'
import { J } from '../../../contracts/compute/json-types.js'
import type { SingleQuery } from '../../http/route-types.js'

const SORT_KEYS: Record<string, keyof FlavorTable> = {
  created_at: 'created_at', description: 'description', disabled: 'disabled', ephemeral_gb: 'ephemeral', flavorid: 'id', id: 'id', is_public: 'is_public',
  memory_mb: 'ram', name: 'name', root_gb: 'disk', rxtx_factor: 'rxtx_factor', swap: 'swap', updated_at: 'created_at', vcpu_weight: 'vcpus', vcpus: 'vcpus',
}

const createBody = (version: VersionNumber) =>
  T.Object(
    {
      flavor: T.Object(
        {
          name: P.name,
          // Nova's flavor_id also takes a JSON number (Tempest sends one) and stores its text.
          id: T.Optional(T.Union([T.Null(), T.String({ minLength: 1, maxLength: 255, pattern: '^(?!\\s)[a-zA-Z0-9_.\\- ]*(?<!\\s)$' }), T.Integer({ minimum: 0 })])),
          ram: P.positiveInt,
          vcpus: P.positiveInt,
          disk: P.nonNegativeInt,
          'OS-FLV-EXT-DATA:ephemeral': T.Optional(P.nonNegativeInt),
          swap: T.Optional(T.Union([T.Literal(''), P.nonNegativeInt])),
          rxtx_factor: T.Optional(T.Union([T.Number({ exclusiveMinimum: 0, maximum: 3.4e38 }), T.String({ pattern: '^[0-9]*\\.?[0-9]+$' })])),
          'os-flavor-access:is_public': T.Optional(P.boolean),
          ...onlyAt(version >= versionNumber('2.55'), { description: T.Optional(P.description) }),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  )
const updateBody = () => T.Object({ flavor: T.Object({ description: P.description }, { additionalProperties: false }) }, { additionalProperties: false })
const extraSpecValue = T.Union([T.String({ maxLength: 255 }), T.Number(), T.Boolean()])
const extraSpecsBody = () => T.Object({ extra_specs: T.Record(T.String({ pattern: '^[a-zA-Z0-9-_:. ]{1,255}$' }), extraSpecValue) }, { additionalProperties: false })
const extraSpecItem = () => T.Record(T.String({ pattern: '^[a-zA-Z0-9-_:. ]{1,255}$' }), extraSpecValue, { minProperties: 1, maxProperties: 1 })
const tenantBody = () => T.Object({ tenant: T.String({ minLength: 1, maxLength: 255 }) }, { additionalProperties: false })

const listQuery = queryOf({ is_public: { type: 'string', description: 'admins: true, false or none' }, minRam: Q.count, minDisk: Q.count, sort_key: { type: 'string', enum: Object.keys(SORT_KEYS) }, sort_dir: Q.sortDir, marker: Q.str, limit: Q.count })
const flavor = envelope('flavor', fieldsSchema(flavorFields, 'detail'))
const DOCS = {
  list: (view: FlavorView) => documented({ summary: view === 'summary' ? 'List flavors' : 'List flavors with details', querystring: listQuery, response: { 200: envelope('flavors', listOf(fieldsSchema(flavorFields, view)), { flavors_links: plain(J.links) }) } }),
  show: documented({ summary: 'Show a flavor', response: { 200: flavor } }),
  create: documented({ summary: 'Create a flavor (admin)', body: versioned(createBody), response: { 200: flavor } }),
  update: documented({ summary: "Change a flavor's description (2.55+, admin)", body: versioned(updateBody), response: { 200: flavor } }),
  delete: documented({ summary: 'Delete a flavor (admin)', response: { 202: noBody('Deleted') } }),
  extraSpecs: documented({ summary: "A flavor's extra specs", response: { 200: A.extraSpecs } }),
  addExtraSpecs: documented({ summary: 'Add extra specs (admin)', body: versioned(extraSpecsBody), response: { 200: A.extraSpecs } }),
  extraSpec: documented({ summary: 'One extra spec', response: { 200: A.extraSpec } }),
  setExtraSpec: documented({ summary: 'Set one extra spec (admin)', body: versioned(extraSpecItem), response: { 200: A.extraSpec } }),
  deleteExtraSpec: documented({ summary: 'Delete one extra spec (admin)', response: { 200: noBody('Deleted') } }),
  access: documented({ summary: 'Projects with access to a private flavor (admin)', response: { 200: A.flavorAccess } }),
  action: documented({
    summary: 'Give or take a project access to a private flavor (admin)',
    body: { anyOf: ['addTenantAccess', 'removeTenantAccess'].map((key) => ({ type: 'object', properties: { [key]: versioned(tenantBody) }, required: [key], additionalProperties: false })) },
    response: { 200: A.flavorAccess },
  }),
}

export function flavorRoutes(deps: AppDeps) {
  const db = deps.store.db
  const base = bookmarkBase(deps.urls.compute)
  const model = (f: FlavorTable): FlavorModel => ({
    id: f.id,
    name: f.name,
    ram: f.ram,
    disk: f.disk,
    swap: f.swap,
    ephemeral: f.ephemeral,
    disabled: f.disabled === 1,
    vcpus: f.vcpus,
    isPublic: f.is_public === 1,
    rxtxFactor: f.rxtx_factor,
    description: f.description,
    extraSpecs: JSON.parse(f.extra_specs) as Record<string, string>,
    links: [
      { rel: 'self', href: `${deps.urls.compute}/flavors/${f.id}` },
      { rel: 'bookmark', href: `${base}/flavors/${f.id}` },
    ],
  })
  // The flavor table marks no field admin-only (were one added, its rule would decide `admin` here).
  const render = (request: FastifyRequest, f: FlavorTable, view: FlavorView) => project(flavorFields, model(f), { version: request.api.version, view, admin: false })
  const visible = async (request: FastifyRequest, id: string) => {
    const caller = callerOf(request)
    const f = await findUsableFlavor(db, id, caller.projectId, visibilityOf(can(request, 'flavors:all_projects')))
    if (!f) throw notFound(`Flavor ${id} could not be found.`)
    return f
  }
  const manage = (request: FastifyRequest) => must(request, 'flavors:manage')

  return async (scope: FastifyInstance): Promise<void> => {
    /** The list's answer, from the rows read for it (every live flavor, the private ones the project was given). */
    const listBody = (request: FastifyRequest<{ Querystring: SingleQuery }>, view: FlavorView, found: { rows: FlavorTable[]; accessible: Set<string> }, allFlavors: boolean) => {
      const q = request.query
      // A copy: the rows read are shared (kept while the database is unchanged) and this sorts in place.
      let rows = [...found.rows]
      const accessible = found.accessible
      if (allFlavors) {
        const raw = (q.is_public ?? 'true').toLowerCase()
        if (raw !== 'none') {
          const want = ['1', 't', 'true', 'on', 'y', 'yes'].includes(raw)
          if (!want && !['0', 'f', 'false', 'off', 'n', 'no'].includes(raw)) throw badRequest(`Invalid is_public filter [${q.is_public}]`)
          rows = rows.filter((f) => (f.is_public === 1) === want)
        }
      } else rows = rows.filter((f) => !f.disabled && (f.is_public === 1 || accessible.has(f.id)))
      for (const [param, column] of [['minRam', 'ram'], ['minDisk', 'disk']] as const) {
        if (q[param] === undefined) continue
        if (!/^\d+$/.test(q[param])) throw badRequest(`Invalid input for query parameters ${param}. Value: ${q[param]}.`)
        rows = rows.filter((f) => f[column] >= Number(q[param]))
      }
      const key = q.sort_key ?? 'flavorid'
      const dir = q.sort_dir ?? 'asc'
      if (!SORT_KEYS[key]) throw badRequest(`Invalid input for query parameters sort_key. Value: ${key}.`)
      if (dir !== 'asc' && dir !== 'desc') throw badRequest(`Invalid input for query parameters sort_dir. Value: ${dir}.`)
      const col = SORT_KEYS[key]
      rows.sort((a, b) => {
        const x = a[col] ?? ''
        const y = b[col] ?? ''
        const c = x < y ? -1 : x > y ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0
        return dir === 'asc' ? c : -c
      })
      if (q.marker !== undefined) {
        const i = rows.findIndex((f) => f.id === q.marker)
        if (i < 0) throw badRequest(`marker [${q.marker}] not found`)
        rows = rows.slice(i + 1)
      }
      let limit = 1000
      if (q.limit !== undefined) {
        if (!/^\d+$/.test(q.limit)) throw badRequest(`Invalid input for query parameters limit. Value: ${q.limit}.`)
        limit = Math.min(Number(q.limit), 1000)
      }
      const page = rows.slice(0, limit)
      const body: Record<string, unknown> = { flavors: page.map((f) => render(request, f, view)) }
      if (page.length === limit && page.length > 0 && rows.length > limit) {
        const params = new URLSearchParams({ ...q, marker: page[page.length - 1].id })
        body.flavors_links = [{ rel: 'next', href: `${deps.urls.compute}/flavors${view === 'detail' ? '/detail' : ''}?${params.toString()}` }]
      }
      return body
    }
    /**
     * A kept answer per query as sent and variant, stamped with the rows it is rendered from: each flavor's
     * revision (raised on any change of its row, migration 0129; extra specs live in the row) and, for a member,
     * the private flavors its project was given. Clients that pick a flavor by name poll this list.
     */
    const lists = new ViewCache({ budgetBytes: deps.config.viewCacheMb * 1024 * 1024 })
    const list = (view: FlavorView) => async (request: FastifyRequest<{ Querystring: SingleQuery }>, reply: FastifyReply) => {
      const allFlavors = can(request, 'os-flavor-access')
      // Who sees every flavor needs no list of the ones its project was given.
      const found = await flavorsWithAccess(db, allFlavors ? undefined : callerOf(request).projectId)
      let stamp = ''
      for (const f of found.rows) stamp += `${f.id} ${f.rev}\n`
      if (!allFlavors) for (const id of found.accessible) stamp += `+${id}\n`
      const variant = `${view}|${request.api.text}|${allFlavors ? 'all' : 'member'}`
      const body = await lists.keep(variant, queryAsSent(request.url), rowsStamp(stamp), async () => listBody(request, view, found, allFlavors))
      // The header Fastify gives the object this route answers otherwise.
      return reply.type('application/json; charset=utf-8').send(body)
    }
    scope.get<{ Querystring: SingleQuery }>('/v2.1/flavors', DOCS.list('summary'), list('summary'))
    scope.get<{ Querystring: SingleQuery }>('/v2.1/flavors/detail', DOCS.list('detail'), list('detail'))
    scope.get<{ Params: { id: string } }>('/v2.1/flavors/:id', DOCS.show, async (request) => ({ flavor: render(request, await visible(request, request.params.id), 'detail') }))

    scope.post('/v2.1/flavors', DOCS.create, async (request) => {
      manage(request)
      const body = bodyObject(request)
      validate('flavor', request, createBody, body)
      const f = body.flavor
      const id = f.id === undefined || f.id === null ? randomUUID() : String(f.id)
      const exists = await findFlavorClash(db, id, f.name)
      if (exists) throw conflict(exists.id === id ? `Flavor with ID ${id} already exists.` : `Flavor with name ${f.name} already exists.`)
      const isPublic = f['os-flavor-access:is_public'] === undefined ? true : ['true', '1', 't', 'yes', 'y', 'on'].includes(String(f['os-flavor-access:is_public']).toLowerCase())
      const row: FlavorTable = {
        id,
        rev: 0,
        name: f.name,
        vcpus: Number(f.vcpus),
        ram: Number(f.ram),
        disk: Number(f.disk),
        ephemeral: Number(f['OS-FLV-EXT-DATA:ephemeral'] ?? 0),
        swap: f.swap === undefined || f.swap === '' ? 0 : Number(f.swap),
        rxtx_factor: f.rxtx_factor === undefined ? 1 : Number(f.rxtx_factor),
        is_public: isPublic ? 1 : 0,
        disabled: 0,
        description: f.description ?? null,
        extra_specs: '{}',
        created_at: Date.now(),
        deleted: 0,
      }
      await insertFlavor(db, row)
      return { flavor: render(request, row, 'detail') }
    })
    scope.put<{ Params: { id: string } }>('/v2.1/flavors/:id', DOCS.update, async (request) => {
      requireGate(request, 'flavorDescription')
      manage(request)
      const body = bodyObject(request)
      validate('flavor-update', request, updateBody, body)
      const f = await visible(request, request.params.id)
      const description = body.flavor.description
      await setFlavorDescription(db, f.id, description)
      return { flavor: render(request, { ...f, description }, 'detail') }
    })
    scope.delete<{ Params: { id: string } }>('/v2.1/flavors/:id', DOCS.delete, async (request, reply) => {
      manage(request)
      if (!(await deleteFlavor(db, request.params.id))) throw notFound(`Flavor ${request.params.id} could not be found.`)
      return reply.code(202).send()
    })

    // Extra specs: every flavor has the sub-resource (OSC reads it for each flavor).
    type PK = { Params: { id: string; key: string } }
    const saveSpecs = (id: string, specs: Record<string, string>) => saveExtraSpecs(db, id, specs)
    const asStrings = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, String(v)]))
    scope.get<{ Params: { id: string } }>('/v2.1/flavors/:id/os-extra_specs', DOCS.extraSpecs, async (request) => ({ extra_specs: JSON.parse((await visible(request, request.params.id)).extra_specs) }))
    scope.post<{ Params: { id: string } }>('/v2.1/flavors/:id/os-extra_specs', DOCS.addExtraSpecs, async (request) => {
      manage(request)
      const body = bodyObject(request)
      validate('extra_specs', request, extraSpecsBody, body)
      const f = await visible(request, request.params.id)
      const added = asStrings(body.extra_specs)
      await saveSpecs(f.id, { ...JSON.parse(f.extra_specs), ...added })
      return { extra_specs: added }
    })
    scope.get<PK>('/v2.1/flavors/:id/os-extra_specs/:key', DOCS.extraSpec, async (request) => {
      const specs = JSON.parse((await visible(request, request.params.id)).extra_specs) as Record<string, string>
      if (!(request.params.key in specs)) throw notFound(`Flavor ${request.params.id} has no extra specs with key ${request.params.key}.`)
      return { [request.params.key]: specs[request.params.key] }
    })
    scope.put<PK>('/v2.1/flavors/:id/os-extra_specs/:key', DOCS.setExtraSpec, async (request) => {
      manage(request)
      const body = bodyObject(request)
      validate('extra_spec', request, extraSpecItem, body)
      if (!(request.params.key in body)) throw badRequest('Request body and URI mismatch')
      const f = await visible(request, request.params.id)
      const item = asStrings(body)
      await saveSpecs(f.id, { ...JSON.parse(f.extra_specs), ...item })
      return item
    })
    scope.delete<PK>('/v2.1/flavors/:id/os-extra_specs/:key', DOCS.deleteExtraSpec, async (request, reply) => {
      manage(request)
      const f = await visible(request, request.params.id)
      const specs = JSON.parse(f.extra_specs) as Record<string, string>
      if (!(request.params.key in specs)) throw notFound(`Flavor ${f.id} has no extra specs with key ${request.params.key}.`)
      delete specs[request.params.key]
      await saveSpecs(f.id, specs)
      return reply.code(200).send()
    })

    // Access to private flavors.
    const accessList = async (id: string) => ({
      flavor_access: (await flavorAccess(db, id)).map((a) => ({ flavor_id: a.flavor_id, tenant_id: a.project_id })),
    })
    scope.get<{ Params: { id: string } }>('/v2.1/flavors/:id/os-flavor-access', DOCS.access, async (request) => {
      manage(request)
      const f = await visible(request, request.params.id)
      if (f.is_public) throw notFound('Access list not available for public flavors.')
      return accessList(f.id)
    })
    scope.post<{ Params: { id: string } }>('/v2.1/flavors/:id/action', DOCS.action, async (request) => {
      manage(request)
      const body = bodyObject(request)
      const key = Object.keys(body)[0]
      if (Object.keys(body).length !== 1 || (key !== 'addTenantAccess' && key !== 'removeTenantAccess')) throw badRequest(`There is no such action: ${key ?? ''}`)
      const value = body[key]
      validate(key, request, tenantBody, value)
      const tenant = value.tenant
      const f = await visible(request, request.params.id)
      if (key === 'addTenantAccess') {
        if (f.is_public && request.api.has('flavorAccessPublic409')) throw conflict(`Can not add access to a public flavor.`)
        if (!(await addFlavorAccess(db, f.id, tenant))) throw conflict(`Flavor access already exists for flavor ${f.id} and project ${tenant} combination.`)
      } else {
        if (!(await removeFlavorAccess(db, f.id, tenant))) throw notFound(`Flavor access not found for ${f.id} / ${tenant} combination.`)
      }
      return accessList(f.id)
    })
  }
}
