/**
 * A server survives the loss of its host when its disks live in Ceph: two QEMU hosts (TCG) on a real Ceph cluster,
 * PCC_LOST_HOST_POLICY=evacuate. The guest boots from a copy-on-write clone of the image (no host downloads it),
 * writes a file on its root disk and one on a Ceph volume; then its host dies (SIGKILL of the agent and of QEMU).
 * With nobody asking, the control plane fences the dead host's Ceph clients and starts the server on the other
 * host on the same disks: the guest's console there shows its second boot, the file its first boot wrote, and the
 * volume's file. Deleting the server removes its RBD images.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { until } from '../../src/testkit/compute-api.js'
import { startQemuCloud, type QemuCloud } from '../../src/testkit/qemu-cloud.js'
import { guestImage, killQemusUnder, realGuestsMissing } from '../../src/testkit/qemu.js'
import { freshPccPools, testCeph, type CephCluster } from '../../src/testkit/ceph.js'
import { watcher } from '../../src/testkit/disk-watcher.js'
import { clientConf, Rbd } from '../../src/lib/ceph/rbd.js'
import { booted, NANO, rests, sees } from '../qemu/helpers.js'

const exec = promisify(execFile)
const missing = realGuestsMissing()

/** Writes a note on its own root disk at every boot, then watches its volumes as the volume tests' writer does. */
const userData = `#!/bin/sh
echo "written at boot $(cat /mnt/disk/pcc/boot-count)" > /mnt/disk/files/note
sync
${watcher('writer').replace(/^#!\/bin\/sh\n/, '')}`

