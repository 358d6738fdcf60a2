/**
 * /v3/users/{user_id}/application_credentials (Keystone): a user delegates some of its roles on the current
 * project to a secret that automation logs in with. The secret is shown once and stored hashed; roles must be a
 * subset of the creating token's roles; a restricted credential's tokens cannot create more credentials.
 */
import { randomBytes } from 'node:crypto'
import type { FastifyInstance, preHandlerHookHandler } from 'fastify'
import { AppError, badRequest, forbidden, notFound } from '../../../../contracts/errors.js'
import { newId } from '../../../bootstrap/bootstrap.js'
import { hashPassword } from '../../../crypto/passwords.js'
import type { AppDeps } from '../../../deps.js'
import {
  type ApplicationCredentialRow,
  createApplicationCredential,
  deleteApplicationCredential,
  getUserApplicationCredential,
  listUserApplicationCredentials,
} from '../../../identity/repo/application-credentials.repo.js'
import { ACCESS_RULE_METHODS } from '../../../identity/access-rules.js'
import { type AccessRuleRequest, accessRulesByIds } from '../../../identity/repo/access-rules.repo.js'
import { parseJson } from '../../../identity/repo/write.js'
import { authorize } from '../../../policy/rules.js'
import { identityAuthPolicy } from '../../../policy/identity-auth.policy.js'
import { documented, noBody } from '../../../http/openapi.js'
import { V, list, one } from '../answers.js'
import type { FromSchema } from '../../../http/route-types.js'

/** A rule asked for by id (one of the user's) or by its fields; paths start with '/'. */
const accessRuleBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 64 },
    service: { type: 'string', minLength: 1, maxLength: 64 },
    method: { type: 'string', enum: ACCESS_RULE_METHODS },
    path: { type: 'string', minLength: 1, maxLength: 225, pattern: '^/' },
  },
} as const

const createBody = {
  type: 'object',
  required: ['application_credential'],
  properties: {
    application_credential: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 255 },
        description: { type: ['string', 'null'], maxLength: 4096 },
        secret: { type: ['string', 'null'], minLength: 1, maxLength: 4096 },
        expires_at: { type: ['string', 'null'] },
        unrestricted: { type: ['boolean', 'null'] },
        roles: {
          type: 'array',
          items: { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' }, domain_id: { type: ['string', 'null'] } } },
        },
        access_rules: { type: 'array', maxItems: 100, items: accessRuleBody },
      },
    },
  },
} as const

/** What the create body's credential holds, as its schema lets it through. */
type CreateInput = FromSchema<typeof createBody>['application_credential']

/**
 * ISO times without a zone are UTC (Keystone's reading), not local time. Keystone keeps microseconds: the
 * milliseconds go to `ms`, the three digits after them to `us`.
 */
function parseExpiry(text: string): { ms: number; us: number } {
  const withZone = /(Z|[+-]\d\d:?\d\d)$/i.test(text) ? text : `${text}Z`
  const ms = Date.parse(withZone)
  if (Number.isNaN(ms)) throw badRequest(`application_credential.expires_at is not a date-time: ${text}`)
  const fraction = /T[\d:]+\.(\d+)/.exec(text)?.[1] ?? ''
  return { ms, us: Number(fraction.padEnd(6, '0').slice(3, 6)) }
}

/** Keystone's rendering of the expiry: UTC, microseconds, no zone letter. */
function expiryText(ms: number | null, us: number | null): string | null {
  if (ms === null) return null
  return new Date(Number(ms)).toISOString().replace(/\.(\d{3})Z$/, (_, millis: string) => `.${millis}${String(us ?? 0).padStart(3, '0')}`)
}

/** Each rule the body asks for, by id or complete; a rule missing a field is refused. */
function accessRuleRequests(rules: NonNullable<CreateInput['access_rules']>): AccessRuleRequest[] {
  return rules.map((rule) => {
    if (rule.id !== undefined) return { id: rule.id }
    if (rule.service === undefined || rule.method === undefined || rule.path === undefined) {
      throw badRequest('Each application_credential.access_rules item needs an id, or a service, a method and a path.')
    }
    return { service: rule.service, method: rule.method, path: rule.path }
  })
}

