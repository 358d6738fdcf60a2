import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'

describe('pcc-agent download', () => {
  let server: TestServer
  let dir: string
  before(async () => {
    server = await startTestServer()
    dir = mkdtempSync(join(tmpdir(), 'pcc-agent-dl-'))
  })
  after(async () => {
    await server.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('serves the single-file agent with its published SHA-256, and the bundle runs with only Node', async () => {
    const res = await fetch(`${server.url}/downloads/pcc-agent`)
    assert.equal(res.status, 200, 'run npm run build: the release bundle is missing')
    const bundle = Buffer.from(await res.arrayBuffer())
    const published = await (await fetch(`${server.url}/downloads/pcc-agent.sha256`)).text()
    assert.equal(published, `${createHash('sha256').update(bundle).digest('hex')}  pcc-agent.mjs\n`)
    const file = join(dir, 'pcc-agent.mjs')
    writeFileSync(file, bundle)
    const version = spawnSync(process.execPath, [file, '--version'], { cwd: dir, encoding: 'utf8' })
    assert.equal(version.status, 0, version.stderr)
    assert.match(version.stdout, /^pcc-agent \d+\.\d+\.\d+/)
    // Without an agent.json it says what is missing and exits non-zero.
    const missing = spawnSync(process.execPath, [file, '--root', dir], { cwd: dir, encoding: 'utf8' })
    assert.equal(missing.status, 2)
    assert.match(missing.stderr, /agent\.json/)
  })
})
