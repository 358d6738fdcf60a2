/**
 * os-server-external-events: the network and volume services tell compute about a server (a port plugged or
 * changed, a volume extended). Each event is answered per server, in Nova's shape: 200 when taken, 404 for an
 * unknown server, 422 for a server on no host; the whole answer is 207 when some were not taken, 404 when none were.
 * pcc's control plane owns the servers' networks and volumes itself, so no host waits on these: a taken event is
 * logged (as Nova's compute logs an event no one waits for).
 */
import type { FastifyInstance } from 'fastify'
import { Type as T } from '@sinclair/typebox'
import { notFound } from '../../../contracts/errors.js'
import { J } from '../../../contracts/compute/json-types.js'
import { P } from '../../../contracts/compute/params.js'
import { versionNumber, type VersionNumber } from '../../../contracts/compute/versions.js'
import { plain, versioned } from '../../../contracts/compute/schemas.js'
import type { AppDeps } from '../../deps.js'
import { serverHosts } from '../../compute/server-rows.js'
import { bodyObject, must, validate } from './context.js'
import { documented } from '../../http/openapi.js'

/** Event names and the microversion each came with. */
const EVENT_NAMES: [string, string][] = [
  ['network-changed', '2.1'],
  ['network-vif-plugged', '2.1'],
  ['network-vif-unplugged', '2.1'],
  ['network-vif-deleted', '2.1'],
  ['volume-extended', '2.51'],
  ['power-update', '2.76'],
  ['accelerator-request-bound', '2.82'],
  ['volume-reimaged', '2.93'],
]

const eventsBody = (version: VersionNumber) =>
  T.Object(
    {
      events: T.Array(
        T.Object(
          {
            name: T.Union(EVENT_NAMES.filter(([, since]) => version >= versionNumber(since)).map(([name]) => T.Literal(name))),
            server_uuid: P.uuid,
            status: T.Optional(T.Union([T.Literal('failed'), T.Literal('completed'), T.Literal('in-progress')])),
            tag: T.Optional(T.String({ maxLength: 255 })),
          },
          { additionalProperties: false },
        ),
        { minItems: 1 },
      ),
    },
    { additionalProperties: false },
  )

const answer = plain(T.Object({ events: T.Array(T.Object({ name: J.str, server_uuid: J.str, status: J.str, code: J.int, tag: T.Optional(J.str) })) }))
const DOCS = {
  create: documented({ summary: 'Tell compute about events of servers (admin)', body: versioned(eventsBody), response: { 200: answer, 207: answer } }),
}


export function serverExternalEventRoutes(deps: AppDeps) {
  const db = deps.store.db
  return async (scope: FastifyInstance): Promise<void> => {
    scope.post('/v2.1/os-server-external-events', DOCS.create, async (request, reply) => {
      must(request, 'os-server-external-events:create')
      const body = bodyObject(request)
      validate('events', request, eventsBody, body)
      const events = body.events
      const ids = [...new Set(events.map((e) => e.server_uuid.toLowerCase()))]
      const rows = await serverHosts(db, ids)
      const servers = new Map(rows.map((r) => [r.id, r]))
      const answered = events.map((e) => {
        const server = servers.get(e.server_uuid.toLowerCase())
        const code = !server ? 404 : !server.host ? 422 : 200
        if (code === 200) request.log.info({ serverId: server!.id, event: e.name, status: e.status ?? 'completed', tag: e.tag }, 'server external event')
        return { name: e.name, server_uuid: e.server_uuid, status: code === 200 ? (e.status ?? 'completed') : 'failed', code, ...(e.tag !== undefined && { tag: e.tag }) }
      })
      if (answered.every((e) => e.code === 404)) throw notFound('No instances found for any event')
      return reply.code(answered.every((e) => e.code === 200) ? 200 : 207).send({ events: answered })
    })
  }
}
