/**
 * Front-end QoS on a real guest (docs/block-storage.md, "QoS specs"): a volume hot-plugged with `total_iops_sec`
 * is read by the guest itself, which counts its disk's completed reads (/sys/block/vdb/stat) and the time they took;
 * the guest's own rate obeys the limit. The same reads of a volume without limits go faster than the limit, so the
 * measure can tell. QMP shows the throttle group's limits, and a detach leaves neither the filter nor the group.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createReadStream, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { GuestSpec, VolumeConnection, VolumeThrottle } from '../../src/contracts/host/compute-driver.js'
import { QemuDriver } from '../../src/host/compute/qemu/qemu-driver.js'
import { QmpClient } from '../../src/host/compute/qemu/qmp.js'
import { volumeNames } from '../../src/host/compute/qemu/volumes.js'
import { ExportManager } from '../../src/host/storage/exports/export-manager.js'
import { metadataFiles } from '../../src/server/metadata/documents.js'
import { servedVolume } from '../../src/testkit/qemu-harness.js'
import { facts, fileImage, guestImage, killQemusUnder, realGuestsMissing } from '../../src/testkit/qemu.js'

const missing = realGuestsMissing()
const LIMIT = 20
const READS = 200

/**
 * The guest's measure (busybox ash): for each new disk, no read-ahead (each 4 KiB read is one request), then
 * READS reads; it prints the requests the disk completed and the centiseconds they took.
 */
const MEASURE = `#!/bin/sh
seen=""
while true; do
  for d in /sys/block/vd[b-z]; do
    [ -e "$d" ] || continue
    n=\${d##*/}
    case " $seen " in *" $n "*) continue ;; esac
    seen="$seen $n"
    echo 0 > $d/queue/read_ahead_kb
    r0=$(awk '{print $1}' $d/stat); t0=$(awk '{print $1 * 100}' /proc/uptime)
    dd if=/dev/$n of=/dev/null bs=4096 count=${READS} 2>/dev/null
    r1=$(awk '{print $1}' $d/stat); t1=$(awk '{print $1 * 100}' /proc/uptime)
    echo "pcc-guest: $n reads $((r1 - r0)) in $((t1 - t0)) cs"
  done
  for n in $seen; do [ -e /sys/block/$n ] || seen=$(echo " $seen " | sed "s/ $n / /"); done
  sleep 1
done
`

describe('front-end QoS on a real guest', { skip: missing, timeout: 600_000 }, () => {
  let work: string
  let driver: QemuDriver
  let exports: ExportManager
  const serverId = '00000000-0000-4000-8000-000000000a05'

  const volume = (throttle?: VolumeThrottle) => servedVolume(exports, work, throttle)
  const waitConsole = async (pattern: RegExp, ms = 180_000): Promise<RegExpExecArray> => {
    const deadline = Date.now() + ms
    let text = ''
    while (Date.now() < deadline) {
      text = await driver.consoleOutput(serverId).catch(() => '')
      const match = pattern.exec(text)
      if (match) return match
      await new Promise((r) => setTimeout(r, 500))
    }
    throw new Error(`${pattern} not seen; console:\n${text.slice(-2000)}`)
  }
  /** The guest's measured rate of one attached volume: reads per second. */
  const measured = async (v: VolumeConnection, round: number): Promise<number> => {
    await driver.attachVolume(serverId, v)
    const all = new RegExp(`pcc-guest: vdb reads (\\d+) in (\\d+) cs`, 'g')
    let match: RegExpExecArray | undefined
    const deadline = Date.now() + 180_000
    while (!match && Date.now() < deadline) {
      const found = [...(await driver.consoleOutput(serverId)).matchAll(all)]
      if (found.length > round) match = found[round] as RegExpExecArray
      else await new Promise((r) => setTimeout(r, 500))
    }
    assert.ok(match, 'the guest measured its reads')
    const [reads, cs] = [Number(match[1]), Number(match[2])]
    assert.ok(reads >= READS * 0.9, `each read was one request (${reads})`)
    return reads / (cs / 100)
  }
  const qmp = async <T>(command: string, args?: Record<string, unknown>): Promise<T> => {
    const client = await QmpClient.connect(join(driver.options.root, 'run/pcc', `${serverId}.qmp`))
    try {
      return await client.execute<T>(command, args)
    } finally {
      client.close()
    }
  }

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'pcc-qemu-qos-'))
    exports = new ExportManager(join(work, 'exports'))
    const image = await guestImage()
    const guest = fileImage('guest-image', image.disk.path, 'qcow2')
    driver = new QemuDriver({
      hostname: 'qemu-qos', root: join(work, 'host'), vcpus: 2, memoryMb: 4096, diskGb: 20, shutdownTimeoutMs: 20_000,
      images: { open: async () => createReadStream(image.disk.path) },
    })
    await driver.start()
    const spec: GuestSpec = {
      serverId, instanceName: 'instance-00000a05', imageId: guest.id, hostname: 'vm', userData: null, image: guest,
      flavor: { id: '1', name: 'm1.tiny', vcpus: 1, ram: 128, disk: 1, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs: {} },
      configDrive: Object.fromEntries(Object.entries(metadataFiles(facts(serverId, MEASURE))).map(([k, v]) => [k, v.toString('base64')])),
    }
    await driver.spawn(spec)
    await waitConsole(/pcc-guest: ready/)
  })
  after(async () => {
    await killQemusUnder(join(work, 'host'))
    await exports.converge([])
    rmSync(work, { recursive: true, force: true })
  })

  it(`holds the guest's reads to total_iops_sec=${LIMIT}, and lets them go faster without it`, async (t) => {
    const free = await volume()
    const freeRate = await measured(free, 0)
    await driver.detachVolume(serverId, free.volumeId)

    const limited = await volume({ total_iops_sec: LIMIT })
    const names = volumeNames(limited.volumeId)
    const limitedRate = await measured(limited, 1)
    t.diagnostic(`the guest's reads: ${freeRate.toFixed(1)}/s without a limit, ${limitedRate.toFixed(1)}/s with total_iops_sec=${LIMIT}`)
    const limits = await qmp<Record<string, number>>('qom-get', { path: `/objects/${names.group}`, property: 'limits' })
    assert.equal(limits['iops-total'], LIMIT)
    // A little over the limit is QEMU's burst allowance (a tenth of a second's worth) and the clock's rounding.
    assert.ok(limitedRate <= LIMIT * 1.25, `the guest read at ${limitedRate.toFixed(1)}/s under a limit of ${LIMIT}/s`)
    assert.ok(freeRate > LIMIT * 2, `without a limit the guest read at ${freeRate.toFixed(1)}/s: the measure tells the limit apart`)

    await driver.detachVolume(serverId, limited.volumeId)
    const nodes = (await qmp<{ 'node-name': string }[]>('query-named-block-nodes', { flat: true })).map((n) => n['node-name'])
    assert.ok(!nodes.includes(names.throttle) && !nodes.includes(names.format), `no node of the volume is left: ${nodes.join(', ')}`)
    const objects = (await qmp<{ name: string }[]>('qom-list', { path: '/objects' })).map((o) => o.name)
    assert.ok(!objects.includes(names.group), 'nor its throttle group')
  })
})
