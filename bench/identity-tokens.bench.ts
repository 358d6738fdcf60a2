/**
 * Identity token figures at concurrency 8 on 127.0.0.1: password issue (bounded by the scrypt cost), token-method
 * issue (rescope), validation (GET /auth/tokens) and GET /auth/catalog. The server runs in this process; the load
 * comes from wrk when it is installed (bench/load.ts).
 * Run alone: `node dist/bench/identity-tokens.bench.js`.
 */
import { pathToFileURL } from 'node:url'
import { DEFAULT_COST } from '../src/server/crypto/passwords.js'
import { ADMIN_PASSWORD, startTestServer } from '../src/testkit/harness.js'
import type { BenchRow, BenchRun } from './harness.js'
import { runLoad, type LoadResult } from './load.js'
import { bareBodyServer } from './procs.js'

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5)
const CONNECTIONS = 8

interface Load {
  method: 'GET' | 'POST'
  path: string
  headers?: Record<string, string>
  body?: unknown
}

function measure(url: string, load: Load): Promise<LoadResult> {
  return runLoad({
    url: url + load.path,
    method: load.method,
    connections: CONNECTIONS,
    durationS: DURATION_S,
    headers: { ...(load.body ? { 'content-type': 'application/json' } : {}), ...load.headers },
    body: load.body ? JSON.stringify(load.body) : undefined,
  })
}

export const run: BenchRun = async () => {
  const server = await startTestServer()
  try {
    const login = {
      auth: {
        identity: { methods: ['password'], password: { user: { name: 'admin', domain: { id: 'default' }, password: ADMIN_PASSWORD } } },
        scope: { project: { name: 'admin', domain: { id: 'default' } } },
      },
    }
    const first = await fetch(`${server.url}/identity/v3/auth/tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(login) })
    const token = first.headers.get('x-subject-token')!
    await first.arrayBuffer()
    const rows: BenchRow[] = []
    const cost = `scrypt N=2^${Math.log2(DEFAULT_COST.N)} r=${DEFAULT_COST.r} p=${DEFAULT_COST.p}`

    const figures: [string, Load, string | undefined, string][] = [
      [
        'token issue, token method (rescope), concurrency 8',
        { method: 'POST', path: '/identity/v3/auth/tokens', body: { auth: { identity: { methods: ['token'], token: { id: token } }, scope: login.auth.scope } } },
        '>= 5000 req/s',
        'no database read; catalog included',
      ],
      [
        'token validate (GET /auth/tokens), concurrency 8',
        { method: 'GET', path: '/identity/v3/auth/tokens', headers: { 'x-auth-token': token, 'x-subject-token': token } },
        '>= 15000 req/s',
        'no database read; body cached per snapshot',
      ],
      ['catalog (GET /auth/catalog), concurrency 8', { method: 'GET', path: '/identity/v3/auth/catalog', headers: { 'x-auth-token': token } }, undefined, 'serialized catalog cached'],
      // Last: scrypt work still queued when its window ends would otherwise weigh on the next figure.
      ['token issue, password method (POST /auth/tokens), concurrency 8', { method: 'POST', path: '/identity/v3/auth/tokens', body: login }, `bounded by ${cost}`, `one ${cost} hash per request`],
    ]
    for (const [figure, load, target, note] of figures) {
      const r = await measure(server.url, load)
      rows.push({ figure, value: Math.round(r.rps), unit: 'req/s', target, note: `${note}; p50 ${r.p50Ms} ms; ${r.errors} errors; load: ${r.generator}` })
    }
    // The machine's ceiling for the validate figure: the same answer from bare node:http, measured the same way.
    const validated = await fetch(`${server.url}/identity/v3/auth/tokens`, { headers: { 'x-auth-token': token, 'x-subject-token': token } })
    const body = await validated.text()
    const bare = await bareBodyServer(body)
    try {
      const r = await measure(bare.url, { method: 'GET', path: '/' })
      rows.push({ figure: `bare node:http answering the validate body (${(body.length / 1024).toFixed(1)} KiB), concurrency 8`, value: Math.round(r.rps), unit: 'req/s', note: `the ceiling of this machine for that answer; p50 ${r.p50Ms} ms` })
    } finally {
      await bare.close()
    }
    return rows
  } finally {
    await server.close()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rows = await run()
  for (const row of rows) console.log(`${row.figure}: ${row.value} ${row.unit}${row.target ? ` (target ${row.target})` : ''} — ${row.note ?? ''}`)
}
