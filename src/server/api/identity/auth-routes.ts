/**
 * Identity authentication routes (Keystone v3): version documents, /auth/tokens (issue, validate, check,
 * revoke), /auth/catalog|projects|domains|system, and the credential, application-credential and OS-OAUTH1 token
 * resources (auth/). Handlers are thin: the flow is identity/auth-flow.ts, tokens identity/token-service.ts, rules
 * policy/identity-auth.policy.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError, notFound } from '../../../contracts/errors.js'
import { authChallenge, authHook } from '../../auth/http-auth.js'
import type { AppDeps } from '../../deps.js'
import { authorize } from '../../policy/rules.js'
import { identityAuthPolicy } from '../../policy/identity-auth.policy.js'
import { applicationCredentialRoutes } from './auth/application-credential-routes.js'
import { accessRuleRoutes } from './auth/access-rule-routes.js'
import { credentialRoutes } from './auth/credential-routes.js'
import { oauth1Routes, signedRequest } from './auth/oauth1-routes.js'
import { authListBodies } from './auth/scope-lists.js'
import { documented, noBody, OPEN } from '../../http/openapi.js'
import { A, V, list } from './answers.js'
import type { FromSchema } from '../../http/route-types.js'

const JSON_TYPE = 'application/json'

/** Keystone's boolean query parameters: present means true unless it says 0/false/no/off. */
export function queryFlag(value: unknown): boolean {
  if (value === undefined) return false
  return !/^(0|false|no|off)$/i.test(String(value))
}

export function versionDocument(identityUrl: string) {
  return {
    id: 'v3.14',
    status: 'stable',
    updated: '2020-04-07T00:00:00Z',
    links: [{ rel: 'self', href: `${identityUrl}/` }],
    'media-types': [{ base: JSON_TYPE, type: 'application/vnd.openstack.identity-v3+json' }],
  }
}

/** The token a validation, check or revocation is about (the caller's own is X-Auth-Token). */
const subjectHeader = { type: 'object', properties: { 'x-subject-token': { type: 'string' } }, required: ['x-subject-token'] }

const flagQuery = {
  type: 'object',
  properties: { nocatalog: { type: 'string' }, allow_expired: { type: 'string' } },
} as const

const authBody = {
  type: 'object',
  required: ['auth'],
  properties: {
    auth: {
      type: 'object',
      required: ['identity'],
      properties: {
        identity: {
          type: 'object',
          required: ['methods'],
          properties: { methods: { type: 'array', minItems: 1, items: { type: 'string' } } },
        },
        // An object, or the string "unscoped"; the flow checks it (a union type would need Ajv's allowUnionTypes).
        scope: {},
      },
    },
  },
} as const

