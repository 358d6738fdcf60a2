/**
 * Issue 21 end to end, with real guests: a control plane and two pcc-agents running the QEMU driver, each host in
 * its own network namespace; the pcc guest image under TCG. Volumes live on the control plane (file backend) and
 * reach the guests over NBD with TLS-PSK keys. The evidence is what the guests print on their serial consoles, read
 * through the compute API (os-getConsoleOutput):
 *
 * - a guest writes a file to an attached volume (vfat made by the guest); the volume is detached (flushed) and
 *   attached to a guest on the other host, which reads the same file, then writes one more;
 * - an online extend is seen by that guest (its disk's size grows while it runs);
 * - a snapshot and a clone hold the files of their moment, read by the first guest;
 * - a server moves live to the other host with its volume attached, and uses it there;
 * - an export that cannot be reached fails the attach with the server's fault and leaves the volume available;
 * - a volume created from the guest image boots a server; uploaded to an image, it boots another (whose boot count,
 *   kept on the disk, says the bytes came from the volume).
 *
 * Each guest runs user data that watches its disks: a new disk is listed (its files and their first line), the
 * "writer" formats an empty one and writes note.txt, the "reader" adds later.txt; size changes are printed.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { TestServer } from '../../src/testkit/harness.js'
import { ComputeClient, until } from '../../src/testkit/compute-api.js'
import { startQemuCloud, type QemuCloud } from '../../src/testkit/qemu-cloud.js'
import { guestImage, lastBoot, qemuLeftovers, realGuestsMissing } from '../../src/testkit/qemu.js'
import { ExportManager } from '../../src/host/storage/exports/export-manager.js'
import { watcher } from '../../src/testkit/disk-watcher.js'

const V = '/volume/v3'
const PORTS = { first: 21850, last: 21869 }

const missing = realGuestsMissing()

describe('volumes with real guests on two hosts', { skip: missing, timeout: 1_200_000 }, () => {
  let cloud: QemuCloud
  let server: TestServer
  let api: ComputeClient
  let hostA: string
  let hostB: string
  const servers: string[] = []
  let flavor: string
  let imageId: string

  const volume = async (id: string) => (await api.other('GET', `${V}/volumes/${id}`)).body.volume
  const volumeStatus = (id: string, status: string, ms = 120_000) =>
    until(`volume ${id} ${status}`, ms, async () => {
      const v = await volume(id)
      if (v?.status === 'error' && status !== 'error') throw new Error(`volume ${id} went to error`)
      return v?.status === status ? v : undefined
    }, 250)
  const newVolume = async (body: Record<string, unknown>) => {
    const r = await api.other('POST', `${V}/volumes`, { volume: body })
    assert.equal(r.status, 202, JSON.stringify(r.body))
    await volumeStatus(r.body.volume.id, 'available')
    return r.body.volume.id as string
  }
  const consoleOf = async (id: string) => ((await api.action(id, 'os-getConsoleOutput', {})).body?.output as string | undefined) ?? ''
  const sees = (id: string, pattern: RegExp, ms = 120_000) =>
    until(`server ${id} to print ${pattern}`, ms, async () => {
      const text = await consoleOf(id)
      return pattern.test(text) ? text : undefined
    }, 1000).catch(async (err: Error) => {
      throw new Error(`${err.message}\nconsole:\n${(await consoleOf(id)).slice(-3000)}`)
    })
  const boot = async (name: string, host: string, extra: Record<string, unknown>) => {
    const { id } = await api.create({ name, flavorRef: flavor, networks: 'none', availability_zone: `nova:${host}`, ...extra })
    servers.push(id)
    const s = await until(`server ${name} to settle`, 300_000, async () => {
      const v = await api.server(id)
      return v && v.status !== 'BUILD' ? v : undefined
    }, 500)
    assert.equal(s.status, 'ACTIVE', JSON.stringify(s.fault))
    await sees(id, /pcc-guest: ready/, 180_000)
    return id
  }
  const attach = async (serverId: string, volumeId: string) => {
    const r = await api.call('POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId } })
    assert.equal(r.status, 200, JSON.stringify(r.body))
    return r.body.volumeAttachment.device as string
  }
  const detach = async (serverId: string, volumeId: string) => {
    const r = await api.call('DELETE', `/servers/${serverId}/os-volume_attachments/${volumeId}`)
    assert.equal(r.status, 202, JSON.stringify(r.body))
    await volumeStatus(volumeId, 'available')
  }

  before(async () => {
    if (missing) return
    const image = await guestImage()
    // Exports listen on the public URL's host: the test bridge, which the hosts' namespaces reach.
    cloud = await startQemuCloud({ hosts: 2, namespaces: true, env: { PCC_VOLUME_EXPORT_PORTS: `${PORTS.first}-${PORTS.last}` }, qemu: { accel: 'tcg', vcpus: 4, memory_mb: 4096, disk_gb: 20 } })
    server = cloud.server
    api = cloud.api
    ;[hostA, hostB] = cloud.hosts.map((h) => h.hostname)
    await api.unlimitedQuotas(server.bootstrap.adminProjectId)
    flavor = await api.createFlavor({ name: 'guest.tiny', vcpus: 1, ram: 192, disk: 1 })
    const created = await api.other('POST', '/image/v2/images', { name: 'pcc-guest', disk_format: 'qcow2', container_format: 'bare', visibility: 'public' })
    imageId = created.body.id
    const put = await fetch(`${server.url}/image/v2/images/${imageId}/file`, { method: 'PUT', headers: { 'x-auth-token': cloud.adminToken, 'content-type': 'application/octet-stream' }, body: readFileSync(image.disk.path) })
    assert.equal(put.status, 204)
  })

  after(async () => {
    if (missing || !cloud) return
    for (const id of servers) await api.call('DELETE', `/servers/${id}`).catch(() => {})
    await until('every server gone', 120_000, async () => ((await Promise.all(servers.map((id) => api.server(id).catch(() => undefined)))).every((s) => !s) ? true : undefined), 500).catch(() => {})
    const left = cloud.hosts.flatMap((h) => servers.flatMap((id) => qemuLeftovers(h.root, id)))
    await new ExportManager(join(server.dataDir, 'run', 'volumes')).stopAll()
    // Kills whatever a failed run left behind; the assertion names it.
    await cloud.close()
    assert.deepEqual(left, [], 'no guest left on a host')
  })

  let writer: string
  let reader: string
  let data: string
  let snapshot: string

  it('a guest writes a file to an attached volume; detached and attached on the other host, a guest there reads it', async () => {
    ;[writer, reader] = await Promise.all([
      boot('writer', hostA, { imageRef: imageId, user_data: Buffer.from(watcher('writer')).toString('base64') }),
      boot('reader', hostB, { imageRef: imageId, user_data: Buffer.from(watcher('reader')).toString('base64') }),
    ])
    data = await newVolume({ size: 1, name: 'data' })
    assert.equal(await attach(writer, data), '/dev/vdb')
    await volumeStatus(data, 'in-use')
    await sees(writer, /pcc-guest: vdb wrote note.txt/)
    await detach(writer, data)
    await sees(writer, /pcc-guest: vdb gone/)
    await until('the export stopped', 20_000, async () => (readdirSync(join(server.dataDir, 'run/volumes')).length === 0 ? true : undefined), 250)

    const snap = await api.other('POST', `${V}/snapshots`, { snapshot: { volume_id: data, name: 'after-note' } })
    snapshot = snap.body.snapshot.id
    await until('the snapshot', 60_000, async () => ((await api.other('GET', `${V}/snapshots/${snapshot}`)).body.snapshot.status === 'available' ? true : undefined), 250)

    await attach(reader, data)
    const text = await sees(reader, /pcc-guest: vdb wrote later.txt/)
    assert.match(text, /pcc-guest: vdb file note.txt hello from writer/, 'the bytes the other host wrote')
  })

  it('an online extend is seen by the guest', async () => {
    await sees(reader, /pcc-guest: vdb size 2097152/)
    const r = await apiVolume('POST', `/volumes/${data}/action`, { 'os-extend': { new_size: 2 } }, '3.42')
    assert.equal(r.status, 202, JSON.stringify(r.body))
    const grown = await volumeStatus(data, 'in-use')
    assert.equal(grown.size, 2)
    await sees(reader, /pcc-guest: vdb size 4194304/)
    // Still the same disk, with its files: the guest kept using it through the move to the grown export.
    assert.doesNotMatch(await consoleOf(reader), /pcc-guest: vdb gone/)
  })

  it('a snapshot and a clone hold the files of their moment', async () => {
    const clone = await newVolume({ source_volid: data, name: 'clone' })
    const fromSnapshot = await newVolume({ snapshot_id: snapshot, name: 'from-snapshot' })
    assert.equal((await volume(fromSnapshot)).size, 1)
    assert.equal((await volume(clone)).size, 2)
    await attach(writer, clone)
    await sees(writer, /pcc-guest: vdb file later.txt later from reader/)
    await attach(writer, fromSnapshot)
    const text = await sees(writer, /pcc-guest: vdc listed/)
    assert.match(text, /pcc-guest: vdc file note.txt hello from writer/)
    assert.doesNotMatch(text, /pcc-guest: vdc file later.txt/, 'the snapshot was taken before later.txt')
    for (const v of [clone, fromSnapshot]) await detach(writer, v)
  })

  it('a server moves live to the other host with its volume, and uses it there', async () => {
    const r = await api.action(reader, 'os-migrateLive', { host: hostA, block_migration: 'auto' })
    assert.equal(r.status, 202, JSON.stringify(r.body))
    const moved = await until('the live migration', 300_000, async () => {
      const s = await api.server(reader)
      return s && s['OS-EXT-STS:task_state'] === null ? s : undefined
    }, 1000)
    assert.equal(moved.status, 'ACTIVE', JSON.stringify(moved.fault))
    assert.equal(moved['OS-EXT-SRV-ATTR:host'], hostA)
    assert.equal((await volume(data)).status, 'in-use')
    // Unplugged and plugged again on the new host: the guest lists the volume's files once more.
    const before = (await consoleOf(reader)).split('pcc-guest: vdb listed').length
    await detach(reader, data)
    await sees(reader, /pcc-guest: vdb gone/)
    await attach(reader, data)
    await until('the volume listed again', 120_000, async () => ((await consoleOf(reader)).split('pcc-guest: vdb listed').length > before ? true : undefined), 1000)
    assert.match(await consoleOf(reader), /pcc-guest: vdb file later.txt later from reader/)
  })

  it('an export that cannot be reached fails the attach with a fault and leaves the volume available', async () => {
    const unreachable = await newVolume({ size: 1, name: 'unreachable' })
    const ns = cloud.hosts[0].namespace
    const nft = (...args: string[]) => execFileSync('ip', ['netns', 'exec', ns!, 'nft', ...args])
    nft('add', 'table', 'inet', 'pcc_block')
    nft('add', 'chain', 'inet', 'pcc_block', 'out', '{ type filter hook output priority 0; }')
    nft('add', 'rule', 'inet', 'pcc_block', 'out', 'tcp', 'dport', `${PORTS.first}-${PORTS.last}`, 'reject', 'with', 'tcp', 'reset')
    try {
      const r = await api.call('POST', `/servers/${writer}/os-volume_attachments`, { volumeAttachment: { volumeId: unreachable } })
      assert.equal(r.status, 200, JSON.stringify(r.body))
      const failed = await until('the attach to fail', 120_000, async () => {
        const action = await api.instanceAction(writer, r.requestId)
        return (action.events as { result: string | null }[]).some((e) => e.result) ? action : undefined
      }, 500).catch(async (err: Error) => {
        const action = await api.instanceAction(writer, r.requestId)
        const log = readFileSync(join(cloud.hosts[0].root, 'var/log/pcc/agent.log'), 'utf8').slice(-4000)
        throw new Error(`${err.message}\naction: ${JSON.stringify(action)}\nvolume: ${JSON.stringify(await volume(unreachable))}\nagent log:\n${log}`)
      })
      const event = (failed.events as { event: string; result: string; traceback?: string }[]).find((e) => e.event === 'compute_attach_volume')
      assert.equal(event?.result, 'Error', JSON.stringify(failed))
      assert.equal(failed.message, 'Error')
      assert.match(event?.traceback ?? '', /Connection refused/, "the hypervisor's reason is kept")
      const v = await volumeStatus(unreachable, 'available')
      assert.deepEqual(v.attachments, [])
      assert.equal((await api.server(writer))!.status, 'ACTIVE', 'the guest runs on')
    } finally {
      nft('delete', 'table', 'inet', 'pcc_block')
    }
    await until('no export left for it', 20_000, async () => (readdirSync(join(server.dataDir, 'run/volumes')).every((d) => d !== unreachable) ? true : undefined), 250)
  })

  it('a volume created from an image boots; uploaded to an image, it boots again', async () => {
    const root = await newVolume({ size: 1, imageRef: imageId, name: 'root' })
    assert.equal((await volume(root)).bootable, 'true')
    const fromVolume = await boot('from-volume', hostB, {
      block_device_mapping_v2: [{ boot_index: 0, uuid: root, source_type: 'volume', destination_type: 'volume', delete_on_termination: false }],
    })
    const first = await sees(fromVolume, /pcc-guest: ready/)
    assert.equal(lastBoot(first), 1)
    assert.match(first, /pcc-guest: block vda 1073741824/, 'its root disk is the 1 GiB volume')
    // Off, so the file system on the volume is clean; then the volume's bytes become an image.
    assert.equal((await api.action(fromVolume, 'os-stop')).status, 202)
    await until('stopped', 120_000, async () => ((await api.server(fromVolume))?.status === 'SHUTOFF' ? true : undefined), 500)
    const up = await apiVolume('POST', `/volumes/${root}/action`, { 'os-volume_upload_image': { image_name: 'from-root-volume', disk_format: 'qcow2', force: true } })
    assert.equal(up.status, 202, JSON.stringify(up.body))
    const uploaded = up.body['os-volume_upload_image'].image_id as string
    await until('the image of the volume', 120_000, async () => ((await api.other('GET', `/image/v2/images/${uploaded}`)).body.status === 'active' ? true : undefined), 500)
    const again = await boot('from-uploaded', hostA, { imageRef: uploaded })
    assert.equal(lastBoot(await sees(again, /pcc-guest: ready/)), 2, 'the boot count the volume carried')
  })

  // Test bodies are read loosely; each assertion names the field it needs.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  function apiVolume(method: string, path: string, body: unknown, version = '3.0'): Promise<{ status: number; body: Record<string, any> }> {
    return fetch(`${server.url}${V}${path}`, {
      method,
      headers: { 'x-auth-token': api.token, 'content-type': 'application/json', 'openstack-api-version': `volume ${version}` },
      body: JSON.stringify(body),
    }).then(async (res) => ({ status: res.status, body: await res.text().then((t) => (t ? JSON.parse(t) : undefined)) }))
  }
})

