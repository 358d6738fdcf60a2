/**
 * pcctl keeps a token between runs so a command does not log in again while the last token is valid: the next
 * run reuses it, a revoked token is replaced by a fresh login without the user noticing, another password never
 * reaches the cached token, the files are the user's alone, and PCCTL_TOKEN_CACHE=off turns it off.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { cliSandbox, type CliSandbox } from '../../src/testkit/cli.js'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminEnv } from '../../src/testkit/openstack.js'

describe('pcctl token cache', () => {
  let server: TestServer
  let env: Record<string, string>

  /** Password logins the server has answered so far (201s of POST /auth/tokens). */
  const logins = async (): Promise<number> => {
    const text = await (await fetch(`${server.url}/metrics`)).text()
    const m = /^pcc_http_requests_total\{route="\/identity\/v3\/auth\/tokens",method="POST",status="201"\} (\d+)$/m.exec(text)
    return m ? Number(m[1]) : 0
  }
  const flavorList = async (sandbox: CliSandbox, extra: Record<string, string> = {}) => {
    const r = await sandbox.run(['flavor', 'list', '-f', 'value', '-c', 'Name'], { ...env, ...extra })
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /m1\.tiny/)
    return r
  }
  /** The cached token files of a sandbox (the folder also holds its key). */
  const tokenFiles = (sandbox: CliSandbox) => {
    const dir = join(sandbox.configDir, 'tokens')
    return readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => join(dir, f))
  }

  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '1' } })
    env = adminEnv(server)
  })
  after(async () => server?.close())

  it('logs in once; the following runs reuse the token, kept in files only the user can read', async () => {
    const sandbox = cliSandbox()
    const before = await logins()
    await flavorList(sandbox)
    assert.equal(await logins(), before + 1, 'the first run logs in')
    await flavorList(sandbox)
    await flavorList(sandbox)
    assert.equal(await logins(), before + 1, 'later runs reuse the token')

    const dir = join(sandbox.configDir, 'tokens')
    assert.equal(statSync(dir).mode & 0o777, 0o700)
    const files = tokenFiles(sandbox)
    assert.equal(files.length, 1)
    for (const f of [...files, join(dir, 'key')]) assert.equal(statSync(f).mode & 0o777, 0o600, f)
  })

  it('a revoked cached token is replaced by a fresh login and the command still succeeds', async () => {
    const sandbox = cliSandbox()
    await flavorList(sandbox)
    const issued = await sandbox.run(['token', 'issue', '-f', 'value', '-c', 'id'], env)
    assert.equal(issued.code, 0, issued.stderr)
    const revoked = await sandbox.run(['token', 'revoke', issued.stdout.trim()], env)
    assert.equal(revoked.code, 0, revoked.stderr)

    const before = await logins()
    await flavorList(sandbox)
    assert.equal(await logins(), before + 1, 'one new login after the refusal')
    await flavorList(sandbox)
    assert.equal(await logins(), before + 1, 'and the new token is kept')
  })

  it('another password does not use the cached token: a wrong one fails as without a cache', async () => {
    const sandbox = cliSandbox()
    await flavorList(sandbox)
    const wrong = await sandbox.run(['flavor', 'list'], { ...env, OS_PASSWORD: 'not-the-password' })
    assert.equal(wrong.code, 1)
    assert.match(wrong.stderr, /401|authenticat/i)
  })

  it('PCCTL_TOKEN_CACHE=off logs in on every run and writes nothing', async () => {
    const sandbox = cliSandbox()
    const before = await logins()
    await flavorList(sandbox, { PCCTL_TOKEN_CACHE: 'off' })
    await flavorList(sandbox, { PCCTL_TOKEN_CACHE: 'off' })
    assert.equal(await logins(), before + 2)
    assert.throws(() => tokenFiles(sandbox), /ENOENT/)
  })
})
