/**
 * Front-end QoS on a real guest (docs/block-storage.md, "QoS specs"): a volume hot-plugged with `total_iops_sec`
 * is read by the guest itself, which counts its disk's completed reads (/sys/block/vdb/stat) and the time they took;
 * the guest's own rate obeys the limit. The same reads of a volume without limits go faster than the limit, so the
 * measure can tell. QMP shows the throttle group's limits, and a detach leaves neither the filter nor the group.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { VolumeConnection, VolumeThrottle } from '../../src/contracts/host/compute-driver.js'
import { volumeNames } from '../../src/host/compute/qemu/volumes.js'
import { forEachNewDisk, servedVolume, startVolumeGuest, type VolumeGuest } from '../../src/testkit/qemu-harness.js'
import { realGuestsMissing } from '../../src/testkit/qemu.js'

const missing = realGuestsMissing()
const LIMIT = 20
const READS = 200

/**
 * The guest's measure: for each new disk, no read-ahead (each 4 KiB read is one request), then READS reads; it
 * prints the requests the disk completed and the centiseconds they took.
 */
const MEASURE = forEachNewDisk(`
    echo 0 > $d/queue/read_ahead_kb
    r0=$(awk '{print $1}' $d/stat); t0=$(awk '{print $1 * 100}' /proc/uptime)
    dd if=/dev/$n of=/dev/null bs=4096 count=${READS} 2>/dev/null
    r1=$(awk '{print $1}' $d/stat); t1=$(awk '{print $1 * 100}' /proc/uptime)
    echo "pcc-guest: $n reads $((r1 - r0)) in $((t1 - t0)) cs"
`)

describe('front-end QoS on a real guest', { skip: missing, timeout: 600_000 }, () => {
  let guest: VolumeGuest
  const volume = (throttle?: VolumeThrottle) => servedVolume(guest.exports, guest.work, throttle)
  /** The guest's measured rate of one attached volume (its `round`th measure): reads per second. */
  const measured = async (v: VolumeConnection, round: number): Promise<number> => {
    await guest.driver.attachVolume(guest.serverId, v)
    const match = (await guest.waitConsole(/pcc-guest: vdb reads (\d+) in (\d+) cs/, round + 1))[round]!
    const [reads, cs] = [Number(match[1]), Number(match[2])]
    assert.ok(reads >= READS * 0.9, `each read was one request (${reads})`)
    return reads / (cs / 100)
  }

  before(async () => {
    guest = await startVolumeGuest('qemu-qos', '00000000-0000-4000-8000-000000000a05', MEASURE)
  })
  after(() => guest?.close())

  it(`holds the guest's reads to total_iops_sec=${LIMIT}, and lets them go faster without it`, async (t) => {
    const { driver, serverId, qmp } = guest
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
