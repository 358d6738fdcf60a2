/**
 * Volume transfers (volume/transfers.ts): `os-volume-transfer` at every microversion, and the same API as
 * `volume-transfers` from 3.55, which adds `no_snapshots`. The answer's links name the collection asked.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { AppError } from '../../../contracts/errors.js'
import type { AppDeps } from '../../deps.js'
import type { FromSchema } from '../../http/route-types.js'
import { documented, noBody } from '../../http/openapi.js'
import { atLeast } from '../../volume/microversion.js'
import { transferView, type ViewContext } from '../../volume/view.js'
import { A, QUERY } from './answers.js'
import { boolParam, idParams, nullableString, type IdRoute, type QueryRoute } from './params.js'

const createBody = {
  type: 'object',
  required: ['transfer'],
  properties: {
    transfer: {
      type: 'object',
      required: ['volume_id'],
      properties: { volume_id: { type: 'string', minLength: 1, maxLength: 64 }, name: nullableString(), no_snapshots: { type: 'boolean' } },
    },
  },
} as const
const acceptBody = {
  type: 'object',
  required: ['accept'],
  properties: { accept: { type: 'object', required: ['auth_key'], properties: { auth_key: { type: 'string', minLength: 1, maxLength: 255 } } } },
} as const

/** The two collections: the legacy one, and the 3.55 one. */
const COLLECTIONS = [
  { path: 'os-volume-transfer', since: '3.0' },
  { path: 'volume-transfers', since: '3.55' },
] as const

export function transferRoutes(r: FastifyInstance, deps: AppDeps, ctx: (request: FastifyRequest) => ViewContext): void {
  const { transfers } = deps.volumeServices
  for (const { path, since } of COLLECTIONS) {
    const version = since === '3.0' ? '' : ` (${since}+)`
    const served = (request: FastifyRequest): ViewContext => {
      if (!atLeast(request.volumeVersion, since)) throw new AppError('not_found', `The resource could not be found (${path} needs microversion ${since}).`)
      return ctx(request)
    }
    const list = (detail: boolean) => async (request: FastifyRequest<QueryRoute>) => {
      const c = served(request)
      const rows = await transfers.list(request.principal, { allTenants: boolParam('all_tenants', request.query.all_tenants) ?? false })
      return { transfers: rows.map((t) => transferView(t, c, detail, path)) }
    }
    r.get<QueryRoute>(`/${path}`, documented({ summary: `List the project's volume transfers${version}`, querystring: QUERY.transfers, response: { 200: A.transfers(false) } }), list(false))
    r.get<QueryRoute>(`/${path}/detail`, documented({ summary: `List the project's volume transfers with details${version}`, querystring: QUERY.transfers, response: { 200: A.transfers(true) } }), list(true))

    r.post<{ Body: FromSchema<typeof createBody> }>(
      `/${path}`,
      { schema: { body: createBody }, ...documented({ summary: `Offer a volume to another project; the answer holds the auth key, once${version}`, response: { 202: A.createdTransfer } }) },
      async (request, reply) => {
        const c = served(request)
        const t = request.body.transfer
        // no_snapshots is 3.55's; before, a volume always goes with its snapshots.
        const noSnapshots = atLeast(request.volumeVersion, '3.55') && t.no_snapshots === true
        const created = await transfers.create(request.principal, { volumeId: t.volume_id, name: t.name ?? null, noSnapshots })
        return reply.code(202).send({ transfer: { ...transferView(created, c, true, path), auth_key: created.authKey } })
      },
    )

    r.get<IdRoute>(`/${path}/:id`, { schema: { params: idParams }, ...documented({ summary: `Show a volume transfer${version}`, response: { 200: A.transfer } }) }, async (request) => {
      const c = served(request)
      return { transfer: transferView(await transfers.get(request.principal, request.params.id), c, true, path) }
    })

    r.delete<IdRoute>(`/${path}/:id`, { schema: { params: idParams }, ...documented({ summary: `Withdraw a volume transfer; the volume is available again${version}`, response: { 202: noBody('Withdrawn') } }) }, async (request, reply) => {
      served(request)
      await transfers.delete(request.principal, request.params.id)
      return reply.code(202).send()
    })

    r.post<IdRoute & { Body: FromSchema<typeof acceptBody> }>(
      `/${path}/:id/accept`,
      { schema: { params: idParams, body: acceptBody }, ...documented({ summary: `Accept a volume transfer with its auth key: the volume moves to the caller's project${version}`, response: { 202: A.acceptedTransfer } }) },
      async (request, reply) => {
        const c = served(request)
        const accepted = await transfers.accept(request.principal, request.params.id, request.body.accept.auth_key)
        return reply.code(202).send({ transfer: transferView(accepted, c, false, path) })
      },
    )
  }
}
