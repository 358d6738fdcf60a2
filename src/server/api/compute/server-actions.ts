/** POST /servers/{id}/action and /servers/{id}/os-instance-actions. */
import type { FastifyInstance } from 'fastify'
import { badRequest, notFound } from '../../../contracts/errors.js'
import { ACTION_BODIES, actionBodyOf } from '../../../contracts/compute/server-action.params.js'
import { inRange, MAX_VERSION, MIN_VERSION, versionNumber, versionString, type ComputeVersion } from '../../../contracts/compute/versions.js'
import { isoMicros } from '../../../contracts/compute/time.js'
import { SERVER_ACTIONS } from '../../compute/server-states.js'
import { actionNameOf, runAction, type ActionDeps } from '../../compute/server-actions.js'
import { hostIdOf } from '../../compute/server-model.js'
import { hostIsUp } from '../../hosts/host-status.js'
import { actionEvents, findActionOfRequest, listActions, type ActionWindow } from '../../compute/instance-actions.js'
import { findServerOfActions } from '../../compute/server-rows.js'
import { computeStorage } from '../../compute/storage.js'
import { parseIsoTime } from '../../../contracts/compute/time.js'
import type { ServerRouteDeps } from './servers.js'
import { renderServers, visibleServer } from './servers.js'
import { bodyObject, can, must, serverCaller, validate, visibleProject } from './context.js'
import { ACTION_POLICY } from '../../policy/compute.policy.js'
import { remoteConsoleUrl } from '../../remote-consoles/remote-consoles.js'
import { documented, noBody } from '../../http/openapi.js'
import { serverFields } from '../../../contracts/compute/server.fields.js'
import { A } from '../../../contracts/compute/answers.js'
import { envelope, fieldsSchema, listOf, Q, queryOf, versioned, type JsonSchema } from '../../../contracts/compute/schemas.js'

const lastBefore = (until: ComputeVersion) => versionString(versionNumber(until) - 1)

/** One alternative per action: `{ "<action>": <its value> }`, with the versions it exists in. */
function actionBody(): JsonSchema {
  return {
    anyOf: Object.entries(ACTION_BODIES).map(([key, build]) => {
      const rule = SERVER_ACTIONS[actionNameOf(key, { type: 'SOFT' })!]
      const min = 'since' in rule ? rule.since : undefined
      const until = 'until' in rule ? rule.until : undefined
      const since = min || until ? { 'x-microversions': { min: min ?? MIN_VERSION, max: until ? lastBefore(until) : MAX_VERSION } } : {}
      return { type: 'object', properties: { [key]: versioned(build) }, required: [key], additionalProperties: false, ...since }
    }),
  }
}

const object = (properties: Record<string, JsonSchema>) => ({ type: 'object', properties, required: Object.keys(properties) })
const DOCS = {
  action: documented({
    summary: 'Run an action on a server (reboot, rebuild, resize, start, stop, lock…)',
    body: actionBody(),
    response: {
      200: { anyOf: [object({ output: { type: 'string' } }), object({ adminPass: { type: 'string' } }), { type: 'object', maxProperties: 0 }], description: 'os-getConsoleOutput, changePassword, evacuate' },
      202: {
        description: 'Accepted; rebuild answers the server, createImage its image id (2.45+)',
        anyOf: [envelope('server', { anyOf: [fieldsSchema(serverFields, 'rebuild', { until: '2.75' }), fieldsSchema(serverFields, 'rebuildFull', { since: '2.75' })] }), object({ image_id: { type: 'string' } }), { type: 'null' }],
      },
      204: noBody('Done (confirmResize, revertResize…)'),
    },
  }),
  actions: documented({
    summary: "List a server's actions",
    querystring: queryOf({ limit: Q.count, marker: Q.str, 'changes-since': Q.time, 'changes-before': Q.time }),
    response: { 200: { type: 'object', properties: { instanceActions: listOf(A.instanceAction), links: { type: 'array' } }, required: ['instanceActions'] } },
  }),
  showAction: documented({ summary: 'Show one action of a server with its events', response: { 200: envelope('instanceAction', A.instanceAction) } }),
}

