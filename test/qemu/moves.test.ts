/**
 * Guests moving between two QEMU hosts, each agent in a network namespace of its own (two addresses on a test
 * bridge), through the compute API. Cold moves carry the disk through the control plane (the boot count and the
 * guest's file arrive with it); a live migration keeps the guest running (it counts on, never boots); shelve
 * keeps the disk as an image and unshelve boots it again; evacuation rebuilds the guest elsewhere when its host is
 * lost, and the returning host lets its stale copy go.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { until } from '../../src/testkit/compute-api.js'
import { defaultImageName } from '../../src/server/image/default-image.js'
import { lastBoot, qemuLeftovers, realGuestsMissing } from '../../src/testkit/qemu.js'
import { qemuProcessesUnder, startQemuCloud, type QemuCloud } from '../../src/testkit/qemu-cloud.js'
import { acts, b64, booted, consoleLog, NANO, rests, runsOn, sees, TICKING_WRITER } from './helpers.js'

const missing = realGuestsMissing() ?? (process.getuid?.() !== 0 ? 'not root (each host needs a network namespace)' : undefined)

describe('real guests moving between two hosts', { skip: missing, timeout: 1_500_000 }, () => {
  let cloud: QemuCloud
  let image: string
  let bigger: string
  let vm: string
  before(async () => {
    cloud = await startQemuCloud({ hosts: 2, namespaces: true, env: { PCC_HOST_DOWN_AFTER_SECONDS: '6', PCC_HOST_HEARTBEAT_SECONDS: '1' } })
    image = (await cloud.api.other('GET', `/image/v2/images?name=${defaultImageName()}`)).body.images[0].id
    bigger = await cloud.api.createFlavor({ name: 'nano-2g', vcpus: 1, ram: 128, disk: 2 })
  })
  after(async () => {
    await cloud?.close()
  })
  const act = (id: string, action: string, body: unknown = null, expected = 202) => acts(cloud.api, id, action, body, expected)
  const hostOf = async (id: string) => (await cloud.api.server(id))!['OS-EXT-SRV-ATTR:host'] as string
  const rootOf = (hostname: string) => cloud.hosts.find((h) => h.hostname === hostname)!.root
  const other = (hostname: string) => (hostname === 'qemu-host-0' ? 'qemu-host-1' : 'qemu-host-0')

  it('boots on the first host', async () => {
    ;({ id: vm } = await cloud.api.create({ name: 'mover', imageRef: image, flavorRef: NANO, networks: 'none', user_data: b64(TICKING_WRITER), availability_zone: 'nova:qemu-host-0' }))
    await rests(cloud.api, vm, 'ACTIVE')
    await booted(cloud.api, vm, 1)
  })

  it('resizes to another host (the disk travels, grown), reverts (the original runs again), resizes again and confirms', async () => {
    await act(vm, 'resize', { flavorRef: bigger })
    await rests(cloud.api, vm, 'VERIFY_RESIZE')
    assert.equal(await hostOf(vm), 'qemu-host-1')
    let text = await booted(cloud.api, vm, 2)
    assert.match(text, /pcc-guest: block vda 2147483648/, 'the root disk grew to the new flavor')
    assert.match(text, /pcc-guest: disk-file files\/note written at boot 1/, "the guest's file came along")
    assert.equal(qemuProcessesUnder(rootOf('qemu-host-0')).length, 0, 'the source keeps its copy, stopped')

    await act(vm, 'revertResize')
    await rests(cloud.api, vm, 'ACTIVE')
    assert.equal(await hostOf(vm), 'qemu-host-0')
    text = await booted(cloud.api, vm, 2)
    assert.match(text.slice(text.lastIndexOf('pcc-guest: userspace up')), /pcc-guest: block vda 1073741824/, 'back on its own 1 GiB disk')
    assert.deepEqual(qemuLeftovers(rootOf('qemu-host-1'), vm), [], 'nothing left on the abandoned destination')

    await act(vm, 'resize', { flavorRef: bigger })
    await rests(cloud.api, vm, 'VERIFY_RESIZE')
    await booted(cloud.api, vm, 3)
    await act(vm, 'confirmResize', null, 204)
    const s = await rests(cloud.api, vm, 'ACTIVE')
    assert.equal(s['OS-EXT-SRV-ATTR:host'], 'qemu-host-1')
    assert.deepEqual(qemuLeftovers(rootOf('qemu-host-0'), vm), [], 'confirmed: the source copy is gone')
  })

  it('migrates cold back to the first host', async () => {
    await act(vm, 'migrate')
    await rests(cloud.api, vm, 'VERIFY_RESIZE')
    assert.equal(await hostOf(vm), 'qemu-host-0')
    await booted(cloud.api, vm, 4)
    await act(vm, 'confirmResize', null, 204)
    await rests(cloud.api, vm, 'ACTIVE')
    assert.deepEqual(qemuLeftovers(rootOf('qemu-host-1'), vm), [])
  })

  it('migrates live to the other host: the guest keeps counting, never boots, and its console history comes along', async () => {
    await sees(cloud.api, vm, /pcc-guest: tick \d+/)
    const from = await hostOf(vm)
    const r = await cloud.api.at('2.30').action(vm, 'os-migrateLive', { host: null, block_migration: 'auto' })
    assert.equal(r.status, 202, JSON.stringify(r.body))
    const s = await rests(cloud.api, vm, 'ACTIVE')
    assert.equal(s['OS-EXT-SRV-ATTR:host'], other(from))
    await runsOn(cloud.api, vm)
    const text = await consoleLog(cloud.api, vm)
    // The boot before the live migration was printed at the source: its line is here because the log came along.
    assert.equal(lastBoot(text), 4, 'no boot since the cold migration, and the log from before the live migration')
    assert.deepEqual(qemuLeftovers(rootOf(from), vm), [], 'nothing left at the source')
  })

  it('shelves (the disk kept as an image, the guest gone from every host) and unshelves (it boots its own disk again)', async () => {
    await act(vm, 'shelve')
    await rests(cloud.api, vm, 'SHELVED_OFFLOADED')
    for (const h of cloud.hosts) assert.deepEqual(qemuLeftovers(h.root, vm), [])
    await act(vm, 'unshelve')
    await rests(cloud.api, vm, 'ACTIVE')
    const text = await booted(cloud.api, vm, 5)
    assert.match(text, /pcc-guest: disk-file files\/note written at boot 4/)
  })

  it('evacuates from a lost host (rebuilt from its image elsewhere); the returning host lets its stale copy go', async () => {
    const from = await hostOf(vm)
    const lost = cloud.hosts.find((h) => h.hostname === from)!
    await lost.kill()
    await until(`${from} down`, 30_000, async () => {
      const services = (await cloud.api.call('GET', '/os-services')).body.services as { host: string; state: string }[]
      return services.find((x) => x.host === from)?.state === 'down' ? true : undefined
    }, 500)
    const r = await act(vm, 'evacuate', {}, 200)
    assert.ok(r.body === undefined || typeof r.body === 'object')
    const s = await rests(cloud.api, vm, 'ACTIVE')
    assert.equal(s['OS-EXT-SRV-ATTR:host'], other(from))
    const text = await booted(cloud.api, vm, 1)
    assert.match(text, /pcc-guest: name mover/)
    assert.equal(qemuProcessesUnder(lost.root).length, 1, 'the stale guest still runs on the lost host')
    lost.start()
    await until(`${from} up`, 30_000, async () => {
      const services = (await cloud.api.call('GET', '/os-services')).body.services as { host: string; state: string }[]
      return services.find((x) => x.host === from)?.state === 'up' ? true : undefined
    }, 500)
    await until('the stale copy let go', 60_000, async () => {
      await cloud.server.deps.conductor.reconcile()
      return qemuLeftovers(lost.root, vm).length === 0 ? true : undefined
    }, 1000)
    await runsOn(cloud.api, vm)
  })

  it('deletes: nothing left on either host', async () => {
    assert.equal((await cloud.api.call('DELETE', `/servers/${vm}`)).status, 204)
    await until('gone', 60_000, async () => ((await cloud.api.server(vm)) === undefined ? true : undefined), 500)
    for (const h of cloud.hosts) assert.deepEqual(qemuLeftovers(h.root, vm), [])
  })
})
