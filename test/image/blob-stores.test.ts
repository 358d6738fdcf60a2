// The blob store conformance suite over both stores: the filesystem (the embedded default) and RBD on a real
// Ceph cluster the test starts (src/testkit/ceph.ts); the RBD run skips, naming the packages, where Ceph is missing.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { blobStoreConformance } from '../../src/server/blobs/conformance/suite.js'
import { FsBlobStore } from '../../src/server/blobs/fs-blob-store.js'
import { RbdBlobStore } from '../../src/server/blobs/rbd-blob-store.js'
import { Rbd } from '../../src/lib/ceph/rbd.js'
import { freshPools, testCeph } from '../../src/testkit/ceph.js'

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]))
}

blobStoreConformance('filesystem', async () => {
  const root = mkdtempSync(join(tmpdir(), 'pcc-blobs-'))
  return {
    store: new FsBlobStore(root),
    leftovers: async () => walk(root).filter((f) => f.includes('.tmp-')),
    cleanup: async () => rmSync(root, { recursive: true, force: true }),
  }
})

blobStoreConformance('RBD', async () => {
  const cluster = await testCeph()
  if (typeof cluster === 'string') return cluster
  const { pools, remove } = await freshPools(cluster, ['images'])
  const rbd = new Rbd({ conf: cluster.conf, user: cluster.user })
  return {
    store: new RbdBlobStore(rbd, pools[0]),
    leftovers: async () => (await rbd.list(pools[0])).filter((name) => name.includes('.partial-')),
    cleanup: remove,
  }
})
