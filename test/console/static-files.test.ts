/**
 * The web console's files as pcc-server serves them: `/` is the app (never cached without revalidation, with a
 * CSP), hashed assets are immutable, compressed bytes follow Accept-Encoding and decode to the same file, an
 * ETag answers 304, and the API families keep their own 404s around the console's routes.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { get } from 'node:http'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { chooseEncoding, loadWebConsole } from '../../src/server/http/web-console-routes.js'

/** A GET with exactly these headers and the bytes as sent (fetch would ask for and undo compression itself). */
function raw(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode!, headers: new Headers(res.headers as Record<string, string>), body: Buffer.concat(chunks) }))
      res.on('error', reject)
    }).on('error', reject)
  })
}

describe('web console static files', () => {
  let server: TestServer
  before(async () => (server = await startTestServer()))
  after(() => server?.close())

  it('serves the app at / with no-cache, an ETag, a CSP and its hashed assets', async () => {
    const index = await raw(`${server.url}/`)
    assert.equal(index.status, 200)
    assert.match(index.headers.get('content-type')!, /^text\/html/)
    assert.equal(index.headers.get('cache-control'), 'no-cache')
    assert.match(index.headers.get('content-security-policy')!, /default-src 'self'/)
    assert.match(index.headers.get('content-security-policy')!, /frame-ancestors 'none'/)
    assert.equal(index.headers.get('x-frame-options'), 'DENY')
    const html = index.body.toString()
    const assets = [...html.matchAll(/(?:src|href)="(assets\/[^"]+)"/g)].map((m) => m[1])
    assert.equal(assets.length, 2, `one script and one stylesheet in ${html}`)
    for (const path of assets) {
      assert.match(path, /-[A-Z0-9]{8}\.(js|css)$/, 'content-hashed name')
      const asset = await raw(`${server.url}/${path}`)
      assert.equal(asset.status, 200)
      assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable')
    }
    const again = await raw(`${server.url}/`, { 'if-none-match': index.headers.get('etag')! })
    assert.equal(again.status, 304)
    assert.equal(again.body.length, 0)
  })

  it('sends Brotli or gzip as accepted, and the bytes decode to the same file', async () => {
    const html = (await raw(`${server.url}/`)).body.toString()
    const script = html.match(/src="(assets\/[^"]+\.js)"/)![1]
    const plain = await raw(`${server.url}/${script}`)
    assert.equal(plain.headers.get('content-encoding'), null)
    const br = await raw(`${server.url}/${script}`, { 'accept-encoding': 'gzip, deflate, br' })
    assert.equal(br.headers.get('content-encoding'), 'br')
    assert.equal(br.headers.get('vary'), 'Accept-Encoding')
    assert.ok(brotliDecompressSync(br.body).equals(plain.body))
    assert.ok(br.body.length < plain.body.length / 2, `compressed ${br.body.length} of ${plain.body.length} bytes`)
    const gz = await raw(`${server.url}/${script}`, { 'accept-encoding': 'gzip;q=1, br;q=0' })
    assert.equal(gz.headers.get('content-encoding'), 'gzip')
    assert.ok(gunzipSync(gz.body).equals(plain.body))
  })

  it('serves the noVNC page at /console/vnc.html with the word noVNC and a script (Tempest checks both)', async () => {
    const page = await raw(`${server.url}/console/vnc.html?path=console/websocket%3Ftoken%3Dabc`)
    assert.equal(page.status, 200)
    const html = page.body.toString()
    assert.match(html, /noVNC/)
    assert.match(html, /<script/)
    const script = html.match(/src="\.\.\/(assets\/vnc-[^"]+\.js)"/)![1]
    assert.equal((await raw(`${server.url}/${script}`)).status, 200)
  })

  it('leaves every other path to its API family: unknown paths keep their service’s 404 shape', async () => {
    const nova = await raw(`${server.url}/compute/v2.1/nope`)
    assert.equal(nova.status, 404)
    assert.ok(JSON.parse(nova.body.toString()).itemNotFound)
    const neutron = await raw(`${server.url}/network/v2.0/nope`)
    assert.equal(neutron.status, 404)
    assert.ok(JSON.parse(neutron.body.toString()).NeutronError)
    for (const path of ['/nope', '/assets/nope.js', '/assets/../index.html', '/console/nope.html']) {
      const res = await raw(`${server.url}${path}`)
      assert.equal(res.status, 404, path)
      assert.equal(JSON.parse(res.body.toString()).error.code, 404, path)
    }
  })

  it('says how to build the console when it is not built, and picks encodings by the q-values', () => {
    assert.equal(loadWebConsole('/nonexistent').size, 0)
    const file = { type: 'text/javascript', etag: '"x"', plain: Buffer.from('a'), br: Buffer.from('b'), gzip: Buffer.from('g'), immutable: true }
    assert.equal(chooseEncoding(undefined, file), undefined)
    assert.equal(chooseEncoding('br', file), 'br')
    assert.equal(chooseEncoding('gzip, br;q=0', file), 'gzip')
    assert.equal(chooseEncoding('*', file), 'gzip')
    assert.equal(chooseEncoding('identity', file), undefined)
    assert.equal(chooseEncoding('br', { ...file, br: undefined }), undefined)
  })
})