export function serverActionRoutes(deps: ServerRouteDeps) {
  const db = deps.store.db
  const actionDeps: ActionDeps = {
    db,
    queue: deps.queue,
    images: deps.imageLookup,
    storage: computeStorage(deps),
    imageUrl: deps.urls.image,
    hostUp: (hostname) => hostIsUp(db, hostname, deps.config.hostDownAfterSeconds * 1000),
    consoleOutput: (serverId, lines) => deps.conductor.consoleOutput(serverId, lines),
    guest: { quiesce: (serverId) => deps.conductor.quiesceGuest(serverId), unquiesce: (serverId) => deps.conductor.unquiesceGuest(serverId) },
    remoteConsoleUrl: (row, protocol, type) => remoteConsoleUrl({ db, tokens: deps.consoles.tokens, publicUrl: deps.urls.base }, row, protocol, type),
    network: deps.network,
  }
  return async (scope: FastifyInstance): Promise<void> => {
    scope.post<{ Params: { id: string } }>('/v2.1/servers/:id/action', DOCS.action, async (request, reply) => {
      const body = bodyObject(request)
      const keys = Object.keys(body)
      if (keys.length !== 1) throw badRequest('Malformed request body')
      const [key] = keys
      const action = actionNameOf(key, body[key])
      const schema = actionBodyOf(key)
      if (!action || !schema) throw badRequest(`There is no such action: ${key}`)
      const rule = SERVER_ACTIONS[action]
      const since = 'since' in rule ? rule.since : undefined
      const until = 'until' in rule ? rule.until : undefined
      if (!inRange(request.api.version, since, until)) throw notFound('The resource could not be found.')
      const row = await visibleServer(deps, request, request.params.id)
      validate(`action:${key}`, request, schema, body[key])
      must(request, ACTION_POLICY[key] ?? ('adminOnly' in rule && rule.adminOnly ? 'servers:action:admin' : 'servers:action'), { projectId: row.project_id })
      const outcome = await runAction(actionDeps, request.api, { ...serverCaller(request), principal: request.principal, authorize: (op) => must(request, op, { projectId: row.project_id }) }, row, action, body[key], request.id)
      deps.runner.wake()
      if (outcome.headers) reply.headers(outcome.headers)
      if (action === 'rebuild' && outcome.server) {
        const [server] = await renderServers(deps, request, [outcome.server], request.api.has('fullUpdateBody') ? 'rebuildFull' : 'rebuild', { adminPass: outcome.adminPass })
        return reply.code(202).header('location', `${deps.urls.compute}/servers/${row.id}`).send({ server })
      }
      if (outcome.body !== undefined) return reply.code(outcome.status).send(outcome.body)
      return reply.code(outcome.status).send()
    })

    scope.get<{ Params: { id: string }; Querystring: Record<string, string> }>('/v2.1/servers/:id/os-instance-actions', DOCS.actions, async (request) => {
      const server = await findServerOfActions(db, request.params.id)
      if (!server || !visibleProject(request, server.project_id) || (server.deleted && !request.api.has('deletedServerActions'))) {
        throw notFound(`Instance ${request.params.id} could not be found.`)
      }
      must(request, 'servers:show', { projectId: server.project_id })
      const paging = request.api.has('instanceActionsPaging')
      const q = request.query
      const window: ActionWindow = {}
      if (paging && q['changes-since']) {
        window.since = parseIsoTime(q['changes-since'])
        if (window.since === undefined) throw badRequest(`Invalid input for query parameters changes-since. Value: ${q['changes-since']}.`)
      }
      if (request.api.has('changesBefore') && q['changes-before']) {
        window.before = parseIsoTime(q['changes-before'])
        if (window.before === undefined) throw badRequest(`Invalid input for query parameters changes-before. Value: ${q['changes-before']}.`)
      }
      let rows = await listActions(db, server.id, window)
      let limit = rows.length
      if (paging && q.marker) {
        const i = rows.findIndex((r) => r.request_id === q.marker)
        if (i < 0) throw badRequest(`Marker ${q.marker} could not be found.`)
        rows = rows.slice(i + 1)
      }
      if (paging && q.limit !== undefined) {
        if (!/^\d+$/.test(q.limit)) throw badRequest(`Invalid input for query parameters limit. Value: ${q.limit}.`)
        limit = Math.min(Number(q.limit), deps.config.computeMaxLimit)
      }
      const page = rows.slice(0, limit)
      const body: Record<string, unknown> = {
        instanceActions: page.map((a) => ({
          action: a.action,
          instance_uuid: a.server_id,
          request_id: a.request_id,
          user_id: a.user_id,
          project_id: a.project_id,
          start_time: isoMicros(a.start_time),
          message: a.message,
          ...(paging ? { updated_at: isoMicros(a.updated_at) } : {}),
        })),
      }
      if (paging && q.limit !== undefined && page.length === limit && page.length > 0) {
        const params = new URLSearchParams({ ...q, marker: page[page.length - 1].request_id })
        body.links = [{ rel: 'next', href: `${deps.urls.compute}/servers/${server.id}/os-instance-actions?${params.toString()}` }]
      }
      return body
    })

    scope.get<{ Params: { id: string; requestId: string } }>('/v2.1/servers/:id/os-instance-actions/:requestId', DOCS.showAction, async (request) => {
      const server = await findServerOfActions(db, request.params.id)
      if (!server || !visibleProject(request, server.project_id)) throw notFound(`Instance ${request.params.id} could not be found.`)
      must(request, 'servers:show', { projectId: server.project_id })
      const action = await findActionOfRequest(db, server.id, request.params.requestId)
      if (!action) throw notFound(`Action ${request.params.requestId} could not be found.`)
      const out: Record<string, unknown> = {
        action: action.action,
        instance_uuid: action.server_id,
        request_id: action.request_id,
        user_id: action.user_id,
        project_id: action.project_id,
        start_time: isoMicros(action.start_time),
        message: action.message,
        ...(request.api.has('instanceActionsPaging') ? { updated_at: isoMicros(action.updated_at) } : {}),
      }
      // Events' traceback, host and details, and the events themselves below 2.51 (os-instance-actions:events).
      const eventsRule = can(request, 'servers:instance_actions:events')
      const showEvents = eventsRule || request.api.has('ownerSeesActionEvents')
      if (showEvents) {
        const events = await actionEvents(db, action.id)
        out.events = events.map((e) => ({
          event: e.event,
          start_time: isoMicros(e.start_time),
          finish_time: isoMicros(e.finish_time),
          result: e.result,
          ...(eventsRule ? { traceback: e.traceback } : {}),
          ...(request.api.has('actionEventHost') ? { hostId: hostIdOf(action.project_id, e.host), ...(eventsRule ? { host: e.host ?? '' } : {}) } : {}),
          ...(request.api.has('actionEventDetails') && eventsRule ? { details: e.details } : {}),
        }))
      }
      return { instanceAction: out }
    })
  }
}
