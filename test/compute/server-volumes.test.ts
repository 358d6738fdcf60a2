/**
 * Compute with the image and block storage services, through the APIs with the conductor and simulated hosts
 * running: os-volume_attachments (attach, list, show, detach, swap, update) checked on the block storage side,
 * boot from volume with every source type and Nova's validation errors, delete_on_termination, volumes_attached
 * per microversion, createImage to an active image with the snapshot's bytes, shelve/unshelve and rebuild.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { DIALECTS } from '../../src/testkit/harness.js'
import { qcow2Label, qcow2VirtualSize } from '../../src/lib/qcow2.js'
import { call, computeTestbed, IMAGE, unlimited, type ComputeTestbed, type Persona } from './helpers.js'
import { DEFAULT_IMAGE_NAME, defaultImageName } from '../../src/server/image/default-image.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

async function rest(tb: ComputeTestbed, who: Persona, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Json; headers: Headers; bytes: Buffer }> {
  const h: Record<string, string> = { 'x-auth-token': who.token, ...headers }
  if (body !== undefined) h['content-type'] ??= 'application/json'
  const res = await fetch(`${tb.server.url}${path}`, { method, headers: h, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) })
  const bytes = Buffer.from(await res.arrayBuffer())
  let parsed: Json = undefined
  try {
    parsed = bytes.length ? JSON.parse(bytes.toString('utf8')) : undefined
  } catch {
    parsed = undefined
  }
  return { status: res.status, body: parsed, headers: res.headers, bytes }
}

const volumeApi = (tb: ComputeTestbed, who: Persona, method: string, path: string, body?: unknown) => rest(tb, who, method, `/volume/v3${path}`, body)
const imageApi = (tb: ComputeTestbed, who: Persona, method: string, path: string, body?: unknown, headers?: Record<string, string>) => rest(tb, who, method, `/image${path}`, body, headers)

async function until<T>(what: string, check: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await check()
    if (v !== undefined) return v
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function serverAt(tb: ComputeTestbed, id: string, status: string, who: Persona = tb.member): Promise<Json> {
  return until(`server ${id} ${status}`, async () => {
    const r = await call(tb, who, 'GET', `/servers/${id}`, undefined, '2.96')
    if (r.status === 404) return status === 'GONE' ? {} : undefined
    const s = r.body.server
    if (s.status === 'ERROR' && status !== 'ERROR' && status !== 'GONE') assert.fail(`server ${id} went to ERROR: ${JSON.stringify(s.fault)}`)
    return s.status === status && s['OS-EXT-STS:task_state'] === null ? s : undefined
  })
}

async function volumeAt(tb: ComputeTestbed, id: string, status: string, who: Persona = tb.member): Promise<Json> {
  return until(`volume ${id} ${status}`, async () => {
    const r = await volumeApi(tb, who, 'GET', `/volumes/${id}`)
    if (r.status === 404) return status === 'GONE' ? {} : undefined
    return r.body.volume.status === status ? r.body.volume : undefined
  })
}

async function newVolume(tb: ComputeTestbed, who: Persona, body: Record<string, unknown> = {}): Promise<Json> {
  const r = await volumeApi(tb, who, 'POST', '/volumes', { volume: { size: 1, ...body } })
  assert.equal(r.status, 202, JSON.stringify(r.body))
  return volumeAt(tb, r.body.volume.id, 'available', who)
}

async function boot(tb: ComputeTestbed, name: string, extra: Record<string, unknown> = {}, version = '2.96'): Promise<string> {
  const r = await call(tb, tb.member, 'POST', '/servers', { server: { name, imageRef: IMAGE, flavorRef: '1', networks: 'none', ...extra } }, version)
  assert.equal(r.status, 202, JSON.stringify(r.body))
  await serverAt(tb, r.body.server.id, 'ACTIVE')
  return r.body.server.id
}

/** A server booted from a 1 GB volume made of the image (deleted with it), once ACTIVE. */
const bootFromVolume = (tb: ComputeTestbed, name: string) =>
  boot(tb, name, { imageRef: '', block_device_mapping_v2: [{ source_type: 'image', uuid: IMAGE, destination_type: 'volume', boot_index: 0, volume_size: 1, delete_on_termination: true }] })

async function imageAt(tb: ComputeTestbed, id: string, status: string): Promise<Json> {
  return until(`image ${id} ${status}`, async () => {
    const r = await imageApi(tb, tb.member, 'GET', `/v2/images/${id}`)
    if (r.status === 404) return status === 'GONE' ? {} : undefined
    return r.body.status === status ? r.body : undefined
  })
}

const hostOf = async (tb: ComputeTestbed, serverId: string) => {
  const row = await tb.server.deps.store.db.selectFrom('servers').select('host').where('id', '=', serverId).executeTakeFirstOrThrow()
  return tb.server.deps.conductor.simulatedHosts.find((h) => h.hostname === row.host)!
}

