/**
 * Ten servers booted at once from one image on a host that has never seen it (issue 27): on the Ceph layout (each
 * root disk a copy-on-write clone of the image's snapshot: nothing downloaded, nothing copied) next to the file
 * layout (the host fetches the image through the control plane, checks it, caches it, and makes a qcow2 overlay per
 * server), in the same run on the same machine. Per layout: from the ten `POST /servers` to every server ACTIVE,
 * and to every guest's first userspace line (its console log on the host, read every 50 ms). Both clouds get the
 * same raw image. About 3–6 minutes under TCG.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BenchRow, BenchRun } from './harness.js'
import { until } from '../src/testkit/compute-api.js'
import { startQemuCloud, type QemuCloud } from '../src/testkit/qemu-cloud.js'
import { freshPccPools } from '../src/testkit/ceph.js'
import { cephForGuests, rawGuestImage } from './real-ceph.js'
import { uploadImage } from './guest-io.js'

const SERVERS = 10
const NANO = '42'
const FIRST_LINE = /pcc-guest: userspace up/

interface Boots {
  active: number
  firstLine: number
}

async function tenBoots(cloud: QemuCloud, raw: string): Promise<Boots> {
  const { api } = cloud
  await api.unlimitedQuotas(cloud.server.bootstrap.adminProjectId)
  const imageId = await uploadImage(cloud, raw, 'raw', 'bench-raw')
  const started = performance.now()
  const ids = (await Promise.all(Array.from({ length: SERVERS }, (_, i) => api.create({ name: `boot-${i}`, imageRef: imageId, flavorRef: NANO, networks: 'none' })))).map((s) => s.id)
  const logs = ids.map((id) => join(cloud.hosts[0].root, 'var/lib/pcc/instances', id, 'console.log'))
  let active = 0
  let firstLine = 0
  await until('every guest’s first line', 900_000, async () => {
    const now = performance.now() - started
    if (!active) {
      const shown = await Promise.all(ids.map(async (id) => await api.server(id)))
      const failed = shown.find((s) => s?.status === 'ERROR')
      if (failed) throw new Error(`server ${failed.name} went to ERROR: ${JSON.stringify(failed.fault)}`)
      if (shown.every((s) => s?.status === 'ACTIVE')) active = now
    }
    if (!firstLine && logs.every((log) => existsSync(log) && FIRST_LINE.test(readFileSync(log, 'latin1')))) firstLine = now
    return active && firstLine ? true : undefined
  }, 50)
  for (const id of ids) await api.call('DELETE', `/servers/${id}`)
  await until('the servers gone', 180_000, async () => ((await api.servers()).length === 0 ? true : undefined), 500)
  return { active, firstLine }
}

export const run: BenchRun = async () => {
  const cluster = await cephForGuests()
  const work = mkdtempSync(join(tmpdir(), 'pcc-bench-ceph-boot-'))
  const raw = await rawGuestImage(work)
  // Ten 1-vCPU servers fit under the default CPU allocation ratio (4).
  const qemu = { accel: 'auto' as const, vcpus: 4, memory_mb: 4096, disk_gb: 20 }
  try {
    const fileCloud = await startQemuCloud({ hosts: 1, heartbeatSeconds: 5, qemu })
    const file = await tenBoots(fileCloud, raw).finally(() => fileCloud.close())
    const pools = await freshPccPools(cluster)
    const cephCloud = await startQemuCloud({ hosts: 1, heartbeatSeconds: 5, env: pools.env, qemu })
    const ceph = await tenBoots(cephCloud, raw).finally(async () => {
      await cephCloud.close()
      await pools.remove()
    })
    const note = `${SERVERS} POST /servers at once, 128 MiB / 1 vCPU each, a ${Math.round(statSync(raw).size / 2 ** 20)} MiB raw image the host never saw`
    return [
      { figure: `${SERVERS} servers → all ACTIVE: Ceph layout (clones of images/<id>@snap)`, value: Math.round(ceph.active), unit: 'ms', note },
      { figure: `${SERVERS} servers → all ACTIVE: file layout (image fetched, cached, qcow2 overlays)`, value: Math.round(file.active), unit: 'ms' },
      { figure: `${SERVERS} servers → every guest's first line: Ceph layout`, value: Math.round(ceph.firstLine), unit: 'ms' },
      { figure: `${SERVERS} servers → every guest's first line: file layout`, value: Math.round(file.firstLine), unit: 'ms' },
    ] satisfies BenchRow[]
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}
