/**
 * The export manager's failures (the conformance suite covers what it serves): a qemu-storage-daemon that does
 * not come up within its start timeout leaves nothing behind — no process holding the export's port, so the
 * next start can take it.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ExportManager } from '../../../src/host/storage/exports/export-manager.js'
import { freePort } from '../../../src/testkit/harness.js'

const missing = spawnSync('qemu-storage-daemon', ['--version']).error ? 'qemu-storage-daemon is not installed (Debian package qemu-system-x86)' : undefined

/** Daemons whose command line names a file under `dir`, by pid. */
function daemonsUnder(dir: string): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
        return argv[0]?.endsWith('qemu-storage-daemon') && argv.some((a) => a.includes(dir))
      } catch {
        return false
      }
    })
    .map(Number)
}

describe('the export manager when a daemon does not start', { skip: missing }, () => {
  let dir: string
  let silent: Server

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pcc-exports-'))
    // An NBD server that accepts and never answers: the daemon opening a volume there blocks, as on a hung disk.
    silent = createServer(() => {})
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  })
  after(() => {
    for (const pid of daemonsUnder(dir)) process.kill(pid, 'SIGKILL')
    silent.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('kills a daemon that has not served its export within the start timeout, freeing the port', async () => {
    const exports = new ExportManager(dir, 2000)
    const port = await freePort()
    const hung = { driver: 'raw', file: { driver: 'nbd', server: { type: 'inet', host: '127.0.0.1', port: String((silent.address() as { port: number }).port) }, export: 'x' } }
    const spec = { volumeId: randomUUID(), blockdev: hung, address: '127.0.0.1', port, generations: [0], keys: [{ identity: `att-${randomUUID()}`, key: randomBytes(32).toString('hex') }] }
    await assert.rejects(exports.converge([spec]), /did not start: no pid file in time/)
    assert.deepEqual(daemonsUnder(dir), [], 'no daemon left starting')
    // The port is free again: the next attempt fails the same way, not on a port held by the first daemon.
    await assert.rejects(exports.converge([spec]), /did not start: no pid file in time/)
    assert.deepEqual(daemonsUnder(dir), [])
  })
})
