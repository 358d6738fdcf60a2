/**
 * The metrics history on both dialects (docs/metrics.md): rates from consecutive samples, averages within a step,
 * rings that stay at their fixed size under a soak, samples only for a host's own guests, and deletion.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { DIALECTS } from '../../src/testkit/harness.js'
import { openTestStore, type TestStore } from '../../src/testkit/store.js'
import { deleteHistory, latestSample, readHistory, recordSamples, TIERS } from '../../src/server/metrics/metric-history.js'
import type { GuestSample, HostSample } from '../../src/contracts/host/metrics.js'
import type { Db } from '../../src/server/storage/store.js'
import type { ServerTable } from '../../src/server/storage/tables/compute.js'

/** A round start time, so steps of every tier begin at known samples. */
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % 3_600_000)

async function addServer(db: Db, hostId: string): Promise<string> {
  const row = serverRow(hostId)
  await db.insertInto('servers').values(row).execute()
  return row.id
}

/** Many servers on a host, inserted a few hundred a statement. */
async function addServers(db: Db, hostId: string, count: number): Promise<string[]> {
  const rows = Array.from({ length: count }, () => serverRow(hostId))
  for (let start = 0; start < count; start += 500) await db.insertInto('servers').values(rows.slice(start, start + 500)).execute()
  return rows.map((r) => r.id)
}

/** Counted, not random: 10,000 random ids in two billion collide in one run of forty (birthday bound). */
let lastDisplayId = 0

function serverRow(hostId: string): ServerTable {
  const id = randomUUID()
  return {
    id, rev: 0, display_id: ++lastDisplayId, name: 'metered', description: null, project_id: 'p1', user_id: 'u1',
    host_id: hostId, host: 'h', node: 'h', vm_state: 'active', task_state: null, power_state: 1,
    flavor: '{}', old_flavor: null, new_flavor: null, image_id: null, key_name: null, key_data: null, metadata: '{}',
    access_ip_v4: '', access_ip_v6: '', availability_zone: null, pinned_availability_zone: null, config_drive: 0, disk_config: 'MANUAL',
    user_data: null, hostname: null, locked: 0, locked_by: null, locked_reason: null, launch_index: 0, reservation_id: 'r-1',
    root_device_name: '/dev/vda', kernel_id: null, ramdisk_id: null, progress: 0, trusted_image_certificates: null, scheduler_hints: null,
    security_groups: '[]', requested_networks: '"auto"', block_devices: '[]', created_at: T0, updated_at: T0, launched_at: T0, terminated_at: null, deleted_at: null, deleted: 0,
  }
}

function guest(serverId: string, at: number, seconds: number, busyVcpus = 1, memoryUsedKb = 262_144): GuestSample {
  return {
    serverId, at, state: 'running', vcpus: 2, cpuNs: Math.round(seconds * busyVcpus * 1e9), uptimeS: seconds, memoryMaxKb: 524_288, memoryUsedKb,
    disks: [{ name: 'vda', rdBytes: seconds * 1000, wrBytes: seconds * 500, rdReqs: seconds, wrReqs: seconds, errors: 0 }],
    nics: [{ mac: 'fa:16:3e:00:00:01', rxBytes: seconds * 100, txBytes: seconds * 50, rxPackets: seconds, txPackets: seconds, rxErrors: 0, txErrors: 0, rxDrop: 0, txDrop: 0 }],
  }
}

function host(at: number, seconds: number): HostSample {
  return { at, cpuBusy: seconds * 100, cpuTotal: seconds * 400, cpus: 4, memoryTotalKb: 8_000_000, memoryUsedKb: 2_000_000, diskUsedBytes: 5e9, diskTotalBytes: 1e11, guests: 1, accelerator: 'kvm' }
}

const rows = async (db: Db, subjectId: string, tier: number) =>
  Number((await db.selectFrom('metric_slots').select((eb) => eb.fn.countAll().as('n')).where('subject_id', '=', subjectId).where('tier', '=', tier).executeTakeFirstOrThrow()).n)

