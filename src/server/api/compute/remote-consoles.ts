/**
 * POST /servers/{id}/remote-consoles (2.6+) and GET /os-console-auth-tokens/{token} (admins). The legacy
 * console actions of 2.1–2.5 are in server-actions.ts; both reach console/remote-consoles.ts.
 */
import type { FastifyInstance } from 'fastify'
import { badRequest, notFound } from '../../../contracts/errors.js'
import { remoteConsoleBody } from '../../../contracts/compute/remote-console.params.js'
import { remoteConsoleUrl } from '../../remote-consoles/remote-consoles.js'
import type { AppDeps } from '../../deps.js'
import { visibleServer } from './servers.js'
import { bodyObject, must, requireGate, validate } from './context.js'
import { Type as T } from '@sinclair/typebox'
import { documented } from '../../http/openapi.js'
import { envelope, plain, versioned } from '../../../contracts/compute/schemas.js'
import { J } from '../../../contracts/compute/json-types.js'

const DOCS = {
  create: documented({
    summary: 'A URL to a remote console of a server (2.6+): serial, or VNC on hosts that have it',
    body: versioned(remoteConsoleBody),
    response: { 200: envelope('remote_console', plain(T.Object({ protocol: J.str, type: J.str, url: J.str }))) },
  }),
  token: documented({
    summary: 'What a console token grants (admin)',
    response: { 200: envelope('console', plain(T.Object({ instance_uuid: J.str, host: J.nstr, port: T.Null(), internal_access_path: T.Null() }))) },
  }),
}

export function remoteConsoleRoutes(deps: AppDeps) {
  const consoleDeps = { db: deps.store.db, tokens: deps.consoles.tokens, publicUrl: deps.urls.base }
  return async (scope: FastifyInstance): Promise<void> => {
    scope.post<{ Params: { id: string } }>('/v2.1/servers/:id/remote-consoles', DOCS.create, async (request) => {
      requireGate(request, 'remoteConsoles')
      const body = bodyObject(request)
      validate('remote_console', request, remoteConsoleBody, body)
      const { protocol, type } = body.remote_console
      const row = await visibleServer(deps, request, request.params.id)
      must(request, 'servers:remote_consoles', { projectId: row.project_id })
      const url = await remoteConsoleUrl(consoleDeps, row, protocol, type)
      return { remote_console: { protocol, type, url } }
    })

    scope.get<{ Params: { token: string } }>('/v2.1/os-console-auth-tokens/:token', DOCS.token, async (request) => {
      must(request, 'console_auth_tokens:show')
      const grant = await deps.consoles.tokens.find(request.params.token)
      if (!grant) throw notFound('Token not found')
      // Below 2.31 only RDP tokens could be shown, and RDP left Nova with the Hyper-V driver.
      if (!request.api.has('consoleAuthTokensAllTypes')) throw badRequest('The requested console type details are not accessible')
      // The stream is carried over the host agent's own connection: there is no host port to connect to.
      return { console: { instance_uuid: grant.server_id, host: grant.hostname, port: null, internal_access_path: null } }
    })
  }
}
