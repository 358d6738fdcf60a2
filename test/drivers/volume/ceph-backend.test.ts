/**
 * The volume backend conformance suite over the Ceph backend on a real cluster (src/testkit/ceph.ts), then what
 * only RBD does: Cinder's names, copy-on-write clones of images and snapshots, and deletes that flatten the clones
 * that still share bytes instead of failing or taking their bytes along.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { Readable } from 'node:stream'
import { CephBackend } from '../../../src/host/storage/ceph/ceph-backend.js'
import { volumeBackendConformance } from '../../../src/host/storage/conformance/suite.js'
import { GIB } from '../../../src/contracts/host/volume.js'
import { Rbd } from '../../../src/lib/ceph/rbd.js'
import { RbdBlobStore } from '../../../src/server/blobs/rbd-blob-store.js'
import { freshPools, testCeph } from '../../../src/testkit/ceph.js'
import { localIo } from '../../../src/testkit/nbd.js'

volumeBackendConformance('ceph', async () => {
  const cluster = await testCeph()
  if (typeof cluster === 'string') return cluster
  const { pools, remove } = await freshPools(cluster, ['volumes'])
  return { backend: new CephBackend(new Rbd({ conf: cluster.conf, user: cluster.user }), { volumes: pools[0] }), cleanup: remove }
})

describe('ceph backend: RBD layout and copy-on-write', () => {
  let skip: string | undefined
  let rbd: Rbd
  let backend: CephBackend
  let pools: Awaited<ReturnType<typeof freshPools>> | undefined
  before(async () => {
    const cluster = await testCeph()
    if (typeof cluster === 'string') {
      skip = cluster
      return
    }
    pools = await freshPools(cluster, ['images', 'volumes'])
    rbd = new Rbd({ conf: cluster.conf, user: cluster.user })
    backend = new CephBackend(rbd, { images: pools.pools[0], volumes: pools.pools[1] })
  })
  after(async () => pools?.remove())
  const io = async (ref: Parameters<CephBackend['blockdev']>[0], commands: string[]) => {
    const result = await localIo(backend.blockdev(ref), commands)
    assert.ok(result.ok, result.output)
  }

  it('a volume from a raw image in the cluster is a clone of its snapshot; a qcow2 image is not', async (t) => {
    if (skip) return t.skip(skip)
    const [imagesPool, volumesPool] = pools!.pools
    const imageId = randomUUID()
    const bytes = Buffer.concat([Buffer.alloc(1 << 20, 0x61), randomBytes(1 << 20)])
    await new RbdBlobStore(rbd, imagesPool).put(`images/${imageId}`, Readable.from([bytes]), { maxBytes: bytes.length })
    const volumeId = randomUUID()
    assert.equal(await backend.createFromImage(volumeId, 1, { id: imageId, format: 'raw' }), true)
    assert.equal(await backend.createFromImage(volumeId, 1, { id: imageId, format: 'raw' }), true, 'again: already there')
    const info = await rbd.info(volumesPool, `volume-${volumeId}`)
    assert.deepEqual(info?.parent, { pool: imagesPool, image: imageId, snapshot: 'snap' })
    assert.equal(info?.size, GIB)
    await io({ volumeId }, ['read -P 0x61 0 1M', `read -P 0 ${2 << 20} 1M`])
    assert.equal(await backend.createFromImage(randomUUID(), 1, { id: imageId, format: 'qcow2' }), false)
    assert.equal(await backend.createFromImage(randomUUID(), 1, { id: randomUUID(), format: 'raw' }), false, 'an image not in the pool')
    await assert.rejects(backend.createFromImage(randomUUID(), 0, { id: imageId, format: 'raw' }), /larger than the volume/)

    // The image goes: the volume is flattened first and keeps every byte.
    await rbd.remove(imagesPool, imageId)
    assert.equal((await rbd.info(volumesPool, `volume-${volumeId}`))?.parent, undefined)
    await io({ volumeId }, ['read -P 0x61 0 1M'])
    await backend.delete(volumeId)
  })

  it("names are Cinder's; clones of volumes and snapshots share bytes until their source goes", async (t) => {
    if (skip) return t.skip(skip)
    const volumesPool = pools!.pools[1]
    const vol = randomUUID()
    const snap = randomUUID()
    await backend.create(vol, 1)
    await io({ volumeId: vol }, ['write -P 0x31 0 1M'])
    await backend.createSnapshot(snap, vol)
    assert.deepEqual(await rbd.snapshots(volumesPool, `volume-${vol}`), [`snapshot-${snap}`])
    const fromSnap = randomUUID()
    await backend.createFrom(fromSnap, 2, { kind: 'snapshot', snapshotId: snap, volumeId: vol })
    assert.equal((await rbd.info(volumesPool, `volume-${fromSnap}`))?.parent?.snapshot, `snapshot-${snap}`)
    const clone = randomUUID()
    await backend.createFrom(clone, 1, { kind: 'volume', volumeId: vol })
    assert.equal((await rbd.info(volumesPool, `volume-${clone}`))?.parent?.snapshot, `clone-${clone}`)
    // Deleting the clone removes the snapshot taken for it.
    await backend.delete(clone)
    assert.deepEqual(await rbd.snapshots(volumesPool, `volume-${vol}`), [`snapshot-${snap}`])
    // Deleting the source flattens what was cloned from it.
    await backend.delete(vol)
    await io({ volumeId: fromSnap }, ['read -P 0x31 0 1M', `read -P 0 ${GIB} 1M`])
    assert.deepEqual((await rbd.list(volumesPool)).sort(), [`volume-${fromSnap}`])
    await backend.delete(fromSnap)
  })

  it('a Ceph failure is a VolumeBackendError naming the pool', async (t) => {
    if (skip) return t.skip(skip)
    const missing = new CephBackend(rbd, { volumes: 'no-such-pool' })
    await assert.rejects(missing.check(), (err: Error) => err.name === 'VolumeBackendError' && /no-such-pool/.test(err.message))
    await assert.rejects(missing.create(randomUUID(), 1), (err: Error) => err.name === 'VolumeBackendError')
  })
})
