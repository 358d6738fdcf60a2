/**
 * A server's measurements (docs/metrics.md): Nova's GET /servers/{id}/diagnostics (admins, by Nova's default
 * policy) and pcc's GET /servers/{id}/metrics, the server's history over an hour, day, week or year for its
 * project. Both read what the server's host sampled (src/server/metrics/).
 */
import type { FastifyInstance } from 'fastify'
import { Type as T } from '@sinclair/typebox'
import { badRequest, conflict } from '../../../contracts/errors.js'
import type { GuestSample, HostSample } from '../../../contracts/host/metrics.js'
import { queryOf } from '../../../contracts/compute/schemas.js'
import type { AppDeps } from '../../deps.js'
import { documented } from '../../http/openapi.js'
import { latestSample, readHistory } from '../../metrics/metric-history.js'
import { legacyDiagnostics, standardDiagnostics } from '../../metrics/server-diagnostics.js'
import { isRange, metricsSchema, RANGE_NAMES, SERVER_POINT_FIELDS, serverPointView } from '../../metrics/metric-views.js'
import { must } from './context.js'
import { visibleServer } from './servers.js'
import { versioned } from '../../../contracts/compute/schemas.js'
import { versionNumber } from '../../../contracts/compute/versions.js'
import { GATES } from '../../../contracts/compute/versions.js'

const n = T.Union([T.Integer(), T.Null()])
const standard = T.Object({
  state: T.String(),
  driver: T.String(),
  hypervisor: T.Union([T.String(), T.Null()]),
  hypervisor_os: T.Union([T.String(), T.Null()]),
  uptime: n,
  config_drive: T.Boolean(),
  num_cpus: T.Integer(),
  num_nics: T.Integer(),
  num_disks: T.Integer(),
  memory_details: T.Object({ maximum: n, used: n }),
  cpu_details: T.Array(T.Object({ id: n, time: n, utilisation: n })),
  nic_details: T.Array(T.Object({ mac_address: T.Union([T.String(), T.Null()]), rx_octets: n, rx_errors: n, rx_drop: n, rx_packets: n, rx_rate: n, tx_octets: n, tx_errors: n, tx_drop: n, tx_packets: n, tx_rate: n })),
  disk_details: T.Array(T.Object({ read_bytes: n, read_requests: n, write_bytes: n, write_requests: n, errors_count: n })),
})
const legacy = T.Record(T.String(), T.Number())

const DOCS = {
  diagnostics: documented({
    summary: "A server's diagnostics from its latest metrics sample (admin); one shape for every hypervisor from 2.48",
    response: { 200: versioned((v) => (v >= versionNumber(GATES.standardDiagnostics) ? standard : legacy)) },
  }),
  metrics: documented({
    summary: "pcc: a server's metrics history (CPU in vCPUs busy, memory, disk and network rates) over an hour, day, week or year",
    querystring: queryOf({ range: { type: 'string', enum: RANGE_NAMES, description: 'hour (10 s steps, the default), day or week (5 min), year (1 h)' } }),
    response: { 200: metricsSchema('metrics', SERVER_POINT_FIELDS) },
  }),
}

export function serverMetricsRoutes(deps: AppDeps) {
  const db = deps.store.db
  return async (scope: FastifyInstance): Promise<void> => {
    scope.get<{ Params: { id: string } }>('/v2.1/servers/:id/diagnostics', DOCS.diagnostics, async (request) => {
      const server = await visibleServer(deps, request, request.params.id)
      must(request, 'servers:diagnostics', { projectId: server.project_id })
      // Nova asks the server's hypervisor: a server on none has nothing to ask.
      if (!server.host_id) throw conflict(`Instance ${server.id} is not ready yet: it has no host.`)
      const guest = await latestSample<GuestSample>(db, server.id)
      if (!request.api.has('standardDiagnostics')) return legacyDiagnostics(server, guest)
      const host = await latestSample<HostSample>(db, server.host_id)
      const recent = (await readHistory(db, server.id, 'hour')).points.at(-1)
      return standardDiagnostics(server, guest, host, recent?.cpu ?? null)
    })

    scope.get<{ Params: { id: string }; Querystring: { range?: unknown } }>('/v2.1/servers/:id/metrics', DOCS.metrics, async (request) => {
      const range = request.query.range ?? 'hour'
      if (!isRange(range)) throw badRequest(`Invalid range ${JSON.stringify(range)}: one of ${RANGE_NAMES.join(', ')}.`)
      const server = await visibleServer(deps, request, request.params.id)
      must(request, 'servers:metrics', { projectId: server.project_id })
      const history = await readHistory(db, server.id, range)
      return { metrics: { id: server.id, range, step_seconds: history.step / 1000, points: history.points.map(serverPointView) } }
    })
  }
}
