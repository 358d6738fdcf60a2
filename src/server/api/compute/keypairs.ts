/** /os-keypairs: create (generated or imported), list, show, delete; per user, admins may name another (2.10). */
import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type as T } from '@sinclair/typebox'
import { onlyAt, requiredWhen } from '../../../contracts/compute/params.js'
import { badRequest, conflict, forbidden, notFound } from '../../../contracts/errors.js'
import { project } from '../../../contracts/compute/fields.js'
import { keypairFields, type KeypairModel } from '../../../contracts/compute/keypair.fields.js'
import { versionNumber, type VersionNumber } from '../../../contracts/compute/versions.js'
import type { KeypairTable } from '../../storage/schema.js'
import type { AppDeps } from '../../deps.js'
import { countKeypairs, deleteKeypair, findKeypair, fingerprintOf, generateSshKeypair, generateX509Keypair, insertKeypair, listKeypairs } from '../../compute/keypairs.js'
import { quotaLimits } from '../../compute/quotas.js'
import { bodyObject, callerOf, must, validate } from './context.js'
import { documented, noBody } from '../../http/openapi.js'
import { envelope, fieldsSchema, listOf, plain, Q, queryOf, versioned } from '../../../contracts/compute/schemas.js'
import { J } from '../../../contracts/compute/json-types.js'
import type { SingleQuery } from '../../http/route-types.js'

const createBody = (version: VersionNumber) => {
  const v292 = version >= versionNumber('2.92')
  const name = v292 ? T.String({ minLength: 1, maxLength: 255, pattern: '^[a-zA-Z0-9 _@.-]+$' }) : T.String({ minLength: 1, maxLength: 255, pattern: '^[_\\- a-zA-Z0-9]+$' })
  const keypair = T.Object(
    {
      name,
      // Required from 2.92, where Nova stopped generating keys.
      public_key: requiredWhen(v292, v292 ? T.String({ minLength: 1 }) : T.String()),
      ...onlyAt(version >= versionNumber('2.2'), { type: T.Optional(T.Union([T.Literal('ssh'), T.Literal('x509')])) }),
      ...onlyAt(version >= versionNumber('2.10'), { user_id: T.Optional(T.String({ minLength: 1, maxLength: 255 })) }),
    },
    { additionalProperties: false },
  )
  return T.Object({ keypair }, { additionalProperties: false })
}

const userQuery = queryOf({ user_id: { type: 'string', description: 'admins, 2.10+: another user' } })
const DOCS = {
  create: documented({ summary: 'Create (generate) or import a key pair', body: versioned(createBody), response: { 200: envelope('keypair', fieldsSchema(keypairFields, 'create')), 201: envelope('keypair', fieldsSchema(keypairFields, 'create')) } }),
  list: documented({
    summary: "List the caller's key pairs",
    querystring: queryOf({ user_id: { type: 'string', description: 'admins, 2.10+: another user' }, limit: Q.count, marker: Q.str }),
    response: { 200: envelope('keypairs', listOf(envelope('keypair', fieldsSchema(keypairFields, 'list'))), { keypairs_links: plain(J.links) }) },
  }),
  show: documented({ summary: 'Show a key pair', querystring: userQuery, response: { 200: envelope('keypair', fieldsSchema(keypairFields, 'show')) } }),
  delete: documented({ summary: 'Delete a key pair', querystring: userQuery, response: { 202: noBody('Deleted (below 2.2)'), 204: noBody('Deleted') } }),
}