export function applicationCredentialRoutes(deps: AppDeps, requireAuth: preHandlerHookHandler) {
  const db = deps.store.db
  const base = (userId: string) => `${deps.urls.identity}/users/${userId}/application_credentials`
  const render = async (row: ApplicationCredentialRow) => {
    const snap = deps.tokens.snapshot
    const roleIds = JSON.parse(row.roles) as string[]
    const rules = await accessRulesByIds(db, parseJson<string[]>(row.access_rule_ids, []))
    return {
      id: row.id,
      name: row.name,
      description: row.description,
      user_id: row.user_id,
      project_id: row.project_id,
      expires_at: expiryText(row.expires_at, row.expires_at_us),
      unrestricted: row.unrestricted === 1,
      roles: roleIds.map((id) => snap.roles.get(id)).filter((r) => r !== undefined).map((r) => ({ id: r!.id, name: r!.name, domain_id: r!.domainId })),
      access_rules: rules.map((r) => ({ id: r.id, service: r.service, method: r.method, path: r.path })),
      links: { self: `${base(row.user_id)}/${row.id}` },
    }
  }
  const requireUser = (userId: string) => {
    if (!deps.tokens.snapshot.users.has(userId)) throw notFound(`Could not find user: ${userId}.`)
  }

  return async (scope: FastifyInstance): Promise<void> => {
    scope.post<{ Params: { user_id: string }; Body: FromSchema<typeof createBody> }>(
      '/v3/users/:user_id/application_credentials',
      { ...documented({ summary: 'Create an application credential (answers its secret, once)', response: { 201: one('application_credential', V.applicationCredential) } }), schema: { body: createBody }, preHandler: requireAuth },
      async (request, reply) => {
        const principal = request.principal
        const userId = request.params.user_id
        authorize(identityAuthPolicy, 'identity:create_application_credential', principal, { userId })
        requireUser(userId)
        if (principal.scope.type !== 'project') throw badRequest('An application credential is created with a project-scoped token.')
        const snap = deps.tokens.snapshot
        if (principal.applicationCredentialId && !snap.appCreds.get(principal.applicationCredentialId)?.unrestricted) {
          throw forbidden('A restricted application credential cannot create application credentials.')
        }
        if (principal.oauth) throw forbidden('A token issued via OAuth delegation cannot create application credentials.')
        const input = request.body.application_credential
        const held = snap.effectiveRoles(principal.userId, { p: principal.scope.projectId }).filter((r) => principal.roles.includes(r.name))
        let roleIds = held.map((r) => r.id)
        if (input.roles && input.roles.length > 0) {
          roleIds = input.roles.map((wanted) => {
            const role = held.find((r) => (wanted.id !== undefined ? r.id === wanted.id : r.name === wanted.name))
            if (!wanted.id && !wanted.name) throw badRequest('Each application_credential.roles item needs an id or a name.')
            if (!role) throw forbidden(`The role ${wanted.id ?? wanted.name} is not one the token holds on its project.`)
            return role.id
          })
        }
        const expiry = input.expires_at ? parseExpiry(input.expires_at) : null
        const now = Date.now()
        if (expiry !== null && expiry.ms <= now) throw badRequest('application_credential.expires_at is in the past.')
        const accessRules = accessRuleRequests(input.access_rules ?? [])
        const secret = input.secret ?? randomBytes(48).toString('base64url')
        const stored = await createApplicationCredential(db, {
          id: newId(),
          user_id: userId,
          project_id: principal.scope.projectId,
          name: input.name,
          description: input.description ?? '',
          secret_hash: await hashPassword(secret),
          roles: JSON.stringify([...new Set(roleIds)]),
          unrestricted: input.unrestricted ? 1 : 0,
          expires_at: expiry?.ms ?? null,
          expires_at_us: expiry?.us ?? null,
          created_at: now,
        }, accessRules)
        await deps.tokens.refresh()
        return reply.code(201).send({ application_credential: { ...(await render(stored)), secret } })
      },
    )

    scope.get<{ Params: { user_id: string }; Querystring: { name?: string } }>(
      '/v3/users/:user_id/application_credentials',
      { ...documented({ summary: "A user's application credentials", response: { 200: list('application_credentials', V.applicationCredential) } }), schema: { querystring: { type: 'object', properties: { name: { type: 'string' } } } }, preHandler: requireAuth },
      async (request) => {
        const userId = request.params.user_id
        authorize(identityAuthPolicy, 'identity:list_application_credentials', request.principal, { userId })
        requireUser(userId)
        const rows = await listUserApplicationCredentials(db, userId, request.query.name)
        return { application_credentials: await Promise.all(rows.map(render)), links: { self: base(userId), previous: null, next: null } }
      },
    )

    scope.get<{ Params: { user_id: string; credential_id: string } }>(
      '/v3/users/:user_id/application_credentials/:credential_id',
      { ...documented({ summary: 'Show an application credential', response: { 200: one('application_credential', V.applicationCredential) } }), preHandler: requireAuth },
      async (request) => {
        const { user_id: userId, credential_id: id } = request.params
        authorize(identityAuthPolicy, 'identity:get_application_credential', request.principal, { userId })
        return { application_credential: await render(await getUserApplicationCredential(db, userId, id)) }
      },
    )

    scope.delete<{ Params: { user_id: string; credential_id: string } }>(
      '/v3/users/:user_id/application_credentials/:credential_id',
      { ...documented({ summary: 'Delete an application credential', response: { 204: noBody('Deleted') } }), preHandler: requireAuth },
      async (request, reply) => {
        const { user_id: userId, credential_id: id } = request.params
        authorize(identityAuthPolicy, 'identity:delete_application_credential', request.principal, { userId })
        const row = await getUserApplicationCredential(db, userId, id)
        if (request.principal.applicationCredentialId === row.id && !deps.tokens.snapshot.appCreds.get(row.id)?.unrestricted) {
          throw new AppError('forbidden', 'A restricted application credential cannot delete itself.')
        }
        await deleteApplicationCredential(db, row.id)
        // Its tokens end with it, here at once and elsewhere at the next poll.
        await deps.tokens.refresh()
        return reply.code(204).send()
      },
    )
  }
}
