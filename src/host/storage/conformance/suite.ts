/**
 * The volume backend conformance suite: the guarantees of src/host/storage/backend.ts, with real
 * bytes, checked on every backend (file-backend.test.ts, lvm-backend.test.ts). Bytes are written and read with
 * QEMU's own qemu-io, locally through the backend's block node and remotely through its NBD export from a client
 * in another network namespace, with and without the attachment's key.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type VolumeBackend } from '../backend.js'
import { GIB, type NbdSource } from '../../../contracts/host/volume.js'
import { daemonPid, ExportManager } from '../exports/export-manager.js'
import { daemonFiles, type ExportSpec } from '../exports/qsd-command.js'
import { exportName } from '../../../contracts/host/volume.js'
import { convertToFile } from '../qemu-img.js'
import { createTestNetwork, type TestNetwork } from '../../../testkit/netns.js'
import { localIo, nbdIo, nbdSize } from '../../../testkit/nbd.js'
import { freePort } from '../../../testkit/harness.js'

export interface BackendUnderTest {
  backend: VolumeBackend
  /** Removes whatever the setup made (volume group, loop device, directory). */
  cleanup(): Promise<void>
}

const MIB = 1024 * 1024

async function ok(io: Promise<{ ok: boolean; output: string }>): Promise<string> {
  const result = await io
  assert.ok(result.ok, result.output)
  return result.output
}

