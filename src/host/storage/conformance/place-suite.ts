/**
 * The storage place conformance suite: the guarantees of the storage place seam (src/contracts/host/storage-place.ts),
 * with real bytes, checked on every place production uses — the control plane's LocalPlace (place-local.test.ts)
 * and a storage host's AgentPlace, whose calls a real pcc-agent executes (place-agent.test.ts). Bytes are written
 * and read with qemu-io, on the place's files and through the NBD exports the place serves, with their keys.
 *
 * Each place is told what the volume service would have recorded before its call (a storage host's agent reads
 * some of it back from the store: a volume's source image, an upload's image, the exports it should serve).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { GIB, exportName, type BlockdevSpec, type NbdSource, type VolumeRef } from '../../../contracts/host/volume.js'
import type { StoragePlace, WantedExport } from '../../../contracts/host/storage-place.js'
import { freePort } from '../../../testkit/harness.js'
import { localIo, nbdIo } from '../../../testkit/nbd.js'
import { nodeSize } from '../qemu-img.js'

export interface PlaceUnderTest {
  place: StoragePlace
  /** The block node of a volume or snapshot of the place's file backend (the suite reads and writes it). */
  node(ref: VolumeRef): BlockdevSpec
  images: {
    /** An active image holding the bytes of the image file at `path`; answers its id. */
    add(path: string, format: 'raw' | 'qcow2'): Promise<string>
    /** A queued image that `uploadToImage` of `volumeId` fills (recorded as the volume service does); answers its id. */
    queueUpload(volumeId: string, diskFormat: 'raw' | 'qcow2'): Promise<string>
    /** Writes the bytes an image holds to the file `path`. */
    saveTo(imageId: string, path: string): Promise<void>
  }
  /** What the volume service records before calling the place. */
  record: {
    /** Volume `volumeId` is being created from image `imageId` at this place. */
    creatingFromImage(volumeId: string, sizeGb: number, imageId: string): Promise<void>
    /** The exports this place should serve (all of them: any other export is no longer wanted). */
    exports(wanted: WantedExport[]): Promise<void>
  }
  /**
   * Restarts what runs the place (pcc-server's LocalPlace, a host's pcc-agent) over the same data, leaving its
   * export daemons running; answers the place once it takes calls again.
   */
  restart(): Promise<StoragePlace>
  /** The address the place's exports should be served on. */
  exportAddress: string
  /** Whether `err` is how this place reports a failure of its backend (final, with the backend's message). */
  isBackendFailure(err: unknown): boolean
  /** Stops the place's export daemons and removes whatever the setup made. */
  cleanup(): Promise<void>
}

const MIB = 1024 * 1024
const BACKEND = 'file'

async function ok(io: Promise<{ ok: boolean; output: string }>): Promise<void> {
  const result = await io
  assert.ok(result.ok, result.output)
}

async function gone(io: Promise<{ ok: boolean; output: string }>, what: string): Promise<void> {
  const result = await io
  assert.equal(result.ok, false, `${what}: ${result.output}`)
}

