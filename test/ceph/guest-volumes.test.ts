/**
 * Ceph volumes in real guests: an all-in-one-like cloud (pcc-server and one pcc-agent with the QEMU driver, TCG)
 * on a real Ceph cluster. The hypervisor learns its own cephx user from the control plane and its QEMU opens the
 * volume with librbd — connection info `driver_volume_type: rbd`, no NBD export anywhere. The evidence is what the
 * guests print on their serial consoles: a guest writes a file to the attached volume, sees an online extend, and
 * after a detach a second guest reads the file back from RBD.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { ComputeClient, until } from '../../src/testkit/compute-api.js'
import { startQemuCloud, type QemuCloud } from '../../src/testkit/qemu-cloud.js'
import { guestImage, qemuLeftovers, realGuestsMissing } from '../../src/testkit/qemu.js'
import { freshPccPools, testCeph, type CephCluster } from '../../src/testkit/ceph.js'
import { watcher } from '../../src/testkit/disk-watcher.js'
import { MOUNT_TIMEOUT_SECONDS, Rbd } from '../../src/lib/ceph/rbd.js'

const V = '/volume/v3'
const missing = realGuestsMissing()

describe('Ceph volumes in real guests, opened by QEMU with librbd', { skip: missing, timeout: 1_200_000 }, () => {
  let ceph: CephCluster | string
  let pools: Awaited<ReturnType<typeof freshPccPools>> | undefined
  let cloud: QemuCloud | undefined
  let api: ComputeClient
  const servers: string[] = []
  let writer: string

  before(async () => {
    if (missing) return
    ceph = await testCeph()
    if (typeof ceph === 'string') return
    pools = await freshPccPools(ceph)
    const image = await guestImage()
    cloud = await startQemuCloud({
      hosts: 1,
      env: pools.env,
      qemu: { accel: 'tcg', vcpus: 2, memory_mb: 2048, disk_gb: 10 },
    })
    api = cloud.api
    await api.unlimitedQuotas(cloud.server.bootstrap.adminProjectId)
    const created = await api.other('POST', '/image/v2/images', { name: 'pcc-guest', disk_format: 'qcow2', container_format: 'bare', visibility: 'public' })
    const put = await fetch(`${cloud.server.url}/image/v2/images/${created.body.id as string}/file`, { method: 'PUT', headers: { 'x-auth-token': cloud.adminToken, 'content-type': 'application/octet-stream' }, body: readFileSync(image.disk.path) })
    assert.equal(put.status, 204)
  })

  after(async () => {
    if (!cloud) return
    for (const id of servers) await api.call('DELETE', `/servers/${id}`).catch(() => {})
    await until('every server gone', 120_000, async () => ((await Promise.all(servers.map((id) => api.server(id).catch(() => undefined)))).every((s) => !s) ? true : undefined), 500).catch(() => {})
    const left = cloud.hosts.flatMap((h) => servers.flatMap((id) => qemuLeftovers(h.root, id)))
    await cloud.close()
    await pools?.remove()
    assert.deepEqual(left, [], 'no guest left on a host')
  })

  const volume = async (id: string) => (await api.other('GET', `${V}/volumes/${id}`)).body.volume
  const volumeStatus = (id: string, status: string) =>
    until(`volume ${id} ${status}`, 120_000, async () => {
      const v = await volume(id)
      if (v?.status === 'error' && status !== 'error') throw new Error(`volume ${id} went to error`)
      return v?.status === status ? v : undefined
    }, 250)
  const consoleOf = async (id: string) => ((await api.action(id, 'os-getConsoleOutput', {})).body?.output as string | undefined) ?? ''
  const sees = (id: string, pattern: RegExp, ms = 180_000) =>
    until(`server ${id} to print ${pattern}`, ms, async () => {
      const text = await consoleOf(id)
      return pattern.test(text) ? text : undefined
    }, 1000).catch(async (err: Error) => {
      throw new Error(`${err.message}\nconsole:\n${(await consoleOf(id)).slice(-3000)}`)
    })
  const boot = async (name: string, flavor: string, imageRef: string, role: 'writer' | 'reader') => {
    const { id } = await api.create({ name, flavorRef: flavor, imageRef, networks: 'none', user_data: Buffer.from(watcher(role)).toString('base64') })
    servers.push(id)
    const s = await until(`server ${name} to settle`, 300_000, async () => {
      const v = await api.server(id)
      return v && v.status !== 'BUILD' ? v : undefined
    }, 500)
    assert.equal(s.status, 'ACTIVE', JSON.stringify(s.fault))
    await sees(id, /pcc-guest: ready/)
    return id
  }

  it('a guest writes to a Ceph volume through librbd, sees it grow, and another guest reads what it wrote', async (t) => {
    if (typeof ceph === 'string') return t.skip(ceph)
    const flavor = await api.createFlavor({ name: 'guest.tiny', vcpus: 1, ram: 192, disk: 1 })
    const image = (await api.other('GET', '/image/v2/images?name=pcc-guest')).body.images[0].id as string
    let reader: string
    ;[writer, reader] = await Promise.all([boot('writer', flavor, image, 'writer'), boot('reader', flavor, image, 'reader')])

    const r = await api.other('POST', `${V}/volumes`, { volume: { size: 1, name: 'on-ceph' } })
    assert.equal(r.status, 202, JSON.stringify(r.body))
    const data = r.body.volume.id as string
    assert.equal((await volumeStatus(data, 'available')).volume_type, 'ceph')
    const attached = await api.call('POST', `/servers/${writer}/os-volume_attachments`, { volumeAttachment: { volumeId: data } })
    assert.equal(attached.status, 200, JSON.stringify(attached.body))
    await volumeStatus(data, 'in-use')
    await sees(writer, /pcc-guest: vdb wrote note.txt/)

    // No export: the hypervisor's QEMU opened the image itself, as the host's own cephx user.
    const exportsDir = join(cloud!.server.dataDir, 'run', 'volumes')
    assert.deepEqual(existsSync(exportsDir) ? readdirSync(exportsDir) : [], [], 'an NBD export was started for a Ceph volume')
    const row = await cloud!.server.deps.store.db.selectFrom('volume_attachments').select('connection_info').where('volume_id', '=', data).executeTakeFirstOrThrow()
    const info = JSON.parse(row.connection_info!) as { driver_volume_type: string; data: { name: string; auth_username: string } }
    assert.equal(info.driver_volume_type, 'rbd')
    assert.equal(info.data.name, `${pools!.volumes}/volume-${data}`)
    assert.equal(info.data.auth_username, `pcc-host-${cloud!.hosts[0].hostId}`)

    // Online extend (3.42): librbd learns the size; the guest sees it.
    await sees(writer, /pcc-guest: vdb size 2097152/)
    const extend = await fetch(`${cloud!.server.url}${V}/volumes/${data}/action`, {
      method: 'POST',
      headers: { 'x-auth-token': api.token, 'content-type': 'application/json', 'openstack-api-version': 'volume 3.42' },
      body: JSON.stringify({ 'os-extend': { new_size: 2 } }),
    })
    assert.equal(extend.status, 202, await extend.text())
    await volumeStatus(data, 'in-use')
    await sees(writer, /pcc-guest: vdb size 4194304/)
    assert.equal((await new Rbd({ conf: (ceph as CephCluster).conf, user: 'admin' }).info(pools!.volumes, `volume-${data}`))?.size, 2 * 1024 ** 3)

    const detached = await api.call('DELETE', `/servers/${writer}/os-volume_attachments/${data}`)
    assert.equal(detached.status, 202, JSON.stringify(detached.body))
    await volumeStatus(data, 'available')
    await sees(writer, /pcc-guest: vdb gone/)
    assert.equal((await api.call('POST', `/servers/${reader}/os-volume_attachments`, { volumeAttachment: { volumeId: data } })).status, 200)
    const text = await sees(reader, /pcc-guest: vdb wrote later.txt/)
    assert.match(text, /pcc-guest: vdb file note.txt hello from writer/, 'the bytes the writer left in RBD')
  })

  it('an attach while the host cannot reach Ceph fails within the mount timeout: the volume stays available, the guest runs on', async (t) => {
    if (typeof ceph === 'string') return t.skip(ceph)
    // A monitor that takes connections and never answers, as a hung cluster does, in the host's own ceph.conf only:
    // the control plane still reaches the cluster, and other tests sharing it are not disturbed.
    const silent = createServer(() => {})
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const port = (silent.address() as AddressInfo).port
    const conf = join(cloud!.hosts[0].root, 'var/lib/pcc/ceph/ceph.conf')
    const original = readFileSync(conf, 'utf8')
    try {
      writeFileSync(conf, original.replace(/^mon[ _]host\s*=.*$/m, `mon host = [v2:127.0.0.1:${port},v1:127.0.0.1:${port}]`))
      const r = await api.other('POST', `${V}/volumes`, { volume: { size: 1, name: 'during-outage' } })
      assert.equal(r.status, 202, JSON.stringify(r.body))
      const id = r.body.volume.id as string
      await volumeStatus(id, 'available')
      const started = Date.now()
      const attached = await api.call('POST', `/servers/${writer}/os-volume_attachments`, { volumeAttachment: { volumeId: id } })
      assert.equal(attached.status, 200, JSON.stringify(attached.body))
      await until('the attach to end in error', 120_000, async () => {
        const actions = (await api.call('GET', `/servers/${writer}/os-instance-actions`)).body.instanceActions as { action: string; message: string | null }[]
        return actions.some((a) => a.action === 'attach_volume' && a.message === 'Error') ? true : undefined
      }, 1000)
      const seconds = (Date.now() - started) / 1000
      assert.ok(seconds < MOUNT_TIMEOUT_SECONDS + 40, `the attach failed after ${seconds} s, not within the mount timeout`)
      const v = await volumeStatus(id, 'available')
      assert.deepEqual(v.attachments, [], 'no attachment is left')
      const shown = await api.server(writer)
      assert.equal(shown?.status, 'ACTIVE')

      // The cluster back, the same attach works: nothing of the failed one was left in the guest's QEMU.
      writeFileSync(conf, original)
      const listed = async () => (await consoleOf(writer)).match(/pcc-guest: vdb wrote note\.txt/g)?.length ?? 0
      const before = await listed()
      assert.equal((await api.call('POST', `/servers/${writer}/os-volume_attachments`, { volumeAttachment: { volumeId: id } })).status, 200)
      await volumeStatus(id, 'in-use')
      await until('the guest to write on the new volume', 180_000, async () => ((await listed()) > before ? true : undefined), 1000)
      assert.equal((await api.call('DELETE', `/servers/${writer}/os-volume_attachments/${id}`)).status, 202)
      await volumeStatus(id, 'available')
    } finally {
      writeFileSync(conf, original)
      silent.close()
    }
  })
})