describe('a server whose host dies comes back on another host, on its own disks in Ceph', { skip: missing, timeout: 1_500_000 }, () => {
  let ceph: CephCluster | string
  let pools: Awaited<ReturnType<typeof freshPccPools>> | undefined
  let cloud: QemuCloud | undefined
  let admin: Rbd
  let work: string
  let imageId: string
  let vm: string
  let volumeId: string

  before(async () => {
    if (missing) return
    ceph = await testCeph()
    if (typeof ceph === 'string') throw new Error(ceph)
    pools = await freshPccPools(ceph)
    work = mkdtempSync(join(tmpdir(), 'pcc-host-loss-'))
    admin = new Rbd(clientConf(readFileSync(ceph.conf, 'utf8'), ceph.user, ceph.keyring, join(work, 'admin.conf')))
    cloud = await startQemuCloud({
      hosts: 2,
      env: { ...pools.env, PCC_LOST_HOST_POLICY: 'evacuate', PCC_HOST_DOWN_AFTER_SECONDS: '6', PCC_RECONCILE_SECONDS: '2' },
      qemu: { accel: 'tcg', vcpus: 2, memory_mb: 2048, disk_gb: 10 },
    })
    await cloud.api.unlimitedQuotas(cloud.server.bootstrap.adminProjectId)
    // A raw image: the image store keeps it as images/<id>@snap, and guests' root disks are clones of that snapshot.
    const raw = join(work, 'guest.raw')
    await exec('qemu-img', ['convert', '-f', 'qcow2', '-O', 'raw', (await guestImage()).disk.path, raw])
    imageId = (await cloud.api.other('POST', '/image/v2/images', { name: 'pcc-guest-raw', disk_format: 'raw', container_format: 'bare', visibility: 'public' })).body.id as string
    const put = await fetch(`${cloud.server.url}/image/v2/images/${imageId}/file`, { method: 'PUT', headers: { 'x-auth-token': cloud.adminToken, 'content-type': 'application/octet-stream' }, body: readFileSync(raw) })
    assert.equal(put.status, 204)
  })

  after(async () => {
    await cloud?.close()
    await pools?.remove()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  const hostOf = async (id: string) => (await cloud!.api.server(id))!['OS-EXT-SRV-ATTR:host'] as string

  it('boots from a clone of the image, and the guest writes to its root disk and to a Ceph volume', async () => {
    const api = cloud!.api
    ;({ id: vm } = await api.create({ name: 'survivor', imageRef: imageId, flavorRef: NANO, networks: 'none', user_data: Buffer.from(userData).toString('base64'), availability_zone: 'nova:qemu-host-0' }))
    await rests(api, vm, 'ACTIVE')
    await booted(api, vm, 1, 180_000)
    const root = await admin.info(pools!.vms, `${vm}_disk`)
    assert.deepEqual(root?.parent, { pool: pools!.images, image: imageId, snapshot: 'snap' }, 'the root disk is a clone of the image')
    for (const h of cloud!.hosts) assert.equal(existsSync(join(h.root, 'var/lib/pcc/images', imageId)), false, `${h.hostname} never downloaded the image`)

    volumeId = (await api.other('POST', `/volume/v3/${cloud!.server.bootstrap.adminProjectId}/volumes`, { volume: { size: 1, name: 'notes' } })).body.volume.id as string
    await until('the volume available', 120_000, async () => ((await api.other('GET', `/volume/v3/${cloud!.server.bootstrap.adminProjectId}/volumes/${volumeId}`)).body.volume.status === 'available' ? true : undefined), 500)
    assert.equal((await api.call('POST', `/servers/${vm}/os-volume_attachments`, { volumeAttachment: { volumeId } })).status, 200)
    await sees(api, vm, /pcc-guest: vdb wrote note\.txt/, 120_000)
  })

  it('is started on the other host on the same disks once its host dies, the dead host fenced first', async () => {
    const api = cloud!.api
    const lost = cloud!.hosts.find((h) => h.hostname === 'qemu-host-0')!
    const [doomed] = await admin.watchers(pools!.vms, `${vm}_disk`)
    assert.ok(doomed, 'the QEMU of the first host has the root disk open')
    await lost.kill()
    await killQemusUnder(lost.root)
    await until('the server evacuated to qemu-host-1', 240_000, async () => ((await hostOf(vm)) === 'qemu-host-1' ? true : undefined), 1000)
    const s = await rests(api, vm, 'ACTIVE')
    assert.equal(s['OS-EXT-SRV-ATTR:host'], 'qemu-host-1')
    const text = await booted(api, vm, 2, 240_000)
    assert.match(text, /pcc-guest: disk-file files\/note written at boot 1/, 'the root disk as the guest left it')
    await sees(api, vm, /pcc-guest: vdb file note\.txt hello from /, 120_000)

    const actions = (await api.call('GET', `/servers/${vm}/os-instance-actions`)).body.instanceActions as { action: string; message: string | null }[]
    const evacuation = actions.find((a) => a.action === 'evacuate')
    assert.ok(evacuation, 'the evacuation is in the instance actions')
    assert.equal(evacuation.message, null, 'without a fault')
    // Fenced by the control plane (for 30 days), not merely by librbd breaking the dead client's lock (for an hour).
    // Ceph 16 prints the blocklist, then the (empty) list of blocklisted ranges: `[…][]`.
    const listed = await admin.ceph(['osd', 'blocklist', 'ls', '--format', 'json'])
    const [blocklist] = JSON.parse(`[${listed.replace(/\]\s*\[/, '],[')}]`) as { addr: string; until: string }[][]
    const entry = blocklist.find((b) => b.addr === doomed)
    assert.ok(entry && Date.parse(entry.until) > Date.now() + 7 * 24 * 3600_000, `the dead QEMU ${doomed} is fenced: ${JSON.stringify(blocklist)}`)
  })

  it('snapshots it inside Ceph: a flattened image that boots another server with what the guest wrote', async () => {
    const api = cloud!.api
    const r = await api.action(vm, 'createImage', { name: 'survivor-snap' })
    assert.equal(r.status, 202, JSON.stringify(r.body))
    const snapId = r.body.image_id as string
    const image = await until('the snapshot active', 240_000, async () => {
      const body = (await api.other('GET', `/image/v2/images/${snapId}`)).body
      if (body.status === 'killed') throw new Error('the snapshot was killed')
      return body.status === 'active' ? body : undefined
    }, 1000)
    assert.equal(image.disk_format, 'raw')
    assert.equal(image.size, 1024 ** 3, 'the whole root disk')
    assert.match(image.os_hash_value as string, /^[0-9a-f]{128}$/, 'digests read back from Ceph')
    const copied = await admin.info(pools!.images, snapId)
    assert.equal(copied?.parent, undefined, 'flattened: it does not depend on the server’s disk')
    // The action ends once the host released the disk's own snapshot.
    await rests(api, vm, 'ACTIVE')
    assert.deepEqual(await admin.snapshots(pools!.vms, `${vm}_disk`), [], 'the disk’s own snapshot is released')

    const { id: twin } = await api.create({ name: 'twin', imageRef: snapId, flavorRef: NANO, networks: 'none', availability_zone: 'nova:qemu-host-1' })
    await rests(api, twin, 'ACTIVE')
    assert.match(await sees(api, twin, /pcc-guest: ready/, 180_000), /pcc-guest: disk-file files\/note written at boot 2/)
    assert.equal((await api.call('DELETE', `/servers/${twin}`)).status, 204)
    await until('the twin gone', 120_000, async () => ((await api.server(twin)) === undefined ? true : undefined), 500)
  })

  it('removes the RBD images of the server when it is deleted', async () => {
    const api = cloud!.api
    assert.equal((await api.call('DELETE', `/servers/${vm}/os-volume_attachments/${volumeId}`)).status, 202)
    await until('the volume detached', 120_000, async () => ((await api.other('GET', `/volume/v3/${cloud!.server.bootstrap.adminProjectId}/volumes/${volumeId}`)).body.volume.status === 'available' ? true : undefined), 500)
    assert.equal((await api.call('DELETE', `/servers/${vm}`)).status, 204)
    await until('the server gone', 120_000, async () => ((await api.server(vm)) === undefined ? true : undefined), 500)
    assert.deepEqual((await admin.list(pools!.vms)).filter((name) => name.startsWith(vm)), [])
  })
})
