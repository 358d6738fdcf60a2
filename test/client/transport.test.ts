/**
 * The API client's HTTP transport (Node's http/https): answers and errors as openstack prints them, a CA file
 * or --insecure for https, an http proxy (absolute-form requests for http, CONNECT tunnels for https, with
 * credentials), streamed uploads, and a timeout on silence.
 */
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createReadStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import net, { type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ApiError, Transport, UnreachableError } from '../../src/client/transport.js'
import { ensureAutoTls, type TlsFiles } from '../../src/server/tls/auto-tls.js'

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)))
}

/** Answers every request with its method, path and body length as JSON; /fail answers 409 as Nova does. */
function handler(req: http.IncomingMessage, res: http.ServerResponse): void {
  let length = 0
  req.on('data', (chunk: Buffer) => (length += chunk.length))
  req.on('end', () => {
    if (req.url === '/fail') {
      res.writeHead(409, { 'content-type': 'application/json', 'x-openstack-request-id': 'req-1234' })
      res.end(JSON.stringify({ conflictingRequest: { code: 409, message: 'Cannot do that now' } }))
      return
    }
    if (req.url === '/silent') return
    res.writeHead(200, { 'content-type': 'application/json', 'x-subject-token': 'tok' })
    res.end(JSON.stringify({ method: req.method, url: req.url, length }))
  })
}

describe('API transport', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pcc-transport-'))
  let tls: TlsFiles
  const plain = http.createServer(handler)
  let secure: https.Server
  const proxy = http.createServer()
  let plainUrl = ''
  let secureUrl = ''
  let proxyPort = 0
  const proxied: { line: string; auth?: string }[] = []

  before(async () => {
    tls = await ensureAutoTls(join(dir, 'tls'), ['127.0.0.1'])
    secure = https.createServer({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) }, handler)
    plainUrl = `http://127.0.0.1:${await listen(plain)}`
    secureUrl = `https://127.0.0.1:${await listen(secure)}`
    // A small forward proxy: absolute-form requests are relayed, CONNECT opens a tunnel; each is recorded.
    proxy.on('request', (req, res) => {
      proxied.push({ line: `${req.method} ${req.url}`, auth: req.headers['proxy-authorization'] })
      const target = new URL(req.url!)
      const upstream = http.request({ host: target.hostname, port: target.port, path: target.pathname, method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode!, answer.headers)
        answer.pipe(res)
      })
      req.pipe(upstream)
    })
    proxy.on('connect', (req, socket) => {
      proxied.push({ line: `CONNECT ${req.url}`, auth: req.headers['proxy-authorization'] })
      const [host, port] = req.url!.split(':')
      const upstream = net.connect(Number(port), host, () => {
        socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
        upstream.pipe(socket)
        socket.pipe(upstream)
      })
    })
    proxyPort = await listen(proxy)
  })
  after(() => {
    for (const s of [plain, secure, proxy]) s.closeAllConnections?.()
    plain.close()
    secure.close()
    proxy.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('sends JSON and reads the answer, its headers and JSON body', async () => {
    const t = new Transport()
    try {
      const r = await t.request('POST', `${plainUrl}/v3/auth/tokens?x=1`, { body: { a: 'é' } })
      assert.equal(r.status, 200)
      assert.equal(r.headers.get('X-Subject-Token'), 'tok')
      assert.deepEqual(r.body, { method: 'POST', url: '/v3/auth/tokens?x=1', length: Buffer.byteLength(JSON.stringify({ a: 'é' })) })
    } finally {
      await t.close()
    }
  })

  it("turns an error answer into the service's message with the status and request id", async () => {
    const t = new Transport()
    try {
      await assert.rejects(t.request('GET', `${plainUrl}/fail`), (err: unknown) => {
        assert.ok(err instanceof ApiError)
        assert.equal(err.status, 409)
        assert.equal(err.message, 'Cannot do that now (HTTP 409) (Request-ID: req-1234)')
        return true
      })
    } finally {
      await t.close()
    }
  })

  it('says which address it could not reach, and times out on silence', async () => {
    const closed = net.createServer()
    const port = await listen(closed)
    closed.close()
    const t = new Transport({ timeoutMs: 300 })
    try {
      await assert.rejects(t.request('GET', `http://127.0.0.1:${port}/`), (err: unknown) => err instanceof UnreachableError && err.message === `cannot reach http://127.0.0.1:${port}: ECONNREFUSED`)
      await assert.rejects(t.request('GET', `${plainUrl}/silent`), (err: unknown) => err instanceof UnreachableError && err.reason === 'timed out')
    } finally {
      await t.close()
    }
  })

  it('verifies https with the CA file, refuses an unknown CA, and skips the check with --insecure', async () => {
    const trusting = new Transport({ caFile: tls.caFile })
    const strict = new Transport()
    const insecure = new Transport({ insecure: true })
    try {
      assert.equal((await trusting.request('GET', `${secureUrl}/x`)).status, 200)
      await assert.rejects(strict.request('GET', `${secureUrl}/x`), (err: unknown) => err instanceof UnreachableError && /CERT|SELF_SIGNED|UNABLE_TO/.test(err.reason))
      assert.equal((await insecure.request('GET', `${secureUrl}/x`)).status, 200)
    } finally {
      await Promise.all([trusting.close(), strict.close(), insecure.close()])
    }
  })

  it('goes through an http proxy: absolute-form for http, a CONNECT tunnel for https, with its credentials', async () => {
    proxied.length = 0
    const t = new Transport({ proxyUrl: `http://user:p%40ss@127.0.0.1:${proxyPort}`, caFile: tls.caFile })
    try {
      assert.deepEqual((await t.request('GET', `${plainUrl}/one`)).body, { method: 'GET', url: '/one', length: 0 })
      assert.deepEqual((await t.request('GET', `${secureUrl}/two`)).body, { method: 'GET', url: '/two', length: 0 })
    } finally {
      await t.close()
    }
    const auth = `Basic ${Buffer.from('user:p@ss').toString('base64')}`
    assert.deepEqual(proxied, [
      { line: `GET ${plainUrl}/one`, auth },
      { line: `CONNECT ${new URL(secureUrl).host}`, auth },
    ])
  })

  it('streams an upload from a file', async () => {
    const file = join(dir, 'blob')
    writeFileSync(file, Buffer.alloc(5 * 1024 * 1024 + 3, 7))
    const t = new Transport()
    try {
      const r = await t.request('PUT', `${plainUrl}/file`, { headers: { 'content-type': 'application/octet-stream', 'content-length': String(5 * 1024 * 1024 + 3) }, upload: createReadStream(file) })
      assert.deepEqual(r.body, { method: 'PUT', url: '/file', length: 5 * 1024 * 1024 + 3 })
    } finally {
      await t.close()
    }
  })
})
