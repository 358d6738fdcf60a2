/**
 * Real guests: from `POST /servers` to the guest's first line of userspace output (`pcc-guest: userspace up`,
 * printed by the guest image's init), next to a bare `qemu-system-x86_64` boot of the same image on the same
 * machine in the same run (the physical limit: QEMU, firmware, kernel and init alone), alternating, and 10
 * concurrent boots on one host. The control plane runs in this process; one pcc-agent with the QEMU driver (KVM
 * when a guest runs under it, TCG otherwise; the row's note says which). The guest's console log is read on the
 * host's file as it grows (every 20 ms), for both. The image cache is warmed by a first server, whose time (with
 * the image's first fetch through the control plane) is its own row. About 2–4 minutes under TCG.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defaultImageName } from '../src/server/image/default-image.js'
import { bareGuest, guestImage, realGuestsMissing } from '../src/testkit/qemu.js'
import { startQemuCloud, type QemuCloud } from '../src/testkit/qemu-cloud.js'
import type { BenchRow, BenchRun } from './harness.js'

const ROUNDS = 5
const CONCURRENT = 10
const FIRST_LINE = /pcc-guest: userspace up/
const NANO = '42'

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

async function untilFile(file: string, pattern: RegExp, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (existsSync(file) && pattern.test(readFileSync(file, 'latin1'))) return performance.now()
    if (Date.now() > deadline) throw new Error(`${pattern} not in ${file} within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** POST /servers, then the first userspace line in the guest's console log on the host: ms. */
async function pccBoot(cloud: QemuCloud, image: string, name: string): Promise<{ ms: number; id: string }> {
  const started = performance.now()
  const { id } = await cloud.api.create({ name, imageRef: image, flavorRef: NANO, networks: 'none' })
  const log = join(cloud.hosts[0].root, 'var/lib/pcc/instances', id, 'console.log')
  const seen = await untilFile(log, FIRST_LINE, 180_000)
  return { ms: seen - started, id }
}

async function remove(cloud: QemuCloud, ids: string[]): Promise<void> {
  for (const id of ids) await cloud.api.call('DELETE', `/servers/${id}`)
  const deadline = Date.now() + 120_000
  while ((await cloud.api.servers()).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500))
}

export const run: BenchRun = async () => {
  const missing = realGuestsMissing()
  if (missing) throw new Error(`cannot run real guests here: ${missing}`)
  const disk = (await guestImage()).disk.path
  // The agent's own heartbeat interval (5 s), not the tests' 1 s: the bench measures a host as it runs.
  const cloud = await startQemuCloud({ hosts: 1, heartbeatSeconds: 5, env: { PCC_LOG_LEVEL: 'silent' } })
  const work = mkdtempSync(join(tmpdir(), 'pcc-bench-bare-'))
  try {
    const accel = ((await cloud.api.at('2.28').call('GET', '/os-hypervisors/detail')).body.hypervisors[0].cpu_info.accelerator as string) ?? 'tcg'
    await cloud.api.unlimitedQuotas(cloud.server.bootstrap.adminProjectId)
    const image = (await cloud.api.other('GET', `/image/v2/images?name=${defaultImageName()}`)).body.images[0].id as string
    const first = await pccBoot(cloud, image, 'warm')
    await remove(cloud, [first.id])

    const pcc: number[] = []
    const bare: number[] = []
    for (let i = 0; i < ROUNDS; i++) {
      const p = await pccBoot(cloud, image, `boot-${i}`)
      pcc.push(p.ms)
      await remove(cloud, [p.id])
      const overlay = join(work, `bare-${i}.qcow2`)
      execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', disk, overlay, '1G'])
      const started = performance.now()
      const guest = bareGuest({ disk: overlay, diskFormat: 'qcow2', memoryMb: 128, accel: accel === 'kvm' ? 'kvm' : 'tcg' })
      try {
        bare.push((await untilFile(join(guest.dir, 'console.log'), FIRST_LINE, 180_000)) - started)
      } finally {
        await guest.stop()
      }
    }

    // 10 at once on the one host: each POST /servers, every guest's first line.
    const started = performance.now()
    const created = await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => cloud.api.create({ name: `many-${i}`, imageRef: image, flavorRef: NANO, networks: 'none' })))
    const firsts = await Promise.all(created.map(({ id }) => untilFile(join(cloud.hosts[0].root, 'var/lib/pcc/instances', id, 'console.log'), FIRST_LINE, 600_000)))
    const each = firsts.map((t) => t - started)
    await remove(cloud, created.map((c) => c.id))

    const note = `${ROUNDS} rounds alternating, median; ${accel.toUpperCase()}, 128 MiB, 1 vCPU; first line = "pcc-guest: userspace up"`
    return [
      { figure: 'POST /servers → guest first userspace line (image cached on the host)', value: Math.round(median(pcc)), unit: 'ms', note },
      { figure: `bare ${'qemu-system-x86_64'} boot of the same image → first userspace line`, value: Math.round(median(bare)), unit: 'ms', note: 'QEMU started directly: -nodefaults, virtio disk, serial to a file' },
      { figure: 'pcc / bare boot', value: Number((median(pcc) / median(bare)).toFixed(2)), unit: 'ratio', target: '<= 1.25' },
      { figure: 'first server on a new host (image fetched through the control plane, verified, cached)', value: Math.round(first.ms), unit: 'ms' },
      { figure: `${CONCURRENT} concurrent boots on one host: last first-line`, value: Math.round(Math.max(...each)), unit: 'ms', note: `${CONCURRENT} POST /servers at once; ${accel.toUpperCase()}` },
      { figure: `${CONCURRENT} concurrent boots on one host: median first-line`, value: Math.round(median(each)), unit: 'ms' },
    ] satisfies BenchRow[]
  } finally {
    await cloud.close()
    rmSync(work, { recursive: true, force: true })
  }
}