export function keypairRoutes(deps: AppDeps) {
  const db = deps.store.db
  const model = (k: KeypairTable, privateKey?: string): KeypairModel => ({ id: k.id, name: k.name, userId: k.user_id, type: k.type, publicKey: k.public_key, fingerprint: k.fingerprint, createdAt: k.created_at, privateKey })
  const userOf = (request: FastifyRequest, requested: string | undefined) => {
    const caller = callerOf(request)
    if (requested === undefined || !request.api.has('keypairUserId') || requested === caller.userId) return caller.userId
    must(request, 'keypairs:other_user')
    return requested
  }
  const find = async (userId: string, name: string) => {
    const k = await findKeypair(db, userId, name)
    if (!k) throw notFound(`Keypair ${name} not found for user ${userId}`)
    return k
  }
  return async (scope: FastifyInstance): Promise<void> => {
    scope.post('/v2.1/os-keypairs', DOCS.create, async (request, reply) => {
      const body = bodyObject(request)
      validate('keypair', request, createBody, body)
      const k = body.keypair
      const userId = userOf(request, k.user_id)
      const type = k.type ?? 'ssh'
      const limits = await quotaLimits(db, callerOf(request).projectId)
      if (limits.key_pairs >= 0) {
        if ((await countKeypairs(db, userId)) >= limits.key_pairs) throw forbidden('Quota exceeded, too many key pairs.')
      }
      let publicKey = k.public_key
      let privateKey: string | undefined
      let fingerprint: string
      if (publicKey === undefined) {
        const generated = type === 'x509' ? await generateX509Keypair(userId) : generateSshKeypair(`Generated-by-pcc`)
        publicKey = generated.publicKey
        privateKey = generated.privateKey
        fingerprint = generated.fingerprint
      } else fingerprint = fingerprintOf(type, publicKey)
      const row: KeypairTable = { id: randomUUID(), user_id: userId, name: k.name, type, public_key: publicKey, fingerprint, created_at: Date.now() }
      if (!(await insertKeypair(db, row))) throw conflict(`Key pair '${k.name}' already exists.`)
      const out = project(keypairFields, model(row, privateKey), { version: request.api.version, view: 'create', admin: false })
      return reply.code(request.api.has('keypairCreated201') ? 201 : 200).send({ keypair: out })
    })
    scope.get<{ Querystring: SingleQuery }>('/v2.1/os-keypairs', DOCS.list, async (request) => {
      const q = request.query
      const userId = userOf(request, q.user_id)
      let rows = await listKeypairs(db, userId)
      const body: Record<string, unknown> = {}
      if (request.api.has('keypairsPaging')) {
        if (q.marker !== undefined) {
          const i = rows.findIndex((r) => r.name === q.marker)
          if (i < 0) throw badRequest(`marker [${q.marker}] not found`)
          rows = rows.slice(i + 1)
        }
        if (q.limit !== undefined) {
          if (!/^\d+$/.test(q.limit)) throw badRequest(`Invalid input for query parameters limit. Value: ${q.limit}.`)
          const limit = Number(q.limit)
          if (rows.length > limit) {
            rows = rows.slice(0, limit)
            body.keypairs_links = [{ rel: 'next', href: `${deps.urls.compute}/os-keypairs?${new URLSearchParams({ ...q, marker: rows[rows.length - 1].name }).toString()}` }]
          }
        }
      }
      body.keypairs = rows.map((r) => ({ keypair: project(keypairFields, model(r), { version: request.api.version, view: 'list', admin: false }) }))
      return { keypairs: body.keypairs, ...(body.keypairs_links ? { keypairs_links: body.keypairs_links } : {}) }
    })
    scope.get<{ Params: { name: string }; Querystring: SingleQuery }>('/v2.1/os-keypairs/:name', DOCS.show, async (request) => {
      const userId = userOf(request, request.query.user_id)
      return { keypair: project(keypairFields, model(await find(userId, request.params.name)), { version: request.api.version, view: 'show', admin: false }) }
    })
    scope.delete<{ Params: { name: string }; Querystring: SingleQuery }>('/v2.1/os-keypairs/:name', DOCS.delete, async (request, reply) => {
      const userId = userOf(request, request.query.user_id)
      const k = await find(userId, request.params.name)
      await deleteKeypair(db, k.id)
      return reply.code(request.api.has('keypairCreated201') ? 204 : 202).send()
    })
  }
}
