/**
 * Rough answers of `pcctl` compute commands (issue 32, item 7), run as users run it: the release bundle in a child
 * process against a real server. `OS_COMPUTE_API_VERSION=2.latest` (which `openstack` accepts) is negotiated to
 * the server's newest microversion instead of being sent verbatim (400 "API Version String 2.latest is of invalid
 * format"), and `server delete --wait` of a server in ERROR exits 0 when the delete succeeds.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { MAX_VERSION } from '../../src/contracts/compute/versions.js'
import { defaultImageName } from '../../src/server/image/default-image.js'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminEnv } from '../../src/testkit/openstack.js'

type Row = Record<string, unknown>
const bundle = fileURLToPath(new URL('../../release/pcctl.mjs', import.meta.url))

describe('pcctl compute answers', { timeout: 300_000 }, () => {
  let server: TestServer
  let env: Record<string, string>
  let token: string
  const home = mkdtempSync(join(tmpdir(), 'pcctl-answers-'))

  /** The release bundle in a child process (the server answering it runs in this one). */
  const pcctl = (args: string[], extra: Record<string, string> = {}) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [bundle, ...args], { env: { PATH: process.env.PATH, HOME: home, ...env, ...extra }, encoding: 'utf8' }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      )
    })

  async function api<T = Row>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'x-auth-token': token, 'openstack-api-version': 'compute 2.96', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T }
  }

  async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const value = await probe()
      if (value !== undefined) return value
      if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  async function activeServer(name: string): Promise<string> {
    const r = await pcctl(['server', 'create', '--image', defaultImageName(), '--flavor', 'm1.tiny', '--nic', 'none', '--wait', name, '-f', 'json'])
    assert.equal(r.code, 0, r.stderr)
    return String((JSON.parse(r.stdout) as Row).id)
  }

  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '30' } })
    env = adminEnv(server)
    token = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
  })
  after(async () => {
    await server.close()
    rmSync(home, { recursive: true, force: true })
  })

  it('OS_COMPUTE_API_VERSION=2.latest (and latest) negotiate the newest microversion both sides speak', async () => {
    const id = await activeServer('latest-1')
    for (const version of ['2.latest', 'latest', '2.LATEST']) {
      const list = await pcctl(['server', 'list', '-f', 'json'], { OS_COMPUTE_API_VERSION: version })
      assert.equal(list.code, 0, `${version}: ${list.stderr}`)
      assert.ok((JSON.parse(list.stdout) as Row[]).some((s) => s.ID === id))
      const shown = await pcctl(['server', 'show', id, '-f', 'json'], { OS_COMPUTE_API_VERSION: version })
      assert.equal(shown.code, 0, `${version}: ${shown.stderr}`)
      // A field of the newest microversion (2.96) is there: the request asked for it.
      assert.equal(MAX_VERSION, '2.96')
      assert.ok('pinned_availability_zone' in (JSON.parse(shown.stdout) as Row), shown.stdout)
    }
    // A set version is still sent as it is.
    const old = await pcctl(['server', 'show', id, '-f', 'json'], { OS_COMPUTE_API_VERSION: '2.1' })
    assert.equal(old.code, 0, old.stderr)
    assert.ok(!('pinned_availability_zone' in (JSON.parse(old.stdout) as Row)))
  })

  it('server delete --wait of a server in ERROR exits 0 once the server is gone', async () => {
    const id = await activeServer('broken-1')
    assert.equal((await api('POST', `/compute/v2.1/servers/${id}/action`, { 'os-resetState': { state: 'error' } })).status, 202)
    assert.equal((await api<{ server: Row }>('GET', `/compute/v2.1/servers/${id}`)).body.server.status, 'ERROR')
    const r = await pcctl(['server', 'delete', '--wait', id])
    assert.equal(r.code, 0, `exit ${r.code}: ${r.stderr}`)
    assert.doesNotMatch(r.stderr, /Error deleting server/)
    await until(async () => ((await api('GET', `/compute/v2.1/servers/${id}`)).status === 404 ? true : undefined), 'the server gone')
  })
})
