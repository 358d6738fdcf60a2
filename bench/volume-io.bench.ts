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
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BenchRun } from './harness.js'
import { until } from '../src/testkit/compute-api.js'
import { startQemuCloud } from '../src/testkit/qemu-cloud.js'
import { guestImage, realGuestsMissing } from '../src/testkit/qemu.js'
import { ExportManager } from '../src/host/storage/exports/export-manager.js'

const MIB_COUNT = 512
const RANDOM_IOS = 500
/** Where on each disk the tests run: past the guest image's 64 MiB FAT on the root disk. */
const OFFSET_MIB = 256

/** The tests as a shell function over one disk; prints `pcc-guest: bench <label> <test> <centiseconds>`. */
const TESTS = `
now() { read u _ < /proc/uptime; echo "$u" | tr -d . | sed 's/^0*//'; }
bench() {
  dev=$1; label=$2
  t=$(now); dd if=/dev/zero of=$dev bs=1M count=${MIB_COUNT} seek=${OFFSET_MIB} oflag=direct conv=notrunc 2>/dev/null; echo "pcc-guest: bench $label seq-write $(( $(now) - t ))"
  t=$(now); dd if=$dev of=/dev/null bs=1M count=${MIB_COUNT} skip=${OFFSET_MIB} iflag=direct 2>/dev/null; echo "pcc-guest: bench $label seq-read $(( $(now) - t ))"
  i=0; t=$(now)
  while [ $i -lt ${RANDOM_IOS} ]; do dd if=/dev/zero of=$dev bs=4k count=1 seek=$(( ${OFFSET_MIB} * 256 + RANDOM % (${MIB_COUNT} * 256) )) oflag=direct conv=notrunc 2>/dev/null; i=$((i+1)); done
  echo "pcc-guest: bench $label rand-write $(( $(now) - t ))"
  i=0; t=$(now)
  while [ $i -lt ${RANDOM_IOS} ]; do dd if=$dev of=/dev/null bs=4k count=1 skip=$(( ${OFFSET_MIB} * 256 + RANDOM % (${MIB_COUNT} * 256) )) iflag=direct 2>/dev/null; i=$((i+1)); done
  echo "pcc-guest: bench $label rand-read $(( $(now) - t ))"
}
`

const GUEST_SCRIPT = `#!/bin/sh
${TESTS}
while [ ! -b /dev/vdb ]; do sleep 1; done
bench /dev/vdb volume
bench /dev/vda local
echo "pcc-guest: bench done"
`

interface Timing {
  label: string
  test: string
  centiseconds: number
}

function parse(text: string): Timing[] {
  // Anchored at the end: the guest also echoes its user data (these lines included, ending in `))"`), and a line
  // may start behind the serial shell's prompt.
  return [...text.matchAll(/pcc-guest: bench (\w+) ([\w-]+) (\d+)\r?$/gm)].map((m) => ({ label: m[1], test: m[2], centiseconds: Number(m[3]) }))
}

