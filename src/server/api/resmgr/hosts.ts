/**
 * Hosts and roles of the resource manager ({base}/resmgr/v1): registration tokens and host listing/removal
 * and role changes for users (identity token), registration with a one-time token, and the agent's calls
 * (heartbeat, role status, command long-poll and results) authenticated by the host's own credential.
 */
import type { FastifyInstance } from 'fastify'
import { notFound } from '../../../contracts/errors.js'
import { authHook } from '../../auth/http-auth.js'
import { hostAuth } from './host-auth.js'
import type { AppDeps } from '../../deps.js'
import type { HeartbeatRequest, RegistrationRequest } from '../../onboarding/onboarding-service.js'
import { ROLES } from '../../onboarding/roles.js'
import { RESMGR_HOSTS_POLICY } from '../../policy/resmgr-hosts.policy.js'
import { authorize } from '../../policy/rules.js'
import { documented, HOST_CREDENTIAL, noBody, OPEN } from '../../http/openapi.js'
import { readHistory, type MetricRange } from '../../metrics/metric-history.js'
import { HOST_POINT_FIELDS, hostPointView, metricsSchema, RANGE_NAMES } from '../../metrics/metric-views.js'

const uuid = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
const str = (max = 255) => ({ type: 'string', maxLength: max })
const hostParams = { type: 'object', properties: { id: str(64) }, required: ['id'] }
const roleParams = { type: 'object', properties: { id: str(64), role: str(64) }, required: ['id', 'role'] }
const forceQuery = { type: 'object', properties: { force: { type: 'boolean' } } }

const nicSchema = {
  type: 'object',
  required: ['name', 'mac', 'ips'],
  properties: {
    name: str(64),
    mac: str(64),
    ips: { type: 'array', maxItems: 64, items: str(64) },
    bond: { type: 'object', required: ['mode', 'slaves'], properties: { mode: str(64), slaves: { type: 'array', maxItems: 32, items: str(64) } } },
  },
}

const registerSchema = {
  type: 'object',
  required: ['registration_token', 'host_id', 'hostname', 'os_info', 'arch', 'cpu', 'memory_mb', 'disk_gb', 'nics', 'agent_version'],
  properties: {
    registration_token: { type: 'string', minLength: 1, maxLength: 255 },
    host_id: { type: 'string', pattern: uuid },
    hostname: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9][A-Za-z0-9.-]*$' },
    os_info: { type: 'object', required: ['id', 'version_id', 'pretty_name'], properties: { id: str(), version_id: str(), pretty_name: str() } },
    arch: str(32),
    cpu: { type: 'object', required: ['count', 'model', 'virtualization'], properties: { count: { type: 'integer', minimum: 1, maximum: 100000 }, model: str(), virtualization: { type: 'boolean' } } },
    memory_mb: { type: 'integer', minimum: 0 },
    disk_gb: { type: 'integer', minimum: 0 },
    nics: { type: 'array', maxItems: 256, items: nicSchema },
    agent_version: str(64),
    protocol_version: { type: 'integer', minimum: 1, maximum: 1000 },
    driver: { type: 'string', enum: ['simulated', 'qemu'] },
  },
}

/** Metrics samples (src/contracts/host/metrics.ts): every counter a non-negative number, every list bounded. */
const count = { type: 'number', minimum: 0 }
const counts = (names: string[]) => Object.fromEntries(names.map((n) => [n, count]))
const sampleObject = (properties: Record<string, unknown>) => ({ type: 'object', required: Object.keys(properties), properties })
const guestSampleSchema = sampleObject({
  serverId: { type: 'string', pattern: uuid },
  at: count,
  state: { type: 'string', enum: ['running', 'paused', 'shutdown', 'suspended', 'crashed', 'pending'] },
  ...counts(['vcpus', 'cpuNs', 'uptimeS', 'memoryMaxKb', 'memoryUsedKb']),
  disks: { type: 'array', maxItems: 64, items: sampleObject({ name: str(64), ...counts(['rdBytes', 'wrBytes', 'rdReqs', 'wrReqs', 'errors']) }) },
  nics: { type: 'array', maxItems: 64, items: sampleObject({ mac: str(64), ...counts(['rxBytes', 'txBytes', 'rxPackets', 'txPackets', 'rxErrors', 'txErrors', 'rxDrop', 'txDrop']) }) },
})
const hostSampleSchema = sampleObject({
  ...counts(['at', 'cpuBusy', 'cpuTotal', 'cpus', 'memoryTotalKb', 'memoryUsedKb', 'diskUsedBytes', 'diskTotalBytes', 'guests']),
  accelerator: str(32),
})
const samplesSchema = { type: 'object', required: ['host', 'guests'], properties: { host: hostSampleSchema, guests: { type: 'array', maxItems: 10000, items: guestSampleSchema } } }