export function volumeBackendConformance(name: string, setup: () => Promise<BackendUnderTest | string>): void {
  describe(`volume backend conformance: ${name}`, () => {
    let under: BackendUnderTest | undefined
    let skip: string | undefined
    let backend: VolumeBackend
    let scratch: string
    let net: TestNetwork
    let exports: ExportManager

    before(async () => {
      const made = await setup()
      if (typeof made === 'string') {
        skip = made
        return
      }
      under = made
      backend = made.backend
      scratch = mkdtempSync(join(tmpdir(), 'pcc-vol-conf-'))
      net = createTestNetwork(1)
      exports = new ExportManager(join(scratch, 'run'))
    })
    after(async () => {
      await exports?.stopAll()
      net?.close()
      await under?.cleanup()
      if (scratch) rmSync(scratch, { recursive: true, force: true })
    })

    /** Runs a test, or skips it naming what the machine lacks for this backend. */
    const test = (title: string, body: () => Promise<void>): void => {
      it(title, async (t) => (skip ? t.skip(skip) : body()))
    }

    test('passes its own check and reports capacity', async () => {
      await backend.check()
      const cap = await backend.capacity()
      assert.ok(cap.totalGb >= 1 && cap.freeGb >= 0 && cap.freeGb <= cap.totalGb, JSON.stringify(cap))
    })

    test('creates a blank volume of the size asked that reads as zeros; creating again changes nothing', async () => {
      const id = randomUUID()
      await backend.create(id, 1)
      assert.equal(await backend.size({ volumeId: id }), GIB)
      await ok(localIo(backend.blockdev({ volumeId: id }), ['read -P 0 0 1M', `read -P 0 ${GIB - MIB} 1M`]))
      await ok(localIo(backend.blockdev({ volumeId: id }), ['write -P 0x61 0 64k']))
      await backend.create(id, 1)
      await ok(localIo(backend.blockdev({ volumeId: id }), ['read -P 0x61 0 64k']))
      await backend.delete(id)
      assert.equal(await backend.size({ volumeId: id }), undefined)
      await backend.delete(id)
    })

    test('a snapshot keeps the bytes of its moment; volumes from it and clones hold what they copied', async () => {
      const vol = randomUUID()
      const snap = randomUUID()
      await backend.create(vol, 1)
      await ok(localIo(backend.blockdev({ volumeId: vol }), ['write -P 0x41 0 1M', `write -P 0x42 ${512 * MIB} 1M`]))
      await backend.createSnapshot(snap, vol)
      await backend.createSnapshot(snap, vol)
      await ok(localIo(backend.blockdev({ volumeId: vol }), ['write -P 0x43 0 1M']))
      await ok(localIo(backend.blockdev({ snapshotId: snap, snapshotOf: vol }), ['read -P 0x41 0 1M', `read -P 0x42 ${512 * MIB} 1M`]))
      const fromSnap = randomUUID()
      await backend.createFrom(fromSnap, 2, { kind: 'snapshot', snapshotId: snap, volumeId: vol })
      assert.equal(await backend.size({ volumeId: fromSnap }), 2 * GIB)
      await ok(localIo(backend.blockdev({ volumeId: fromSnap }), ['read -P 0x41 0 1M', `read -P 0x42 ${512 * MIB} 1M`, `read -P 0 ${GIB} 1M`, `read -P 0 ${2 * GIB - MIB} 1M`]))
      const clone = randomUUID()
      await backend.createFrom(clone, 1, { kind: 'volume', volumeId: vol })
      await ok(localIo(backend.blockdev({ volumeId: clone }), ['read -P 0x43 0 1M', `read -P 0x42 ${512 * MIB} 1M`]))
      await assert.rejects(backend.createFrom(randomUUID(), 1, { kind: 'volume', volumeId: fromSnap }), /larger/)
      for (const id of [fromSnap, clone, vol]) await backend.delete(id)
      await backend.deleteSnapshot(snap, vol)
      await backend.deleteSnapshot(snap, vol)
      assert.equal(await backend.size({ snapshotId: snap, snapshotOf: vol }), undefined)
    })

    test('extends a volume and keeps its bytes; never shrinks it', async () => {
      const id = randomUUID()
      await backend.create(id, 1)
      await ok(localIo(backend.blockdev({ volumeId: id }), ['write -P 0x55 4096 8k']))
      await backend.extend(id, 2)
      await backend.extend(id, 2)
      assert.equal(await backend.size({ volumeId: id }), 2 * GIB)
      await ok(localIo(backend.blockdev({ volumeId: id }), ['read -P 0x55 4096 8k', `read -P 0 ${GIB} 1M`]))
      await assert.rejects(backend.extend(id, 1), /never shrink/)
      await backend.delete(id)
    })

    test('writes an image into a volume (raw and qcow2), refuses one that is larger or refers to other files', async () => {
      const raw = join(scratch, 'image.raw')
      const qcow = join(scratch, 'image.qcow2')
      execFileSync('qemu-img', ['create', '-f', 'raw', raw, '64M'])
      execFileSync('qemu-io', ['-f', 'raw', raw, '-c', 'write -P 0x7e 1M 1M'])
      execFileSync('qemu-img', ['convert', '-f', 'raw', '-O', 'qcow2', raw, qcow])
      for (const [path, format] of [[raw, 'raw'], [qcow, 'qcow2']] as const) {
        const id = randomUUID()
        await backend.createFrom(id, 1, { kind: 'image', path, format })
        assert.equal(await backend.size({ volumeId: id }), GIB)
        await ok(localIo(backend.blockdev({ volumeId: id }), ['read -P 0 0 1M', 'read -P 0x7e 1M 1M', 'read -P 0 2M 62M']))
        await backend.delete(id)
      }
      const big = join(scratch, 'big.qcow2')
      execFileSync('qemu-img', ['create', '-f', 'qcow2', big, '3G'])
      await assert.rejects(backend.createFrom(randomUUID(), 1, { kind: 'image', path: big, format: 'qcow2' }), /larger than the volume/)
      const overlay = join(scratch, 'overlay.qcow2')
      execFileSync('qemu-img', ['create', '-f', 'qcow2', '-b', qcow, '-F', 'qcow2', overlay])
      await assert.rejects(backend.createFrom(randomUUID(), 1, { kind: 'image', path: overlay, format: 'qcow2' }), /refers to other files/)
    })

    test('copies a volume out to a raw file (upload to image) byte for byte', async () => {
      const id = randomUUID()
      await backend.create(id, 1)
      await ok(localIo(backend.blockdev({ volumeId: id }), ['write -P 0x33 0 1M', `write -P 0x34 ${GIB - MIB} 1M`]))
      const out = join(scratch, `${id}.raw`)
      await convertToFile(backend.blockdev({ volumeId: id }), out)
      const bytes = readFileSync(out)
      assert.equal(bytes.length, GIB)
      assert.ok(bytes.subarray(0, MIB).every((b) => b === 0x33) && bytes.subarray(GIB - MIB).every((b) => b === 0x34) && bytes.subarray(MIB, 2 * MIB).every((b) => b === 0))
      rmSync(out)
      await backend.delete(id)
    })

    describe('exported over NBD (qemu-storage-daemon, TLS-PSK)', () => {
      let volumeId: string
      let other: string
      let spec: ExportSpec
      let otherSpec: ExportSpec
      const key = () => randomBytes(32).toString('hex')
      const source = (s: ExportSpec, generation = s.generations.at(-1)!, k = s.keys[0]): NbdSource => ({ host: s.address, port: s.port, export: exportName(s.volumeId, generation), pskIdentity: k.identity, pskKey: k.key })
      const client = () => ({ exec: net.hosts[0].exec })

      before(async () => {
        if (skip) return
        volumeId = randomUUID()
        other = randomUUID()
        await backend.create(volumeId, 1)
        await backend.create(other, 1)
        spec = { volumeId, blockdev: backend.blockdev({ volumeId }), address: net.gateway, port: await freePort(), generations: [0], keys: [{ identity: `att-${randomUUID()}`, key: key() }] }
        otherSpec = { volumeId: other, blockdev: backend.blockdev({ volumeId: other }), address: net.gateway, port: await freePort(), generations: [0], keys: [{ identity: `att-${randomUUID()}`, key: key() }] }
        await exports.converge([spec, otherSpec])
      })
      after(async () => {
        if (skip) return
        await exports.stopAll()
        await backend.delete(volumeId)
        await backend.delete(other)
      })

      test('a client on another host reads and writes with its key, and the bytes are the volume\'s', async () => {
        await ok(nbdIo(source(spec), ['write -P 0x5c 1M 1M', 'read -P 0x5c 1M 1M', 'flush'], client()))
        await ok(localIo(backend.blockdev({ volumeId }), ['read -P 0x5c 1M 1M']))
        assert.equal(await nbdSize(source(spec), client()), GIB)
      })

      test('refuses a wrong key, no TLS, and the key of another volume\'s attachment', async () => {
        const wrong = await nbdIo(source(spec), ['read 0 4k'], { ...client(), key: key() })
        assert.equal(wrong.ok, false, wrong.output)
        const plain = await nbdIo(source(spec), ['read 0 4k'], { ...client(), tls: false })
        assert.equal(plain.ok, false, plain.output)
        // The other volume's valid identity and key, sent to this volume's daemon.
        const crossed = await nbdIo({ ...source(spec), pskIdentity: otherSpec.keys[0].identity, pskKey: otherSpec.keys[0].key }, ['read 0 4k'], client())
        assert.equal(crossed.ok, false, crossed.output)
      })

      test('adds and removes an attachment\'s key without restarting the daemon', async () => {
        const pid = daemonPid(daemonFiles(join(exports.runDir, volumeId)).pid)
        const second = { identity: `att-${randomUUID()}`, key: key() }
        spec = { ...spec, keys: [...spec.keys, second] }
        await exports.converge([spec, otherSpec])
        await ok(nbdIo(source(spec, 0, second), ['read -P 0x5c 1M 1M'], client()))
        const first = spec.keys[0]
        spec = { ...spec, keys: [second] }
        await exports.converge([spec, otherSpec])
        assert.equal((await nbdIo(source(spec, 0, first), ['read 0 4k'], client())).ok, false)
        assert.equal(daemonPid(daemonFiles(join(exports.runDir, volumeId)).pid), pid)
      })

      test('an extended volume gets a new generation at the new size while the old one still serves', async () => {
        await backend.extend(volumeId, 2)
        spec = { ...spec, generations: [0, 1] }
        await exports.converge([spec, otherSpec])
        assert.equal(await nbdSize(source(spec, 1), client()), 2 * GIB)
        assert.equal(await nbdSize(source(spec, 0), client()), GIB)
        await ok(nbdIo(source(spec, 1), [`write -P 0x66 ${GIB + MIB} 1M`, 'read -P 0x5c 1M 1M'], client()))
        spec = { ...spec, generations: [1] }
        await exports.converge([spec, otherSpec])
        assert.equal((await nbdIo(source(spec, 0), ['read 0 4k'], client())).ok, false, 'the old generation is gone')
        await ok(nbdIo(source(spec, 1), [`read -P 0x66 ${GIB + MIB} 1M`], client()))
      })

      test('a snapshot of an exported volume holds the bytes of its moment (taken by the daemon where the backend needs it)', async () => {
        await ok(nbdIo(source(spec), ['write -P 0x71 8M 1M', 'flush'], client()))
        const snap = randomUUID()
        let throughDaemon = false
        await backend.createSnapshot(snap, volumeId, async (target) => (throughDaemon = await exports.backup(volumeId, target)))
        await ok(nbdIo(source(spec), ['write -P 0x72 8M 1M', 'flush'], client()))
        await ok(localIo(backend.blockdev({ snapshotId: snap, snapshotOf: volumeId }), ['read -P 0x71 8M 1M', 'read -P 0x5c 1M 1M']))
        if (backend.name === 'file') assert.ok(throughDaemon, 'a file volume in use is copied by its daemon, not by cp')
        // A clone of the attached volume, larger than it: its moment's bytes, zeros after.
        const clone = randomUUID()
        await backend.createFrom(clone, 3, { kind: 'volume', volumeId }, (target) => exports.backup(volumeId, target))
        await ok(localIo(backend.blockdev({ volumeId: clone }), ['read -P 0x72 8M 1M', `read -P 0 ${2 * GIB} 1M`]))
        assert.equal(await backend.size({ volumeId: clone }), 3 * GIB)
        await backend.delete(clone)
        assert.equal(await exports.backup(randomUUID(), backend.blockdev({ snapshotId: snap, snapshotOf: volumeId })), false, 'no daemon, no copy')
        await backend.deleteSnapshot(snap, volumeId)
      })

      test('a daemon that died is started again; one adopted by a new manager is left running', async () => {
        const files = daemonFiles(join(exports.runDir, volumeId))
        const pid = daemonPid(files.pid)!
        process.kill(pid, 'SIGKILL')
        await waitUntil(() => daemonPid(files.pid) === undefined)
        await exports.converge([spec, otherSpec])
        const restarted = daemonPid(files.pid)
        assert.ok(restarted && restarted !== pid)
        await ok(nbdIo(source(spec, 1), ['read -P 0x5c 1M 1M'], client()))
        // A restarted pcc-server or pcc-agent: a new manager over the same directory adopts the daemons.
        const again = new ExportManager(exports.runDir)
        await again.converge([spec, otherSpec])
        assert.equal(daemonPid(files.pid), restarted)
      })

      test('a volume no longer exported has no daemon and no files left', async () => {
        const dir = join(exports.runDir, other)
        const pid = daemonPid(daemonFiles(dir).pid)!
        await exports.converge([spec])
        assert.equal(existsSync(dir), false)
        assert.throws(() => process.kill(pid, 0))
        assert.deepEqual(await exports.running(), [volumeId])
      })

      test('a new volume copies another place\'s export over NBD (retype, clones across backends)', async () => {
        const copy = randomUUID()
        await backend.createFrom(copy, 2, { kind: 'nbd', source: source(spec, 1) })
        await ok(localIo(backend.blockdev({ volumeId: copy }), ['read -P 0x5c 1M 1M', `read -P 0x66 ${GIB + MIB} 1M`]))
        await assert.rejects(backend.createFrom(randomUUID(), 1, { kind: 'nbd', source: source(spec, 1) }), /larger/)
        await backend.delete(copy)
      })
    })
  })
}

async function waitUntil(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 20))
  }
}
