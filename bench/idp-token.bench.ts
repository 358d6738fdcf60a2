/**
 * IdP throughput on one SQLite server, concurrency 8, loopback: JWKS requests/s, refresh-grant requests/s
 * (every request rotates its token; each connection carries on with the token it got back) and password-grant
 * requests/s (bound by the scrypt password hash). About 15 s in all.
 */
import { createRequire } from 'node:module'
import { ADMIN_PASSWORD, startTestServer } from '../src/testkit/harness.js'
import type { BenchRow, BenchRun } from './harness.js'

interface AutocannonRequest {
  method?: string
  path?: string
  headers?: Record<string, string>
  body?: string
  setupRequest?: (req: AutocannonRequest, context: Record<string, unknown>) => AutocannonRequest
  onResponse?: (status: number, body: string, context: Record<string, unknown>) => void
}
interface AutocannonResult {
  requests: { average: number }
  latency: { p50: number; p99: number }
  non2xx: number
  errors: number
}
type Autocannon = (opts: { url: string; connections: number; duration: number; requests?: AutocannonRequest[] }) => Promise<AutocannonResult>

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon
const CONNECTIONS = 8
const SECONDS = 4
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

function row(figure: string, result: AutocannonResult, target?: string): BenchRow {
  const failed = result.non2xx + result.errors
  return {
    figure: `${figure}, concurrency ${CONNECTIONS}`,
    value: Math.round(result.requests.average),
    unit: 'req/s',
    target,
    note: `p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms${failed ? `, ${failed} failed` : ''}`,
  }
}

export const run: BenchRun = async () => {
  const server = await startTestServer()
  try {
    const { token } = await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })
    const secret = ((await (await fetch(`${server.url}/resmgr/v2/idpclients`, { headers: { 'x-auth-token': token } })).json()) as Record<string, string>).kubernetes
    const login = new URLSearchParams({ grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: 'openid offline_access groups email profile', username: 'admin', password: ADMIN_PASSWORD }).toString()
    const rows: BenchRow[] = []

    rows.push(row('GET /idp/keys', await autocannon({ url: `${server.url}/idp/keys`, connections: CONNECTIONS, duration: SECONDS })))

    const pool: string[] = []
    for (let i = 0; i < CONNECTIONS * 2; i++) {
      const res = await fetch(`${server.url}/idp/token`, { method: 'POST', headers: FORM, body: login })
      pool.push(((await res.json()) as { refresh_token: string }).refresh_token)
    }
    const refresh = await autocannon({
      url: server.url,
      connections: CONNECTIONS,
      duration: SECONDS,
      requests: [
        {
          method: 'POST',
          path: '/idp/token',
          headers: { ...FORM, authorization: `Basic ${Buffer.from(`kubernetes:${secret}`).toString('base64')}` },
          setupRequest: (req) => ({ ...req, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: pool.shift() ?? '' }).toString() }),
          onResponse: (status, body) => {
            if (status === 200) pool.push((JSON.parse(body) as { refresh_token: string }).refresh_token)
          },
        },
      ],
    })
    rows.push(row('POST /idp/token grant_type=refresh_token', refresh))

    rows.push(row('POST /idp/token grant_type=password (scrypt-bound)', await autocannon({ url: `${server.url}/idp/token`, connections: CONNECTIONS, duration: SECONDS, requests: [{ method: 'POST', headers: FORM, body: login }] })))
    return rows
  } finally {
    await server.close()
  }
}
