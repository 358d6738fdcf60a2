/**
 * Block I/O from inside a real guest whose disks live in Ceph (issue 27): the guest-io tests (busybox dd, O_DIRECT,
 * sequential 1 MiB and random 4 KiB) on an attached RBD volume (QEMU's librbd, the host's own cephx user) and on
 * its RBD root disk (a clone of the image's snapshot in the vms pool), next to `rbd bench` on the host against an
 * image of the same cluster with the same I/O size, pattern and one I/O in flight — the limit a guest's path is
 * measured against, as the issue asks — and next to a bare guest of the same image on a null-co disk (the guest's
 * own cost per I/O, which no storage can beat). The random rows run `rio` in the guest (guest-io.ts: all the I/Os in one
 * process, one at a time, like fio at iodepth 1), compiled with the machine's C compiler.
 *
 * A private single-OSD cluster (src/testkit/ceph.ts, or the run's PCC_TEST_CEPH_CONF), one pcc-agent with the
 * QEMU driver on the Ceph layout. About 5–10 minutes under TCG.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BenchRow, BenchRun } from './harness.js'
import { compileRio, guestTimings, imageAndVolume, IO_FIGURES, MIB_COUNT, nullDiskTimings, RANDOM_IOS, round1, type IoTest } from './guest-io.js'
import { startQemuCloud } from '../src/testkit/qemu-cloud.js'
import { freshPccPools, type CephCluster } from '../src/testkit/ceph.js'
import { cephForGuests, rawGuestImage } from './real-ceph.js'

/** `rbd bench` arguments for each guest test: the same size, pattern and amount, one I/O at a time. */
const RBD_BENCH: Record<IoTest, string[]> = {
  'seq-write': ['--io-type', 'write', '--io-pattern', 'seq', '--io-size', '1M', '--io-total', `${MIB_COUNT}M`],
  'seq-read': ['--io-type', 'read', '--io-pattern', 'seq', '--io-size', '1M', '--io-total', `${MIB_COUNT}M`],
  'rand-write': ['--io-type', 'write', '--io-pattern', 'rand', '--io-size', '4K', '--io-total', `${RANDOM_IOS * 4}K`],
  'rand-read': ['--io-type', 'read', '--io-pattern', 'rand', '--io-size', '4K', '--io-total', `${RANDOM_IOS * 4}K`],
}

/** MiB/s or IOPS of one `rbd bench` run, in the unit of the guest's figure. */
function rbdBench(cluster: CephCluster, image: string, test: IoTest): number {
  const out = execFileSync('rbd', ['-c', cluster.conf, '--id', cluster.user, 'bench', '--io-threads', '1', ...RBD_BENCH[test], image], { encoding: 'utf8', timeout: 600_000 })
  // The last line: `elapsed: 2  ops: 256  ops/sec: 103.2  bytes/sec: 103 MiB/s`.
  const match = /ops\/sec:\s*([\d.]+)\s+bytes\/sec:\s*([\d.]+)\s*([KMG]?i?B)\/s/.exec(out)
  if (!match) throw new Error(`rbd bench printed no rate: ${out.slice(-400)}`)
  if (IO_FIGURES[test].unit === 'IOPS') return Number(match[1])
  return Number(match[2]) * ({ B: 1 / 1048576, KiB: 1 / 1024, MiB: 1, GiB: 1024 } as Record<string, number>)[match[3]]
}

export const run: BenchRun = async () => {
  const cluster = await cephForGuests()
  const pools = await freshPccPools(cluster)
  const work = mkdtempSync(join(tmpdir(), 'pcc-bench-ceph-io-'))
  const cloud = await startQemuCloud({ hosts: 1, env: pools.env, qemu: { accel: 'auto', vcpus: 2, memory_mb: 2048, disk_gb: 20 } })
  try {
    // A raw image, so the root disk is a clone of its snapshot (a qcow2 image would be converted into the pool).
    const { imageId, volumeId } = await imageAndVolume(cloud, await rawGuestImage(work), 'raw')
    const rio = compileRio()
    const { timings, accel } = await guestTimings(cloud, imageId, volumeId, rio)
    const floor = await nullDiskTimings(accel === 'kvm' ? 'kvm' : 'tcg', rio)

    // As large as the region the guest's tests cover, so the sequential write fills it and the random reads find
    // data, as the guest's do: reads of blocks never written cost the cluster next to nothing.
    const limitImage = `${pools.volumes}/bench-limit`
    execFileSync('rbd', ['-c', cluster.conf, '--id', cluster.user, 'create', '--size', `${MIB_COUNT}M`, limitImage])
    const rows: BenchRow[] = []
    for (const test of Object.keys(RBD_BENCH) as IoTest[]) {
      const f = IO_FIGURES[test]
      const limit = rbdBench(cluster, limitImage, test)
      const floorT = floor.find((x) => x.test === test)
      if (!floorT) throw new Error(`the null-disk guest printed no ${test}`)
      const nullDisk = f.value(floorT.centiseconds)
      // A guest's I/O pays its own cost and then the storage's, one after the other: its best is both times added.
      const both = 1 / (1 / limit + 1 / nullDisk)
      rows.push({ figure: `${f.what}: rbd bench on the host, 1 I/O in flight (the storage's limit)`, value: round1(limit), unit: f.unit })
      rows.push({ figure: `${f.what}: bare guest → null-co disk (the guest's own limit)`, value: round1(nullDisk), unit: f.unit, note: `guest under ${accel}` })
      for (const label of ['volume', 'root']) {
        const t = timings.find((x) => x.label === label && x.test === test)
        if (!t) throw new Error(`the guest printed no ${label} ${test}`)
        const value = f.value(t.centiseconds)
        rows.push({ figure: `${f.what}: guest → RBD ${label === 'volume' ? 'volume (librbd in QEMU)' : 'root disk (a clone in vms)'}`, value: round1(value), unit: f.unit, target: '>= 0.8 of rbd bench', note: `${(value / limit).toFixed(2)} of rbd bench, ${(value / both).toFixed(2)} of both limits together; guest under ${accel}` })
      }
    }
    return rows
  } finally {
    await cloud.close()
    await pools.remove()
    rmSync(work, { recursive: true, force: true })
  }
}
