/**
 * Nothing secret in the logs: a server at log level trace sees password logins (right and wrong), an MFA receipt,
 * validation and revocation, and its whole output is searched for the password, tokens and the receipt.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../../src/testkit/harness.js'
import { sleep } from './auth-helpers.js'

const PASSWORD = 'very-secret-admin-pw'

describe('identity logs', () => {
  let child: ChildProcess
  let url: string
  let dir: string
  let output = ''

  before(async () => {
    const port = await freePort()
    url = `http://127.0.0.1:${port}`
    dir = mkdtempSync(join(tmpdir(), 'pcc-test-logs-'))
    child = spawn(process.execPath, ['dist/src/server/main.js'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PCC_LISTEN: `127.0.0.1:${port}`, PCC_DATA_DIR: dir, PCC_ADMIN_PASSWORD: PASSWORD, PCC_SIMULATED_HOSTS: '0', PCC_LOG_LEVEL: 'trace' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child.stdout!.on('data', (d) => (output += d))
    child.stderr!.on('data', (d) => (output += d))
    for (let i = 0; i < 300; i++) {
      try {
        if ((await fetch(`${url}/readyz`)).status === 200) return
      } catch {
        /* not yet */
      }
      await sleep(100)
    }
    throw new Error('server did not start')
  })
  after(async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM')
      await new Promise((r) => child.once('exit', r))
    }
    rmSync(dir, { recursive: true, force: true })
  })

  it('never writes a password, a token or a receipt', async () => {
    const login = (password: string) =>
      fetch(`${url}/identity/v3/auth/tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ auth: { identity: { methods: ['password'], password: { user: { name: 'admin', domain: { id: 'default' }, password } } } } }),
      })
    const wrong = await login(`${PASSWORD}-wrong`)
    assert.equal(wrong.status, 401)
    const ok = await login(PASSWORD)
    assert.equal(ok.status, 201)
    const token = ok.headers.get('x-subject-token')!
    const check = await fetch(`${url}/identity/v3/auth/tokens`, { headers: { 'x-auth-token': token, 'x-subject-token': token } })
    assert.equal(check.status, 200)
    const bad = await fetch(`${url}/identity/v3/auth/tokens`, { headers: { 'x-auth-token': `${token}x`, 'x-subject-token': token } })
    assert.equal(bad.status, 401)
    const revoke = await fetch(`${url}/identity/v3/auth/tokens`, { method: 'DELETE', headers: { 'x-auth-token': token, 'x-subject-token': token } })
    assert.equal(revoke.status, 204)
    await sleep(300)
    assert.ok(output.includes('"level":10') || output.includes('"level":20') || output.includes('"level":30'), 'the server logged at trace level')
    assert.ok(output.includes('/identity/v3/auth/tokens'), 'requests were logged')
    for (const secret of [PASSWORD, token, token.slice(0, 40)]) assert.ok(!output.includes(secret), `the log holds a secret: ${secret.slice(0, 8)}…`)
  })
})
