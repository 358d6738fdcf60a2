/**
 * Builds the Fastify application from its dependencies: request ids, logging, metrics, the operations routes
 * and every API family under its prefix. Used by the server process and by tests (inject or real listen).
 */
import { randomUUID } from 'node:crypto'
import Fastify, { LogController, type FastifyInstance, type FastifySchema, type FastifyServerOptions } from 'fastify'
import swagger from '@fastify/swagger'
import type { AppDeps } from './deps.js'
import type { Principal } from './auth/principal.js'
import { registerFamily, toPublicError } from './http/api-family.js'
import { renderPlainError } from './http/error-renderers.js'
import { createMetrics, instrumentRequests } from './http/metrics.js'
import { registerOpsRoutes, type OpsState } from './http/ops-routes.js'
import { registerDownloadRoutes } from './http/downloads-routes.js'
import { registerWebConsoleRoutes } from './http/web-console-routes.js'
import { apiFamilies } from './api/families.js'
import { lazyChildLogger } from './http/request-logger.js'
import { acceptBodilessJson } from './http/json-body.js'
import { registerConsoleRoutes } from './console/console-routes.js'

export interface BuildOptions {
  https?: { key: Buffer; cert: Buffer }
  state?: OpsState
}

function hasSchema(schema: FastifySchema | undefined): boolean {
  return !!schema && ['body', 'querystring', 'params', 'headers', 'response'].some((part) => (schema as Record<string, unknown>)[part] !== undefined)
}

/**
 * The schema a route is documented with: routes without one are hidden; path parameters a route's own schema
 * leaves out (it validates only some of them) are added as strings, so every `{name}` in the document is declared.
 */
function documentedSchema(schema: FastifySchema | undefined, url: string): FastifySchema {
  if (!hasSchema(schema)) return { ...schema, hide: true }
  const names = [...url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1])
  const params = (schema!.params ?? { type: 'object', properties: {} }) as { properties?: Record<string, unknown> }
  const missing = names.filter((name) => !params.properties?.[name])
  if (missing.length === 0) return schema!
  const properties = { ...params.properties, ...Object.fromEntries(missing.map((name) => [name, { type: 'string' }])) }
  return { ...schema, params: { ...params, type: 'object', properties } }
}

/** Nova's request id form, which clients print and operators grep for. */
const newRequestId = () => `req-${randomUUID()}`

export async function buildApp(deps: AppDeps, options: BuildOptions = {}): Promise<FastifyInstance> {
  const serverOptions: FastifyServerOptions & { https?: { key: Buffer; cert: Buffer } } = {
    loggerInstance: deps.logger,
    genReqId: newRequestId,
    childLoggerFactory: lazyChildLogger,
    // One line per request (below) instead of Fastify's two: logging is a large share of a small request's cost.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.config.bodyLimitBytes,
    // Clients such as Tempest send Connection: close; Node honours it. Keep-alive sockets idle out.
    keepAliveTimeout: 65_000,
    return503OnClosing: true,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', allErrors: false } },
    https: options.https,
  }
  const app = Fastify(serverOptions) as unknown as FastifyInstance
  acceptBodilessJson(app)
  // Declared up front so every request object keeps one shape; the auth hooks set it (auth/http-auth.ts).
  app.decorateRequest('principal', null as unknown as Principal)
  const metrics = createMetrics(deps.queue)
  const requestStats = instrumentRequests(app)

  // Callback-style hooks: a promise per hook and request is measurable on small requests.
  if (deps.logger.isLevelEnabled('info')) {
    // The access line holds only these fields, and the req serializer already replaces secret query values, so it
    // skips the redaction paths: their wildcards cost three times the rest of the line (~15 µs per request).
    const accessLog = deps.logger.child({}, { redact: [] })
    app.addHook('onResponse', (request, reply, done) => {
      accessLog.info({ reqId: request.id, req: request, res: { statusCode: reply.statusCode }, responseTime: Math.round(reply.elapsedTime * 10) / 10 }, 'request completed')
      done()
    })
  }

  const state = options.state ?? { migrated: true }
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-openstack-request-id', request.id)
    // Keep-alive connections would otherwise hold a graceful stop open until they idle out.
    if (state.closing) reply.header('connection', 'close')
    done(null, payload)
  })

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'pcc', description: 'Private-cloud control plane: OpenStack-compatible compute, identity, network, volume and image APIs, resource manager and OIDC provider', version: '0.1.0' },
      servers: [{ url: deps.urls.base }],
    },
    // The document lists what it can describe: routes declared with a schema (the one that validates them).
    transform: ({ schema, url }) => ({ schema: documentedSchema(schema, url), url }),
  })

  registerOpsRoutes(app, deps, { registry: metrics, requests: requestStats }, state)
  registerDownloadRoutes(app, deps)
  registerWebConsoleRoutes(app)
  for (const family of apiFamilies(deps)) await registerFamily(app, family)
  registerConsoleRoutes(app, deps)

  // Outside every family's prefix: the plain error shape.
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(renderPlainError({ status: 404, code: 'not_found', message: `The resource could not be found: ${request.url.split('?')[0]}` })),
  )
  app.setErrorHandler((err, request, reply) => {
    const error = toPublicError(err, request)
    return reply.code(error.status).send(renderPlainError(error))
  })
  return app
}
