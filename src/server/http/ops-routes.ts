/**
 * Operations endpoints, open without authentication: liveness, readiness, metrics (the process's; every guest's
 * and host's latest sample only with the metrics token) and the OpenAPI document.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import type { Registry } from 'prom-client'
import type { AppDeps } from '../deps.js'
import { metricsText, type RequestStats } from './metrics.js'
import { mediaAnswer } from './openapi.js'
import { cloudMetricsText } from '../metrics/prometheus.js'

export interface OpsState {
  /** Set once migrations and bootstrap have finished. */
  migrated: boolean
  /** Set when a graceful stop began: responses then close their connection so the drain ends. */
  closing?: boolean
}

/** A database that accepts connections but never answers must not hang the readiness probe. */
const PING_TIMEOUT_MS = 2000

const readiness = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['ready', 'starting', 'unavailable'] },
    database: { type: 'string', enum: ['ok', 'unreachable', 'unknown'] },
    migrations: { type: 'string', enum: ['done', 'pending'] },
  },
  required: ['status', 'database', 'migrations'],
} as const

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms)))
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** What /metrics answers: the process's own metrics to anyone, the cloud's to the holder of the metrics token. */
function metricsAccess(authorization: string | undefined, token: string | undefined): 'process' | 'cloud' | 'refused' {
  if (authorization === undefined) return 'process'
  const presented = /^Bearer (.+)$/i.exec(authorization)?.[1]
  if (!token || presented === undefined) return 'refused'
  const digest = (text: string) => createHash('sha256').update(text).digest()
  return timingSafeEqual(digest(presented), digest(token)) ? 'cloud' : 'refused'
}

export function registerOpsRoutes(app: FastifyInstance, deps: AppDeps, metrics: { registry: Registry; requests: RequestStats }, state: OpsState): void {
  app.get(
    '/healthz',
    {
      schema: {
        summary: 'Liveness: the process is up and serving HTTP',
        security: [],
        tags: ['operations'],
        response: { 200: { type: 'object', properties: { status: { type: 'string', const: 'ok' } }, required: ['status'] } },
      },
    },
    async () => ({ status: 'ok' }),
  )

  app.get(
    '/readyz',
    {
      schema: {
        summary: 'Readiness: the database answers and migrations are done',
        security: [],
        tags: ['operations'],
        response: { 200: readiness, 503: readiness },
      },
    },
    async (_request, reply) => {
      if (!state.migrated) return reply.code(503).send({ status: 'starting', database: 'unknown', migrations: 'pending' })
      try {
        await withTimeout(deps.store.ping(), PING_TIMEOUT_MS, 'the database ping')
      } catch (err) {
        deps.logger.warn({ err }, 'readiness: database unreachable')
        return reply.code(503).send({ status: 'unavailable', database: 'unreachable', migrations: 'done' })
      }
      return { status: 'ready', database: 'ok', migrations: 'done' }
    },
  )

  const metricsDocs = {
    summary: 'Prometheus metrics: the process, and with the PCC_METRICS_TOKEN bearer token every guest and host',
    tags: ['operations'],
    security: [],
    response: { 200: mediaAnswer('text/plain', 'Metrics in the Prometheus text format 0.0.4'), 401: mediaAnswer('text/plain', 'A bearer token that is not PCC_METRICS_TOKEN') },
  }
  app.get('/metrics', { schema: metricsDocs }, async (request, reply) => {
    reply.type(metrics.registry.contentType)
    const process = await metricsText(metrics.registry, metrics.requests)
    // Guests and hosts name every project, server and host of the cloud: only for the scraper holding the token.
    const access = metricsAccess(request.headers.authorization, deps.config.metricsToken)
    if (access === 'refused') return reply.code(401).type('text/plain').send('pcc: the bearer token is not PCC_METRICS_TOKEN\n')
    if (access === 'process') return process
    // Guests and hosts (docs/metrics.md) come from the store: with the database away the process's own metrics still matter.
    const cloud = await cloudMetricsText(deps.store.db).catch((err: unknown) => {
      deps.logger.warn({ err }, 'metrics: guest and host samples unreadable')
      return ''
    })
    return `${process}\n${cloud}`
  })

  const documentDocs = { summary: 'This document: every route with its schemas', tags: ['operations'], security: [], response: { 200: { type: 'object', description: 'An OpenAPI 3.1 document' } } }
  app.get('/openapi.json', { schema: documentDocs }, async () => app.swagger())
}
