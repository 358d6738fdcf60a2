/**
 * Two real server processes on one PostgreSQL: what one does to tokens (revoke, disable, rotate keys) the other
 * honours within a second, key rotation never breaks a token still valid, and a TOTP code is accepted once.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { base32Encode, totpCode } from '../../src/server/crypto/totp.js'
import { ADMIN_PASSWORD, freePort, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { freshDatabase } from '../../src/testkit/postgres.js'
import { adminToken, call, createProject, createUser, identityWrite, passwordAuth, post, sleep } from './auth-helpers.js'

async function status(baseUrl: string, caller: string, subject: string): Promise<number> {
  const res = await fetch(`${baseUrl}/identity/v3/auth/tokens?nocatalog`, { headers: { 'x-auth-token': caller, 'x-subject-token': subject } })
  await res.arrayBuffer()
  return res.status
}

/** Polls until `check` is true; answers the milliseconds it took, or fails after `limitMs`. */
async function within(limitMs: number, check: () => Promise<boolean>): Promise<number> {
  const start = Date.now()
  while (Date.now() - start < limitMs) {
    if (await check()) return Date.now() - start
    await sleep(20)
  }
  assert.fail(`not seen within ${limitMs} ms`)
}

describe('tokens across two server processes on one PostgreSQL', () => {
  let a: TestServer
  let b: ChildProcess
  let bUrl: string
  let bDir: string
  let admin: string

  before(async () => {
    const databaseUrl = await freshDatabase()
    const masterKey = randomBytes(32).toString('base64')
    a = await startTestServer({ databaseUrl, env: { PCC_MASTER_KEY: masterKey } })
    const port = await freePort()
    bUrl = `http://127.0.0.1:${port}`
    bDir = mkdtempSync(join(tmpdir(), 'pcc-test-b-'))
    b = spawn(process.execPath, ['dist/src/server/main.js'], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        PCC_LISTEN: `127.0.0.1:${port}`,
        PCC_DATA_DIR: bDir,
        PCC_DATABASE_URL: databaseUrl,
        PCC_MASTER_KEY: masterKey,
        PCC_ADMIN_PASSWORD: ADMIN_PASSWORD,
        PCC_SIMULATED_HOSTS: '0',
        PCC_LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    })
    await within(30_000, async () => {
      try {
        return (await fetch(`${bUrl}/readyz`)).status === 200
      } catch {
        return false
      }
    })
    admin = await adminToken(a)
  })
  after(async () => {
    b?.kill('SIGTERM')
    await new Promise((r) => (b && b.exitCode === null ? b.once('exit', r) : r(undefined)))
    await a?.close()
    rmSync(bDir, { recursive: true, force: true })
  })

  it('validates on B a token issued on A, and sees A’s revocation within 1 s', async () => {
    const subject = (await post(a, passwordAuth({ name: 'admin', domain: { id: 'default' }, password: ADMIN_PASSWORD }, 'unscoped'))).token!
    assert.equal(await status(bUrl, admin, subject), 200)
    const revoke = await fetch(`${a.url}/identity/v3/auth/tokens`, { method: 'DELETE', headers: { 'x-auth-token': admin, 'x-subject-token': subject } })
    assert.equal(revoke.status, 204)
    const took = await within(1000, async () => (await status(bUrl, admin, subject)) === 404)
    assert.ok(took < 1000, `seen after ${took} ms`)
  })

  it('sees on B a user disabled through A within 1 s', async () => {
    const projectId = await createProject(a, 'shared')
    const userId = await createUser(a, { name: 'shared-user', password: 'shared-secret', roles: [[projectId, 'member']] })
    // The project, user and grant were just written through A: B issues a token scoped to it at once (it looks
    // again when its snapshot does not know them yet).
    const onB = await fetch(`${bUrl}/identity/v3/auth/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(passwordAuth({ id: userId, password: 'shared-secret' }, { project: { id: projectId } })),
    })
    assert.equal(onB.status, 201)
    const subject = onB.headers.get('x-subject-token')!
    assert.equal(await status(bUrl, admin, subject), 200)
    await identityWrite(a, (db) => db.updateTable('users').set({ enabled: 0 }).where('id', '=', userId).execute())
    await within(1000, async () => (await status(bUrl, admin, subject)) === 404)
  })

  it('accepts a TOTP code once across processes and surfaces: of logins sending it at once to A and B, Keystone and the IdP, one succeeds', async () => {
    const seed = randomBytes(20)
    const userId = await createUser(a, { name: 'totp-shared', password: 'totp-shared-secret', options: { multi_factor_auth_rules: [['password', 'totp']] } })
    assert.equal((await call(a, 'POST', '/credentials', { 'x-auth-token': admin }, { credential: { type: 'totp', user_id: userId, blob: base32Encode(seed) } })).status, 201)
    const clients = await fetch(`${bUrl}/resmgr/v2/idpclients`, { headers: { 'x-auth-token': admin } })
    const clientSecret = ((await clients.json()) as Record<string, string>).kubernetes
    // Far enough from the end of a step that every request arrives within the code's window.
    if (Date.now() % 30_000 > 25_000) await sleep(30_000 - (Date.now() % 30_000) + 50)
    const passcode = totpCode(seed, Date.now())
    const keystone = (base: string) =>
      fetch(`${base}/identity/v3/auth/tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ auth: { identity: { methods: ['password', 'totp'], password: { user: { id: userId, password: 'totp-shared-secret' } }, totp: { user: { id: userId, passcode } } } } }),
      })
    const idp = () =>
      fetch(`${bUrl}/idp/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'password', client_id: 'kubernetes', client_secret: clientSecret, scope: 'openid', username: 'totp-shared', password: 'totp-shared-secret', totp: passcode }).toString(),
      })
    const answers = await Promise.all([keystone(a.url), keystone(a.url), keystone(bUrl), keystone(bUrl), idp(), idp()])
    const accepted = answers.filter((r) => r.status === 201 || r.status === 200)
    await Promise.all(answers.map((r) => r.arrayBuffer()))
    assert.equal(accepted.length, 1, `answers: ${answers.map((r) => r.status).join(', ')}`)
  })

  it('rotates keys on A without breaking tokens on B, and B opens A’s newest tokens at once', async () => {
    const before = (await post(a, passwordAuth({ name: 'admin', domain: { id: 'default' }, password: ADMIN_PASSWORD }))).token!
    for (let i = 0; i < 3; i++) {
      assert.equal(await a.deps.tokens.rotate(), true)
      const fresh = (await post(a, passwordAuth({ name: 'admin', domain: { id: 'default' }, password: ADMIN_PASSWORD }))).token!
      // No wait: B knew the new primary as the staged key before A promoted it.
      assert.equal(await status(bUrl, admin, fresh), 200, `fresh token after rotation ${i + 1}`)
      assert.equal(await status(bUrl, admin, before), 200, `old token after rotation ${i + 1}`)
      await sleep(400)
    }
    const keys = await a.deps.store.db.selectFrom('token_keys').select('state').execute()
    assert.equal(keys.filter((k) => k.state === 'primary').length, 1)
    assert.equal(keys.filter((k) => k.state === 'staged').length, 1)
  })
})

describe('scheduled key rotation', () => {
  let server: TestServer
  before(async () => {
    server = await startTestServer({ env: { PCC_TOKEN_KEY_ROTATION_SECONDS: '1', PCC_TOKEN_EXPIRATION_SECONDS: '20', PCC_TOKEN_ALLOW_EXPIRED_WINDOW_SECONDS: '0' } })
  })
  after(() => server?.close())

  it('rotates on schedule and keeps issued tokens valid', async () => {
    const primary = async () => (await server.deps.store.db.selectFrom('token_keys').select('id').where('state', '=', 'primary').executeTakeFirstOrThrow()).id
    const first = await primary()
    const token = (await post(server, passwordAuth({ name: 'admin', domain: { id: 'default' }, password: ADMIN_PASSWORD }))).token!
    await sleep(2300)
    assert.notEqual(await primary(), first, 'the primary key changed on schedule')
    const caller = await adminToken(server)
    assert.equal(await status(server.url, caller, token), 200, 'a token sealed with a retired primary still validates')
  })
})

describe('key pruning', () => {
  let server: TestServer
  before(async () => {
    server = await startTestServer({ env: { PCC_TOKEN_KEY_ROTATION_SECONDS: '3600', PCC_TOKEN_EXPIRATION_SECONDS: '3600', PCC_TOKEN_ALLOW_EXPIRED_WINDOW_SECONDS: '0' } })
  })
  after(() => server?.close())

  it('keeps ceil((lifetime + allow_expired window) / interval) + 2 keys and drops the oldest', async () => {
    const caller = await adminToken(server)
    const token = (await post(server, passwordAuth({ name: 'admin', domain: { id: 'default' }, password: ADMIN_PASSWORD }, 'unscoped'))).token!
    // ceil(3600 / 3600) + 2 = 3 keys: staged, primary, and the previous primary.
    assert.equal(await server.deps.tokens.rotate(), true)
    assert.equal((await server.deps.store.db.selectFrom('token_keys').select('id').execute()).length, 3)
    const fresh = await adminToken(server)
    assert.equal(await status(server.url, fresh, token), 200, 'one rotation later the token still opens')
    assert.equal(await server.deps.tokens.rotate(), true)
    assert.equal(await server.deps.tokens.rotate(), true)
    assert.equal((await server.deps.store.db.selectFrom('token_keys').select('id').execute()).length, 3)
    // Its key is gone: an interval longer than the lifetime has passed in key terms, and the token no longer opens.
    const newest = await adminToken(server)
    assert.equal(await status(server.url, newest, token), 404)
    assert.equal(await status(server.url, newest, caller), 404)
  })
})