for (const dialect of DIALECTS) {
  describe(`metrics history (${dialect})`, () => {
    let t: TestStore
    let db: Db
    before(async () => {
      t = await openTestStore(dialect)
      db = t.store.db
    })
    after(() => t.close())

    it('turns counters into rates and keeps gauges; the first sample has no rates', async () => {
      const hostId = randomUUID()
      const id = await addServer(db, hostId)
      await recordSamples(db, hostId, { host: host(T0, 100), guests: [guest(id, T0, 100)] })
      await recordSamples(db, hostId, { host: host(T0 + 10_000, 110), guests: [guest(id, T0 + 10_000, 110, 1.5)] })
      const { step, points } = await readHistory(db, id, 'hour', T0 + 20_000)
      assert.equal(step, 10_000)
      assert.equal(points.length, 2)
      assert.equal(points[0].cpu, null)
      assert.equal(points[0].memory, 262_144 * 1024)
      // From 100 s of one busy vCPU to 110 s at 1.5: 165 - 100 = 65 s of CPU in 10 s.
      assert.ok(Math.abs(points[1].cpu! - 6.5) < 1e-9, `cpu ${points[1].cpu}`)
      assert.equal(points[1].disk_read, 1000)
      assert.equal(points[1].disk_write, 500)
      assert.equal(points[1].net_rx, 100)
      assert.equal(points[1].net_tx, 50)
      const hostPoints = (await readHistory(db, hostId, 'hour', T0 + 20_000)).points
      assert.equal(hostPoints[1].cpu, 1, 'a quarter of 4 CPUs busy')
      assert.equal(hostPoints[1].guests, 1)
      assert.equal((await latestSample<GuestSample>(db, id))?.at, T0 + 10_000)
    })

    it("writes a heartbeat's batch at once: many guests, and a guest sent twice counts once (its last sample)", async () => {
      const hostId = randomUUID()
      // 10,000 guests: their rings (3 rows each) and their latest samples are far past one statement's bound
      // parameters (SQLite allows 32,766): the batch is split, and every guest still lands.
      const ids = await addServers(db, hostId, 10_000)
      const first = ids[0]
      const repeated = [guest(first, T0 + 5_000, 100, 1, 100_000), guest(first, T0 + 5_000, 100, 1, 200_000)]
      await recordSamples(db, hostId, { host: host(T0 + 5_000, 100), guests: [...repeated, ...ids.slice(1).map((id) => guest(id, T0 + 5_000, 100))] })
      assert.equal((await readHistory(db, first, 'hour', T0 + 20_000)).points[0].memory, 200_000 * 1024)
      for (const id of [ids[1], ids[9_999]]) for (const tier of [0, 1, 2]) assert.equal(await rows(db, id, tier), 1, `${id} tier ${tier}`)
      assert.equal((await latestSample<GuestSample>(db, ids[9_999]))?.at, T0 + 5_000)
    })

    it('averages the samples of one step in the coarser tiers', async () => {
      const hostId = randomUUID()
      const id = await addServer(db, hostId)
      const memories = [100_000, 200_000, 600_000]
      for (const [i, m] of memories.entries()) await recordSamples(db, hostId, { host: host(T0 + i * 10_000, i * 10), guests: [guest(id, T0 + i * 10_000, i * 10, 1, m)] })
      const day = (await readHistory(db, id, 'day', T0 + 60_000)).points
      assert.equal(day.length, 1, 'one 5-minute step')
      assert.equal(day[0].at, T0)
      assert.ok(Math.abs(day[0].memory! - (300_000 * 1024)) < 1e-6, `memory ${day[0].memory}`)
      // The first sample had no rate: the average is of the two that had one.
      assert.ok(Math.abs(day[0].cpu! - 1) < 1e-9)
      const slot = await db.selectFrom('metric_slots').select('samples').where('subject_id', '=', id).where('tier', '=', 1).executeTakeFirstOrThrow()
      assert.equal(Number(slot.samples), 3)
      const year = (await readHistory(db, id, 'year', T0 + 60_000)).points
      assert.equal(year.length, 1)
    })

    it('keeps each ring at its fixed size under a soak of samples', async () => {
      const hostId = randomUUID()
      const ids = [await addServer(db, hostId), await addServer(db, hostId)]
      let at = T0
      let seconds = 0
      const beat = async (stepMs: number) => {
        at += stepMs
        seconds += stepMs / 1000
        await recordSamples(db, hostId, { host: host(at, seconds), guests: ids.map((id) => guest(id, at, seconds)) })
      }
      for (let i = 0; i < TIERS[0].slots + 100; i++) await beat(10_000)
      for (const id of [...ids, hostId]) assert.equal(await rows(db, id, 0), TIERS[0].slots, 'the 10 s ring is full, not longer')
      for (let i = 0; i < TIERS[1].slots + 50; i++) await beat(300_000)
      for (const id of [...ids, hostId]) {
        assert.equal(await rows(db, id, 0), TIERS[0].slots)
        assert.equal(await rows(db, id, 1), TIERS[1].slots, 'the 5 min ring is full, not longer')
        assert.ok((await rows(db, id, 2)) <= TIERS[2].slots)
      }
      // The ring holds the newest week: the hour's read shows only the last hour's steps.
      const week = (await readHistory(db, ids[0], 'week', at + 1)).points
      assert.ok(week.length <= TIERS[1].slots && week.length > TIERS[1].slots - 2, `${week.length} points`)
      assert.ok(week.every((p, i) => i === 0 || p.at > week[i - 1].at))
      assert.equal((await readHistory(db, ids[0], 'hour', at + 1)).points.length, 12, 'the hour holds the last twelve samples (they are 5 min apart)')
    })

    it("takes a host's samples only for its own guests", async () => {
      const hostId = randomUUID()
      const otherHost = randomUUID()
      const own = await addServer(db, hostId)
      const foreign = await addServer(db, otherHost)
      const taken = await recordSamples(db, hostId, { host: host(T0, 1), guests: [guest(own, T0, 1), guest(foreign, T0, 1)] })
      assert.equal(taken, 1)
      assert.equal(await latestSample(db, foreign), undefined)
      assert.equal(await rows(db, foreign, 0), 0)
    })

    it('forgets a deleted subject entirely', async () => {
      const hostId = randomUUID()
      const id = await addServer(db, hostId)
      await recordSamples(db, hostId, { host: host(T0, 1), guests: [guest(id, T0, 1)] })
      await deleteHistory(db, id)
      assert.equal(await latestSample(db, id), undefined)
      for (const tier of [0, 1, 2]) assert.equal(await rows(db, id, tier), 0)
      assert.ok((await rows(db, hostId, 0)) > 0, "the host's history stays")
    })
  })
}
