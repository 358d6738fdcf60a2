/**
 * The HTTP side of remote consoles: the websocket upgrades (http/upgrades.ts), a clear answer to a plain GET of
 * the websocket URL, and the sessions' end at a graceful stop. The noVNC page the `novnc` URLs open,
 * `/console/vnc.html`, is the web console's (http/web-console-routes.ts).
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../deps.js'
import { renderPlainError } from '../http/error-renderers.js'
import { attachUpgrades } from '../http/upgrades.js'
import { noBody } from '../http/openapi.js'
import { errorBodySchema } from '../http/error-renderers.js'

export function registerConsoleRoutes(app: FastifyInstance, deps: AppDeps): void {
  attachUpgrades(app.server, deps.consoles.upgradeRoutes(), deps.logger)
  app.addHook('preClose', (done) => {
    deps.consoles.closeAll()
    done()
  })
  const websocket = {
    summary: 'A remote console stream (serial or VNC): open it as a websocket with the token of its URL; a plain GET is told so',
    tags: ['consoles'],
    // The console token in the URL is what authenticates, at the upgrade.
    security: [],
    querystring: { type: 'object', properties: { token: { type: 'string' } } },
    response: { 101: noBody('Switching Protocols to the websocket'), 426: errorBodySchema(undefined) },
  }
  app.get('/console/websocket', { schema: websocket }, async (_request, reply) =>
    reply
      .code(426)
      .header('upgrade', 'websocket')
      .send(renderPlainError({ status: 426, code: 'bad_request', message: 'This is a websocket endpoint: open it with a websocket client (Upgrade: websocket), as noVNC or a serial terminal does.' })),
  )
}