export function storagePlaceConformance(name: string, setup: () => Promise<PlaceUnderTest | string>): void {
  describe(`storage place conformance: ${name}`, () => {
    let under: PlaceUnderTest | undefined
    let skip: string | undefined
    let place: StoragePlace
    let scratch: string

    before(async () => {
      const made = await setup()
      if (typeof made === 'string') {
        skip = made
        return
      }
      under = made
      place = made.place
      scratch = mkdtempSync(join(tmpdir(), 'pcc-place-conf-'))
    })
    after(async () => {
      await under?.cleanup()
      if (scratch) rmSync(scratch, { recursive: true, force: true })
    })

    /** Runs a test, or skips it naming what the machine lacks for this place. */
    const test = (title: string, body: () => Promise<void>): void => {
      it(title, async (t) => (skip ? t.skip(skip) : body()))
    }
    const node = (ref: VolumeRef) => under!.node(ref)
    const size = (ref: VolumeRef) => nodeSize(node(ref))
    const exists = async (ref: VolumeRef) => (await localIo(node(ref), ['read 0 4k'])).ok

    /** The call fails as a backend failure of this place, with a message matching `pattern`. */
    async function failsWith(call: Promise<unknown>, pattern: RegExp): Promise<void> {
      await assert.rejects(call, (err: Error) => {
        assert.ok(under!.isBackendFailure(err), `a backend failure, not ${err.name}: ${err.message}`)
        assert.match(err.message, pattern)
        return true
      })
    }

    /** An image file of 64 MiB (raw, and the same bytes as qcow2) holding 0x7e in its second MiB. */
    function imageFiles(): { raw: string; qcow2: string } {
      const raw = join(scratch, `${randomUUID()}.raw`)
      const qcow2 = join(scratch, `${randomUUID()}.qcow2`)
      execFileSync('qemu-img', ['create', '-f', 'raw', raw, '64M'])
      execFileSync('qemu-io', ['-f', 'raw', raw, '-c', 'write -P 0x7e 1M 1M'])
      execFileSync('qemu-img', ['convert', '-f', 'raw', '-O', 'qcow2', raw, qcow2])
      return { raw, qcow2 }
    }

    test('a blank volume has the size asked and reads as zeros; creating it again keeps its bytes', async () => {
      const id = randomUUID()
      await place.create(BACKEND, id, 1)
      assert.equal(await size({ volumeId: id }), GIB)
      await ok(localIo(node({ volumeId: id }), ['read -P 0 0 1M', `read -P 0 ${GIB - MIB} 1M`]))
      await ok(localIo(node({ volumeId: id }), ['write -P 0x61 0 64k']))
      await place.create(BACKEND, id, 1)
      await ok(localIo(node({ volumeId: id }), ['read -P 0x61 0 64k']))
      assert.equal(await size({ volumeId: id }), GIB)
      await place.delete(BACKEND, id)
    })

    test("a volume created from an image holds the image's bytes (raw and qcow2), and zeros after them", async () => {
      const files = imageFiles()
      for (const format of ['raw', 'qcow2'] as const) {
        const imageId = await under!.images.add(files[format], format)
        const id = randomUUID()
        await under!.record.creatingFromImage(id, 1, imageId)
        await place.createFrom(BACKEND, id, 1, { kind: 'image', imageId, format })
        // A repeated call (the task queue may run it twice) leaves the same volume.
        await place.createFrom(BACKEND, id, 1, { kind: 'image', imageId, format })
        assert.equal(await size({ volumeId: id }), GIB, format)
        await ok(localIo(node({ volumeId: id }), ['read -P 0 0 1M', 'read -P 0x7e 1M 1M', 'read -P 0 2M 62M', `read -P 0 ${GIB - MIB} 1M`]))
        await place.delete(BACKEND, id)
      }
    })

    test('a source larger than the new volume is refused: an image, a volume', async () => {
      const big = join(scratch, 'big.qcow2')
      execFileSync('qemu-img', ['create', '-f', 'qcow2', big, '3G'])
      const imageId = await under!.images.add(big, 'qcow2')
      const id = randomUUID()
      await under!.record.creatingFromImage(id, 1, imageId)
      await failsWith(place.createFrom(BACKEND, id, 1, { kind: 'image', imageId, format: 'qcow2' }), /larger than the volume/)
      assert.equal(await exists({ volumeId: id }), false, 'no volume is left behind')
      const two = randomUUID()
      await place.create(BACKEND, two, 2)
      await failsWith(place.createFrom(BACKEND, randomUUID(), 1, { kind: 'volume', volumeId: two }), /larger than the new volume/)
      await place.delete(BACKEND, two)
    })

    test("a snapshot keeps its moment's bytes; volumes from it and clones hold what they copied", async () => {
      const vol = randomUUID()
      const snap = randomUUID()
      await place.create(BACKEND, vol, 1)
      await ok(localIo(node({ volumeId: vol }), ['write -P 0x41 0 1M', `write -P 0x42 ${512 * MIB} 1M`]))
      await place.createSnapshot(BACKEND, snap, vol)
      await place.createSnapshot(BACKEND, snap, vol)
      await ok(localIo(node({ volumeId: vol }), ['write -P 0x43 0 1M']))
      await ok(localIo(node({ snapshotId: snap, snapshotOf: vol }), ['read -P 0x41 0 1M', `read -P 0x42 ${512 * MIB} 1M`]))

      const fromSnap = randomUUID()
      await place.createFrom(BACKEND, fromSnap, 2, { kind: 'snapshot', snapshotId: snap, volumeId: vol })
      await place.createFrom(BACKEND, fromSnap, 2, { kind: 'snapshot', snapshotId: snap, volumeId: vol })
      assert.equal(await size({ volumeId: fromSnap }), 2 * GIB)
      await ok(localIo(node({ volumeId: fromSnap }), ['read -P 0x41 0 1M', `read -P 0x42 ${512 * MIB} 1M`, `read -P 0 ${GIB} 1M`, `read -P 0 ${2 * GIB - MIB} 1M`]))

      const clone = randomUUID()
      await place.createFrom(BACKEND, clone, 1, { kind: 'volume', volumeId: vol })
      await place.createFrom(BACKEND, clone, 1, { kind: 'volume', volumeId: vol })
      await ok(localIo(node({ volumeId: clone }), ['read -P 0x43 0 1M', `read -P 0x42 ${512 * MIB} 1M`]))

      await place.deleteSnapshot(BACKEND, snap, vol)
      await place.deleteSnapshot(BACKEND, snap, vol)
      assert.equal(await exists({ snapshotId: snap, snapshotOf: vol }), false)
      await ok(localIo(node({ volumeId: fromSnap }), ['read -P 0x41 0 1M']))
      for (const id of [fromSnap, clone, vol]) await place.delete(BACKEND, id)
    })

    test('a volume from a snapshot or volume that does not exist is refused', async () => {
      const snap = randomUUID()
      await failsWith(place.createFrom(BACKEND, randomUUID(), 1, { kind: 'snapshot', snapshotId: snap, volumeId: randomUUID() }), new RegExp(`snapshot ${snap} does not exist`))
      const vol = randomUUID()
      await failsWith(place.createFrom(BACKEND, randomUUID(), 1, { kind: 'volume', volumeId: vol }), new RegExp(`volume ${vol} does not exist`))
      await failsWith(place.createSnapshot(BACKEND, randomUUID(), vol), new RegExp(`volume ${vol} does not exist`))
    })

    test('extend grows the volume and keeps its bytes; again changes nothing; it never shrinks', async () => {
      const id = randomUUID()
      await place.create(BACKEND, id, 1)
      await ok(localIo(node({ volumeId: id }), ['write -P 0x55 4096 8k', `write -P 0x56 ${GIB - MIB} 1M`]))
      await place.extend(BACKEND, id, 2)
      await place.extend(BACKEND, id, 2)
      assert.equal(await size({ volumeId: id }), 2 * GIB)
      await ok(localIo(node({ volumeId: id }), ['read -P 0x55 4096 8k', `read -P 0x56 ${GIB - MIB} 1M`, `read -P 0 ${GIB} 1M`, `read -P 0 ${2 * GIB - MIB} 1M`]))
      await failsWith(place.extend(BACKEND, id, 1), /never shrink/)
      await failsWith(place.extend(BACKEND, randomUUID(), 2), /does not exist/)
      await place.delete(BACKEND, id)
    })

    test('delete removes the volume; deleting what is gone succeeds', async () => {
      const id = randomUUID()
      await place.create(BACKEND, id, 1)
      assert.equal(await exists({ volumeId: id }), true)
      await place.delete(BACKEND, id)
      assert.equal(await exists({ volumeId: id }), false)
      await place.delete(BACKEND, id)
      await place.delete(BACKEND, randomUUID())
      await place.deleteSnapshot(BACKEND, randomUUID(), randomUUID())
    })

    test('a backend the place does not have is refused, naming it', async () => {
      await failsWith(place.create('no-such-backend', randomUUID(), 1), /no-such-backend backend is not available/)
      await failsWith(place.delete('no-such-backend', randomUUID()), /no-such-backend backend is not available/)
    })

    test("upload to an image makes an image holding the volume's bytes (raw and qcow2); again changes nothing", async () => {
      const id = randomUUID()
      await place.create(BACKEND, id, 1)
      await ok(localIo(node({ volumeId: id }), ['write -P 0x33 0 1M', `write -P 0x34 ${GIB - MIB} 1M`]))
      for (const format of ['raw', 'qcow2'] as const) {
        const imageId = await under!.images.queueUpload(id, format)
        await place.uploadToImage(BACKEND, id, imageId, format)
        await place.uploadToImage(BACKEND, id, imageId, format)
        const saved = join(scratch, `${imageId}.${format}`)
        await under!.images.saveTo(imageId, saved)
        const info = JSON.parse(execFileSync('qemu-img', ['info', '--output=json', '-f', format, saved], { encoding: 'utf8' })) as { 'virtual-size': number; format: string }
        assert.deepEqual([info.format, info['virtual-size']], [format, GIB])
        execFileSync('qemu-io', ['-r', '-f', format, saved, '-c', 'read -P 0x33 0 1M', '-c', 'read -P 0 1M 1M', '-c', `read -P 0x34 ${GIB - MIB} 1M`])
        rmSync(saved)
      }
      await place.delete(BACKEND, id)
    })

    describe('exports over NBD (qemu-storage-daemon, TLS-PSK)', () => {
      const key = () => ({ identity: `att-${randomUUID()}`, key: randomBytes(32).toString('hex') })
      let a: WantedExport
      let b: WantedExport
      let address: string
      const source = (w: WantedExport, k = w.keys[0]): NbdSource => ({ host: address, port: w.port, export: exportName(w.volumeId, w.generations.at(-1)!), pskIdentity: k.identity, pskKey: k.key })

      before(async () => {
        if (skip) return
        a = { volumeId: randomUUID(), backend: BACKEND, port: await freePort(), generations: [0], keys: [key()] }
        b = { volumeId: randomUUID(), backend: BACKEND, port: await freePort(), generations: [0], keys: [key()] }
        for (const [w, byte] of [[a, 0x5a], [b, 0x5b]] as const) {
          await place.create(BACKEND, w.volumeId, 1)
          await ok(localIo(node({ volumeId: w.volumeId }), [`write -P ${byte} 0 1M`]))
        }
      })
      after(async () => {
        if (skip) return
        await under!.record.exports([])
        await place.syncExports()
        await place.delete(BACKEND, a.volumeId)
        await place.delete(BACKEND, b.volumeId)
      })

      test('serves exactly the wanted exports at the address it answers, each to its own key only', async () => {
        await under!.record.exports([a, b])
        address = await place.syncExports()
        assert.equal(address, under!.exportAddress)
        assert.equal(await place.syncExports(), address, 'a repeated sync answers the same')
        await ok(nbdIo(source(a), ['read -P 0x5a 0 1M', 'write -P 0x5c 1M 1M', 'flush']))
        await ok(nbdIo(source(b), ['read -P 0x5b 0 1M']))
        await gone(nbdIo(source(a), ['read 0 4k'], { key: randomBytes(32).toString('hex') }), 'a wrong key')
        await gone(nbdIo(source(a, b.keys[0]), ['read 0 4k']), "another volume's key")
        await gone(nbdIo(source(a), ['read 0 4k'], { tls: false }), 'no TLS')
      })

      test('a restarted place adopts the exports its daemons serve and goes on working', async () => {
        place = await under!.restart()
        await ok(nbdIo(source(a), ['read -P 0x5c 1M 1M']))
        assert.equal(await place.syncExports(), address)
        await ok(nbdIo(source(a), ['read -P 0x5a 0 1M']))
        await ok(nbdIo(source(b), ['read -P 0x5b 0 1M']))
      })

      test("a snapshot of an exported volume holds its moment's bytes", async () => {
        await ok(nbdIo(source(a), ['write -P 0x71 8M 1M', 'flush']))
        const snap = randomUUID()
        await place.createSnapshot(BACKEND, snap, a.volumeId)
        await ok(nbdIo(source(a), ['write -P 0x72 8M 1M', 'flush']))
        await ok(localIo(node({ snapshotId: snap, snapshotOf: a.volumeId }), ['read -P 0x71 8M 1M', 'read -P 0x5c 1M 1M', 'read -P 0x5a 0 1M']))
        await place.deleteSnapshot(BACKEND, snap, a.volumeId)
      })

      test("a snapshot's export serves the snapshot's bytes, read-only, beside its volume's", async () => {
        await ok(nbdIo(source(a), ['write -P 0x73 12M 1M', 'flush']))
        const snap = randomUUID()
        await place.createSnapshot(BACKEND, snap, a.volumeId)
        await ok(nbdIo(source(a), ['write -P 0x74 12M 1M', 'flush']))
        const s: WantedExport = { volumeId: snap, snapshotOf: a.volumeId, backend: BACKEND, port: await freePort(), generations: [0], keys: [key()] }
        await under!.record.exports([a, b, s])
        await place.syncExports()
        await ok(nbdIo(source(s), ['read -P 0x73 12M 1M', 'read -P 0x5a 0 1M'], { readOnly: true }))
        await gone(nbdIo(source(s), ['write -P 0x75 12M 1M']), 'a client opening the snapshot for writing')
        await ok(nbdIo(source(a), ['read -P 0x74 12M 1M']))
        await gone(nbdIo(source(s, a.keys[0]), ['read 0 4k'], { readOnly: true }), "the volume's key on the snapshot's export")
        await under!.record.exports([a, b])
        await place.syncExports()
        await gone(nbdIo(source(s), ['read 0 4k'], { readOnly: true }), 'the snapshot no longer exported')
        await ok(localIo(node({ snapshotId: snap, snapshotOf: a.volumeId }), ['read -P 0x73 12M 1M']))
        await place.deleteSnapshot(BACKEND, snap, a.volumeId)
      })

      test('an export no longer wanted stops; a key no longer wanted is refused; the others go on', async () => {
        const second = key()
        a = { ...a, keys: [a.keys[0], second] }
        await under!.record.exports([a])
        assert.equal(await place.syncExports(), address)
        await gone(nbdIo(source(b), ['read 0 4k']), 'the export no longer wanted')
        await ok(nbdIo(source(a, second), ['read -P 0x5c 1M 1M']))
        const first = a.keys[0]
        a = { ...a, keys: [second] }
        await under!.record.exports([a])
        await place.syncExports()
        await gone(nbdIo(source(a, first), ['read 0 4k']), 'the key no longer wanted')
        await ok(nbdIo(source(a), ['read -P 0x72 8M 1M']))
        await under!.record.exports([])
        await place.syncExports()
        await gone(nbdIo(source(a), ['read 0 4k']), 'no export wanted')
        // What a client wrote through the export is in the volume.
        await ok(localIo(node({ volumeId: a.volumeId }), ['read -P 0x5a 0 1M', 'read -P 0x5c 1M 1M', 'read -P 0x72 8M 1M']))
      })
    })
  })
}