const heartbeatSchema = {
  type: 'object',
  properties: {
    facts: { type: 'object', properties: { protocol_version: { type: 'integer', minimum: 1, maximum: 1000 } } },
    capacity: {
      type: 'object',
      required: ['vcpus', 'memory_mb', 'disk_gb'],
      properties: { vcpus: { type: 'integer', minimum: 0 }, memory_mb: { type: 'integer', minimum: 0 }, disk_gb: { type: 'integer', minimum: 0 } },
    },
    guests: { type: 'array', maxItems: 10000, items: { type: 'object' } },
    samples: samplesSchema,
  },
}

const obj = (properties: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties, required })
const HOST = obj(
  {
    id: str(),
    info: obj({ hostname: str(), os_family: str(), arch: str(), os_info: str(), responding: { type: 'boolean' }, last_response_time: { type: ['string', 'null'] }, cpu_info: { type: 'object' } }),
    roles: { type: 'array', items: str() },
    role_status: str(),
    roles_status_details: { type: 'object', additionalProperties: str() },
    hypervisor_info: obj({
      vcpus: { type: 'integer' },
      memory_mb: { type: 'integer' },
      disk_gb: { type: 'integer' },
      running_vms: { type: 'integer' },
      cpu_allocation_ratio: { type: 'number', description: 'vCPUs the scheduler places per physical CPU' },
      ram_allocation_ratio: { type: 'number', description: 'RAM the scheduler places per MiB of memory' },
      disk_allocation_ratio: { type: 'number', description: 'Disk the scheduler places per GiB of disk' },
    }),
    extensions: { type: 'object' },
    agent_version: str(),
    protocol_version: { type: ['integer', 'null'], description: 'The host protocol its pcc-agent speaks (null: a host without an agent)' },
    message: str(),
  },
  ['id', 'info', 'roles', 'role_status'],
)
const hostCredential = 'Authorization: Bearer <host credential>; a host acts only for itself'
const DOCS = {
  registrationToken: documented({
    summary: 'Create a one-time registration token for a new host, or with host_id to re-register that host (admin)',
    response: { 201: obj({ token: str(), id: str(), expires_at: str(), host_id: str() }, ['token', 'id', 'expires_at']) },
  }),
  register: documented({ ...OPEN, summary: 'Register a host with a registration token; answers its credential', response: { 201: obj({ host: HOST, credential: str() }, ['host', 'credential']) } }),
  roles: documented({ summary: 'The roles a host can take', response: { 200: { type: 'array', items: obj({ name: str(), display_name: str(), description: str() }) } } }),
  list: documented({ summary: 'List hosts', response: { 200: { type: 'array', items: HOST } } }),
  show: documented({ summary: 'Show a host', response: { 200: HOST } }),
  metrics: documented({
    summary: "A host's metrics history (CPUs busy, memory, disk used, guests) over an hour, day, week or year",
    querystring: { type: 'object', properties: { range: { type: 'string', enum: RANGE_NAMES } } },
    response: { 200: metricsSchema('metrics', HOST_POINT_FIELDS) },
  }),
  delete: documented({ summary: 'Remove a host (force: also with servers on it)', response: { 200: { type: 'object', maxProperties: 0 } } }),
  assignRole: documented({ summary: 'Give a host a role', response: { 200: HOST } }),
  removeRole: documented({ summary: 'Take a role from a host', response: { 200: HOST } }),
  heartbeat: documented({ ...HOST_CREDENTIAL, summary: `The agent's heartbeat (${hostCredential})`, response: { 200: obj({ roles: { type: 'object', additionalProperties: str() } }, ['roles']) } }),
  roleStatus: documented({ ...HOST_CREDENTIAL, summary: `The agent reports a role's state (${hostCredential})`, response: { 200: obj({ role: str(), state: str() }, ['role', 'state']) } }),
  commands: documented({
    ...HOST_CREDENTIAL,
    summary: `The agent takes its pending commands, waiting up to \`wait\` seconds (${hostCredential})`,
    response: { 200: obj({ commands: { type: 'array', items: obj({ id: str(), op: str(), args: {} }, ['id', 'op']) } }, ['commands']) },
  }),
  commandResult: documented({ ...HOST_CREDENTIAL, summary: `The agent reports a command's outcome (${hostCredential})`, response: { 204: noBody('Recorded') } }),
}

