/** Operations endpoints, open without authentication: liveness, readiness, metrics and the OpenAPI document. */
import type { FastifyInstance } from 'fastify'
import type { Registry } from 'prom-client'
import type { AppDeps } from '../deps.js'

export interface OpsState {
  /** Set once migrations and bootstrap have finished. */
  migrated: boolean
  /** Set when a graceful stop began: responses then close their connection so the drain ends. */
  closing?: boolean
}

export function registerOpsRoutes(app: FastifyInstance, deps: AppDeps, metrics: Registry, state: OpsState): void {
  const hidden = { schema: { hide: true } }
  app.get('/healthz', hidden, async () => ({ status: 'ok' }))

  app.get('/readyz', hidden, async (_request, reply) => {
    if (!state.migrated) return reply.code(503).send({ status: 'starting', database: 'unknown', migrations: 'pending' })
    try {
      await deps.store.ping()
    } catch (err) {
      deps.logger.warn({ err }, 'readiness: database unreachable')
      return reply.code(503).send({ status: 'unavailable', database: 'unreachable', migrations: 'done' })
    }
    return { status: 'ready', database: 'ok', migrations: 'done' }
  })

  app.get('/metrics', hidden, async (_request, reply) => {
    reply.type(metrics.contentType)
    return metrics.metrics()
  })

  app.get('/openapi.json', hidden, async () => app.swagger())
}
