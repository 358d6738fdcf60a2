/**
 * The noVNC viewer at `{base}/console/vnc.html?path=<path>` (the URL the compute API gives for `novnc`
 * consoles): connects to `ws(s)://<this host>/<path>`, where `path` carries the remote-console token, and shows the
 * guest's display. The websocket scheme follows the page's (https → wss), as nova-novncproxy requires.
 */
import RFB from '@novnc/novnc'
import './vnc.css'

const status = document.getElementById('status')!
const cad = document.getElementById('cad') as HTMLButtonElement
const params = new URLSearchParams(location.search)
const path = params.get('path') ?? 'websockify'

function show(text: string): void {
  status.textContent = text
}

/** The websocket URL: same host and port as this page, `path` as given (it is relative to the host root). */
export function websocketUrl(pageUrl: URL, path: string): string {
  const scheme = pageUrl.protocol === 'https:' ? 'wss:' : 'ws:'
  return `${scheme}//${pageUrl.host}/${path.replace(/^\//, '')}`
}

try {
  const rfb = new RFB(document.getElementById('screen')!, websocketUrl(new URL(location.href), path), { shared: true })
  rfb.scaleViewport = true
  rfb.background = '#111820'
  rfb.addEventListener('connect', () => {
    show('Connected')
    cad.disabled = false
    rfb.focus()
  })
  rfb.addEventListener('disconnect', (event) => {
    cad.disabled = true
    show(event.detail.clean ? 'Disconnected. Open the console again from the server page to reconnect.' : 'The connection failed or was lost. The console link may have expired (they last a few minutes): open the console again from the server page.')
  })
  rfb.addEventListener('securityfailure', (event) => show(`Security negotiation failed: ${event.detail.reason ?? 'unknown reason'}.`))
  rfb.addEventListener('desktopname', (event) => (document.title = `${event.detail.name} · noVNC · pcc`))
  cad.addEventListener('click', () => rfb.sendCtrlAltDel())
} catch (err) {
  show(`Could not start the viewer: ${(err as Error).message}`)
}
