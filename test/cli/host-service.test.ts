/**
 * The scratch-root service manager pcctl uses in place of systemd (src/cli/host/host.ts): a started service runs
 * as a detached process with a pid file, and stopService returns only once that process has ended, even when the
 * service deletes its own pid file as it begins to stop (as pcc-agent does).
 */
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Host } from '../../src/cli/host/host.js'
import { until } from '../../src/testkit/compute-api.js'
import { alive } from '../../src/testkit/host-root.js'

/** A service that on SIGTERM deletes its pid file at once but exits only after `exitMs`; it writes `ready` once it listens. */
const slowToStop = (pidFile: string, ready: string, exitMs: number) =>
  `const fs = require('fs'); process.on('SIGTERM', () => { fs.rmSync(${JSON.stringify(pidFile)}, { force: true }); setTimeout(() => process.exit(0), ${exitMs}) }); fs.writeFileSync(${JSON.stringify(ready)}, ''); setInterval(() => {}, 1000)`

describe('scratch-root services', () => {
  const root = mkdtempSync(join(tmpdir(), 'pcc-host-service-'))
  const host = new Host(root)
  const pidFile = join(root, 'run/slow.pid')
  const ready = join(root, 'ready')
  after(() => rmSync(root, { recursive: true, force: true }))

  it('stopService waits for the process itself, not for its pid file to vanish', async () => {
    host.startService('slow', [process.execPath, '-e', slowToStop(pidFile, ready, 400)])
    const pid = Number(readFileSync(pidFile, 'utf8'))
    await until('the service to be ready', 10_000, async () => existsSync(ready) || undefined)
    assert.equal(host.serviceRunning('slow'), true)
    await host.stopService('slow')
    assert.equal(alive(pid), false, 'the process has ended when stopService returns')
    assert.equal(existsSync(pidFile), false)
    assert.equal(host.serviceRunning('slow'), false)
  })
})
