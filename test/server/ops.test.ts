/**
 * Operations behaviour every API family shares: health and readiness, Prometheus metrics, request ids, the
 * body limit and malformed JSON in each family's error shape, graceful stop of tasks (the OpenAPI document: openapi.test.ts).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, connect, type Server, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { rmSync } from 'node:fs'
import { buildApp } from '../../src/server/app.js'
import type { TaskHandler } from '../../src/server/tasks/runner.js'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { freshDatabase } from '../../src/testkit/postgres.js'
import { request } from 'node:http'
import { Ajv } from 'ajv'
import { apiFamilies } from '../../src/server/api/families.js'
import { errorBodySchema } from '../../src/server/http/error-renderers.js'
import { FAMILY_SHAPES } from './family-shapes.js'

const REQUEST_ID = /^req-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe('operations endpoints', () => {
  let server: TestServer
  // Authenticated, so the services get as far as reading the body (compute checks the token first, as Nova does).
  let auth: Record<string, string>
  before(async () => {
    server = await startTestServer()
    auth = { 'x-auth-token': (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token }
  })
  after(() => server.close())

  it('/healthz answers 200 without authentication', async () => {
    const res = await fetch(`${server.url}/healthz`)
    assert.equal(res.status, 200)
    assert.deepEqual(await res.json(), { status: 'ok' })
    // Plain HTTP says nothing of HTTPS (a browser ignores it there anyway); under TLS: test/server/process.test.ts.
    assert.equal(res.headers.get('strict-transport-security'), null)
  })

  it('/readyz answers 200 once the database answers and migrations are done', async () => {
    const res = await fetch(`${server.url}/readyz`)
    assert.equal(res.status, 200)
    assert.deepEqual(await res.json(), { status: 'ready', database: 'ok', migrations: 'done' })
  })

  it('/readyz answers 503 while migrations are not done', async () => {
    const app = await buildApp(server.deps, { state: { migrated: false } })
    try {
      const res = await app.inject({ method: 'GET', url: '/readyz' })
      assert.equal(res.statusCode, 503)
      assert.deepEqual(res.json(), { status: 'starting', database: 'unknown', migrations: 'pending' })
    } finally {
      await app.close()
    }
  })

  it('puts a request id on every response, and compute also its own header', async () => {
    const cases: [string, RequestInit, boolean][] = [
      ['/healthz', {}, false],
      ['/metrics', {}, false],
      ['/openapi.json', {}, false],
      ['/no/such/thing', {}, false],
      ['/identity/v3/no-such', {}, false],
      ['/compute/v2.1/no-such', {}, true],
      ['/compute/v2.1/servers', { method: 'POST', body: '{bad', headers: { 'content-type': 'application/json' } }, true],
      ['/network/v2.0/no-such', {}, false],
    ]
    const seen = new Set<string>()
    for (const [path, init, compute] of cases) {
      const res = await fetch(`${server.url}${path}`, init)
      await res.arrayBuffer()
      const id = res.headers.get('x-openstack-request-id')
      assert.match(id ?? '', REQUEST_ID, `${path}: x-openstack-request-id`)
      seen.add(id!)
      if (compute) assert.equal(res.headers.get('x-compute-request-id'), id, `${path}: x-compute-request-id`)
      else assert.equal(res.headers.get('x-compute-request-id'), null, `${path}: no compute header outside compute`)
    }
    assert.equal(seen.size, cases.length, 'each request gets its own id')
  })

  for (const { path, family, check } of FAMILY_SHAPES) {
    it(`answers a body over the limit with 413 in the ${family} error shape`, async () => {
      const big = JSON.stringify({ padding: 'x'.repeat(2 << 20) })
      const res = await fetch(`${server.url}${path}`, { method: 'POST', body: big, headers: { ...auth, 'content-type': 'application/json' } })
      assert.equal(res.status, 413)
      const body = (await res.json()) as Record<string, unknown>
      check(body, 413)
      assert.match(JSON.stringify(body), /larger than the limit of 1048576 bytes/)
    })

    it(`answers malformed JSON with 400 in the ${family} error shape`, async () => {
      const res = await fetch(`${server.url}${path}`, { method: 'POST', body: '{"auth": {', headers: { ...auth, 'content-type': 'application/json' } })
      assert.equal(res.status, 400)
      check((await res.json()) as Record<string, unknown>, 400)
    })
  }

  /** A GET as raw as it comes (fetch would re-encode the path and refuse some of it). */
  const rawGet = (path: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; body: unknown }>((resolve, reject) => {
      const url = new URL(server.url)
      const r = request({ host: url.hostname, port: url.port, path, headers: { ...auth, ...headers }, agent: false }, (res) => {
        let text = ''
        res.on('data', (c: Buffer) => (text += c.toString()))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }))
      })
      r.on('error', reject)
      r.end()
    })

  // Found by the fuzz suite: these answers came in Fastify's own shape, not the family's.
  for (const [family, path] of [['compute', '/compute/v2.1/servers'], ['identity', '/identity/v3/users'], ['network', '/network/v2.0/networks'], ['image', '/image/v2/images'], ['volume', '/volume/v3/volumes'], ['resmgr', '/resmgr/v1/hosts']]) {
    it(`answers URLs it cannot route or read in the ${family} error shape`, async () => {
      const renderer = apiFamilies(server.deps).find((f) => f.name === family)!.renderError
      const valid = new Ajv({ strict: false }).compile(errorBodySchema(renderer))
      const cases: [string, Record<string, string>, number][] = [
        [`${path}/%E0%A4%A`, {}, 400],
        [`${path}/%zz`, {}, 400],
        // A NUL character: PostgreSQL cannot store one (found by the fuzz suite), so neither dialect takes it.
        [`${path}/a%00b`, {}, 400],
        [`${path}?name=a%00b`, {}, 400],
        [`${path}/${'x'.repeat(5000)}`, {}, 404],
        [`${path}?q=${'y'.repeat(20_000)}`, {}, 431],
        [path, { 'x-padding': 'z'.repeat(20_000) }, 431],
      ]
      for (const [url, headers, status] of cases) {
        const res = await rawGet(url, headers)
        assert.equal(res.status, status, `${url.slice(0, 60)}: ${JSON.stringify(res.body)}`)
        assert.ok(valid(res.body), `${url.slice(0, 60)}: ${JSON.stringify(res.body)} is not in the ${family} shape`)
      }
      const nul = await fetch(`${server.url}${path}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"x":"a\\u0000b"}' })
      const nulBody = await nul.json()
      assert.equal(nul.status, 400)
      assert.ok(valid(nulBody) && /NUL/.test(JSON.stringify(nulBody)), JSON.stringify(nulBody))
      // A parameter as long as a 255-character name of 4-byte characters, percent-encoded, reaches the route (which
      // may find it too long for an id, 400, or find nothing, 404).
      const long = await rawGet(`${path}/${encodeURIComponent('😀'.repeat(255))}`)
      assert.ok([400, 404].includes(long.status) && valid(long.body), `${long.status} ${JSON.stringify(long.body)}`)
      assert.doesNotMatch(JSON.stringify(long.body), /too long/)
    })
  }

  it('refuses a NUL character in JSON of the other media types the families read as JSON', async () => {
    // Compute reads JSON sent as text/plain or Nova's own type, Glance its patch types: the NUL check is theirs too
    // (on SQLite these stored a NUL that PostgreSQL cannot).
    const send = (method: string, path: string, contentType: string, body?: string) =>
      fetch(`${server.url}${path}`, { method, headers: { ...auth, 'content-type': contentType, 'openstack-api-version': 'compute 2.96' }, body })
    const flavor = await send('POST', '/compute/v2.1/flavors', 'application/json', JSON.stringify({ flavor: { name: 'nul', ram: 64, vcpus: 1, disk: 1 } }))
    const flavorId = ((await flavor.json()) as { flavor: { id: string } }).flavor.id
    for (const type of ['text/plain', 'application/vnd.openstack.compute+json']) {
      const res = await send('POST', `/compute/v2.1/flavors/${flavorId}/os-extra_specs`, type, '{"extra_specs":{"k":"a\\u0000b"}}')
      assert.equal(res.status, 400, type)
      assert.match(await res.text(), /NUL/)
    }
    assert.deepEqual(await (await send('GET', `/compute/v2.1/flavors/${flavorId}/os-extra_specs`, 'application/json')).json(), { extra_specs: {} })
    const image = await send('POST', '/image/v2/images', 'application/json', JSON.stringify({ name: 'nul', disk_format: 'raw', container_format: 'bare' }))
    const imageId = ((await image.json()) as { id: string }).id
    const patched = await send('PATCH', `/image/v2/images/${imageId}`, 'application/openstack-images-v2.1-json-patch', '[{"op":"replace","path":"/name","value":"a\\u0000b"}]')
    assert.equal(patched.status, 400)
    assert.match(await patched.text(), /NUL/)
  })

  it('answers errors of the routes outside the families in the plain error shape', async () => {
    // They were registered before the root error handler and kept Fastify's own (found by the fuzz suite).
    const valid = new Ajv({ strict: false }).compile(errorBodySchema(undefined))
    for (const path of ['/healthz?x=%00', '/metrics?x=%00', '/openapi.json?x=%00', '/downloads/install.sh?x=%00']) {
      const res = await rawGet(path)
      assert.equal(res.status, 400, path)
      assert.ok(valid(res.body), `${path}: ${JSON.stringify(res.body)}`)
    }
  })

  it('applies the limit to a chunked body without a length as well', async () => {
    const chunk = new TextEncoder().encode('x'.repeat(64 << 10))
    let sent = 0
    const body = new ReadableStream({
      pull(controller) {
        if (sent++ < 40) controller.enqueue(chunk)
        else controller.close()
      },
    })
    const res = await fetch(`${server.url}/compute/v2.1/servers`, { method: 'POST', body, duplex: 'half', headers: { ...auth, 'content-type': 'application/json' } } as RequestInit)
    assert.equal(res.status, 413)
    assert.ok('requestEntityTooLarge' in ((await res.json()) as object))
  })

  it('/metrics counts requests and latencies per route pattern and status, and reports queue depth and event-loop lag', async () => {
    await server.deps.queue.enqueue({ kind: 'metrics-probe-no-handler', payload: {} })
    await server.deps.queue.enqueue({ kind: 'metrics-probe-no-handler', payload: {} })
    for (let i = 0; i < 3; i++) await (await fetch(`${server.url}/healthz`)).arrayBuffer()
    await (await fetch(`${server.url}/compute/v2.1/servers/1b2c3d4e-0000-4000-8000-000000000000`)).arrayBuffer()
    const res = await fetch(`${server.url}/metrics`)
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/)
    const text = await res.text()
    const count = /^pcc_http_requests_total\{route="\/healthz",method="GET",status="200"\} (\d+)$/m.exec(text)
    assert.ok(count && Number(count[1]) >= 3, 'request counter per route, method and status')
    assert.match(text, /^pcc_http_request_duration_seconds_bucket\{le="0\.005",route="\/healthz",method="GET",status="200"\} \d+$/m)
    assert.match(text, /^pcc_http_request_duration_seconds_count\{route="\/healthz",method="GET",status="200"\} \d+$/m)
    assert.match(text, /^pcc_http_requests_total\{route="unmatched",method="GET",status="404"\} \d+$/m, 'unknown paths share one label')
    assert.doesNotMatch(text, /1b2c3d4e/, 'ids in paths never become labels')
    assert.match(text, /^pcc_task_queue_depth\{status="queued"\} 2$/m)
    assert.match(text, /^pcc_task_queue_depth\{status="running"\} 0$/m)
    assert.match(text, /^nodejs_eventloop_lag_seconds \d/m)
    assert.match(text, /^nodejs_eventloop_lag_p99_seconds \d/m)
  })
})

/** A TCP relay between the server and PostgreSQL, to take the database away and give it back. */
class DatabaseRelay {
  private server: Server | undefined
  private readonly sockets = new Set<Socket>()
  port = 0
  mode: 'forward' | 'blackhole' = 'forward'

  constructor(private readonly target: URL) {}

  async open(port = 0): Promise<void> {
    this.server = createServer((client) => {
      this.sockets.add(client)
      client.on('close', () => this.sockets.delete(client))
      client.on('error', () => {})
      if (this.mode === 'blackhole') return
      const upstream = connect(Number(this.target.port), this.target.hostname)
      this.sockets.add(upstream)
      upstream.on('close', () => this.sockets.delete(upstream))
      upstream.on('error', () => client.destroy())
      client.on('error', () => upstream.destroy())
      client.pipe(upstream).pipe(client)
    })
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve))
    this.port = (this.server.address() as { port: number }).port
  }

  /** Stops listening and cuts every connection: the database is gone. */
  async cut(): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    await new Promise<void>((resolve) => this.server!.close(() => resolve()))
  }

  urlFor(database: URL): string {
    const url = new URL(database)
    url.port = String(this.port)
    return url.toString()
  }
}

describe('readiness follows the database (postgres)', () => {
  it('answers 503 while PostgreSQL is unreachable or hanging, and 200 again once it is back', async () => {
    const database = new URL(await freshDatabase())
    const relay = new DatabaseRelay(database)
    await relay.open()
    const server = await startTestServer({ databaseUrl: relay.urlFor(database) })
    try {
      const ready = async () => {
        const res = await fetch(`${server.url}/readyz`)
        return { status: res.status, body: (await res.json()) as { database: string } }
      }
      assert.equal((await ready()).status, 200)

      await relay.cut()
      const down = await ready()
      assert.equal(down.status, 503)
      assert.equal(down.body.database, 'unreachable')
      assert.equal((await fetch(`${server.url}/healthz`)).status, 200, 'liveness does not depend on the database')
      const metrics = await fetch(`${server.url}/metrics`)
      assert.equal(metrics.status, 200, 'metrics are still served')
      assert.match(await metrics.text(), /^pcc_http_requests_total\{route="\/readyz",method="GET",status="503"\} 1$/m)

      // Accepts connections but never answers: the probe still answers, within its timeout.
      relay.mode = 'blackhole'
      await relay.open(relay.port)
      const started = Date.now()
      assert.equal((await ready()).status, 503)
      assert.ok(Date.now() - started < 4000, `readiness answered after ${Date.now() - started} ms`)

      await relay.cut()
      relay.mode = 'forward'
      await relay.open(relay.port)
      let back = 0
      for (let i = 0; i < 100 && back !== 200; i++) {
        back = (await ready()).status
        if (back !== 200) await sleep(100)
      }
      assert.equal(back, 200, 'ready again once the database is back')
    } finally {
      await server.close()
      await relay.cut().catch(() => {})
    }
  })
})

for (const dialect of DIALECTS) {
  describe(`graceful stop of tasks (${dialect})`, () => {
    it('hands the leases of still-running tasks back when the server stops', async () => {
      let started = false
      const handlers = new Map<string, TaskHandler>([
        [
          'stop-probe',
          async (_task, { signal }) => {
            started = true
            await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()))
          },
        ],
      ])
      const server = await startTestServer({ dialect, handlers, env: { PCC_TASK_LEASE_SECONDS: '2' } })
      const dataDir = server.dataDir
      const databaseUrl = server.config.databaseUrl
      const task = await server.deps.queue.enqueue({ kind: 'stop-probe', payload: {} })
      for (let i = 0; i < 200 && !started; i++) await sleep(25)
      assert.ok(started, 'the handler started')
      assert.equal((await server.deps.queue.get(task.id))?.status, 'running')
      const stopStarted = Date.now()
      await server.stop()
      assert.ok(Date.now() - stopStarted < 5000, 'a handler that does not finish delays the stop by at most the grace period')
      // stop() closed the store: read the task through a second server on the same data.
      const again = await startTestServer({ dataDir, databaseUrl })
      try {
        const row = await again.deps.queue.get(task.id)
        assert.equal(row?.status, 'queued')
        assert.equal(row?.leaseOwner, null)
        assert.equal(row?.attempts, 0)
      } finally {
        await again.close()
        // The first server was stopped, not closed, and the second was given the data dir: neither removes it.
        rmSync(dataDir, { recursive: true, force: true })
      }
    })
  })
}
