/**
 * /v3/credentials (Keystone): credentials a user owns. The blob is sealed with the master key at rest and shown
 * to the owner; `totp` credentials (a base32 seed) are what the totp auth method checks.
 */
import type { FastifyInstance, preHandlerHookHandler } from 'fastify'
import { badRequest, notFound } from '../../../../contracts/errors.js'
import type { Principal } from '../../../auth/principal.js'
import { newId } from '../../../bootstrap/bootstrap.js'
import { base32Decode } from '../../../crypto/totp.js'
import type { AppDeps } from '../../../deps.js'
import { type CredentialRow, deleteCredential, findCredential, insertCredential, listCredentials, updateCredential } from '../../../identity/repo/credentials.repo.js'
import { getUser } from '../../../identity/repo/users.repo.js'
import { allows, authorize } from '../../../policy/rules.js'
import { identityAuthPolicy } from '../../../policy/identity-auth.policy.js'
import { documented, noBody } from '../../../http/openapi.js'
import { V, list, one } from '../answers.js'
import type { FromSchema } from '../../../http/route-types.js'

const credentialFields = {
  type: { type: 'string', minLength: 1, maxLength: 255 },
  user_id: { type: 'string', minLength: 1, maxLength: 64 },
  project_id: { type: ['string', 'null'], maxLength: 64 },
  blob: { type: 'string', minLength: 1, maxLength: 65535 },
} as const

const createBody = {
  type: 'object',
  required: ['credential'],
  properties: { credential: { type: 'object', required: ['type', 'user_id', 'blob'], properties: credentialFields } },
} as const

const updateBody = {
  type: 'object',
  required: ['credential'],
  properties: { credential: { type: 'object', properties: credentialFields } },
} as const

/** A TOTP seed must be base32 of at least 128 bits (Keystone's documented minimum); it is stored re-padded. */
function checkBlob(type: string, blob: string): string {
  if (type !== 'totp') return blob
  let secret: Buffer
  try {
    secret = base32Decode(blob)
  } catch {
    throw badRequest('credential.blob of a totp credential must be a base32 string.')
  }
  if (secret.length < 16) throw badRequest('credential.blob of a totp credential must hold at least 128 bits.')
  const clean = blob.toUpperCase().replace(/=+$/, '')
  return clean + '='.repeat((8 - (clean.length % 8)) % 8)
}

export function credentialRoutes(deps: AppDeps, requireAuth: preHandlerHookHandler) {
  const db = deps.store.db
  const url = (id: string) => `${deps.urls.identity}/credentials/${id}`
  const render = (row: CredentialRow) => ({
    id: row.id,
    type: row.type,
    user_id: row.user_id,
    project_id: row.project_id,
    blob: deps.box.openText(row.blob),
    links: { self: url(row.id) },
  })
  /** A credential the caller may see, else 404 (another user's credential does not exist for them). */
  const visible = async (id: string, principal: Principal, operation: 'identity:get_credential' | 'identity:update_credential' | 'identity:delete_credential') => {
    const row = await findCredential(db, id)
    if (!row || !allows(identityAuthPolicy, 'identity:get_credential', principal, { userId: row.user_id })) throw notFound(`Could not find credential: ${id}.`)
    authorize(identityAuthPolicy, operation, principal, { userId: row.user_id })
    return row
  }

  return async (scope: FastifyInstance): Promise<void> => {
    scope.post<{ Body: FromSchema<typeof createBody> }>(
      '/v3/credentials',
      { ...documented({ summary: 'Create a credential (e.g. a TOTP seed)', response: { 201: one('credential', V.credential) } }), schema: { body: createBody }, preHandler: requireAuth },
      async (request, reply) => {
        const input = request.body.credential
        authorize(identityAuthPolicy, 'identity:create_credential', request.principal, { userId: input.user_id })
        await getUser(db, input.user_id)
        const row: CredentialRow = {
          id: newId(),
          user_id: input.user_id,
          project_id: input.project_id ?? null,
          type: input.type,
          blob: deps.box.seal(checkBlob(input.type, input.blob)),
          totp_last_step: null,
          created_at: Date.now(),
        }
        await insertCredential(db, row)
        return reply.code(201).send({ credential: render(row) })
      },
    )

    scope.get<{ Querystring: { user_id?: string; type?: string } }>(
      '/v3/credentials',
      { ...documented({ summary: 'List credentials (your own without the right to list all)', response: { 200: list('credentials', V.credential) } }), schema: { querystring: { type: 'object', properties: { user_id: { type: 'string' }, type: { type: 'string' } } } }, preHandler: requireAuth },
      async (request) => {
        const principal = request.principal
        // Without the right to list everyone's, a caller lists its own (Keystone filters rather than refuses).
        const ownerId = allows(identityAuthPolicy, 'identity:list_credentials', principal, {}) ? undefined : principal.userId
        const rows = await listCredentials(db, { userId: request.query.user_id, type: request.query.type, ownerId })
        return { credentials: rows.map(render), links: { self: `${deps.urls.identity}/credentials`, previous: null, next: null } }
      },
    )

    scope.get<{ Params: { credential_id: string } }>('/v3/credentials/:credential_id', { ...documented({ summary: 'Show a credential', response: { 200: one('credential', V.credential) } }), preHandler: requireAuth }, async (request) => ({
      credential: render(await visible(request.params.credential_id, request.principal, 'identity:get_credential')),
    }))

    scope.patch<{ Params: { credential_id: string }; Body: FromSchema<typeof updateBody> }>(
      '/v3/credentials/:credential_id',
      { ...documented({ summary: 'Update a credential', response: { 200: one('credential', V.credential) } }), schema: { body: updateBody }, preHandler: requireAuth },
      async (request) => {
        const row = await visible(request.params.credential_id, request.principal, 'identity:update_credential')
        const input = request.body.credential
        if (input.user_id !== undefined && input.user_id !== row.user_id) {
          authorize(identityAuthPolicy, 'identity:update_credential', request.principal, { userId: input.user_id })
          await getUser(db, input.user_id)
        }
        const type = input.type ?? row.type
        const blob = input.blob ?? deps.box.openText(row.blob)
        const next: CredentialRow = {
          ...row,
          type,
          user_id: input.user_id ?? row.user_id,
          project_id: input.project_id !== undefined ? input.project_id : row.project_id,
          blob: deps.box.seal(checkBlob(type, blob)),
        }
        await updateCredential(db, row.id, next)
        return { credential: render(next) }
      },
    )

    scope.delete<{ Params: { credential_id: string } }>('/v3/credentials/:credential_id', { ...documented({ summary: 'Delete a credential', response: { 204: noBody('Deleted') } }), preHandler: requireAuth }, async (request, reply) => {
      const row = await visible(request.params.credential_id, request.principal, 'identity:delete_credential')
      await deleteCredential(db, row.id)
      return reply.code(204).send()
    })
  }
}
