/**
 * Secrets never reach the log: the server runs at trace level, receives tokens in headers, passwords and
 * client secrets in bodies and query strings, a database URL with a password, an admin password and a master
 * key in its settings; none of them appears in what it writes.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { redactUrl, redactUrlQuery } from '../../src/server/logger.js'
import { freshDatabase } from '../../src/testkit/postgres.js'
import { spawnServer } from '../../src/testkit/process.js'

const SECRETS = {
  adminPassword: 'adm-SECRET-pw-0001',
  masterKey: Buffer.alloc(32, 'k').toString('base64'),
  dbPassword: 'db-SECRET-pw-0002',
  authToken: 'tok-SECRET-0003',
  subjectToken: 'tok-SECRET-0004',
  bearer: 'tok-SECRET-0005',
  password: 'pw-SECRET-0006',
  clientSecret: 'cs-SECRET-0007',
  refreshToken: 'rt-SECRET-0008',
  queryToken: 'qs-SECRET-0009',
  consoleToken: 'ct-SECRET-0010',
}

/** A database owned by a role with a distinctive password, so a leaked URL is recognisable. */
async function databaseWithPassword(password: string): Promise<string> {
  const url = new URL(await freshDatabase())
  const database = url.pathname.slice(1)
  const role = `${database}_owner`
  const client = new pg.Client({ connectionString: url.toString() })
  await client.connect()
  try {
    await client.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`)
    await client.query(`ALTER DATABASE ${database} OWNER TO ${role}`)
    await client.query(`ALTER SCHEMA public OWNER TO ${role}`)
  } finally {
    await client.end()
  }
  url.username = role
  url.password = password
  return url.toString()
}

describe('secrets in logs', () => {
  it('redacts the secret path segments of logged URLs, and their query', () => {
    assert.equal(redactUrl('/compute/v2.1/os-console-auth-tokens/abc-123'), '/compute/v2.1/os-console-auth-tokens/[redacted]')
    assert.equal(redactUrl('/compute/v2.1/os-console-auth-tokens/abc-123/?token=x'), '/compute/v2.1/os-console-auth-tokens/[redacted]/?token=[redacted]')
    assert.equal(redactUrl('/compute/v2.1/servers/abc-123?limit=5'), '/compute/v2.1/servers/abc-123?limit=5')
  })

  it('redacts secret query parameters from logged URLs', () => {
    assert.equal(redactUrlQuery('/idp/auth?client_id=kubectl&client_secret=abc&state=1'), '/idp/auth?client_id=kubectl&client_secret=[redacted]&state=1')
    assert.equal(redactUrlQuery('/x?Password=a&TOKEN=b&marker=c'), '/x?Password=[redacted]&TOKEN=[redacted]&marker=c')
    assert.equal(redactUrlQuery('/x?refresh%5Ftoken=a'), '/x?refresh%5Ftoken=[redacted]')
    assert.equal(redactUrlQuery('/compute/v2.1/servers?limit=5'), '/compute/v2.1/servers?limit=5')
    // OAuth 1.0a parameters a client may sign in the query rather than the Authorization header.
    assert.equal(
      redactUrlQuery('/identity/v3/OS-OAUTH1/access_token?oauth_consumer_key=c&oauth_token=t&oauth_verifier=v&oauth_signature=s'),
      '/identity/v3/OS-OAUTH1/access_token?oauth_consumer_key=c&oauth_token=[redacted]&oauth_verifier=[redacted]&oauth_signature=[redacted]',
    )
    // A console URL's token sits inside noVNC's path parameter.
    assert.equal(redactUrlQuery('/console/vnc.html?path=console/websocket%3Ftoken%3Dabc-123&title=x'), '/console/vnc.html?path=console%2Fwebsocket%3Ftoken%3D%5Bredacted%5D&title=x')
  })

  it('writes none of them at trace level while serving requests that carry them', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'pcc-log-'))
    const server = spawnServer({
      PCC_DATA_DIR: dataDir,
      PCC_DATABASE_URL: await databaseWithPassword(SECRETS.dbPassword),
      PCC_LISTEN: '127.0.0.1:0',
      PCC_LOG_LEVEL: 'trace',
      PCC_ADMIN_PASSWORD: SECRETS.adminPassword,
      PCC_MASTER_KEY: SECRETS.masterKey,
    })
    try {
      const url = await server.listening()
      const json = { 'content-type': 'application/json' }
      const requests: [string, RequestInit][] = [
        ['/compute/v2.1/servers', { headers: { 'x-auth-token': SECRETS.authToken } }],
        ['/identity/v3/auth/tokens', { headers: { 'x-auth-token': SECRETS.authToken, 'x-subject-token': SECRETS.subjectToken } }],
        ['/network/v2.0/networks', { headers: { authorization: `Bearer ${SECRETS.bearer}` } }],
        [
          '/identity/v3/auth/tokens',
          {
            method: 'POST',
            headers: json,
            body: JSON.stringify({ auth: { identity: { methods: ['password'], password: { user: { name: 'admin', domain: { id: 'default' }, password: SECRETS.password } } } } }),
          },
        ],
        ['/identity/v3/auth/tokens', { method: 'POST', headers: json, body: `{"auth": {"password": "${SECRETS.password}"` }],
        [
          '/idp/token',
          {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`kubectl:${SECRETS.clientSecret}`).toString('base64')}` },
            body: `grant_type=refresh_token&refresh_token=${SECRETS.refreshToken}&client_secret=${SECRETS.clientSecret}`,
          },
        ],
        [`/idp/auth?client_id=kubectl&client_secret=${SECRETS.clientSecret}&token=${SECRETS.queryToken}`, {}],
        // Nova's console token lookup carries the token in the path.
        [`/compute/v2.1/os-console-auth-tokens/${SECRETS.consoleToken}`, { headers: { 'x-auth-token': SECRETS.authToken } }],
      ]
      for (const [path, init] of requests) await (await fetch(`${url}${path}`, init)).arrayBuffer()
      assert.equal(await server.stop(), 0)
    } finally {
      await server.stop()
      rmSync(dataDir, { recursive: true, force: true })
    }
    const output = server.stdout() + server.stderr()
    // The log is really there: each request was logged coming in, with its URL.
    assert.equal(output.match(/"msg":"request completed"/g)?.length, 8, 'one line per request')
    assert.match(output, /"url":"\/compute\/v2\.1\/os-console-auth-tokens\/\[redacted\]"/)
    assert.match(output, /"url":"\/idp\/auth\?client_id=kubectl&client_secret=\[redacted\]&token=\[redacted\]"/)
    for (const [name, secret] of Object.entries(SECRETS)) {
      assert.ok(!output.includes(secret), `${name} appears in the output`)
    }
  })
})
