/**
 * Every lifecycle action on one QEMU host, through the compute API, with the guest's own console as the evidence:
 * a stop is the guest powering itself off on the ACPI button, a start or a reboot is a new boot on its disk, a
 * pause or a suspend leaves it counting where it was, a rescue boots another disk, a rebuild starts a new disk,
 * a snapshot boots as a new server that shows the file the first guest wrote, and a guest that powers itself off
 * is SHUTOFF after reconciliation.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { until } from '../../src/testkit/compute-api.js'
import { defaultImageName } from '../../src/server/image/default-image.js'
import { lastBoot, qemuLeftovers, realGuestsMissing } from '../../src/testkit/qemu.js'
import { startQemuCloud, type QemuCloud } from '../../src/testkit/qemu-cloud.js'
import { acts, b64, booted, consoleLog, NANO, rests, runsOn, sees, TICKING_WRITER } from './helpers.js'

const missing = realGuestsMissing()

describe('lifecycle of a real guest on one host', { skip: missing, timeout: 1_200_000 }, () => {
  let cloud: QemuCloud
  let image: string
  let vm: string
  before(async () => {
    cloud = await startQemuCloud({ hosts: 1 })
    image = (await cloud.api.other('GET', `/image/v2/images?name=${defaultImageName()}`)).body.images[0].id
  })
  after(async () => {
    await cloud?.close()
  })
  const act = (id: string, action: string, body: unknown = null, expected = 202) => acts(cloud.api, id, action, body, expected)

  it('boots', async () => {
    ;({ id: vm } = await cloud.api.create({ name: 'life', imageRef: image, flavorRef: NANO, networks: 'none', user_data: b64(TICKING_WRITER) }))
    await rests(cloud.api, vm, 'ACTIVE')
    await booted(cloud.api, vm, 1)
  })

  it('refuses to set the admin password (no guest agent) and leaves the server as it was, with the reason', async () => {
    const r = await act(vm, 'changePassword', { adminPass: 'n3w-pass-w0rd' })
    await until('the action finished', 30_000, async () => ((await cloud.api.instanceAction(vm, r.requestId)).events?.[0]?.finish_time ? true : undefined), 250)
    await rests(cloud.api, vm, 'ACTIVE')
    const action = await cloud.api.instanceAction(vm, r.requestId)
    assert.equal(action.message, 'Error')
    assert.match(JSON.stringify(action.events), /QEMU guest agent/)
  })

  it('stops gracefully (the guest powers itself off) and starts again: a second boot', async () => {
    await act(vm, 'os-stop')
    const off = await rests(cloud.api, vm, 'SHUTOFF')
    assert.equal(off['OS-EXT-STS:power_state'], 4)
    assert.match(await consoleLog(cloud.api, vm), /pcc-guest: power button: powering off/)
    await act(vm, 'os-start')
    await rests(cloud.api, vm, 'ACTIVE')
    await booted(cloud.api, vm, 2)
  })

  it('reboots softly and hard: a new boot each', async () => {
    await act(vm, 'reboot', { type: 'SOFT' })
    await rests(cloud.api, vm, 'ACTIVE')
    const soft = await booted(cloud.api, vm, 3)
    assert.match(soft.slice(soft.indexOf('pcc-guest: boot 2')), /pcc-guest: power button: powering off/, 'a soft reboot asks the guest to go down first')
    await act(vm, 'reboot', { type: 'HARD' })
    await rests(cloud.api, vm, 'ACTIVE')
    await booted(cloud.api, vm, 4)
  })

  it('pauses and unpauses, suspends and resumes: the guest goes on counting where it was, never booting', async () => {
    await act(vm, 'pause')
    assert.equal((await rests(cloud.api, vm, 'PAUSED'))['OS-EXT-STS:power_state'], 3)
    await act(vm, 'unpause')
    await rests(cloud.api, vm, 'ACTIVE')
    await runsOn(cloud.api, vm)
    await act(vm, 'suspend')
    assert.equal((await rests(cloud.api, vm, 'SUSPENDED'))['OS-EXT-STS:power_state'], 7)
    await act(vm, 'resume')
    await rests(cloud.api, vm, 'ACTIVE')
    await runsOn(cloud.api, vm)
    assert.equal(lastBoot(await consoleLog(cloud.api, vm)), 4)
  })

  it('rescues (another disk boots, its own attached second) and unrescues (its own disk boots again)', async () => {
    const before = (await consoleLog(cloud.api, vm)).length
    const r = await act(vm, 'rescue', {}, 200)
    assert.ok(r.body.adminPass)
    await rests(cloud.api, vm, 'RESCUE')
    const rescued = (await sees(cloud.api, vm, /pcc-guest: block vdb 1073741824[\s\S]*pcc-guest: ready/)).slice(before)
    assert.match(rescued, /pcc-guest: block vdb 1073741824/, 'its own disk, attached second')
    assert.equal(lastBoot(rescued), 1, 'the rescue disk counts its own boots')
    await act(vm, 'unrescue')
    await rests(cloud.api, vm, 'ACTIVE')
    await booted(cloud.api, vm, 5)
  })

  it('snapshots the running guest; the image boots as a new server that shows the file the first guest wrote', async () => {
    await sees(cloud.api, vm, /pcc-guest: tick \d+/)
    const r = await act(vm, 'createImage', { name: 'life-snap' })
    const snapId = r.body.image_id as string
    const snap = await until('the snapshot active', 180_000, async () => {
      const i = await cloud.api.other('GET', `/image/v2/images/${snapId}`)
      return i.body?.status === 'active' || i.body?.status === 'killed' ? i.body : undefined
    }, 500)
    assert.equal(snap.status, 'active')
    assert.equal(snap.disk_format, 'qcow2')
    assert.equal(snap.instance_uuid, vm)
    await rests(cloud.api, vm, 'ACTIVE')
    const { id: copy } = await cloud.api.create({ name: 'from-snap', imageRef: snapId, flavorRef: NANO, networks: 'none' })
    await rests(cloud.api, copy, 'ACTIVE')
    const text = await sees(cloud.api, copy, /pcc-guest: ready/)
    assert.match(text, /pcc-guest: boot 6\n/, 'the boot count travelled with the disk')
    assert.match(text, /pcc-guest: disk-file files\/note written at boot 5/, 'so did the file the first guest wrote')
    assert.match(text, /pcc-guest: name from-snap/)
    assert.equal((await cloud.api.call('DELETE', `/servers/${copy}`)).status, 204)
  })

  it('rebuilds from the image: a new disk, a first boot', async () => {
    await act(vm, 'rebuild', { imageRef: image, name: 'life-rebuilt' })
    await rests(cloud.api, vm, 'ACTIVE')
    const text = await booted(cloud.api, vm, 1)
    assert.match(text.slice(text.lastIndexOf('pcc-guest: userspace up')), /pcc-guest: name life-rebuilt/, 'the new config drive')
  })

  it('sees a guest that powered itself off as SHUTOFF once reconciliation runs', async () => {
    const { id } = await cloud.api.create({ name: 'quitter', imageRef: image, flavorRef: NANO, networks: 'none', user_data: b64('#!/bin/sh\nsleep 2\nsync\npoweroff -f\n') })
    await rests(cloud.api, id, 'ACTIVE')
    await sees(cloud.api, id, /pcc-guest: ready/)
    const stopped = await until('reconciliation to see the guest off', 60_000, async () => {
      await cloud.server.deps.conductor.reconcile()
      const s = await cloud.api.server(id)
      return s?.status === 'SHUTOFF' ? s : undefined
    }, 1000)
    assert.equal(stopped['OS-EXT-STS:power_state'], 4)
    assert.equal((await cloud.api.call('DELETE', `/servers/${id}`)).status, 204)
  })

  it('deletes: nothing of any guest left on the host', async () => {
    assert.equal((await cloud.api.call('DELETE', `/servers/${vm}`)).status, 204)
    await until('every server gone', 60_000, async () => ((await cloud.api.servers()).length === 0 ? true : undefined), 500)
    for (const id of [vm]) assert.deepEqual(qemuLeftovers(cloud.hosts[0].root, id), [])
    await until('no QEMU left', 30_000, async () => ((await import('../../src/testkit/qemu-cloud.js')).qemuProcessesUnder(cloud.hosts[0].root).length === 0 ? true : undefined), 500)
  })
})
