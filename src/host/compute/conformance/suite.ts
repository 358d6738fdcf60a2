/**
 * The compute driver conformance suite: what the conductor may rely on from every ComputeDriver, run over each
 * implementation with the same tests (simulated-conformance.test.ts, qemu-conformance.test.ts), as the storage
 * suite runs over both dialects. Every operation, its repetition (the conductor repeats a call after a crash, so a
 * second call must find the work done), and its errors.
 *
 * A harness gives the suite two fresh hosts of its kind, guest specs, and the guest's own evidence: how many times
 * it booted and that it keeps running (for QEMU, the `pcc-guest:` lines the guest prints on its console).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { POWER } from '../../../contracts/host/compute-driver.js'
import { DriverError, isLiveMigrationCancelled, type ComputeDriver, type GuestNic, type GuestSpec, type LiveMigrationHandover, type VolumeConnection } from '../../../contracts/host/compute-driver.js'
import type { FlavorSnapshot } from '../../../contracts/host/compute-driver.js'

export interface DriverHarness {
  /** Two hosts of this kind that can migrate guests between them. */
  hosts(): Promise<[ComputeDriver, ComputeDriver]>
  spec(serverId: string, flavor?: Partial<FlavorSnapshot>): GuestSpec
  /** Readies `driver` so that spawning `spec` fails (a disk that is not one, an injected fault). */
  failingSpawn(driver: ComputeDriver, serverId: string): GuestSpec
  /** Resolves once the guest's console shows its own disk's boot number `n` completed (the last boot it shows). */
  booted(driver: ComputeDriver, serverId: string, n: number): Promise<void>
  /** The number of the last boot of its own disk the guest's console shows. */
  boots(driver: ComputeDriver, serverId: string): Promise<number>
  /** Resolves once the guest shows it runs on from where it was (no restart); a no-op where guests cannot show it. */
  continues(driver: ComputeDriver, serverId: string): Promise<void>
  /**
   * Makes this host's live migrations (as their source) last long enough to be cancelled or forced while they run
   * (seconds; `false`: as usual again).
   */
  slowLiveMigrations(driver: ComputeDriver, slow: boolean): void
  /** What the host still holds of a guest (processes, files); empty when nothing. */
  leftovers(driver: ComputeDriver, serverId: string): Promise<string[]>
  /**
   * A NIC guests of these hosts can get, as the conductor hands it over: its port bound to the hosts (on QEMU its tap
   * made as the host network makes it).
   */
  nic(): Promise<GuestNic>
  /** A volume guests of these hosts can attach (on QEMU a real NBD export), as the conductor hands it over. */
  volume(): Promise<VolumeConnection>
  /**
   * A queued image for a snapshot to go into, and the bytes it got, for drivers that store a snapshot themselves
   * (`stored`: an agent uploads from its host); others hand the bytes back and need neither.
   */
  images?: { queued(): Promise<string>; bytes(imageId: string): Promise<Buffer> }
  /** Whether a guest's disk (and so its boot count) moves with a cold migration (simulated guests have none). */
  disksMove: boolean
  /** The disk format of a snapshot (default qcow2; raw for disks in Ceph). */
  snapshotFormat?: 'qcow2' | 'raw'
  /**
   * For disks that outlive their host (in Ceph): the names of a guest's disks in the shared store. Moves then keep
   * them, `forget` leaves them, only `destroy` removes them, and an evacuated guest runs on its own disk.
   */
  sharedDisks?(serverId: string): Promise<string[]>
  /**
   * Ends a guest's QEMU as a host's death does (SIGKILL, nothing cleaned up), then fences it as the control plane
   * does before it evacuates the guest (docs/ceph.md, "Host loss"), for the evacuation onto shared disks.
   */
  killGuest?(driver: ComputeDriver, serverId: string): Promise<void>
  close(): Promise<void>
}

const power = async (d: ComputeDriver, id: string) => (await d.info(id))?.powerState

/** The guests a host lists, once its report has caught up (the agent path answers from heartbeats). */
async function listsGuests(d: ComputeDriver, expected: string[], withinMs = 15_000): Promise<void> {
  const deadline = Date.now() + withinMs
  let ids = (await d.listGuests()).map((g) => g.serverId).sort()
  while (JSON.stringify(ids) !== JSON.stringify([...expected].sort()) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    ids = (await d.listGuests()).map((g) => g.serverId).sort()
  }
  assert.deepEqual(ids, [...expected].sort())
}

