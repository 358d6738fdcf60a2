/**
 * Builds the Fastify application from its dependencies: request ids, logging, metrics, the operations routes
 * and every API family under its prefix. Used by the server process and by tests (inject or real listen).
 */
import { randomUUID } from 'node:crypto'
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { AppDeps } from './deps.js'
import type { Principal } from './auth/principal.js'
import { clientErrors, frameworkErrors, registerFamily, toPublicError } from './http/api-family.js'
import { lazyAjvValidators } from './http/validators.js'
import { renderPlainError } from './http/error-renderers.js'
import { createMetrics, instrumentRequests } from './http/metrics.js'
import { registerOpsRoutes, type OpsState } from './http/ops-routes.js'
import { registerDownloadRoutes } from './http/downloads-routes.js'
import { registerWebConsoleRoutes } from './http/web-console-routes.js'
import { apiFamilies } from './api/families.js'
import { lazyChildLogger } from './http/request-logger.js'
import { registerOpenApi } from './http/openapi.js'
import { acceptBodilessJson, refuseNul } from './http/json-body.js'
import { registerConsoleRoutes } from './remote-consoles/console-routes.js'

export interface BuildOptions {
  https?: { key: Buffer; cert: Buffer }
  state?: OpsState
}

/** Nova's request id form, which clients print and operators grep for. */
const newRequestId = () => `req-${randomUUID()}`

/**
 * Longest path parameter routed (percent-encoded): a 255-character name in 4-byte UTF-8 is 3,060 characters
 * encoded, and key pair names, metadata keys, tags and image members may be 255 characters long.
 */
const MAX_PARAM_LENGTH = 4096

/**
 * Routes every agent calls every few seconds (the local hypervisor's among them): a success is logged at debug, so
 * the access log at info holds what people did, not 17 000 heartbeats a day per host. Failures stay at info.
 */
const AGENT_POLLS = new Set(['/resmgr/v1/hosts/:id/heartbeat', '/resmgr/v1/hosts/:id/commands', '/resmgr/v1/hosts/:id/network'])

export async function buildApp(deps: AppDeps, options: BuildOptions = {}): Promise<FastifyInstance> {
  const families = apiFamilies(deps)
  const serverOptions: FastifyServerOptions & { https?: { key: Buffer; cert: Buffer } } = {
    loggerInstance: deps.logger,
    genReqId: newRequestId,
    childLoggerFactory: lazyChildLogger,
    // One line per request (below) instead of Fastify's two: logging is a large share of a small request's cost.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.config.bodyLimitBytes,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: frameworkErrors(families),
    clientErrorHandler: clientErrors(families),
    // Clients such as Tempest send Connection: close; Node honours it. Keep-alive sockets idle out.
    keepAliveTimeout: 65_000,
    return503OnClosing: true,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', allErrors: false } },
    schemaController: { compilersFactory: { buildValidator: lazyAjvValidators() } },
    https: options.https,
  }
  const app = Fastify(serverOptions) as unknown as FastifyInstance
  acceptBodilessJson(app)
  refuseNul(app)
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
      const level = reply.statusCode < 400 && AGENT_POLLS.has(request.routeOptions.url ?? '') ? 'debug' : 'info'
      accessLog[level]({ reqId: request.id, req: request, res: { statusCode: reply.statusCode }, responseTime: Math.round(reply.elapsedTime * 10) / 10 }, 'request completed')
      done()
    })
  }

  const state = options.state ?? { migrated: true }
  // Under TLS, browsers keep to HTTPS for a year (docs/deployment.md): no first request in clear text to strip.
  const hsts = options.https !== undefined
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-openstack-request-id', request.id)
    if (hsts) reply.header('strict-transport-security', 'max-age=31536000')
    // Keep-alive connections would otherwise hold a graceful stop open until they idle out.
    if (state.closing) reply.header('connection', 'close')
    done(null, payload)
  })

  // Response schemas describe answers in /openapi.json; they never shape them (fast-json-stringify would drop
  // keys a schema leaves out and coerce types), so every answer is serialized as the handler built it.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data))
  await registerOpenApi(app, { baseUrl: deps.urls.base, families })

  // Outside every family's prefix: the plain error shape. Set before the routes, which keep the handler they
  // were registered under (the operations routes answered their errors in Fastify's own shape; found by the fuzz suite).
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(renderPlainError({ status: 404, code: 'not_found', message: `The resource could not be found: ${request.url.split('?')[0]}` })),
  )
  app.setErrorHandler((err, request, reply) => {
    const error = toPublicError(err, request)
    return reply.code(error.status).send(renderPlainError(error))
  })

  registerOpsRoutes(app, deps, { registry: metrics, requests: requestStats }, state)
  registerDownloadRoutes(app, deps)
  registerWebConsoleRoutes(app)
  for (const family of families) await registerFamily(app, family)
  registerConsoleRoutes(app, deps)

  return app
}
