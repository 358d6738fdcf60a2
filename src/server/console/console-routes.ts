/**
 * The HTTP side of remote consoles: the websocket upgrades (http/upgrades.ts), a clear answer to a plain GET of
 * the websocket URL, and the sessions' end at a graceful stop. The noVNC page the `novnc` URLs open,
 * `/console/vnc.html`, is the web console's (http/web-console-routes.ts).
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../deps.js'
import { renderPlainError } from '../http/error-renderers.js'
import { attachUpgrades } from '../http/upgrades.js'

export function registerConsoleRoutes(app: FastifyInstance, deps: AppDeps): void {
  attachUpgrades(app.server, deps.consoles.upgradeRoutes(), deps.logger)
  app.addHook('preClose', (done) => {
    deps.consoles.closeAll()
    done()
  })
  const hidden = { schema: { hide: true } }
  app.get('/console/websocket', hidden, async (_request, reply) =>
    reply
      .code(426)
      .header('upgrade', 'websocket')
      .send(renderPlainError({ status: 426, code: 'bad_request', message: 'This is a websocket endpoint: open it with a websocket client (Upgrade: websocket), as noVNC or a serial terminal does.' })),
  )
}