const counts = async (tb: ComputeTestbed) => {
  const db = tb.server.deps.store.db
  const n = async (table: 'servers' | 'volumes' | 'images' | 'block_device_mappings' | 'volume_attachments' | 'volume_snapshots') => Number((await db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)
  return { servers: await n('servers'), volumes: await n('volumes'), images: await n('images'), bdms: await n('block_device_mappings'), attachments: await n('volume_attachments'), snapshots: await n('volume_snapshots') }
}

for (const dialect of DIALECTS) {
  describe(`servers with volumes and images (${dialect})`, { timeout: 600_000 }, () => {
    let tb: ComputeTestbed
    before(async () => {
      tb = await computeTestbed(dialect, { PCC_SIMULATED_HOSTS: '2', PCC_SIMULATED_DELAY_MS: '20' }, true)
      // The tests share one project: no quota of either service gets in their way (one test sets its own).
      await unlimited(tb, tb.member.projectId)
      const volumes = await volumeApi(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { volumes: -1, snapshots: -1, gigabytes: -1 } })
      assert.equal(volumes.status, 200, JSON.stringify(volumes.body))
    })
    after(() => tb.close())

    it('attach, list, show and detach through compute, seen on the block storage side', async () => {
      const serverId = await boot(tb, 'vol-host')
      const volume = await newVolume(tb, tb.member, { name: 'data' })
      const host = await hostOf(tb, serverId)
      // Slow the hypervisor down so the attaching state is visible.
      host.driver.setDelay(1500)
      const attached = await call(tb, tb.member, 'POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId: volume.id, tag: 'db', delete_on_termination: false } }, '2.79')
      assert.equal(attached.status, 200, JSON.stringify(attached.body))
      assert.deepEqual(attached.body.volumeAttachment, { id: volume.id, serverId, volumeId: volume.id, device: '/dev/vdb', tag: 'db', delete_on_termination: false })
      assert.equal((await volumeApi(tb, tb.member, 'GET', `/volumes/${volume.id}`)).body.volume.status, 'attaching', 'attaching until the host connected it')
      host.driver.setDelay(20)
      const inUse = await volumeAt(tb, volume.id, 'in-use')
      assert.equal(inUse.attachments.length, 1)
      assert.equal(inUse.attachments[0].server_id, serverId)
      assert.equal(inUse.attachments[0].device, '/dev/vdb')
      assert.equal(inUse.attachments[0].host_name, host.hostname)
      assert.ok((await host.driver.info(serverId))!.volumes!.includes(volume.id), 'the guest sees the volume')

      // The server side, per microversion.
      const at21 = (await call(tb, tb.member, 'GET', `/servers/${serverId}`, undefined, '2.1')).body.server
      assert.deepEqual(at21['os-extended-volumes:volumes_attached'], [{ id: volume.id }])
      const at279 = (await call(tb, tb.member, 'GET', `/servers/${serverId}`, undefined, '2.79')).body.server
      assert.deepEqual(at279['os-extended-volumes:volumes_attached'], [{ id: volume.id, delete_on_termination: false }])
      const listAt = async (v: string) => (await call(tb, tb.member, 'GET', `/servers/${serverId}/os-volume_attachments`, undefined, v)).body.volumeAttachments
      assert.deepEqual(await listAt('2.1'), [{ id: volume.id, serverId, volumeId: volume.id, device: '/dev/vdb' }])
      assert.deepEqual(await listAt('2.70'), [{ id: volume.id, serverId, volumeId: volume.id, device: '/dev/vdb', tag: 'db' }])
      const bdm = await tb.server.deps.store.db.selectFrom('block_device_mappings').selectAll().where('volume_id', '=', volume.id).executeTakeFirstOrThrow()
      assert.deepEqual(await listAt('2.89'), [{ serverId, volumeId: volume.id, device: '/dev/vdb', tag: 'db', delete_on_termination: false, attachment_id: inUse.attachments[0].attachment_id, bdm_uuid: bdm.id }])
      const shown = await call(tb, tb.member, 'GET', `/servers/${serverId}/os-volume_attachments/${volume.id}`, undefined, '2.79')
      assert.deepEqual(shown.body.volumeAttachment, { id: volume.id, serverId, volumeId: volume.id, device: '/dev/vdb', tag: 'db', delete_on_termination: false })
      assert.equal((await call(tb, tb.member, 'GET', `/servers/${serverId}/os-volume_attachments/${IMAGE}`)).status, 404)
      assert.equal((await call(tb, tb.member, 'GET', `/servers/${serverId}/os-volume_attachments?limit=0`)).body.volumeAttachments.length, 0)
      assert.equal((await call(tb, tb.member, 'GET', `/servers/${serverId}/os-volume_attachments?colour=red`, undefined, '2.75')).status, 400)
      const actions = (await call(tb, tb.member, 'GET', `/servers/${serverId}/os-instance-actions`, undefined, '2.96')).body.instanceActions
      const attachAction = actions.find((a: Json) => a.action === 'attach_volume')
      assert.ok(attachAction, JSON.stringify(actions))
      const detail = (await call(tb, tb.member, 'GET', `/servers/${serverId}/os-instance-actions/${attachAction.request_id}`, undefined, '2.96')).body.instanceAction
      assert.deepEqual(detail.events.map((e: Json) => [e.event, e.result]), [['compute_attach_volume', 'Success']])

      // A volume in use cannot be attached again (400 InvalidVolume, as Nova), nothing changes.
      const before = await counts(tb)
      const again = await call(tb, tb.member, 'POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId: volume.id } })
      assert.equal(again.status, 400, JSON.stringify(again.body))
      assert.match(again.body.badRequest.message, /^Invalid volume: /)
      assert.deepEqual(await counts(tb), before)

      // Detach: detaching, then available with no attachments; the server lists none.
      host.driver.setDelay(1500)
      const detached = await call(tb, tb.member, 'DELETE', `/servers/${serverId}/os-volume_attachments/${volume.id}`)
      assert.equal(detached.status, 202)
      assert.equal(detached.headers.get('content-length'), '0')
      assert.equal((await volumeApi(tb, tb.member, 'GET', `/volumes/${volume.id}`)).body.volume.status, 'detaching')
      host.driver.setDelay(20)
      const free = await volumeAt(tb, volume.id, 'available')
      assert.deepEqual(free.attachments, [])
      assert.ok(!(await host.driver.info(serverId))!.volumes?.includes(volume.id), 'the guest no longer sees it')
      await until('volumes_attached empty', async () => ((await call(tb, tb.member, 'GET', `/servers/${serverId}`, undefined, '2.79')).body.server['os-extended-volumes:volumes_attached'].length === 0 ? true : undefined))
      assert.deepEqual(await listAt('2.79'), [])
      assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${serverId}/os-volume_attachments/${volume.id}`)).status, 404, 'not attached any more')
      const after = (await call(tb, tb.member, 'GET', `/servers/${serverId}/os-instance-actions`, undefined, '2.96')).body.instanceActions
      assert.ok(after.some((a: Json) => a.action === 'detach_volume'))
      await call(tb, tb.member, 'DELETE', `/servers/${serverId}`)
      await serverAt(tb, serverId, 'GONE')
      assert.equal((await volumeApi(tb, tb.member, 'GET', `/volumes/${volume.id}`)).body.volume.status, 'available', 'a detached volume outlives the server')
    })

    it('another project, wrong states and bad bodies: 404, 409 and 400 that change nothing', async () => {
      const serverId = await boot(tb, 'vol-rules')
      const mine = await newVolume(tb, tb.member)
      const theirs = await newVolume(tb, tb.other)
      const before = await counts(tb)
      const attach = (who: Persona, volumeId: string, extra: Record<string, unknown> = {}, version = '2.96') =>
        call(tb, who, 'POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId, ...extra } }, version)
      const foreign = await attach(tb.member, theirs.id)
      assert.equal(foreign.status, 404, JSON.stringify(foreign.body))
      assert.ok(foreign.body.itemNotFound)
      assert.equal((await attach(tb.other, theirs.id)).status, 404, "another project's server is invisible")
      const bad: [Record<string, unknown>, string, string][] = [
        [{ device: 'vdb' }, '2.96', 'device'],
        [{ device: '/dev/vda' }, '2.96', 'in use'],
        [{ tag: 'a/b' }, '2.96', 'tag'],
        [{ tag: 'x' }, '2.48', 'tag'],
        [{ delete_on_termination: true }, '2.78', 'delete_on_termination'],
        [{ delete_on_termination: 'perhaps' }, '2.79', 'delete_on_termination'],
        [{ colour: 'red' }, '2.96', 'colour'],
      ]
      for (const [extra, version, word] of bad) {
        const r = await attach(tb.member, mine.id, extra, version)
        assert.ok(r.status === 400 || r.status === 409, `${JSON.stringify(extra)}: ${r.status}`)
        assert.match(JSON.stringify(r.body), new RegExp(word), JSON.stringify(r.body))
      }
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: {} })).status, 400)
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId: 'not-a-uuid' } })).status, 400)
      assert.equal((await call(tb, tb.reader, 'POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId: mine.id } })).status, 403)

      // Suspended servers refuse volume operations; locked ones refuse non-admins.
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { suspend: null })).status, 202)
      await serverAt(tb, serverId, 'SUSPENDED')
      const suspended = await attach(tb.member, mine.id)
      assert.equal(suspended.status, 409)
      assert.match(suspended.body.conflictingRequest.message, /Cannot 'attach_volume' instance .* while it is in vm_state suspended/)
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { resume: null })).status, 202)
      await serverAt(tb, serverId, 'ACTIVE')
      assert.equal((await call(tb, tb.admin, 'POST', `/servers/${serverId}/action`, { lock: null })).status, 202)
      assert.match((await attach(tb.member, mine.id)).body.conflictingRequest.message, /is locked/)
      assert.equal((await call(tb, tb.admin, 'POST', `/servers/${serverId}/action`, { unlock: null })).status, 202)

      assert.deepEqual(await counts(tb), before)
      for (const v of [mine, theirs]) {
        const now = (await volumeApi(tb, v === theirs ? tb.other : tb.member, 'GET', `/volumes/${v.id}`)).body.volume
        assert.equal(now.status, 'available')
        assert.deepEqual(now.attachments, [])
      }
      await call(tb, tb.member, 'DELETE', `/servers/${serverId}`)
      await serverAt(tb, serverId, 'GONE')
    })

    it('swap is for admins; 2.85 updates delete_on_termination; both seen on the volumes', async () => {
      const serverId = await boot(tb, 'vol-swap')
      const first = await newVolume(tb, tb.member)
      const second = await newVolume(tb, tb.member, { size: 2 })
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId: first.id } })).status, 200)
      await volumeAt(tb, first.id, 'in-use')
      const path = `/servers/${serverId}/os-volume_attachments/${first.id}`
      assert.equal((await call(tb, tb.member, 'PUT', path, { volumeAttachment: { volumeId: second.id } })).status, 403, 'swap needs an admin')
      const same = await call(tb, tb.member, 'PUT', path, { volumeAttachment: { volumeId: first.id, delete_on_termination: true } }, '2.85')
      assert.equal(same.status, 202, JSON.stringify(same.body))
      assert.equal((await call(tb, tb.member, 'PUT', path, { volumeAttachment: { volumeId: first.id, device: '/dev/vdz' } }, '2.85')).status, 400, 'device is not mutable')
      assert.deepEqual((await call(tb, tb.member, 'GET', `/servers/${serverId}`, undefined, '2.79')).body.server['os-extended-volumes:volumes_attached'], [{ id: first.id, delete_on_termination: true }])
      const swapped = await call(tb, tb.admin, 'PUT', path, { volumeAttachment: { volumeId: second.id } })
      assert.equal(swapped.status, 202, JSON.stringify(swapped.body))
      await volumeAt(tb, first.id, 'available')
      const now = await volumeAt(tb, second.id, 'in-use')
      assert.equal(now.attachments[0].device, '/dev/vdb')
      const list = (await call(tb, tb.member, 'GET', `/servers/${serverId}/os-volume_attachments`, undefined, '2.79')).body.volumeAttachments
      assert.deepEqual(list, [{ id: second.id, serverId, volumeId: second.id, device: '/dev/vdb', tag: null, delete_on_termination: true }])
      // A smaller new volume is refused.
      const small = await newVolume(tb, tb.member)
      const refused = await call(tb, tb.admin, 'PUT', `/servers/${serverId}/os-volume_attachments/${second.id}`, { volumeAttachment: { volumeId: small.id } })
      assert.equal(refused.status, 400)
      assert.match(refused.body.badRequest.message, /same size or larger/)
      // delete_on_termination (set above, kept through the swap) deletes the volume with the server.
      await call(tb, tb.member, 'DELETE', `/servers/${serverId}`)
      await serverAt(tb, serverId, 'GONE')
      await volumeAt(tb, second.id, 'GONE')
      await volumeAt(tb, first.id, 'available')
    })

    it("extending an attached volume (3.42) is the server's extend_volume action, as Cinder's event makes it in Nova", async () => {
      const serverId = await boot(tb, 'vol-extend')
      const volume = await newVolume(tb, tb.member)
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId: volume.id } })).status, 200)
      await volumeAt(tb, volume.id, 'in-use')
      const extended = await rest(tb, tb.member, 'POST', `/volume/v3/volumes/${volume.id}/action`, { 'os-extend': { new_size: 2 } }, { 'openstack-api-version': 'volume 3.42' })
      assert.equal(extended.status, 202, JSON.stringify(extended.body))
      const requestId = extended.headers.get('x-openstack-request-id')!
      await until('the volume in-use at 2 GiB', async () => {
        const v = (await volumeApi(tb, tb.member, 'GET', `/volumes/${volume.id}`)).body.volume
        return v.status === 'in-use' && v.size === 2 ? v : undefined
      })
      // The action is the project's (Tempest waits for it as a member), its event's details the admin's.
      const actions = (await call(tb, tb.member, 'GET', `/servers/${serverId}/os-instance-actions`, undefined, '2.96')).body.instanceActions
      const action = actions.find((a: Json) => a.action === 'extend_volume')
      assert.ok(action, JSON.stringify(actions))
      assert.equal(action.request_id, requestId, "the extend request's id names the action")
      const shown = await call(tb, tb.admin, 'GET', `/servers/${serverId}/os-instance-actions/${requestId}`, undefined, '2.96')
      const events = shown.body.instanceAction.events.filter((e: Json) => e.event === 'compute_extend_volume')
      assert.equal(events.length, 1, JSON.stringify(shown.body))
      assert.equal(events[0].result, 'Success')
      assert.ok(events[0].finish_time)
      // The hypervisor was told: the simulated guest notes the capacity change on its console.
      const console = await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { 'os-getConsoleOutput': {} })
      assert.match(console.body.output, new RegExp(`volume ${volume.id} capacity change to ${2 * 1024 ** 3} bytes`))
      await call(tb, tb.member, 'DELETE', `/servers/${serverId}`)
      await serverAt(tb, serverId, 'GONE')
      await volumeAt(tb, volume.id, 'available')
    })

    it('boot from volume with each source type; volumes made at build, attached, deleted on termination', async () => {
      const bdm = (extra: Record<string, unknown>) => ({ boot_index: 0, destination_type: 'volume', ...extra })
      const bootFrom = async (name: string, mappings: Record<string, unknown>[], imageRef = '') => {
        const r = await call(tb, tb.member, 'POST', '/servers', { server: { name, imageRef, flavorRef: '1', networks: 'none', block_device_mapping_v2: mappings } }, '2.96')
        assert.equal(r.status, 202, JSON.stringify(r.body))
        return { id: r.body.server.id as string, server: await serverAt(tb, r.body.server.id, 'ACTIVE') }
      }
      const attachedOf = async (serverId: string) => (await call(tb, tb.member, 'GET', `/servers/${serverId}`, undefined, '2.79')).body.server['os-extended-volumes:volumes_attached']

      // image → volume: no image on the server, a bootable volume from the image.
      const fromImage = await bootFrom('bfv-image', [bdm({ source_type: 'image', uuid: IMAGE, volume_size: 1, delete_on_termination: true })])
      assert.equal(fromImage.server.image, '')
      const [rootFromImage] = await attachedOf(fromImage.id)
      assert.equal(rootFromImage.delete_on_termination, true)
      const imageVolume = await volumeAt(tb, rootFromImage.id, 'in-use')
      assert.equal(imageVolume.bootable, 'true')
      assert.equal(imageVolume.size, 1)
      assert.equal(imageVolume.volume_image_metadata.image_id, IMAGE)
      assert.deepEqual(imageVolume.attachments.map((a: Json) => [a.server_id, a.device]), [[fromImage.id, '/dev/vda']])
      assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${fromImage.id}/os-volume_attachments/${rootFromImage.id}`)).status, 400, 'the root volume stays')

      // volume → volume: the user's bootable volume; kept after the server (delete_on_termination false).
      const own = await newVolume(tb, tb.member, { imageRef: IMAGE, name: 'boot-me' })
      const fromVolume = await bootFrom('bfv-volume', [bdm({ source_type: 'volume', uuid: own.id })])
      assert.deepEqual(await attachedOf(fromVolume.id), [{ id: own.id, delete_on_termination: false }])
      assert.deepEqual((await volumeAt(tb, own.id, 'in-use')).attachments.map((a: Json) => a.device), ['/dev/vda'])

      // snapshot → volume.
      const snap = await volumeApi(tb, tb.member, 'POST', '/snapshots', { snapshot: { volume_id: (await newVolume(tb, tb.member, { imageRef: IMAGE })).id, name: 'base' } })
      assert.equal(snap.status, 202, JSON.stringify(snap.body))
      await until('snapshot available', async () => ((await volumeApi(tb, tb.member, 'GET', `/snapshots/${snap.body.snapshot.id}`)).body.snapshot.status === 'available' ? true : undefined))
      const fromSnapshot = await bootFrom('bfv-snapshot', [bdm({ source_type: 'snapshot', uuid: snap.body.snapshot.id, delete_on_termination: true })])
      const [rootFromSnapshot] = await attachedOf(fromSnapshot.id)
      const snapVolume = await volumeAt(tb, rootFromSnapshot.id, 'in-use')
      assert.equal(snapVolume.snapshot_id, snap.body.snapshot.id)
      assert.equal(snapVolume.size, 1)

      // blank → volume, beside the image's local root disk.
      const withBlank = await bootFrom(
        'bfv-blank',
        [
          { source_type: 'image', uuid: IMAGE, destination_type: 'local', boot_index: 0, delete_on_termination: true },
          { source_type: 'blank', destination_type: 'volume', volume_size: 2, delete_on_termination: true },
        ],
        IMAGE,
      )
      assert.equal(withBlank.server.image.id, IMAGE)
      const [blank] = await attachedOf(withBlank.id)
      const blankVolume = await volumeAt(tb, blank.id, 'in-use')
      assert.equal(blankVolume.size, 2)
      assert.equal(blankVolume.bootable, 'false')
      assert.equal(blankVolume.attachments[0].device, '/dev/vdb')
      const host = await hostOf(tb, withBlank.id)
      assert.ok((await host.driver.info(withBlank.id))!.volumes!.includes(blank.id))

      // Delete: delete_on_termination volumes go, the others are detached.
      for (const s of [fromImage, fromVolume, fromSnapshot, withBlank]) assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${s.id}`)).status, 204)
      for (const s of [fromImage, fromVolume, fromSnapshot, withBlank]) await serverAt(tb, s.id, 'GONE')
      for (const v of [rootFromImage.id, rootFromSnapshot.id, blank.id]) await volumeAt(tb, v, 'GONE')
      const kept = await volumeAt(tb, own.id, 'available')
      assert.deepEqual(kept.attachments, [])
      assert.equal((await tb.server.deps.store.db.selectFrom('block_device_mappings').select('id').where('server_id', 'in', [fromImage.id, fromVolume.id, fromSnapshot.id, withBlank.id]).execute()).length, 0)
    })

    it("boot from volume: Nova's validation errors are 400s that create nothing", async () => {
      const blankVolume = await newVolume(tb, tb.member)
      const theirs = await newVolume(tb, tb.other, { imageRef: IMAGE })
      const busyServer = await boot(tb, 'busy')
      const busy = await newVolume(tb, tb.member, { imageRef: IMAGE })
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${busyServer}/os-volume_attachments`, { volumeAttachment: { volumeId: busy.id } })).status, 200)
      await volumeAt(tb, busy.id, 'in-use')
      // An image whose min_disk (2 GiB) is more than a 1 GiB volume holds.
      const big = await imageApi(tb, tb.member, 'POST', '/v2/images', { name: 'needs-2g', disk_format: 'raw', container_format: 'bare', min_disk: 2 })
      assert.equal((await imageApi(tb, tb.member, 'PUT', `/v2/images/${big.body.id}/file`, 'x'.repeat(100), { 'content-type': 'application/octet-stream' })).status, 204)
      const v = (extra: Record<string, unknown>) => ({ boot_index: 0, destination_type: 'volume', ...extra })
      const cases: [string, Record<string, unknown>, RegExp, string?][] = [
        ['volume not bootable', { block_device_mapping_v2: [v({ source_type: 'volume', uuid: blankVolume.id })] }, /Block Device .* is not bootable/],
        ["another project's volume", { block_device_mapping_v2: [v({ source_type: 'volume', uuid: theirs.id })] }, /failed to get volume/],
        ['volume in use', { block_device_mapping_v2: [v({ source_type: 'volume', uuid: busy.id })] }, /Invalid volume: .*in-use/],
        ['image to volume without size', { block_device_mapping_v2: [v({ source_type: 'image', uuid: IMAGE })] }, /need to have a non-zero size/],
        ['volume below min_disk', { block_device_mapping_v2: [v({ source_type: 'image', uuid: big.body.id, volume_size: 1 })] }, /Volume is smaller than the minimum size specified in image metadata. Volume size is 1073741824 bytes, minimum size is 2147483648 bytes./],
        ['unknown image', { block_device_mapping_v2: [v({ source_type: 'image', uuid: '00000000-0000-4000-8000-000000000000', volume_size: 1 })] }, /failed to get image/],
        ['unknown snapshot', { block_device_mapping_v2: [v({ source_type: 'snapshot', uuid: '00000000-0000-4000-8000-000000000000' })] }, /failed to get snapshot/],
        ['blank without size', { imageRef: IMAGE, block_device_mapping_v2: [{ source_type: 'image', uuid: IMAGE, destination_type: 'local', boot_index: 0 }, { source_type: 'blank', destination_type: 'volume' }] }, /Blank volumes/],
        ['no boot index 0', { imageRef: IMAGE, block_device_mapping_v2: [{ source_type: 'blank', destination_type: 'volume', volume_size: 1, boot_index: 1 }] }, /Boot sequence/],
        ['image to local without imageRef', { imageRef: undefined, block_device_mapping_v2: [{ source_type: 'image', uuid: IMAGE, destination_type: 'local', boot_index: 0 }] }, /Mapping image to local is not supported/],
        ['volume_type on an existing volume', { block_device_mapping_v2: [v({ source_type: 'volume', uuid: busy.id, volume_type: '__DEFAULT__' })] }, /Specifying volume type to existing volume/],
        ['unknown volume_type', { block_device_mapping_v2: [v({ source_type: 'image', uuid: IMAGE, volume_size: 1, volume_type: 'gold' })] }, /Volume type gold could not be found/],
        ['volume_type before 2.67', { block_device_mapping_v2: [v({ source_type: 'image', uuid: IMAGE, volume_size: 1, volume_type: '__DEFAULT__' })] }, /volume_type/, '2.66'],
        ['a volume for several servers', { max_count: 2, block_device_mapping_v2: [v({ source_type: 'volume', uuid: blankVolume.id })] }, /Cannot attach one or more volumes to multiple instances/],
        ['two swap disks', { imageRef: IMAGE, block_device_mapping_v2: [{ source_type: 'image', uuid: IMAGE, destination_type: 'local', boot_index: 0 }, { source_type: 'blank', destination_type: 'local', guest_format: 'swap', volume_size: 1 }, { source_type: 'blank', destination_type: 'local', guest_format: 'swap', volume_size: 1 }] }, /More than one swap drive requested/],
      ]
      const before = await counts(tb)
      for (const [what, extra, message, version] of cases) {
        const r = await call(tb, tb.member, 'POST', '/servers', { server: { name: 'bad-bfv', imageRef: '', flavorRef: '1', networks: 'none', ...extra } }, version ?? '2.96')
        assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`)
        assert.match(r.body.badRequest.message, message, what)
      }
      assert.deepEqual(await counts(tb), before, 'nothing created')
      assert.equal((await volumeApi(tb, tb.member, 'GET', `/volumes/${blankVolume.id}`)).body.volume.status, 'available')
      assert.equal((await volumeApi(tb, tb.other, 'GET', `/volumes/${theirs.id}`)).body.volume.status, 'available')
      await call(tb, tb.member, 'DELETE', `/servers/${busyServer}`)
      await serverAt(tb, busyServer, 'GONE')
      await volumeAt(tb, busy.id, 'available')
    })

    it('a volume that cannot be created at build puts the server in ERROR with a fault, and gives back what it took', async () => {
      const own = await newVolume(tb, tb.member, { imageRef: IMAGE })
      const quota = await volumeApi(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { volumes: 1 } })
      assert.equal(quota.status, 200, JSON.stringify(quota.body))
      try {
        const r = await call(tb, tb.member, 'POST', '/servers', {
          server: {
            name: 'no-room', imageRef: '', flavorRef: '1', networks: 'none',
            block_device_mapping_v2: [{ source_type: 'volume', uuid: own.id, destination_type: 'volume', boot_index: 0 }, { source_type: 'blank', destination_type: 'volume', volume_size: 1, boot_index: 1 }],
          },
        }, '2.96')
        assert.equal(r.status, 202, JSON.stringify(r.body))
        const failed = await serverAt(tb, r.body.server.id, 'ERROR')
        assert.match(failed.fault.message, new RegExp(`Build of instance ${r.body.server.id} aborted: VolumeLimitExceeded`))
        assert.equal(failed.fault.code, 500)
        const back = await volumeAt(tb, own.id, 'available')
        assert.deepEqual(back.attachments, [], 'the reserved volume is given back')
        assert.deepEqual(failed['os-extended-volumes:volumes_attached'], [])
        await call(tb, tb.member, 'DELETE', `/servers/${r.body.server.id}`)
        await serverAt(tb, r.body.server.id, 'GONE')
      } finally {
        await volumeApi(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { volumes: -1 } })
      }
    })

    it("createImage makes an active image with the snapshot's bytes and Nova's properties", async () => {
      const serverId = await boot(tb, 'snap-me')
      const r = await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { createImage: { name: 'snap-1', metadata: { purpose: 'test' } } }, '2.45')
      assert.equal(r.status, 202, JSON.stringify(r.body))
      const imageId = r.body.image_id
      const image = await imageAt(tb, imageId, 'active')
      assert.equal(image.name, 'snap-1')
      assert.equal(image.owner, tb.member.projectId)
      assert.equal(image.visibility, 'private')
      assert.equal(image.image_type, 'snapshot')
      assert.equal(image.instance_uuid, serverId)
      assert.equal(image.base_image_ref, IMAGE)
      assert.equal(image.user_id, tb.member.userId)
      assert.equal(image.purpose, 'test')
      assert.equal(image.os_distro, defaultImageName() === DEFAULT_IMAGE_NAME ? 'pcc-busybox' : undefined, 'inherited from the base image')
      assert.equal(image.disk_format, 'qcow2')
      assert.equal(image.min_disk, 1, "the flavor's root disk")
      await serverAt(tb, serverId, 'ACTIVE')
      const file = await imageApi(tb, tb.member, 'GET', `/v2/images/${imageId}/file`)
      assert.equal(file.status, 200)
      assert.equal(file.bytes.length, image.size)
      assert.equal(createHash('md5').update(file.bytes).digest('hex'), image.checksum)
      assert.equal(file.bytes.toString('latin1', 0, 4), 'QFI\xfb')
      assert.equal(qcow2VirtualSize(file.bytes), 1024 ** 3, 'a disk the size of the flavor')
      assert.equal(qcow2Label(file.bytes), `pcc simulated root disk\nserver ${serverId}\nimage ${IMAGE}\n`)
      const events = (await call(tb, tb.member, 'GET', `/servers/${serverId}/os-instance-actions`, undefined, '2.96')).body.instanceActions
      assert.ok(events.some((a: Json) => a.action === 'createImage' && a.message === null))

      // Below 2.45: the image's address in Location.
      const old = await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { createImage: { name: 'snap-2' } }, '2.44')
      assert.equal(old.status, 202)
      const location = old.headers.get('location')!
      assert.match(location, /\/image\/v2\/images\/[0-9a-f-]{36}$/)
      await imageAt(tb, location.split('/').pop()!, 'active')
      await serverAt(tb, serverId, 'ACTIVE')

      // A snapshot the hypervisor fails: the image is killed, the server stays ACTIVE, the action is in error.
      const host = await hostOf(tb, serverId)
      host.driver.injectFailures(0, { snapshot: 'disk unreadable' })
      try {
        const failing = await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { createImage: { name: 'snap-3' } }, '2.45')
        await imageAt(tb, failing.body.image_id, 'killed')
        const still = await serverAt(tb, serverId, 'ACTIVE')
        assert.equal(still['OS-EXT-STS:vm_state'], 'active')
        const actions = (await call(tb, tb.member, 'GET', `/servers/${serverId}/os-instance-actions`, undefined, '2.96')).body.instanceActions
        assert.equal(actions.find((a: Json) => a.action === 'createImage' && a.message === 'Error')?.action, 'createImage')
      } finally {
        host.driver.injectFailures(0, {})
      }
      await call(tb, tb.member, 'DELETE', `/servers/${serverId}`)
      await serverAt(tb, serverId, 'GONE')
      await imageAt(tb, imageId, 'active')
    })

    it('createImage of a volume-backed server: volume snapshots and an image that maps them', async () => {
      const serverId = await bootFromVolume(tb, 'vb-snap')
      const [root] = (await call(tb, tb.member, 'GET', `/servers/${serverId}`, undefined, '2.79')).body.server['os-extended-volumes:volumes_attached']
      const made = await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { createImage: { name: 'vb-image' } }, '2.45')
      assert.equal(made.status, 202, JSON.stringify(made.body))
      const image = (await imageApi(tb, tb.member, 'GET', `/v2/images/${made.body.image_id}`)).body
      assert.equal(image.status, 'active', 'active at once, without data')
      assert.equal(image.size, 0)
      assert.equal(image.bdm_v2, 'True')
      assert.equal(image.root_device_name, '/dev/vda')
      const mapping = JSON.parse(image.block_device_mapping)
      assert.equal(mapping.length, 1)
      assert.equal(mapping[0].source_type, 'snapshot')
      assert.equal(mapping[0].boot_index, 0)
      const snapshot = (await volumeApi(tb, tb.member, 'GET', `/snapshots/${mapping[0].snapshot_id}`)).body.snapshot
      assert.equal(snapshot.volume_id, root.id)
      assert.equal(snapshot.name, 'snapshot for vb-image')
      await until('snapshot available', async () => ((await volumeApi(tb, tb.member, 'GET', `/snapshots/${snapshot.id}`)).body.snapshot.status === 'available' ? true : undefined))
      assert.equal((await call(tb, tb.member, 'GET', `/servers/${serverId}`, undefined, '2.96')).body.server['OS-EXT-STS:task_state'], null)
      // The image boots a new server from a volume made of that snapshot (Nova's image-defined block devices), as
      // Tempest's test_image_defined_boot_from_volume does: the image's own (empty) bytes are never read.
      const again = await boot(tb, 'vb-from-image', { imageRef: made.body.image_id })
      const shown = (await call(tb, tb.member, 'GET', `/servers/${again}`, undefined, '2.96')).body.server
      assert.equal(shown.image.id, made.body.image_id)
      const [made2] = shown['os-extended-volumes:volumes_attached']
      const volume = (await volumeApi(tb, tb.member, 'GET', `/volumes/${made2.id}`)).body.volume
      assert.equal(volume.snapshot_id, snapshot.id)
      assert.equal(volume.status, 'in-use')
      assert.equal(volume.volume_image_metadata.image_id, IMAGE, "the snapshot's volume's image metadata")
      assert.equal(volume.attachments[0].device, '/dev/vda')
      for (const id of [again, serverId]) {
        await call(tb, tb.member, 'DELETE', `/servers/${id}`)
        await serverAt(tb, id, 'GONE')
      }
    })

    it('createImage of a running volume-backed server quiesces it around the snapshots, as Nova does', async () => {
      const serverId = await bootFromVolume(tb, 'vb-quiesce')
      const [root] = (await call(tb, tb.member, 'GET', `/servers/${serverId}`, undefined, '2.79')).body.server['os-extended-volumes:volumes_attached']
      const host = await hostOf(tb, serverId)
      const freezes = async () => [...(await host.driver.consoleOutput(serverId)).matchAll(/\[ pcc \] fsfreeze (freeze|thaw)/g)].map((m) => m[1]).join(',')
      const createImage = (name: string) => call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { createImage: { name } }, '2.45')
      const snapshotsOfRoot = async () => Number((await tb.server.deps.store.db.selectFrom('volume_snapshots').select((eb) => eb.fn.countAll().as('n')).where('volume_id', '=', root.id).executeTakeFirstOrThrow()).n)

      // A guest that quiesces: frozen for the snapshots, thawed once they are taken.
      const made = await createImage('vb-frozen')
      assert.equal(made.status, 202, JSON.stringify(made.body))
      const [snapshotId] = JSON.parse((await imageApi(tb, tb.member, 'GET', `/v2/images/${made.body.image_id}`)).body.block_device_mapping).map((m: Json) => m.snapshot_id)
      assert.notEqual((await volumeApi(tb, tb.member, 'GET', `/snapshots/${snapshotId}`)).body.snapshot.status, 'creating', 'thawed (and answered) once the snapshot was taken')
      assert.equal(await freezes(), 'freeze,thaw')

      // A snapshot step that fails (the snapshot quota): the guest is thawed all the same.
      const quota = (snapshots: number) => volumeApi(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { snapshots } })
      await quota(0)
      try {
        assert.equal((await createImage('vb-over-quota')).status, 403)
      } finally {
        await quota(-1)
      }
      assert.equal(await freezes(), 'freeze,thaw,freeze,thaw')

      // A guest that cannot be quiesced: the snapshots go on unquiesced...
      host.driver.injectFailures(0, { quiesce: 'QEMU guest agent is not enabled' })
      try {
        const unquiesced = await createImage('vb-unquiesced')
        assert.equal(unquiesced.status, 202, JSON.stringify(unquiesced.body))
        await imageAt(tb, unquiesced.body.image_id, 'active')
        // ...unless the image the server booted from requires quiescing: 400, nothing made, the server as it was.
        const set = await volumeApi(tb, tb.member, 'POST', `/volumes/${root.id}/action`, { 'os-set_image_metadata': { metadata: { os_require_quiesce: 'yes' } } })
        assert.equal(set.status, 200, JSON.stringify(set.body))
        const before = { ...(await counts(tb)), rootSnapshots: await snapshotsOfRoot(), actions: (await call(tb, tb.member, 'GET', `/servers/${serverId}/os-instance-actions`)).body.instanceActions.length }
        const refused = await createImage('vb-refused')
        assert.equal(refused.status, 400, JSON.stringify(refused.body))
        assert.match(refused.body.badRequest.message, new RegExp(`^Quiescing is not supported in instance ${serverId}: QEMU guest agent is not enabled .*os_require_quiesce`))
        const now = { ...(await counts(tb)), rootSnapshots: await snapshotsOfRoot(), actions: (await call(tb, tb.member, 'GET', `/servers/${serverId}/os-instance-actions`)).body.instanceActions.length }
        assert.deepEqual(now, before, 'no image, no snapshot, no action')
        assert.equal((await imageApi(tb, tb.member, 'GET', '/v2/images?name=vb-refused')).body.images.length, 0)
        const server = (await call(tb, tb.member, 'GET', `/servers/${serverId}`, undefined, '2.96')).body.server
        assert.deepEqual([server.status, server['OS-EXT-STS:task_state']], ['ACTIVE', null])
      } finally {
        host.driver.injectFailures(0, {})
      }
      assert.equal(await freezes(), 'freeze,thaw,freeze,thaw', 'no freeze while it could not')

      // Only a running (ACTIVE) server is quiesced: a stopped one is snapshotted as it is, whatever its image says.
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { 'os-stop': null })).status, 202)
      await serverAt(tb, serverId, 'SHUTOFF')
      const stopped = await createImage('vb-stopped')
      assert.equal(stopped.status, 202, JSON.stringify(stopped.body))
      await imageAt(tb, stopped.body.image_id, 'active')
      await call(tb, tb.member, 'DELETE', `/servers/${serverId}`)
      await serverAt(tb, serverId, 'GONE')
    })

    it('shelve keeps a <name>-shelved image until unshelve boots from it; volume-backed servers have none', async () => {
      const serverId = await boot(tb, 'sleepy')
      const imagesBefore = (await counts(tb)).images
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { shelve: null })).status, 202)
      await serverAt(tb, serverId, 'SHELVED_OFFLOADED')
      const listed = (await imageApi(tb, tb.member, 'GET', '/v2/images?name=sleepy-shelved')).body.images
      assert.equal(listed.length, 1)
      const shelved = listed[0]
      assert.equal(shelved.status, 'active')
      assert.equal(shelved.instance_uuid, serverId)
      assert.equal(shelved.image_type, 'snapshot')
      assert.ok(shelved.size > 0)

      // Volumes attach to a shelved offloaded server from 2.20, at once (no host to connect on).
      const volume = await newVolume(tb, tb.member)
      const tooOld = await call(tb, tb.member, 'POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId: volume.id } }, '2.19')
      assert.equal(tooOld.status, 409)
      const attached = await call(tb, tb.member, 'POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId: volume.id } }, '2.20')
      assert.equal(attached.status, 200, JSON.stringify(attached.body))
      assert.equal((await volumeApi(tb, tb.member, 'GET', `/volumes/${volume.id}`)).body.volume.status, 'in-use')

      assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { unshelve: null })).status, 202)
      await serverAt(tb, serverId, 'ACTIVE')
      await imageAt(tb, shelved.id, 'GONE')
      assert.equal((await counts(tb)).images, imagesBefore, 'the shelved image is deleted after unshelve')
      const host = await hostOf(tb, serverId)
      assert.ok((await host.driver.info(serverId))!.volumes!.includes(volume.id), 'the volume is connected on the new host')
      assert.match((await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { 'os-getConsoleOutput': {} })).body.output, /attached/)
      assert.equal((await call(tb, tb.member, 'GET', `/servers/${serverId}`)).body.server.image.id, IMAGE, 'the server keeps its image')

      // Deleting a shelved server deletes its shelved image.
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { shelve: null })).status, 202)
      await serverAt(tb, serverId, 'SHELVED_OFFLOADED')
      const second = (await imageApi(tb, tb.member, 'GET', '/v2/images?name=sleepy-shelved')).body.images[0]
      assert.ok(second)
      await call(tb, tb.member, 'DELETE', `/servers/${serverId}`)
      await serverAt(tb, serverId, 'GONE')
      await imageAt(tb, second.id, 'GONE')
      await volumeAt(tb, volume.id, 'available')

      // Volume-backed: no image, straight to offloaded and back.
      const sleepy = await bootFromVolume(tb, 'vb-sleepy')
      const imageCount = (await counts(tb)).images
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${sleepy}/action`, { shelve: null })).status, 202)
      await serverAt(tb, sleepy, 'SHELVED_OFFLOADED')
      assert.equal((await counts(tb)).images, imageCount)
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${sleepy}/action`, { unshelve: null })).status, 202)
      await serverAt(tb, sleepy, 'ACTIVE')
      await call(tb, tb.member, 'DELETE', `/servers/${sleepy}`)
      await serverAt(tb, sleepy, 'GONE')
    })

    it('rebuild changes the image; the image must be active and visible; volume-backed servers need 2.93', async () => {
      const serverId = await boot(tb, 'rebuild-me')
      const upload = async (who: Persona, name: string, data?: string) => {
        const created = await imageApi(tb, who, 'POST', '/v2/images', { name, disk_format: 'raw', container_format: 'bare', visibility: 'private' })
        if (data) assert.equal((await imageApi(tb, who, 'PUT', `/v2/images/${created.body.id}/file`, data, { 'content-type': 'application/octet-stream' })).status, 204)
        return created.body.id as string
      }
      const next = await upload(tb.member, 'next', 'abc')
      const r = await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { rebuild: { imageRef: next } }, '2.96')
      assert.equal(r.status, 202, JSON.stringify(r.body))
      assert.equal(r.body.server.image.id, next)
      const rebuilt = await serverAt(tb, serverId, 'ACTIVE')
      assert.equal(rebuilt.image.id, next)
      const invisible = await upload(tb.other, 'theirs', 'abc')
      const queued = await upload(tb.member, 'empty')
      for (const [imageRef, message] of [[invisible, /Can not find requested image/], [queued, /is not active/]] as const) {
        const refused = await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { rebuild: { imageRef } }, '2.96')
        assert.equal(refused.status, 400)
        assert.match(refused.body.badRequest.message, message)
      }
      assert.equal((await call(tb, tb.member, 'GET', `/servers/${serverId}`)).body.server.image.id, next, 'unchanged by refused rebuilds')
      await call(tb, tb.member, 'DELETE', `/servers/${serverId}`)

      const vbId = await bootFromVolume(tb, 'vb-rebuild')
      const old = await call(tb, tb.member, 'POST', `/servers/${vbId}/action`, { rebuild: { imageRef: next } }, '2.92')
      assert.equal(old.status, 400)
      assert.match(old.body.badRequest.message, /Unable to rebuild with a different image for a volume-backed server/)
      const now = await call(tb, tb.member, 'POST', `/servers/${vbId}/action`, { rebuild: { imageRef: next } }, '2.93')
      assert.equal(now.status, 202, JSON.stringify(now.body))
      const done = await serverAt(tb, vbId, 'ACTIVE')
      assert.equal(done.image, '', 'a volume-backed server shows no image')
      await call(tb, tb.member, 'DELETE', `/servers/${vbId}`)
      await serverAt(tb, vbId, 'GONE')
    })
  })
}
