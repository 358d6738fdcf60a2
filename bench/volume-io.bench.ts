/**
 * Block I/O from inside a real guest (issue 21): sequential 1 MiB and random 4 KiB reads and writes, O_DIRECT, to
 * an attached volume (the control plane's file backend over NBD with TLS-PSK, qemu-storage-daemon on the same
 * machine) next to the same guest's local overlay disk (qcow2 over the cached image), in one run; and the same
 * commands on the host against a raw file of the same file system, the limit the guest's paths are measured against.
 *
 * The guest is the pcc guest image under the QEMU driver (a pcc-agent with `driver: qemu`), so the accelerator is
 * whatever the host has (TCG here: KVM guests hang on this machine). Its user data runs busybox dd: one process per
 * random 4 KiB I/O (the image has no fio), so the random figures include a process start each — the host row
 * does the same, which keeps the comparison fair. Timing from /proc/uptime (10 ms), over 512 MiB and 500 I/Os.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BenchRun } from './harness.js'
import { guestTimings, imageAndVolume, IO_FIGURES, MIB_COUNT, OFFSET_MIB, parseTimings, round1, TESTS, type Timing } from './guest-io.js'
import { startQemuCloud } from '../src/testkit/qemu-cloud.js'
import { guestImage, realGuestsMissing } from '../src/testkit/qemu.js'
import { ExportManager } from '../src/host/storage/exports/export-manager.js'

/** The same commands on the host (busybox sh and dd, the guest's own tools) against a raw file. */
function hostTimings(): Timing[] {
  const dir = mkdtempSync(join(tmpdir(), 'pcc-volume-bench-'))
  try {
    const file = join(dir, 'disk.raw')
    execFileSync('truncate', ['-s', `${(OFFSET_MIB + MIB_COUNT) * 2}M`, file])
    writeFileSync(join(dir, 'run.sh'), `${TESTS}\nbench ${file} host\n`)
    return parseTimings(execFileSync('busybox', ['sh', join(dir, 'run.sh')], { encoding: 'utf8', timeout: 600_000 }))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const WHERE: Record<string, string> = {
  volume: 'guest → attached volume (NBD, TLS-PSK, file backend)',
  root: 'guest → local overlay disk (qcow2)',
  host: 'host → raw file, same file system (no guest: the limit)',
}

export const run: BenchRun = async () => {
  const missing = realGuestsMissing()
  if (missing) throw new Error(`real guests cannot run here: ${missing}`)
  const image = await guestImage()
  const cloud = await startQemuCloud({ hosts: 1, qemu: { accel: 'auto', vcpus: 2, memory_mb: 2048, disk_gb: 20 } })
  try {
    const { imageId, volumeId } = await imageAndVolume(cloud, image.disk.path, 'qcow2')
    const { timings, accel } = await guestTimings(cloud, imageId, volumeId)
    return [...timings, ...hostTimings()].map((t) => {
      const f = IO_FIGURES[t.test]
      return { figure: `${f.what}: ${WHERE[t.label]}`, value: round1(f.value(t.centiseconds)), unit: f.unit, note: t.label === 'host' ? undefined : `guest under ${accel}` }
    })
  } finally {
    await new ExportManager(join(cloud.server.dataDir, 'run', 'volumes')).stopAll()
    await cloud.close()
  }
}
