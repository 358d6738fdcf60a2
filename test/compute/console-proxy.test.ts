/**
 * The console websocket proxy with real clients: the `ws` package as a browser's websocket would connect, and
 * the exact bytes Tempest's create_websocket sends. A serial session on a simulated host (boot lines, login, a
 * command answered), the refusals before the handshake (no token, bad or expired token, foreign Origin, no
 * `binary` among offered subprotocols) with no stream, the host's refusal after it (1011 and its reason), the
 * end of a session when the guest stops, idles or the server stops, and nothing left open afterwards.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect } from 'node:net'
import { call, computeTestbed, createBody, type ComputeTestbed } from './helpers.js'
import { until } from '../../src/testkit/compute-api.js'
import { closedWithin, openConsoleClient, tempestUpgrade, websocketUrlOf } from '../../src/testkit/console-client.js'

async function activeServer(tb: ComputeTestbed, name: string): Promise<string> {
  const created = await call(tb, tb.member, 'POST', '/servers', createBody(name), '2.96')
  assert.equal(created.status, 202, JSON.stringify(created.body))
  const id = created.body.server.id as string
  await until(`${name} ACTIVE`, 30_000, async () => ((await call(tb, tb.member, 'GET', `/servers/${id}`, undefined, '2.96')).body.server?.status === 'ACTIVE' ? true : undefined))
  return id
}

async function serialUrl(tb: ComputeTestbed, id: string): Promise<string> {
  const r = await call(tb, tb.member, 'POST', `/servers/${id}/remote-consoles`, { remote_console: { protocol: 'serial', type: 'serial' } }, '2.96')
  assert.equal(r.status, 200, JSON.stringify(r.body))
  return r.body.remote_console.url as string
}

/** The number of TCP connections the server holds (websockets included). */
function connections(tb: ComputeTestbed): Promise<number> {
  return new Promise((resolve, reject) => tb.server.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))))
}

const sockets = (tb: ComputeTestbed) => tb.server.deps.consoles.sessions.openSockets

