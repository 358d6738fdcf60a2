/**
 * The serial console in the page: asks the compute API for a `serial` remote console (a websocket URL with a
 * short-lived token) and connects a terminal (xterm.js, loaded only when a serial console opens) to it. Bytes from the
 * socket go to the terminal; keys typed go back as bytes.
 */
import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiError, post } from '../api/http'
import { ErrorNotice } from '../ui/components'

interface RemoteConsole {
  remote_console: { protocol: string; type: string; url: string }
}

export async function consoleUrl(serverId: string, protocol: 'serial' | 'vnc'): Promise<string> {
  const body = await post<RemoteConsole>('compute', `/servers/${serverId}/remote-consoles`, { remote_console: { protocol, type: protocol === 'vnc' ? 'novnc' : 'serial' } })
  return body.remote_console.url
}

/**
 * The API gives the public URL's scheme and host; a page reached another way (another name for the same
 * machine behind a load balancer) must dial its own origin, or the proxy's Origin check refuses it.
 */
export function sameOriginSocket(url: string): string {
  const target = new URL(url)
  const page = new URL(location.href)
  target.protocol = page.protocol === 'https:' ? 'wss:' : 'ws:'
  target.host = page.host
  return target.href
}

export function SerialConsole({ serverId }: { serverId: string }) {
  const box = useRef<HTMLDivElement>(null)
  const [state, setState] = useState('Connecting…')
  const [error, setError] = useState<unknown>()
  const [attempt, setAttempt] = useState(0)
  useEffect(() => {
    let closed = false
    let socket: WebSocket | undefined
    let dispose = () => {}
    void (async () => {
      try {
        const [{ Terminal }, { FitAddon }, url] = await Promise.all([import('@xterm/xterm'), import('@xterm/addon-fit'), consoleUrl(serverId, 'serial')])
        await import('@xterm/xterm/css/xterm.css')
        if (closed) return
        const term = new Terminal({ convertEol: false, cursorBlink: true, fontSize: 13, scrollback: 5000 })
        const fit = new FitAddon()
        term.loadAddon(fit)
        term.open(box.current!)
        fit.fit()
        const resize = () => fit.fit()
        addEventListener('resize', resize)
        socket = new WebSocket(sameOriginSocket(url), ['binary'])
        socket.binaryType = 'arraybuffer'
        const encoder = new TextEncoder()
        socket.onopen = () => {
          setState('Connected. Click the terminal and type; press Enter if nothing shows.')
          term.focus()
        }
        socket.onmessage = (event) => term.write(typeof event.data === 'string' ? event.data : new Uint8Array(event.data as ArrayBuffer))
        socket.onclose = (event) => !closed && setState(event.code === 1000 ? 'The console closed.' : `The console connection ended (${event.code}${event.reason ? `: ${event.reason}` : ''}). Reconnect to open a new one.`)
        const typed = term.onData((data) => socket?.readyState === WebSocket.OPEN && socket.send(encoder.encode(data)))
        dispose = () => {
          typed.dispose()
          removeEventListener('resize', resize)
          term.dispose()
        }
      } catch (err) {
        if (!closed) {
          setError(err instanceof ApiError ? err : new ApiError(0, (err as Error).message))
          setState('No console.')
        }
      }
    })()
    return () => {
      closed = true
      socket?.close()
      dispose()
    }
  }, [serverId, attempt])
  return (
    <div>
      <div class="toolbar">
        <span role="status" class="muted">
          {state}
        </span>
        <button type="button" onClick={() => (setError(undefined), setState('Connecting…'), setAttempt(attempt + 1))}>
          Reconnect
        </button>
      </div>
      <ErrorNotice error={error} title="Could not open the serial console" />
      <div class="terminal" ref={box} aria-label="Serial console terminal" />
    </div>
  )
}