export function hostRoutes(deps: AppDeps) {
  const requireAuth = authHook(deps.tokens, deps.urls.identity)
  const onboarding = deps.onboarding
  const requireHost = hostAuth(deps)

  return async (scope: FastifyInstance): Promise<void> => {
    scope.post<{ Body: { expires_in?: number; note?: string; host_id?: string } }>(
      '/v1/registration-tokens',
      {
        onRequest: requireAuth,
        schema: {
          tags: ['resmgr'],
          // Both fields have defaults: a bodiless request (validated as null) creates a token with them.
          body: {
            type: ['object', 'null'],
            additionalProperties: false,
            properties: { expires_in: { type: 'integer', minimum: 60, maximum: 30 * 86400 }, note: str(1024), host_id: { type: 'string', pattern: uuid } },
          },
        },
        ...DOCS.registrationToken,
      },
      async (request, reply) => {
        authorize(RESMGR_HOSTS_POLICY, 'registration_tokens:create', request.principal)
        const body = request.body ?? {}
        const created = await onboarding.createRegistrationToken(request.principal.userId, body.expires_in ?? 3600, body.note, body.host_id)
        reply.header('cache-control', 'no-store')
        return reply.code(201).send(created)
      },
    )

    scope.post<{ Body: RegistrationRequest }>('/v1/hosts/register', { schema: { tags: ['resmgr'], body: registerSchema }, ...DOCS.register }, async (request, reply) => {
      const result = await onboarding.register(request.body)
      reply.header('cache-control', 'no-store')
      return reply.code(201).send(result)
    })

    scope.get('/v1/roles', { onRequest: requireAuth, ...DOCS.roles }, async () => ROLES)

    scope.get('/v1/hosts', { onRequest: requireAuth, ...DOCS.list }, async (request) => {
      authorize(RESMGR_HOSTS_POLICY, 'hosts:list', request.principal)
      return onboarding.list()
    })

    scope.get<{ Params: { id: string } }>('/v1/hosts/:id', { onRequest: requireAuth, schema: { params: hostParams }, ...DOCS.show }, async (request) => {
      authorize(RESMGR_HOSTS_POLICY, 'hosts:get', request.principal)
      return onboarding.view(request.params.id.toLowerCase())
    })

    scope.get<{ Params: { id: string }; Querystring: { range?: MetricRange } }>(
      '/v1/hosts/:id/metrics',
      { onRequest: requireAuth, schema: { params: hostParams, querystring: { type: 'object', properties: { range: { type: 'string', enum: RANGE_NAMES } } } }, ...DOCS.metrics },
      async (request) => {
        authorize(RESMGR_HOSTS_POLICY, 'hosts:metrics', request.principal)
        const host = await onboarding.view(request.params.id.toLowerCase())
        const range = request.query.range ?? 'hour'
        const history = await readHistory(deps.store.db, host.id, range)
        return { metrics: { id: host.id, range, step_seconds: history.step / 1000, points: history.points.map(hostPointView) } }
      },
    )

    scope.delete<{ Params: { id: string }; Querystring: { force?: boolean } }>(
      '/v1/hosts/:id',
      { onRequest: requireAuth, schema: { params: hostParams, querystring: forceQuery }, ...DOCS.delete },
      async (request) => {
        authorize(RESMGR_HOSTS_POLICY, 'hosts:delete', request.principal)
        await onboarding.deleteHost(request.params.id.toLowerCase(), request.query.force === true)
        return {}
      },
    )

    scope.put<{ Params: { id: string; role: string } }>(
      '/v1/hosts/:id/roles/:role',
      { onRequest: requireAuth, schema: { params: roleParams, body: { type: ['object', 'null'] } }, ...DOCS.assignRole },
      async (request) => {
        authorize(RESMGR_HOSTS_POLICY, 'roles:assign', request.principal)
        return onboarding.assignRole(request.params.id.toLowerCase(), request.params.role)
      },
    )

    scope.delete<{ Params: { id: string; role: string }; Querystring: { force?: boolean } }>(
      '/v1/hosts/:id/roles/:role',
      { onRequest: requireAuth, schema: { params: roleParams, querystring: forceQuery }, ...DOCS.removeRole },
      async (request) => {
        authorize(RESMGR_HOSTS_POLICY, 'roles:remove', request.principal)
        return onboarding.removeRole(request.params.id.toLowerCase(), request.params.role, request.query.force === true)
      },
    )

    // The agent's calls.
    scope.post<{ Params: { id: string }; Body: HeartbeatRequest }>(
      '/v1/hosts/:id/heartbeat',
      { onRequest: requireHost, schema: { params: hostParams, body: heartbeatSchema }, ...DOCS.heartbeat },
      async (request) => onboarding.heartbeat(request.params.id.toLowerCase(), request.body ?? {}),
    )

    scope.put<{ Params: { id: string; role: string }; Body: { state: 'ok' | 'failed' | 'removed'; message?: string } }>(
      '/v1/hosts/:id/roles/:role/status',
      {
        onRequest: requireHost,
        schema: {
          params: roleParams,
          body: { type: 'object', required: ['state'], properties: { state: { type: 'string', enum: ['ok', 'failed', 'removed'] }, message: str(4096) } },
        },
        ...DOCS.roleStatus,
      },
      async (request) => onboarding.roleStatus(request.params.id.toLowerCase(), request.params.role, request.body.state, request.body.message),
    )

    scope.get<{ Params: { id: string }; Querystring: { wait?: number; redeliver?: boolean } }>(
      '/v1/hosts/:id/commands',
      {
        onRequest: requireHost,
        schema: { params: hostParams, querystring: { type: 'object', properties: { wait: { type: 'number', minimum: 0, maximum: 30 }, redeliver: { type: 'boolean' } } } },
        ...DOCS.commands,
      },
      async (request) => {
        const abort = new AbortController()
        request.raw.once('close', () => abort.abort())
        const commands = await onboarding.channel.take(request.params.id.toLowerCase(), (request.query.wait ?? 0) * 1000, request.query.redeliver === true, abort.signal)
        return { commands }
      },
    )

    scope.post<{ Params: { id: string; commandId: string }; Body: { result?: unknown; error?: { message: string; code?: number } } }>(
      '/v1/hosts/:id/commands/:commandId',
      {
        onRequest: requireHost,
        schema: {
          params: { type: 'object', properties: { id: str(64), commandId: str(64) }, required: ['id', 'commandId'] },
          body: {
            type: 'object',
            properties: { result: {}, error: { type: 'object', required: ['message'], properties: { message: str(8192), code: { type: 'integer' } } } },
          },
        },
        ...DOCS.commandResult,
      },
      async (request, reply) => {
        const body = request.body ?? {}
        const outcome = body.error ? { ok: false as const, error: body.error } : { ok: true as const, result: body.result ?? null }
        const known = await onboarding.channel.complete(request.params.id.toLowerCase(), request.params.commandId, outcome)
        if (!known) throw notFound(`Command ${request.params.commandId} does not exist for this host.`)
        return reply.code(204).send()
      },
    )
  }
}