export function authRoutes(deps: AppDeps) {
  return async (scope: FastifyInstance): Promise<void> => {
    const tokens = deps.tokens
    const flow = deps.identityAuth
    const identityUrl = deps.urls.identity
    const requireAuth = authHook(tokens, identityUrl)

    scope.get('/', documented({ ...OPEN, summary: 'Identity API versions', response: { 300: A.versions } }), async (_request, reply) => {
      reply.code(300).header('location', `${identityUrl}/`)
      return { versions: { values: [versionDocument(identityUrl)] } }
    })
    scope.get('/v3', documented({ ...OPEN, summary: 'The identity API v3', response: { 200: A.version } }), async () => ({ version: versionDocument(identityUrl) }))
    scope.get('/v3/', documented({ ...OPEN, summary: 'The identity API v3', response: { 200: A.version } }), async () => ({ version: versionDocument(identityUrl) }))

    scope.post<{ Body: FromSchema<typeof authBody>; Querystring: FromSchema<typeof flagQuery> }>(
      '/v3/auth/tokens',
      { ...documented({ ...OPEN, summary: 'Authenticate: issue a token (X-Subject-Token), or an auth receipt (401) when more factors are needed', response: { 201: A.token } }), schema: { body: authBody, querystring: flagQuery } },
      async (request, reply) => {
        const receiptHeader = request.headers['openstack-auth-receipt']
        let outcome
        try {
          // The oauth1 method reads the request's OAuth signature.
          const signed = request.body.auth.identity.methods.includes('oauth1') ? signedRequest(request, identityUrl) : undefined
          outcome = await flow.authenticate(request.body.auth, typeof receiptHeader === 'string' ? receiptHeader : undefined, signed)
        } catch (err) {
          // Every 401 tells the client where to authenticate (Keystone's WWW-Authenticate).
          if (err instanceof AppError && err.code === 'unauthorized') throw new AppError('unauthorized', err.message, { headers: authChallenge(identityUrl) })
          throw err
        }
        if (outcome.kind === 'receipt') {
          return reply.code(401).header('openstack-auth-receipt', outcome.receipt).type(JSON_TYPE).send(JSON.stringify(outcome.body))
        }
        const body = tokens.body(outcome, !queryFlag(request.query.nocatalog))
        return reply.code(201).header('x-subject-token', outcome.token).type(JSON_TYPE).send(body)
      },
    )

    /** The subject token, validated before the policy decision (Keystone's order); any failure is 404. */
    const subject = (request: FastifyRequest<{ Querystring: { allow_expired?: string } }>, allowExpired: boolean) => {
      const header = request.headers['x-subject-token']
      if (typeof header !== 'string' || header === '') throw notFound('No token in the request.')
      return { token: header, checked: tokens.check(header, { allowExpired }) }
    }

    // Not async: the answer is ready at once.
    const validate = (operation: 'identity:validate_token' | 'identity:check_token', withBody: boolean) =>
      function (request: FastifyRequest<{ Querystring: { nocatalog?: string; allow_expired?: string } }>, reply: FastifyReply) {
        const { token, checked } = subject(request, queryFlag(request.query.allow_expired))
        authorize(identityAuthPolicy, operation, request.principal, { userId: checked.payload.u })
        reply.header('x-subject-token', token)
        if (!withBody) return reply.code(200).send()
        return reply.type(JSON_TYPE).send(tokens.body(checked, !queryFlag(request.query.nocatalog)))
      }
    // HEAD first: Fastify would otherwise derive it from GET (with a body to discard).
    type FlagQuery = { Querystring: { nocatalog?: string; allow_expired?: string } }
    scope.head<FlagQuery>('/v3/auth/tokens', { ...documented({ summary: 'Check the token in X-Subject-Token', headers: subjectHeader, response: { 200: noBody('Valid') } }), schema: { querystring: flagQuery }, preHandler: requireAuth }, validate('identity:check_token', false))
    scope.get<FlagQuery>('/v3/auth/tokens', { ...documented({ summary: 'Validate the token in X-Subject-Token', headers: subjectHeader, response: { 200: A.token } }), schema: { querystring: flagQuery }, preHandler: requireAuth }, validate('identity:validate_token', true))

    scope.delete<{ Querystring: { allow_expired?: string } }>('/v3/auth/tokens', { ...documented({ summary: 'Revoke the token in X-Subject-Token', headers: subjectHeader, response: { 204: noBody('Revoked') } }), preHandler: requireAuth }, async (request, reply) => {
      const { checked } = subject(request, false)
      authorize(identityAuthPolicy, 'identity:revoke_token', request.principal, { userId: checked.payload.u })
      await tokens.revoke(checked.payload)
      return reply.code(204).send()
    })

    const lists = authListBodies(deps)
    scope.get('/v3/auth/catalog', { ...documented({ summary: "The service catalog of the token's project", response: { 200: A.catalog } }), preHandler: requireAuth }, async (request, reply) => {
      authorize(identityAuthPolicy, 'identity:get_auth_catalog', request.principal)
      const s = request.principal.scope
      if (s.type !== 'project') throw new AppError('forbidden', 'A catalog is only available to a project-scoped token.')
      const catalog = tokens.snapshot.catalog(s.projectId, request.principal.userId).json
      return reply.type(JSON_TYPE).send(`{"catalog":${catalog},"links":${JSON.stringify({ self: `${identityUrl}/auth/catalog`, previous: null, next: null })}}`)
    })
    scope.get('/v3/auth/projects', { ...documented({ summary: 'The projects the token could be scoped to', response: { 200: list('projects', V.project) } }), preHandler: requireAuth }, async (request) => {
      authorize(identityAuthPolicy, 'identity:get_auth_projects', request.principal)
      return lists.projects(request.principal)
    })
    scope.get('/v3/auth/domains', { ...documented({ summary: 'The domains the token could be scoped to', response: { 200: list('domains', V.domain) } }), preHandler: requireAuth }, async (request) => {
      authorize(identityAuthPolicy, 'identity:get_auth_domains', request.principal)
      return lists.domains(request.principal)
    })
    scope.get('/v3/auth/system', { ...documented({ summary: 'Whether the token could be scoped to the system', response: { 200: A.system } }), preHandler: requireAuth }, async (request) => {
      authorize(identityAuthPolicy, 'identity:get_auth_system', request.principal)
      return lists.system(request.principal)
    })

    await credentialRoutes(deps, requireAuth)(scope)
    await applicationCredentialRoutes(deps, requireAuth)(scope)
    await accessRuleRoutes(deps, requireAuth)(scope)
    await oauth1Routes(deps, requireAuth)(scope)
  }
}
