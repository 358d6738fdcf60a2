/**
 * From the death of a host to its server's guest running on another host (issue 27): two QEMU hosts on a private
 * Ceph cluster, PCC_LOST_HOST_POLICY=evacuate, a server booted on the first host from a clone of a raw image. The
 * bench kills the first host as a power cut would (SIGKILL of its agent and of its QEMU) and times, from that
 * instant: the evacuation's start (its instance action), the server ACTIVE on the second host, and the guest's first userspace line in
 * its console log on the second host (read every 50 ms). The wait for the host to be declared DOWN is the setting
 * PCC_HOST_DOWN_AFTER_SECONDS (10 s here, 60 s by default, as Nova's service_down_time) and is part of every row.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BenchRow, BenchRun } from './harness.js'
import { until } from '../src/testkit/compute-api.js'
import { startQemuCloud } from '../src/testkit/qemu-cloud.js'
import { killQemusUnder } from '../src/testkit/qemu.js'
import { freshPccPools } from '../src/testkit/ceph.js'
import { cephForGuests, rawGuestImage } from './real-ceph.js'
import { uploadImage } from './guest-io.js'

const DOWN_AFTER_SECONDS = 10
const NANO = '42'
const FIRST_LINE = /pcc-guest: userspace up/

export const run: BenchRun = async () => {
  const cluster = await cephForGuests()
  const pools = await freshPccPools(cluster)
  const work = mkdtempSync(join(tmpdir(), 'pcc-bench-host-loss-'))
  const cloud = await startQemuCloud({
    hosts: 2,
    heartbeatSeconds: 2,
    env: { ...pools.env, PCC_LOST_HOST_POLICY: 'evacuate', PCC_HOST_DOWN_AFTER_SECONDS: String(DOWN_AFTER_SECONDS), PCC_RECONCILE_SECONDS: '2' },
    qemu: { accel: 'auto', vcpus: 2, memory_mb: 2048, disk_gb: 10 },
  })
  try {
    const { api } = cloud
    const imageId = await uploadImage(cloud, await rawGuestImage(work), 'raw', 'bench-raw')
    const [lost, survivor] = cloud.hosts
    const { id } = await api.create({ name: 'survivor', imageRef: imageId, flavorRef: NANO, networks: 'none', availability_zone: `nova:${lost.hostname}` })
    await until('the guest up on the first host', 300_000, async () => {
      const log = join(lost.root, 'var/lib/pcc/instances', id, 'console.log')
      return existsSync(log) && FIRST_LINE.test(readFileSync(log, 'latin1')) ? true : undefined
    }, 200)

    const died = performance.now()
    const diedAt = Date.now()
    await lost.kill()
    await killQemusUnder(lost.root)
    const log = join(survivor.root, 'var/lib/pcc/instances', id, 'console.log')
    let active = 0
    let firstLine = 0
    await until('the guest up on the second host', 600_000, async () => {
      const now = performance.now() - died
      if (!active) {
        const s = await api.server(id)
        if (s?.['OS-EXT-SRV-ATTR:host'] === survivor.hostname && s.status === 'ACTIVE') active = now
      }
      if (!firstLine && existsSync(log) && FIRST_LINE.test(readFileSync(log, 'latin1'))) firstLine = now
      return active && firstLine ? true : undefined
    }, 50)
    // When the control plane decided to evacuate: the action's start (the same machine's clock).
    const actions = (await api.call('GET', `/servers/${id}/os-instance-actions`)).body.instanceActions as { action: string; start_time: string }[]
    const evacuation = actions.find((a) => a.action === 'evacuate')
    if (!evacuation) throw new Error('no evacuate action')
    const decided = Date.parse(`${evacuation.start_time.replace(/Z?$/, 'Z')}`) - diedAt
    const note = `host DOWN after ${DOWN_AFTER_SECONDS} s without heartbeat (agents beat every 2 s); fenced, then rebuilt on its RBD disks`
    return [
      { figure: 'host killed → the evacuation started (its instance action)', value: Math.round(decided), unit: 'ms', note },
      { figure: 'host killed → the server ACTIVE on the other host', value: Math.round(active), unit: 'ms' },
      { figure: 'host killed → the evacuated guest’s first console line', value: Math.round(firstLine), unit: 'ms' },
    ] satisfies BenchRow[]
  } finally {
    await cloud.close()
    await pools.remove()
    rmSync(work, { recursive: true, force: true })
  }
}
