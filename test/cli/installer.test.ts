import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'

function sh(command: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', ['-c', command], { env: { PATH: process.env.PATH!, HOME: tmpdir(), ...env }, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

describe('install.sh', () => {
  let server: TestServer
  let tampered: Server
  let tamperedUrl: string
  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true })
    const release = await fetch(`${server.url}/downloads/pcctl`).then((r) => r.text())
    const checksum = await fetch(`${server.url}/downloads/pcctl.sha256`).then((r) => r.text())
    // A mirror that serves altered bytes under the genuine checksum.
    tampered = createServer((request, response) => {
      if (request.url === '/downloads/pcctl') response.end(release.replace('pcctl', 'pwned'))
      else if (request.url === '/downloads/pcctl.sha256') response.end(checksum)
      else response.writeHead(404).end()
    })
    await new Promise<void>((resolve) => tampered.listen(0, '127.0.0.1', resolve))
    tamperedUrl = `http://127.0.0.1:${(tampered.address() as AddressInfo).port}`
  })
  after(async () => {
    tampered.close()
    await server.close()
    for (const prefix of prefixes) rmSync(prefix, { recursive: true, force: true })
  })
  /** The install prefixes the tests made, removed at the end. */
  const prefixes: string[] = []
  const newPrefix = () => {
    const prefix = mkdtempSync(join(tmpdir(), 'pcctl-prefix-'))
    prefixes.push(prefix)
    return prefix
  }

  it('serves the installer with the server URL filled in, and it installs a working pcctl', async () => {
    const prefix = newPrefix()
    const result = await sh(`curl -fsSL ${server.url}/downloads/install.sh | bash`, { PCCTL_PREFIX: prefix })
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /Verifying the SHA-256 checksum/)
    assert.match(result.stdout, /Installed pcctl 0\.1\.0/)
    const version = await sh(`${prefix}/bin/pcctl --version`, {})
    assert.equal(version.stdout.trim(), 'pcctl 0.1.0')
  })

  it('aborts on a checksum mismatch and leaves the installed version in place', async () => {
    const prefix = newPrefix()
    const installer = readFileSync('install.sh', 'utf8')
    const good = await sh(`printf '%s' "$SCRIPT" | bash`, { PCCTL_PREFIX: prefix, PCC_URL: server.url, SCRIPT: installer })
    assert.equal(good.code, 0, good.stderr)
    const before = readlinkSync(join(prefix, 'bin', 'pcctl'))

    const bad = await sh(`printf '%s' "$SCRIPT" | bash`, { PCCTL_PREFIX: prefix, PCC_URL: tamperedUrl, SCRIPT: installer })
    assert.notEqual(bad.code, 0)
    assert.match(bad.stderr, /checksum mismatch/)
    assert.equal(readlinkSync(join(prefix, 'bin', 'pcctl')), before, 'the link still points at the old release')
    const version = await sh(`${prefix}/bin/pcctl --version`, {})
    assert.equal(version.stdout.trim(), 'pcctl 0.1.0', 'the old version still runs')
  })

  it('refuses to run without a control-plane URL', async () => {
    const result = await sh(`bash install.sh`, { PCCTL_PREFIX: newPrefix() })
    assert.notEqual(result.code, 0)
    assert.match(result.stderr, /set PCC_URL/)
  })
})
