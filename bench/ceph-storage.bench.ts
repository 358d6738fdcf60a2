/**
 * Images and volumes on Ceph, each next to its limit in the same run, on a private single-OSD cluster
 * (src/testkit/ceph.ts): `rbd bench` 1 MiB writes and reads (what the cluster itself does), a 256 MiB image stored
 * and read back through the RBD blob store next to bare `rbd import`/`rbd export` of the same bytes, and 10 volumes
 * made from one 1 GiB raw image — RBD clones next to the file backend's copies. Bounded by the data sizes.
 */
import { execFileSync } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BenchRow, BenchRun } from './harness.js'
import { CephBackend } from '../src/host/storage/ceph/ceph-backend.js'
import { FileBackend } from '../src/host/storage/file/file-backend.js'
import { Rbd } from '../src/lib/ceph/rbd.js'
import { RbdBlobStore } from '../src/server/blobs/rbd-blob-store.js'
import { freshPools, testCeph } from '../src/testkit/ceph.js'

const MIB = 1 << 20
const IMAGE_MIB = 256
const VOLUMES = 10

async function seconds(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now()
  await work()
  return (performance.now() - start) / 1000
}

/** MiB/s of `rbd bench` for one I/O type (1 MiB I/O, 256 MiB in all). */
function rbdBench(conf: string, pool: string, type: 'write' | 'read'): number {
  const out = execFileSync('rbd', ['-c', conf, '--id', 'admin', 'bench', '--io-type', type, '--io-size', '1M', '--io-total', '256M', '--io-threads', '4', `${pool}/bench`], { encoding: 'utf8' })
  // The last line: `elapsed: 2  ops: 256  ops/sec: 103.2  bytes/sec: 103 MiB/s`.
  const match = /bytes\/sec:\s*([\d.]+)\s*([KMG]iB)\/s/.exec(out)
  if (!match) throw new Error(`rbd bench printed no rate: ${out.slice(-400)}`)
  return Number(match[1]) * { KiB: 1 / 1024, MiB: 1, GiB: 1024 }[match[2] as 'KiB' | 'MiB' | 'GiB']
}

export const run: BenchRun = async () => {
  const cluster = await testCeph()
  if (typeof cluster === 'string') throw new Error(`no Ceph here: ${cluster}`)
  const { pools, remove } = await freshPools(cluster, ['images', 'volumes'])
  const [imagesPool, volumesPool] = pools
  const dir = mkdtempSync(join(tmpdir(), 'pcc-bench-ceph-'))
  const rbd = new Rbd({ conf: cluster.conf, user: cluster.user })
  try {
    execFileSync('rbd', ['-c', cluster.conf, '--id', 'admin', 'create', '--size', '1G', `${volumesPool}/bench`])
    const benchWrite = rbdBench(cluster.conf, volumesPool, 'write')
    const benchRead = rbdBench(cluster.conf, volumesPool, 'read')

    const file = join(dir, 'image.raw')
    writeFileSync(file, Buffer.concat(Array.from({ length: IMAGE_MIB }, () => randomBytes(MIB))))
    const bareImport = await seconds(async () => execFileSync('rbd', ['-c', cluster.conf, '--id', 'admin', 'import', '--no-progress', file, `${imagesPool}/bare`]))
    const bareExport = await seconds(async () => execFileSync('rbd', ['-c', cluster.conf, '--id', 'admin', 'export', '--no-progress', `${imagesPool}/bare`, join(dir, 'out.raw')]))
    const store = new RbdBlobStore(rbd, imagesPool)
    const imageId = randomUUID()
    const put = await seconds(() => store.put(`images/${imageId}`, createReadStream(file, { highWaterMark: MIB }), { maxBytes: IMAGE_MIB * MIB }))
    const get = await seconds(async () => {
      const { stream } = await store.open(`images/${imageId}`)
      for await (const part of stream) void part
    })

    // 10 volumes of 1 GiB from one raw image: clones on Ceph, copies on the file backend.
    const ceph = new CephBackend(rbd, { volumes: volumesPool, images: imagesPool })
    const cephVolumes = await seconds(async () => {
      for (let i = 0; i < VOLUMES; i++) await ceph.createFromImage(randomUUID(), 1, { id: imageId, format: 'raw' })
    })
    const files = new FileBackend(join(dir, 'volumes'))
    await files.check()
    const fileVolumes = await seconds(async () => {
      for (let i = 0; i < VOLUMES; i++) await files.createFrom(randomUUID(), 1, { kind: 'image', path: file, format: 'raw' })
    })

    const rows: BenchRow[] = [
      { figure: 'rbd bench 1 MiB writes, 4 threads (the limit)', value: Math.round(benchWrite), unit: 'MiB/s' },
      { figure: 'rbd bench 1 MiB reads, 4 threads (the limit)', value: Math.round(benchRead), unit: 'MiB/s' },
      { figure: `bare rbd import of a ${IMAGE_MIB} MiB file`, value: Math.round(IMAGE_MIB / bareImport), unit: 'MiB/s' },
      { figure: `image stored in RBD (${IMAGE_MIB} MiB, MD5 + SHA-512, snapshot)`, value: Math.round(IMAGE_MIB / put), unit: 'MiB/s' },
      { figure: `bare rbd export of ${IMAGE_MIB} MiB`, value: Math.round(IMAGE_MIB / bareExport), unit: 'MiB/s' },
      { figure: `image read from RBD (${IMAGE_MIB} MiB)`, value: Math.round(IMAGE_MIB / get), unit: 'MiB/s' },
      { figure: `${VOLUMES} volumes from one ${IMAGE_MIB} MiB raw image, ceph (clones)`, value: Number((cephVolumes / VOLUMES).toFixed(2)), unit: 's per volume' },
      { figure: `${VOLUMES} volumes from one ${IMAGE_MIB} MiB raw image, file (copies)`, value: Number((fileVolumes / VOLUMES).toFixed(2)), unit: 's per volume' },
    ]
    return rows
  } finally {
    rmSync(dir, { recursive: true, force: true })
    await remove()
  }
}