/** Asks until the answer is true (a live migration's source starts sending a moment after it was asked to). */
async function untilTrue(what: string, ask: () => Promise<boolean>, withinMs = 30_000): Promise<void> {
  const deadline = Date.now() + withinMs
  while (!(await ask())) {
    if (Date.now() > deadline) assert.fail(`${what}: still false after ${withinMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

async function rejectsDriverError(p: Promise<unknown>, pattern?: RegExp, code?: number): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof DriverError, `a DriverError, not ${String(err)}`)
    if (pattern) assert.match(err.message, pattern)
    if (code !== undefined) assert.equal(err.code, code)
    return true
  })
}

/**
 * Waits until the guest's console shows exactly `expected` for the NIC with `mac` (`nic <mac> added` / `removed`:
 * the pcc guest image prints them when a NIC appears or goes, the simulated driver likewise), and no more.
 */
async function nicEvents(d: ComputeDriver, id: string, mac: string, expected: string[], withinMs = 60_000): Promise<void> {
  const pattern = new RegExp(`nic ${mac} (added|removed)`, 'g')
  const seen = async () => [...(await d.consoleOutput(id)).matchAll(pattern)].map((m) => m[1])
  await untilTrue(`the guest to show NIC ${mac} ${expected.join(', ')}`, async () => (await seen()).length >= expected.length, withinMs)
  assert.deepEqual(await seen(), expected)
}

/** `sharedDisks`: the harness's guests have disks that outlive their host (it gives `sharedDisks` and `killGuest`). */
export function driverConformance(name: string, makeHarness: () => Promise<DriverHarness>, options: { skip?: string | false; sharedDisks?: boolean } = {}): void {
  describe(`compute driver conformance (${name})`, { skip: options.skip }, () => {
    let h: DriverHarness
    let a: ComputeDriver
    let b: ComputeDriver
    before(async () => {
      h = await makeHarness()
      ;[a, b] = await h.hosts()
    })
    after(async () => {
      for (const d of [a, b]) for (const g of (await d?.listGuests()) ?? []) await d.destroy(g.serverId).catch(() => {})
      await h?.close()
    })

    describe('one guest through its life', () => {
      const id = '00000000-0000-4000-8000-00000000c001'

      it('spawns it; a second spawn finds it running and changes nothing', async () => {
        const info = await a.spawn(h.spec(id))
        assert.equal(info.powerState, POWER.RUNNING)
        assert.equal(info.serverId, id)
        await h.booted(a, id, 1)
        const again = await a.spawn(h.spec(id))
        assert.equal(again.powerState, POWER.RUNNING)
        await h.continues(a, id)
        assert.equal(await h.boots(a, id), 1, 'not booted again')
        await listsGuests(a, [id])
        const cap = await a.capacity()
        assert.ok(cap.vcpus > 0 && cap.memoryMb > 0 && cap.hypervisorType.length > 0)
      })

      it('answers its console output, whole or its last lines', async () => {
        const all = await a.consoleOutput(id)
        assert.ok(all.split('\n').length > 3)
        const two = await a.consoleOutput(id, 2)
        assert.ok(two.split('\n').filter(Boolean).length <= 2)
        assert.ok(all.includes(two.trim().split('\n')[0]))
      })

      it('samples it: counters that only grow, CPU time while it runs, memory within its flavor', async () => {
        const sampleOf = async () => (await a.sampleGuests()).find((g) => g.serverId === id)
        const first = await sampleOf()
        assert.ok(first, 'the running guest is sampled')
        await new Promise((resolve) => setTimeout(resolve, 1500))
        const second = await sampleOf()
        assert.ok(second)
        assert.equal(second.state, 'running')
        assert.equal(second.vcpus, h.spec(id).flavor.vcpus)
        assert.equal(second.memoryMaxKb, h.spec(id).flavor.ram * 1024)
        assert.ok(second.memoryUsedKb > 0 && second.memoryUsedKb <= second.memoryMaxKb, `memory used ${second.memoryUsedKb} KiB`)
        assert.ok(second.cpuNs > first.cpuNs, `CPU time grows while the guest runs (${first.cpuNs} → ${second.cpuNs})`)
        assert.ok(second.disks.length > 0, 'its disks are sampled')
        for (const d of second.disks) {
          const before = first.disks.find((x) => x.name === d.name)
          if (before) assert.ok(d.rdBytes >= before.rdBytes && d.wrBytes >= before.wrBytes, `disk ${d.name} counters only grow`)
        }
      })

      it('pauses and unpauses, each twice; the guest runs on from where it was', async () => {
        await a.pause(id)
        assert.equal(await power(a, id), POWER.PAUSED)
        await a.pause(id)
        await rejectsDriverError(a.reboot(id, 'SOFT'), /not running/)
        await a.unpause(id)
        await a.unpause(id)
        assert.equal(await power(a, id), POWER.RUNNING)
        await h.continues(a, id)
        assert.equal(await h.boots(a, id), 1)
      })

      it('suspends and resumes, each twice, keeping the guest as it was', async () => {
        await a.suspend(id)
        assert.equal(await power(a, id), POWER.SUSPENDED)
        await a.suspend(id)
        await rejectsDriverError(a.pause(id), /not running/)
        await a.resume(id)
        await a.resume(id)
        assert.equal(await power(a, id), POWER.RUNNING)
        await h.continues(a, id)
        assert.equal(await h.boots(a, id), 1, 'resumed, not booted')
      })

      it('powers off and on, each twice; a stopped guest neither pauses, soft-reboots nor quiesces', async () => {
        await a.powerOff(id)
        assert.equal(await power(a, id), POWER.SHUTDOWN)
        await a.powerOff(id)
        await rejectsDriverError(a.pause(id), /not running/)
        await rejectsDriverError(a.reboot(id, 'SOFT'), /not running/)
        await rejectsDriverError(a.quiesce(id), /not running/, 409)
        await a.powerOn(id)
        assert.equal(await power(a, id), POWER.RUNNING)
        await h.booted(a, id, 2)
        await a.powerOn(id)
        await h.continues(a, id)
        assert.equal(await h.boots(a, id), 2)
      })

      it('attaches a NIC and detaches it, each twice; the guest sees it come and go once and runs on', async () => {
        const nic = await h.nic()
        const boots = await h.boots(a, id)
        await a.attachNic(id, nic)
        await a.attachNic(id, nic)
        await nicEvents(a, id, nic.macAddress, ['added'])
        await h.continues(a, id)
        await a.detachNic(id, nic.portId)
        await a.detachNic(id, nic.portId)
        await nicEvents(a, id, nic.macAddress, ['added', 'removed'])
        await h.continues(a, id)
        assert.equal(await h.boots(a, id), boots, 'plugged and unplugged without a restart')
        assert.equal(await power(a, id), POWER.RUNNING)
      })

      it('reboots softly and hard, each a new boot', async () => {
        await a.reboot(id, 'SOFT')
        await h.booted(a, id, 3)
        await a.reboot(id, 'HARD')
        await h.booted(a, id, 4)
        assert.equal(await power(a, id), POWER.RUNNING)
      })

      it('rescues and unrescues, each twice', async () => {
        await a.rescue(id, null)
        await a.rescue(id, null)
        assert.equal((await a.info(id))!.rescued, true)
        assert.equal(await power(a, id), POWER.RUNNING)
        await a.unrescue(id)
        await a.unrescue(id)
        assert.equal((await a.info(id))!.rescued, false)
        await h.booted(a, id, 5)
      })

      it('copies its root disk out as an image', async () => {
        // As the conductor calls it: with the queued image the bytes are for.
        const imageId = (await h.images?.queued()) ?? '00000000-0000-4000-8000-0000000000f1'
        const snap = await a.snapshot(id, 'snap', imageId)
        const format = h.snapshotFormat ?? 'qcow2'
        assert.equal(snap.diskFormat, format)
        assert.equal(snap.containerFormat, 'bare')
        // A raw disk is as long as the root disk: only its head is kept.
        let head = Buffer.alloc(0)
        let length = 0
        for await (const c of snap.data) {
          if (head.length < 4096) head = Buffer.concat([head, c as Buffer])
          length += (c as Buffer).length
        }
        assert.ok(!snap.stored || h.images, 'a driver that stores the bytes itself has a harness that reads them')
        const bytes = snap.stored ? await h.images!.bytes(imageId) : head
        if (format === 'qcow2') assert.equal(bytes.subarray(0, 4).toString('latin1'), 'QFI\xfb', 'a qcow2 header')
        else {
          assert.equal(bytes.readUInt16BE(510), 0x55aa, 'the boot sector of the guest image')
          assert.equal(length, h.spec(id).flavor.disk * 1024 ** 3, 'the whole root disk')
        }
        assert.equal(await power(a, id), POWER.RUNNING, 'the guest runs on')
      })

      it('quiesces its file systems when it can, else says why (409); thaws them, twice; the guest runs on', async () => {
        // A guest with an agent freezes (a simulated guest, a QEMU guest of an image with hw_qemu_guest_agent=yes);
        // one without cannot be quiesced, and has nothing to thaw.
        await a.quiesce(id).catch((err: unknown) => {
          assert.ok(err instanceof DriverError && err.code === 409 && /guest agent/.test(err.message), `a 409 naming the guest agent, not ${String(err)}`)
        })
        await a.unquiesce(id)
        await a.unquiesce(id)
        assert.equal(await power(a, id), POWER.RUNNING)
        await h.continues(a, id)
      })

      it('sets the admin password when it can, else says why', async () => {
        if (a.capabilities.supportsSetAdminPassword) await a.setAdminPassword(id, 'n3w-pass')
        else await rejectsDriverError(a.setAdminPassword(id, 'n3w-pass'), /password/, 409)
      })

      it('attaches and detaches a volume, each twice', async () => {
        const volume = await h.volume()
        await a.attachVolume(id, volume)
        await a.attachVolume(id, volume)
        assert.deepEqual((await a.info(id))!.volumes, [volume.volumeId])
        await a.detachVolume(id, volume.volumeId)
        await a.detachVolume(id, volume.volumeId)
        assert.deepEqual((await a.info(id))!.volumes, [])
      })


      it('rebuilds it: a new first boot', async () => {
        await a.rebuild(h.spec(id))
        assert.equal(await power(a, id), POWER.RUNNING)
        await h.booted(a, id, 1)
      })

      it('destroys it: nothing left; a second destroy is fine; it is gone for every operation', async () => {
        if (h.sharedDisks) assert.notDeepEqual(await h.sharedDisks(id), [])
        await a.destroy(id)
        assert.equal(await a.info(id), undefined)
        assert.deepEqual(await h.leftovers(a, id), [])
        if (h.sharedDisks) assert.deepEqual(await h.sharedDisks(id), [], 'its disks in the shared store are gone')
        await a.destroy(id)
        await a.forget(id)
        for (const op of [() => a.powerOn(id), () => a.reboot(id, 'HARD'), () => a.pause(id), () => a.consoleOutput(id), () => a.snapshot(id, 'x'), () => a.quiesce(id)]) {
          await rejectsDriverError(op(), /could not be found/, 404)
        }
        await listsGuests(a, [])
      })
    })

    describe('moving guests between hosts', () => {
      const cold = '00000000-0000-4000-8000-00000000c002'
      const live = '00000000-0000-4000-8000-00000000c003'
      const evac = '00000000-0000-4000-8000-00000000c004'
      const resized = '00000000-0000-4000-8000-00000000c005'
      const aborted = '00000000-0000-4000-8000-00000000c007'
      const big = { id: '2', name: 'm1.bigger', disk: 2 }

      it('migrates cold to another host, reverts to the source, migrates again and confirms', async () => {
        await a.spawn(h.spec(cold))
        await h.booted(a, cold, 1)
        await a.migrateDiskAndPowerOff(cold, h.spec(cold, big).flavor)
        assert.equal(await power(a, cold), POWER.SHUTDOWN, 'the source copy is kept, off, until confirmed')
        await b.finishMigration(h.spec(cold, big), true)
        assert.equal(await power(b, cold), POWER.RUNNING)
        assert.equal((await b.info(cold))!.diskGb, 2)
        await h.booted(b, cold, h.disksMove ? 2 : 1)
        // Revert: the destination lets go, the source starts its copy again.
        await b.forget(cold)
        assert.deepEqual(await h.leftovers(b, cold), [])
        await a.finishMigration(h.spec(cold), true)
        assert.equal(await power(a, cold), POWER.RUNNING)
        // The reverted guest counts this boot on its disk before it moves again: a move while it is still booting
        // would carry the count of the boot before (a loaded machine's TCG boot outlasts the calls above).
        if (h.disksMove) await h.booted(a, cold, 2)
        // Again, and confirm: the source's copy goes.
        await a.migrateDiskAndPowerOff(cold, h.spec(cold, big).flavor)
        await b.finishMigration(h.spec(cold, big), false)
        assert.equal(await power(b, cold), POWER.SHUTDOWN, 'finished without powering on')
        await b.powerOn(cold)
        await a.beginStep(cold, 'resize_confirming')
        await a.forget(cold)
        assert.equal(await a.info(cold), undefined)
        assert.deepEqual(await h.leftovers(a, cold), [])
        if (h.sharedDisks) assert.deepEqual(await h.sharedDisks(cold), [`${cold}_disk`], 'the source let go of the guest, not of its disk')
        await h.booted(b, cold, h.disksMove ? 3 : 1)
        await b.destroy(cold)
      })

      it('resizes on the same host and reverts there', async () => {
        await a.spawn(h.spec(resized))
        await h.booted(a, resized, 1)
        await a.migrateDiskAndPowerOff(resized, h.spec(resized, big).flavor, true)
        await a.finishMigration(h.spec(resized, big), true)
        assert.equal((await a.info(resized))!.diskGb, 2)
        await h.booted(a, resized, 2)
        await a.finishMigration(h.spec(resized), true)
        assert.equal((await a.info(resized))!.diskGb, 1)
        await rejectsDriverError(a.migrateDiskAndPowerOff(resized, h.spec(resized, { disk: 0.5 }).flavor), /resize disk down|too small|smaller/i)
        await a.destroy(resized)
      })

      it('migrates live to another host: the guest never stops or reboots, and the source holds nothing', async () => {
        await a.spawn(h.spec(live))
        await h.booted(a, live, 1)
        // The conductor's sequence (src/server/conductor/live-migration.ts), each step repeated as after a crash.
        const handle = await b.prepareLiveMigration(h.spec(live))
        assert.equal(typeof JSON.parse(JSON.stringify(handle)).driver, 'string', 'the handle is JSON and names its driver')
        const handover = JSON.parse(JSON.stringify(await a.liveMigrateTo(live, handle))) as LiveMigrationHandover
        await b.finishLiveMigration(live, handover)
        await b.finishLiveMigration(live, handover)
        await a.forget(live)
        await a.forget(live)
        assert.equal(await a.info(live), undefined)
        assert.deepEqual(await h.leftovers(a, live), [])
        assert.equal(await power(b, live), POWER.RUNNING)
        await h.continues(b, live)
        assert.equal(await h.boots(b, live), 1, 'no second boot')
        await b.destroy(live)
      })

      it('aborts a live migration the destination prepared: nothing stays there, the guest runs on at the source', async () => {
        await a.spawn(h.spec(aborted))
        await h.booted(a, aborted, 1)
        await b.prepareLiveMigration(h.spec(aborted))
        await b.abortLiveMigration(aborted)
        await b.abortLiveMigration(aborted)
        assert.equal(await b.info(aborted), undefined)
        assert.deepEqual(await h.leftovers(b, aborted), [])
        assert.equal(await power(a, aborted), POWER.RUNNING)
        await h.continues(a, aborted)
        assert.equal(await h.boots(a, aborted), 1, 'no second boot')
        await a.destroy(aborted)
      })

      it('cancels a live migration under way: the send fails as cancelled, the guest runs on at the source; with none under way, nothing', async () => {
        assert.equal(await a.cancelLiveMigration(aborted), false, 'no such guest: nothing to cancel')
        await a.spawn(h.spec(aborted))
        await h.booted(a, aborted, 1)
        assert.equal(await a.cancelLiveMigration(aborted), false, 'no migration under way: nothing done')
        assert.equal(await a.forceCompleteLiveMigration(aborted), false)
        assert.equal(await power(a, aborted), POWER.RUNNING)
        h.slowLiveMigrations(a, true)
        try {
          const handle = await b.prepareLiveMigration(h.spec(aborted))
          const sending = a.liveMigrateTo(aborted, handle)
          sending.catch(() => {})
          await untilTrue('cancel', () => a.cancelLiveMigration(aborted))
          await assert.rejects(sending, (err: unknown) => {
            assert.ok(isLiveMigrationCancelled(err), `a cancelled migration's error, not ${String(err)}`)
            return true
          })
          await b.abortLiveMigration(aborted)
        } finally {
          h.slowLiveMigrations(a, false)
        }
        assert.equal(await a.cancelLiveMigration(aborted), false, 'cancelled already: nothing more')
        assert.equal(await power(a, aborted), POWER.RUNNING)
        await h.continues(a, aborted)
        assert.equal(await h.boots(a, aborted), 1, 'no second boot')
        assert.equal(await b.info(aborted), undefined)
        assert.deepEqual(await h.leftovers(b, aborted), [])
        await a.destroy(aborted)
      })

      it('force-completes a live migration under way: the guest arrives and runs at the destination, without a reboot', async () => {
        await a.spawn(h.spec(live))
        await h.booted(a, live, 1)
        h.slowLiveMigrations(a, true)
        let handover: LiveMigrationHandover
        try {
          const handle = await b.prepareLiveMigration(h.spec(live))
          const sending = a.liveMigrateTo(live, handle)
          sending.catch(() => {})
          await untilTrue('force-complete', () => a.forceCompleteLiveMigration(live))
          // Asked again while it converges, or after: no harm either way.
          await a.forceCompleteLiveMigration(live)
          handover = JSON.parse(JSON.stringify(await sending)) as LiveMigrationHandover
        } finally {
          h.slowLiveMigrations(a, false)
        }
        await b.finishLiveMigration(live, handover)
        await a.forget(live)
        assert.equal(await a.forceCompleteLiveMigration(live), false, 'gone from the source: nothing to force')
        assert.equal(await power(b, live), POWER.RUNNING, 'paused on the source, running at the destination')
        await h.continues(b, live)
        assert.equal(await h.boots(b, live), 1, 'no second boot')
        await b.destroy(live)
      })

      it('refuses to send a guest to a handle of another driver, and the guest runs on', async () => {
        await a.spawn(h.spec(aborted))
        await rejectsDriverError(a.liveMigrateTo(aborted, { driver: 'no-such-driver' }), /no-such-driver/, 409)
        assert.equal(await power(a, aborted), POWER.RUNNING)
        await a.destroy(aborted)
      })

      it('evacuates a guest to another host (rebuilt there), twice', async () => {
        await b.evacuateTo(h.spec(evac), true)
        await b.evacuateTo(h.spec(evac), true)
        assert.equal(await power(b, evac), POWER.RUNNING)
        await h.booted(b, evac, 1)
        await b.destroy(evac)
      })

      if (options.sharedDisks) it('evacuates a guest whose host died onto its own disk; the host coming back leaves it alone', async () => {
        await a.spawn(h.spec(evac))
        await h.booted(a, evac, 1)
        await h.killGuest!(a, evac)
        await b.evacuateTo(h.spec(evac), true)
        assert.equal(await power(b, evac), POWER.RUNNING)
        await h.booted(b, evac, 2)
        // The dead host's agent comes back and is told the guest is no longer its own: it keeps the disk.
        await a.forget(evac)
        assert.deepEqual(await h.leftovers(a, evac), [])
        await h.continues(b, evac)
        await b.destroy(evac)
      })
    })

    describe('failures', () => {
      it('fails a spawn it cannot do with a DriverError, leaving nothing behind', async () => {
        const id = '00000000-0000-4000-8000-00000000c006'
        await rejectsDriverError(a.spawn(h.failingSpawn(a, id)))
        assert.equal(await a.info(id), undefined)
        assert.deepEqual(await h.leftovers(a, id), [])
      })
    })
  })
}