describe('console websocket proxy', () => {
  let tb: ComputeTestbed
  let id: string

  before(async () => {
    tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0' }, true, { publicUrlFromListen: true })
    id = await activeServer(tb, 'web1')
  })
  after(() => tb?.close())

  it('carries a serial session: the boot lines and login prompt, a typed command and its answer', async () => {
    const client = await openConsoleClient(await serialUrl(tb, id), { protocols: ['binary', 'base64'] })
    assert.equal(client.protocol, 'binary', 'binary is selected when offered')
    await client.until(new RegExp(`cloud-init: instance ${id}[\\s\\S]*web1 login: $`))
    client.send('root\r')
    await client.until(/root@web1:~# $/)
    client.send('hostname\r')
    await client.until(/hostname\r\nweb1\r\nroot@web1:~# $/)
    assert.equal(sockets(tb), 1)
    const end = await client.close()
    assert.equal(end.code, 1000)
    await until('the proxy let go of the websocket', 5000, async () => (sockets(tb) === 0 ? true : undefined))
  })

  it('selects no subprotocol when none is offered, refuses clients that offer only others, takes the token from a cookie', async () => {
    const url = await serialUrl(tb, id)
    const plain = await openConsoleClient(url)
    assert.equal(plain.protocol, '')
    await plain.until(/web1 login: $/)
    await plain.close()
    await assert.rejects(openConsoleClient(url, { protocols: ['base64'] }), /upgrade refused: 400/)
    const token = new URL(url).searchParams.get('token')!
    const bare = `${url.slice(0, url.indexOf('?'))}`
    const byCookie = await openConsoleClient(bare, { headers: { cookie: `lang=en; token=${token}` } })
    await byCookie.until(/web1 login: $/)
    await byCookie.close()
    await assert.rejects(openConsoleClient(bare), /upgrade refused: 401/)
  })

  it('refuses a token cookie that is not valid percent-encoding as any bad token (401)', async () => {
    const url = await serialUrl(tb, id)
    await assert.rejects(openConsoleClient(url.slice(0, url.indexOf('?')), { headers: { cookie: 'token=%E0%A4%A' } }), /upgrade refused: 401/)
  })

  it('joins a relay to a waiting session only with that session\'s secret', async () => {
    // The owner's side of a session whose agent reached another process (test/ha/console-relay.test.ts runs the whole path).
    const session = await tb.server.deps.consoles.sessions.expect('relay-test-host', id)
    try {
      const relayUrl = `${tb.server.url.replace(/^http/, 'ws')}/console/relay/${session.id}`
      await assert.rejects(openConsoleClient(relayUrl), /upgrade refused: 404/, 'no secret')
      await assert.rejects(openConsoleClient(relayUrl, { headers: { 'x-pcc-console-relay': 'not-the-secret' } }), /upgrade refused: 404/, 'a wrong secret')
      const row = await tb.server.deps.store.db.selectFrom('console_sessions').select('relay_secret').where('id', '=', session.id).executeTakeFirstOrThrow()
      const relay = await openConsoleClient(relayUrl, { headers: { 'x-pcc-console-relay': tb.server.deps.box.openText(row.relay_secret) } })
      const stream = await session.stream
      stream.write('from the owner')
      await relay.until(/from the owner/)
      stream.destroy()
      await relay.close()
    } finally {
      session.cancel('the test is over')
    }
  })

  it('answers Tempest-style clients: 101 and the console for a good token, a bodiless 401 and no stream for a bad one', async () => {
    const url = await serialUrl(tb, id)
    // Tempest has no path for serial URLs: it asks for /websockify with the query as a cookie.
    const good = await tempestUpgrade(url, 1000)
    assert.equal(good.statusLine, 'HTTP/1.1 101 Switching Protocols')
    assert.match(good.headers, /^sec-websocket-protocol: binary$/im)
    assert.ok(good.after.includes(Buffer.from('web1 login: ')), 'the console followed the upgrade')
    for (const bad of [url.replace('token=', 'token=bad'), url.replace(/token=.*/, 'token='), url.replace(/\?.*$/, '')]) {
      const refused = await tempestUpgrade(bad)
      assert.match(refused.statusLine, /^HTTP\/1\.1 401 /, bad)
      assert.equal(refused.after.length, 0, 'no data after a refused upgrade')
    }
  })

  it('refuses an expired token before the handshake', async () => {
    const url = await serialUrl(tb, id)
    await tb.server.deps.store.db.updateTable('console_auth_tokens').set({ expires_at: Date.now() - 1 }).execute()
    await assert.rejects(openConsoleClient(url), /upgrade refused: 401/)
    const refused = await tempestUpgrade(url)
    assert.match(refused.statusLine, /^HTTP\/1\.1 401 The console token is invalid or has expired$/)
  })

  it('checks the Origin of browser pages against the public URL (no Origin: not a browser, accepted)', async () => {
    const url = await serialUrl(tb, id)
    const base = new URL(tb.server.deps.urls.base)
    await assert.rejects(openConsoleClient(url, { headers: { origin: 'http://evil.example' } }), /upgrade refused: 403/)
    await assert.rejects(openConsoleClient(url, { headers: { origin: `https://${base.host}` } }), /upgrade refused: 403/, 'scheme must match')
    await assert.rejects(openConsoleClient(url, { headers: { origin: 'not a url' } }), /upgrade refused: 403/)
    const same = await openConsoleClient(url, { headers: { origin: base.origin } })
    await same.until(/login: $/)
    await same.close()
    // A page reached under another name of this machine dials that name (Nova compares Origin with Host).
    const other = url.replace('127.0.0.1', 'localhost')
    const byName = await openConsoleClient(other, { headers: { origin: `http://localhost:${base.port}` } })
    await byName.until(/login: $/)
    await byName.close()
    await assert.rejects(openConsoleClient(other, { headers: { origin: 'http://localhost.evil.example' } }), /upgrade refused: 403/)
  })

  it('closes with 1011 and the host\'s reason when the host cannot give the console (VNC on a simulated host, a stopped guest)', async () => {
    const db = tb.server.deps.store.db
    const hostId = (await db.selectFrom('servers').select('host_id').where('id', '=', id).executeTakeFirstOrThrow()).host_id!
    await db.updateTable('hosts').set({ driver: 'qemu' }).where('id', '=', hostId).execute()
    let novnc: string
    try {
      const r = await call(tb, tb.member, 'POST', `/servers/${id}/remote-consoles`, { remote_console: { protocol: 'vnc', type: 'novnc' } }, '2.96')
      assert.equal(r.status, 200)
      novnc = r.body.remote_console.url
    } finally {
      await db.updateTable('hosts').set({ driver: 'simulated' }).where('id', '=', hostId).execute()
    }
    assert.match(websocketUrlOf(novnc), /^ws:\/\/127\.0\.0\.1:\d+\/console\/websocket\?token=/)
    const vnc = await openConsoleClient(novnc, { protocols: ['binary'] })
    assert.deepEqual(await closedWithin(vnc), { code: 1011, reason: 'VNC is not available on simulated hosts.' })

    const stopped = await activeServer(tb, 'stopper')
    const url = await serialUrl(tb, stopped)
    const live = await openConsoleClient(url)
    await live.until(/stopper login: $/)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${stopped}/action`, { 'os-stop': null }, '2.96')).status, 202)
    assert.deepEqual(await closedWithin(live, 20_000), { code: 1000, reason: 'The console closed.' }, 'the session ends when the guest stops')
    await until('SHUTOFF', 20_000, async () => ((await call(tb, tb.member, 'GET', `/servers/${stopped}`, undefined, '2.96')).body.server.status === 'SHUTOFF' ? true : undefined))
    const again = await openConsoleClient(url)
    const refused = await closedWithin(again)
    assert.equal(refused.code, 1011)
    assert.match(refused.reason, /is not running/)
  })

  it('serves a plain GET of the websocket URL a 426 and the noVNC page Tempest checks', async () => {
    const plain = await fetch(`${tb.server.deps.urls.base}/console/websocket?token=x`)
    assert.equal(plain.status, 426)
    const error = ((await plain.json()) as { error: { title: string; message: string } }).error
    assert.equal(error.title, 'Upgrade Required')
    assert.match(error.message, /websocket endpoint/)
    const page = await fetch(`${tb.server.deps.urls.base}/console/vnc.html?path=console/websocket%3Ftoken%3Dx`)
    assert.equal(page.status, 200)
    const html = await page.text()
    assert.match(html, /<html.*>/)
    for (const needle of ['</html>', 'noVNC', '<script']) assert.ok(html.includes(needle), needle)
    assert.match((await tempestUpgrade(`${tb.server.deps.urls.base}/elsewhere?path=no/such/socket`)).statusLine, /^HTTP\/1\.1 404 /)
  })

  it('survives a client that breaks the websocket protocol', async () => {
    const url = new URL(await serialUrl(tb, id))
    const socket = connect(Number(url.port), url.hostname)
    await once(socket, 'connect')
    socket.write(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: x3JJHMbDL1EzLkh9GBhXDw==\r\nSec-WebSocket-Version: 13\r\n\r\n`)
    // An unmasked client frame is a protocol error (RFC 6455 5.1): the server must close, not crash.
    socket.write(Buffer.from([0x81, 0x02, 0x68, 0x69]))
    socket.resume()
    await once(socket, 'close')
    assert.equal((await fetch(`${tb.server.deps.urls.base}/healthz`)).status, 200)
    await until('the proxy let go of the broken websocket', 5000, async () => (sockets(tb) === 0 ? true : undefined))
  })

  it('lets go of everything when a client vanishes without a close', async () => {
    const before = await connections(tb)
    const client = await openConsoleClient(await serialUrl(tb, id))
    await client.until(/login: $/)
    client.ws.terminate()
    await until('the proxy let go of the vanished websocket', 5000, async () => (sockets(tb) === 0 && (await connections(tb)) <= before ? true : undefined))
  })
})

describe('console sessions that idle, and a server that stops', () => {
  it('closes an idle session, and every session when the server stops', async () => {
    const tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0', PCC_CONSOLE_IDLE_SECONDS: '1' }, true, { publicUrlFromListen: true })
    let closed = false
    try {
      const id = await activeServer(tb, 'idler')
      const idle = await openConsoleClient(await serialUrl(tb, id))
      await idle.until(/login: $/)
      const started = Date.now()
      assert.deepEqual(await closedWithin(idle, 5000), { code: 1000, reason: 'The console was idle for 1 s.' })
      assert.ok(Date.now() - started >= 900, 'not before the idle time')

      // Typing keeps a session alive past the idle time.
      const busy = await openConsoleClient(await serialUrl(tb, id))
      await busy.until(/login: $/)
      for (let i = 0; i < 6; i++) {
        busy.send(' ')
        await new Promise((resolve) => setTimeout(resolve, 300))
      }
      assert.equal(busy.ws.readyState, busy.ws.OPEN, 'still open after 1.8 s of typing')
      const stopping = tb.close()
      closed = true
      assert.deepEqual(await closedWithin(busy, 5000), { code: 1001, reason: 'pcc-server is stopping' })
      await stopping
    } finally {
      if (!closed) await tb.close()
    }
  })

  it('accepts pages of the allowed origins', async () => {
    const tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0', PCC_CONSOLE_ALLOWED_ORIGINS: 'console.example, Other.Example' }, true, { publicUrlFromListen: true })
    try {
      const id = await activeServer(tb, 'origins')
      for (const origin of ['https://console.example', 'http://other.example:8443']) {
        const client = await openConsoleClient(await serialUrl(tb, id), { headers: { origin } })
        await client.until(/login: $/)
        await client.close()
      }
      await assert.rejects(openConsoleClient(await serialUrl(tb, id), { headers: { origin: 'https://third.example' } }), /upgrade refused: 403/)
    } finally {
      await tb.close()
    }
  })
})