/** The same commands on the host (busybox sh and dd, the guest's own tools) against a raw file. */
function hostTimings(): Timing[] {
  const dir = mkdtempSync(join(tmpdir(), 'pcc-volume-bench-'))
  try {
    const file = join(dir, 'disk.raw')
    execFileSync('truncate', ['-s', `${(OFFSET_MIB + MIB_COUNT) * 2}M`, file])
    writeFileSync(join(dir, 'run.sh'), `${TESTS}\nbench ${file} host\n`)
    return parse(execFileSync('busybox', ['sh', join(dir, 'run.sh')], { encoding: 'utf8', timeout: 600_000 }))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const FIGURES: Record<string, { what: string; unit: string; value: (cs: number) => number }> = {
  'seq-write': { what: `sequential write, 1 MiB O_DIRECT, ${MIB_COUNT} MiB`, unit: 'MiB/s', value: (cs) => MIB_COUNT / (cs / 100) },
  'seq-read': { what: `sequential read, 1 MiB O_DIRECT, ${MIB_COUNT} MiB`, unit: 'MiB/s', value: (cs) => MIB_COUNT / (cs / 100) },
  'rand-write': { what: `random 4 KiB write, O_DIRECT, ${RANDOM_IOS} dd runs`, unit: 'IOPS', value: (cs) => RANDOM_IOS / (cs / 100) },
  'rand-read': { what: `random 4 KiB read, O_DIRECT, ${RANDOM_IOS} dd runs`, unit: 'IOPS', value: (cs) => RANDOM_IOS / (cs / 100) },
}
const WHERE: Record<string, string> = {
  volume: 'guest → attached volume (NBD, TLS-PSK, file backend)',
  local: 'guest → local overlay disk (qcow2)',
  host: 'host → raw file, same file system (no guest: the limit)',
}

export const run: BenchRun = async () => {
  const missing = realGuestsMissing()
  if (missing) throw new Error(`real guests cannot run here: ${missing}`)
  const image = await guestImage()
  const cloud = await startQemuCloud({ hosts: 1, qemu: { accel: 'auto', vcpus: 2, memory_mb: 2048, disk_gb: 20 } })
  const { server, api } = cloud
  const token = cloud.adminToken
  let serverId: string | undefined
  let accel = ''
  try {
    const flavor = await api.createFlavor({ name: 'bench', vcpus: 1, ram: 256, disk: 1 })
    const img = await api.other('POST', '/image/v2/images', { name: 'pcc-guest', disk_format: 'qcow2', container_format: 'bare' })
    await fetch(`${server.url}/image/v2/images/${img.body.id}/file`, { method: 'PUT', headers: { 'x-auth-token': token, 'content-type': 'application/octet-stream' }, body: readFileSync(image.disk.path) })
    const vol = await api.other('POST', '/volume/v3/volumes', { volume: { size: 1, name: 'bench' } })
    await until('the volume', 60_000, async () => ((await api.other('GET', `/volume/v3/volumes/${vol.body.volume.id}`)).body.volume.status === 'available' ? true : undefined), 250)
    serverId = (await api.create({ name: 'bench', imageRef: img.body.id, flavorRef: flavor, networks: 'none', user_data: Buffer.from(GUEST_SCRIPT).toString('base64') })).id
    const consoleOf = async () => ((await api.action(serverId!, 'os-getConsoleOutput', {})).body?.output as string | undefined) ?? ''
    await until('the guest up', 300_000, async () => (/pcc-guest: ready/.test(await consoleOf()) ? true : undefined), 1000)
    const attached = await api.call('POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId: vol.body.volume.id } })
    if (attached.status !== 200) throw new Error(`attach: ${attached.status} ${JSON.stringify(attached.body)}`)
    const text = await until('the guest’s benchmark', 1_800_000, async () => {
      const out = await consoleOf()
      return /^pcc-guest: bench done/m.test(out) ? out : undefined
    }, 2000)
    // The accelerator the driver chose (KVM when a KVM guest works, else TCG), from the agent's own log.
    accel = /guests run under (\w+)/.exec(readFileSync(join(cloud.hosts[0].root, 'var/log/pcc/agent.log'), 'utf8'))?.[1] ?? 'unknown'
    const timings = [...parse(text), ...hostTimings()]
    return timings.map((t) => {
      const f = FIGURES[t.test]
      return { figure: `${f.what}: ${WHERE[t.label]}`, value: Math.round(f.value(t.centiseconds) * 10) / 10, unit: f.unit, note: t.label === 'host' ? undefined : `guest under ${accel}` }
    })
  } finally {
    if (serverId) {
      await api.call('DELETE', `/servers/${serverId}`).catch(() => {})
      await until('the guest gone', 120_000, async () => ((await api.server(serverId!).catch(() => undefined)) ? undefined : true), 500).catch(() => {})
    }
    await new ExportManager(join(server.dataDir, 'run', 'volumes')).stopAll()
    await cloud.close()
  }
}
