/**
 * Prometheus metrics of one server process: request counts and latencies per route and status, the task
 * queue's depth (read from the store when scraped) and Node's own metrics, event-loop lag among them.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { FastifyInstance } from 'fastify'
import type { TaskQueue } from '../tasks/queue.js'

export function createMetrics(queue: TaskQueue): Registry {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 })
  new Gauge({
    name: 'pcc_task_queue_depth',
    help: 'Tasks in the durable queue by status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      // With the database away the other metrics still matter: keep the last depth rather than fail the scrape.
      const depth = await queue.depth().catch(() => undefined)
      if (!depth) return
      this.set({ status: 'queued' }, depth.queued)
      this.set({ status: 'running' }, depth.running)
    },
  })
  return registry
}

export function instrumentRequests(app: FastifyInstance, registry: Registry): void {
  const requests = new Counter({ name: 'pcc_http_requests_total', help: 'HTTP requests by route, method and status', labelNames: ['route', 'method', 'status'], registers: [registry] })
  const latency = new Histogram({
    name: 'pcc_http_request_duration_seconds',
    help: 'HTTP request latency by route, method and status',
    labelNames: ['route', 'method', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  })
  // One pair of label-bound children per (route, method, status), so a request does not hash its labels again.
  const children = new Map<string, { count: ReturnType<typeof requests.labels>; time: ReturnType<typeof latency.labels> }>()
  app.addHook('onResponse', (request, reply, done) => {
    // The route pattern, not the URL, so ids do not explode the label set.
    const route = request.routeOptions.url ?? 'unmatched'
    const key = `${route} ${request.method} ${reply.statusCode}`
    let child = children.get(key)
    if (!child) {
      const labels = { route, method: request.method, status: String(reply.statusCode) }
      children.set(key, (child = { count: requests.labels(labels), time: latency.labels(labels) }))
    }
    child.count.inc()
    child.time.observe(reply.elapsedTime / 1000)
    done()
  })
}
