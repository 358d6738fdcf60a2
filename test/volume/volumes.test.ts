import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminSession, call, eventually, projectSession, type Session } from '../image/support.js'
import { qcow2Image } from '../../src/testkit/disk-images.js'

const V = '/volume/v3'

async function waitStatus(server: TestServer, session: Session, id: string, status: string, kind = 'volumes') {
  return eventually(async () => {
    const res = await call(server, session, 'GET', `${V}/${kind}/${id}`)
    const body = res.body[kind === 'volumes' ? 'volume' : 'snapshot']
    return body?.status === status ? body : undefined
  }, 10_000, `${kind} ${id} to be ${status}`)
}

async function waitGone(server: TestServer, session: Session, path: string) {
  await eventually(async () => (await call(server, session, 'GET', path)).status === 404, 10_000, `${path} to be gone`)
}

async function volumeCount(server: TestServer, session: Session) {
  return (await call(server, session, 'GET', `${V}/volumes`)).body.volumes.length as number
}

for (const dialect of DIALECTS) {
  describe(`block storage service (${dialect})`, () => {
    let server: TestServer
    let admin: Session
    let alice: Session
    let bob: Session

    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminSession(server)
      alice = await projectSession(server)
      bob = await projectSession(server)
    })
    after(() => server.close())

    it('serves the version documents cinderclient reads, without a token', async () => {
      const root = await call(server, undefined, 'GET', '/volume/')
      assert.equal(root.status, 300)
      const v = root.body.versions[0]
      assert.equal(v.id, 'v3.0')
      assert.equal(v.min_version, '3.0')
      assert.match(v.version, /^3\.\d+$/)
      assert.equal((await call(server, undefined, 'GET', `${V}/`)).body.versions[0].version, v.version)
      assert.equal((await call(server, undefined, 'GET', `${V}/volumes`)).status, 401)
    })

    it('negotiates the microversion and echoes it', async () => {
      const plain = await call(server, alice, 'GET', `${V}/volumes`)
      assert.equal(plain.headers.get('openstack-api-version'), 'volume 3.0')
      const latest = await call(server, alice, 'GET', `${V}/volumes`, undefined, { 'openstack-api-version': 'volume latest' })
      assert.match(latest.headers.get('openstack-api-version')!, /^volume 3\.\d+$/)
      assert.match(latest.headers.get('vary')!, /OpenStack-API-Version/)
      const tooHigh = await call(server, alice, 'GET', `${V}/volumes`, undefined, { 'openstack-api-version': 'volume 3.99' })
      assert.equal(tooHigh.status, 406)
      assert.equal(tooHigh.body.notAcceptable.code, 406)
    })

    it('creates a blank volume: creating, then available; shows, lists and updates it', async () => {
      const created = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 2, name: 'data', metadata: { a: '1' } } })
      assert.equal(created.status, 202)
      const vol = created.body.volume
      assert.equal(vol.status, 'creating')
      assert.equal(vol.size, 2)
      assert.equal(vol.volume_type, '__DEFAULT__')
      assert.equal(vol.bootable, 'false')
      assert.equal(vol.availability_zone, 'nova')
      assert.equal(vol['os-vol-host-attr:host'], undefined, 'admin-only field hidden')
      await waitStatus(server, alice, vol.id, 'available')
      const list = await call(server, alice, 'GET', `${V}/volumes/detail`)
      assert.deepEqual(list.body.volumes.map((v: { id: string }) => v.id), [vol.id])
      const summary = await call(server, alice, 'GET', `${V}/volumes`)
      assert.deepEqual(Object.keys(summary.body.volumes[0]).sort(), ['id', 'links', 'name'])
      const updated = await call(server, alice, 'PUT', `${V}/volumes/${vol.id}`, { volume: { name: 'data2', description: 'd' } })
      assert.equal(updated.body.volume.name, 'data2')
      const meta = await call(server, alice, 'POST', `${V}/volumes/${vol.id}/metadata`, { metadata: { b: '2' } })
      assert.deepEqual(meta.body.metadata, { a: '1', b: '2' })
      assert.equal((await call(server, alice, 'DELETE', `${V}/volumes/${vol.id}/metadata/a`)).status, 200)
      assert.deepEqual((await call(server, alice, 'GET', `${V}/volumes/${vol.id}`)).body.volume.metadata, { b: '2' })
      // The same resources under the project-id form of the URL.
      const byProject = await call(server, alice, 'GET', `/volume/v3/${alice.projectId}/volumes/${vol.id}`)
      assert.equal(byProject.status, 200)
      assert.equal((await call(server, alice, 'GET', `/volume/v3/${bob.projectId}/volumes`)).status, 400)
    })

    it('hides another project’s volumes (404) and changes nothing for them', async () => {
      const vol = (await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, name: 'private' } })).body.volume
      await waitStatus(server, alice, vol.id, 'available')
      assert.equal((await call(server, bob, 'GET', `${V}/volumes/${vol.id}`)).status, 404)
      const del = await call(server, bob, 'DELETE', `${V}/volumes/${vol.id}`)
      assert.equal(del.status, 404)
      assert.equal(del.body.itemNotFound.code, 404)
      assert.equal((await call(server, bob, 'PUT', `${V}/volumes/${vol.id}`, { volume: { name: 'x' } })).status, 404)
      assert.equal((await call(server, bob, 'POST', `${V}/snapshots`, { snapshot: { volume_id: vol.id } })).status, 404)
      assert.equal((await call(server, bob, 'GET', `${V}/volumes?all_tenants=1`)).status, 403)
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${vol.id}`)).body.volume.name, 'private')
      const all = await call(server, admin, 'GET', `${V}/volumes/detail?all_tenants=true`)
      assert.ok(all.body.volumes.some((v: { id: string }) => v.id === vol.id))
    })

    it('creates from an image: bootable, with image metadata; refuses sizes below min_disk and bad images', async () => {
      const image = (await call(server, alice, 'POST', '/image/v2/images', { name: 'boot', disk_format: 'qcow2', container_format: 'bare', min_disk: 3 })).body
      const queuedRef = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 3, imageRef: image.id } })
      assert.equal(queuedRef.status, 400, 'an image without data is not active')
      await fetch(`${server.url}/image/v2/images/${image.id}/file`, { method: 'PUT', headers: { 'x-auth-token': alice.token, 'content-type': 'application/octet-stream' }, body: qcow2Image(64 * 1024 * 1024) })
      const before = await volumeCount(server, alice)
      const small = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 2, imageRef: image.id } })
      assert.equal(small.status, 400)
      assert.match(small.body.badRequest.message, /minDisk/)
      const missing = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 3, imageRef: '00000000-0000-0000-0000-000000000000' } })
      assert.equal(missing.status, 400)
      const bobs = await call(server, bob, 'POST', `${V}/volumes`, { volume: { size: 3, imageRef: image.id } })
      assert.equal(bobs.status, 400, 'another project’s shared image is not visible without membership')
      assert.equal(await volumeCount(server, alice), before, 'nothing created')
      const ok = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 3, imageRef: image.id, name: 'root' } })
      assert.equal(ok.status, 202)
      const vol = await waitStatus(server, alice, ok.body.volume.id, 'available')
      assert.equal(vol.bootable, 'true')
      assert.equal(vol.volume_image_metadata.image_id, image.id)
      assert.equal(vol.volume_image_metadata.disk_format, 'qcow2')
    })

    it('rejects bad input in Cinder shape, creating nothing', async () => {
      const before = await volumeCount(server, alice)
      const cases: [unknown, number][] = [
        [{ volume: { size: 0 } }, 400],
        [{ volume: { size: 'big' } }, 400],
        [{ volume: {} }, 400],
        [{ nothing: {} }, 400],
        [{ volume: { size: 1, availability_zone: 'mars' } }, 400],
        [{ volume: { size: 1, volume_type: 'gold' } }, 404],
        [{ volume: { size: 1, snapshot_id: 'x', source_volid: 'y' } }, 400],
      ]
      for (const [body, status] of cases) {
        const res = await call(server, alice, 'POST', `${V}/volumes`, body)
        assert.equal(res.status, status, JSON.stringify(body))
        const fault = Object.values(res.body)[0] as { code: number; message: string }
        assert.equal(fault.code, status)
        assert.ok(fault.message.length > 0)
      }
      assert.equal(await volumeCount(server, alice), before)
    })

    it('extends, snapshots, and creates from a snapshot and from a volume', async () => {
      const vol = (await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, name: 'src' } })).body.volume
      await waitStatus(server, alice, vol.id, 'available')
      assert.equal((await call(server, alice, 'POST', `${V}/volumes/${vol.id}/action`, { 'os-extend': { new_size: 1 } })).status, 400)
      assert.equal((await call(server, alice, 'POST', `${V}/volumes/${vol.id}/action`, { 'os-extend': { new_size: 2 } })).status, 202)
      const extended = await waitStatus(server, alice, vol.id, 'available')
      assert.equal(extended.size, 2)
      const snap = await call(server, alice, 'POST', `${V}/snapshots`, { snapshot: { volume_id: vol.id, name: 's1' } })
      assert.equal(snap.status, 202)
      assert.equal(snap.body.snapshot.status, 'creating')
      assert.equal(snap.body.snapshot.size, 2)
      await waitStatus(server, alice, snap.body.snapshot.id, 'available', 'snapshots')
      const snaps = await call(server, alice, 'GET', `${V}/snapshots/detail`)
      assert.ok(snaps.body.snapshots.some((s: { id: string }) => s.id === snap.body.snapshot.id))
      const fromSnap = await call(server, alice, 'POST', `${V}/volumes`, { volume: { snapshot_id: snap.body.snapshot.id } })
      assert.equal(fromSnap.status, 202)
      assert.equal(fromSnap.body.volume.size, 2)
      assert.equal(fromSnap.body.volume.snapshot_id, snap.body.snapshot.id)
      const tooSmall = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, source_volid: vol.id } })
      assert.equal(tooSmall.status, 400)
      const clone = await call(server, alice, 'POST', `${V}/volumes`, { volume: { source_volid: vol.id } })
      assert.equal(clone.status, 202)
      assert.equal(clone.body.volume.source_volid, vol.id)
      // A volume with snapshots is not deleted unless cascading.
      await waitStatus(server, alice, fromSnap.body.volume.id, 'available')
      const refused = await call(server, alice, 'DELETE', `${V}/volumes/${vol.id}`)
      assert.equal(refused.status, 400)
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${vol.id}`)).body.volume.status, 'available')
      assert.equal((await call(server, alice, 'DELETE', `${V}/snapshots/${snap.body.snapshot.id}`)).status, 202)
      await waitGone(server, alice, `${V}/snapshots/${snap.body.snapshot.id}`)
      assert.equal((await call(server, alice, 'DELETE', `${V}/volumes/${vol.id}`)).status, 202)
      await waitGone(server, alice, `${V}/volumes/${vol.id}`)
    })

    it('refuses to delete a volume in use, changing nothing', async () => {
      const vol = (await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, name: 'attached' } })).body.volume
      await waitStatus(server, alice, vol.id, 'available')
      const { volumes } = server.deps.volumeServices
      await server.deps.store.db.transaction().execute(async (tx) => {
        await volumes.reserveForAttach(tx, { volumeId: vol.id, projectId: alice.projectId, serverId: 'server-1' })
        await volumes.attach(tx, { volumeId: vol.id, serverId: 'server-1', device: '/dev/vdb', hostName: 'sim-1' })
      })
      const shown = (await call(server, alice, 'GET', `${V}/volumes/${vol.id}`)).body.volume
      assert.equal(shown.status, 'in-use')
      assert.equal(shown.attachments[0].server_id, 'server-1')
      assert.equal(shown.attachments[0].device, '/dev/vdb')
      const del = await call(server, alice, 'DELETE', `${V}/volumes/${vol.id}`)
      assert.equal(del.status, 400)
      assert.match(del.body.badRequest.message, /in-use/)
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${vol.id}`)).body.volume.status, 'in-use')
      assert.equal((await call(server, alice, 'POST', `${V}/snapshots`, { snapshot: { volume_id: vol.id } })).status, 400, 'in-use needs force')
      // The attachments API shows it from 3.27 on, to its project only.
      const mv = { 'openstack-api-version': 'volume 3.27' }
      assert.equal((await call(server, alice, 'GET', `${V}/attachments`)).status, 404)
      const mine = await call(server, alice, 'GET', `${V}/attachments?volume_id=${vol.id}`, undefined, mv)
      assert.deepEqual(mine.body.attachments.map((a: { instance: string; status: string }) => [a.instance, a.status]), [['server-1', 'attached']])
      const one = await call(server, alice, 'GET', `${V}/attachments/${mine.body.attachments[0].id}`, undefined, mv)
      assert.equal(one.body.attachment.volume_id, vol.id)
      assert.equal((await call(server, bob, 'GET', `${V}/attachments/${mine.body.attachments[0].id}`, undefined, mv)).status, 404)
      assert.equal((await call(server, alice, 'POST', `${V}/snapshots`, { snapshot: { volume_id: vol.id, force: true } })).status, 202)
    })

    it('enforces quotas with 413 and shows usage', async () => {
      const carol = await projectSession(server)
      assert.equal((await call(server, carol, 'PUT', `${V}/os-quota-sets/${carol.projectId}`, { quota_set: { volumes: 1 } })).status, 403)
      const set = await call(server, admin, 'PUT', `${V}/os-quota-sets/${carol.projectId}`, { quota_set: { volumes: 2, gigabytes: 5 } })
      assert.equal(set.status, 200)
      assert.equal((await call(server, carol, 'POST', `${V}/volumes`, { volume: { size: 6 } })).status, 413)
      assert.equal((await call(server, carol, 'POST', `${V}/volumes`, { volume: { size: 3 } })).status, 202)
      const over = await call(server, carol, 'POST', `${V}/volumes`, { volume: { size: 3 } })
      assert.equal(over.status, 413)
      assert.match(over.body.overLimit.message, /gigabytes/)
      assert.equal((await call(server, carol, 'POST', `${V}/volumes`, { volume: { size: 1 } })).status, 202)
      assert.equal((await call(server, carol, 'POST', `${V}/volumes`, { volume: { size: 1 } })).status, 413)
      const usage = await call(server, carol, 'GET', `${V}/os-quota-sets/${carol.projectId}?usage=True`)
      assert.deepEqual(usage.body.quota_set.volumes, { limit: 2, in_use: 2, reserved: 0, allocated: 0 })
      assert.equal(usage.body.quota_set.gigabytes.in_use, 4)
      assert.equal((await call(server, carol, 'GET', `${V}/os-quota-sets/${bob.projectId}`)).status, 403)
      const limits = await call(server, carol, 'GET', `${V}/limits`)
      assert.equal(limits.body.limits.absolute.totalVolumesUsed, 2)
    })

    it('never lets concurrent creates pass the quota', async () => {
      const erin = await projectSession(server)
      await call(server, admin, 'PUT', `${V}/os-quota-sets/${erin.projectId}`, { quota_set: { volumes: 3 } })
      const results = await Promise.all(Array.from({ length: 8 }, (_, n) => call(server, erin, 'POST', `${V}/volumes`, { volume: { size: 1, name: `c${n}` } })))
      const statuses = results.map((r) => r.status).sort()
      assert.deepEqual(statuses, [202, 202, 202, 413, 413, 413, 413, 413])
      assert.equal(await volumeCount(server, erin), 3)
    })

    it('filters, sorts and pages volumes with volumes_links', async () => {
      const dave = await projectSession(server)
      for (const [name, size] of [['c', 1], ['a', 2], ['b', 3]] as const) await call(server, dave, 'POST', `${V}/volumes`, { volume: { name, size, metadata: { tier: size > 1 ? 'hi' : 'lo' } } })
      const sorted = await call(server, dave, 'GET', `${V}/volumes/detail?sort=name:asc`)
      assert.deepEqual(sorted.body.volumes.map((v: { name: string }) => v.name), ['a', 'b', 'c'])
      const names: string[] = []
      let next: string | undefined = `${server.url}${V}/volumes/detail?sort_key=size&sort_dir=desc&limit=2`
      while (next) {
        const page: { body: { volumes: { name: string }[]; volumes_links?: { rel: string; href: string }[] } } = await call(server, dave, 'GET', next.replace(server.url, '').replace('http://127.0.0.1:1', ''))
        names.push(...page.body.volumes.map((v) => v.name))
        next = page.body.volumes_links?.find((l) => l.rel === 'next')?.href
      }
      assert.deepEqual(names, ['b', 'a', 'c'])
      const hi = await call(server, dave, 'GET', `${V}/volumes/detail?metadata=${encodeURIComponent("{'tier': 'hi'}")}`)
      assert.deepEqual(hi.body.volumes.map((v: { name: string }) => v.name).sort(), ['a', 'b'])
      const named = await call(server, dave, 'GET', `${V}/volumes?name=c`)
      assert.equal(named.body.volumes.length, 1)
      assert.equal((await call(server, dave, 'GET', `${V}/volumes?sort_key=colour`)).status, 400)
    })

    it('counts volumes, snapshots and backups with with_count from 3.45, ignoring limit and marker', async () => {
      const at = (version: string) => ({ 'openstack-api-version': `volume ${version}` })
      const frank = await projectSession(server)
      const ids: string[] = []
      for (const name of ['w1', 'w2', 'w3']) ids.push((await call(server, frank, 'POST', `${V}/volumes`, { volume: { name, size: 1 } })).body.volume.id)
      for (const id of ids) await waitStatus(server, frank, id, 'available')
      for (const name of ['s1', 's2']) {
        const snap = await call(server, frank, 'POST', `${V}/snapshots`, { snapshot: { volume_id: ids[0], name } })
        await waitStatus(server, frank, snap.body.snapshot.id, 'available', 'snapshots')
      }
      for (const id of ids.slice(0, 2)) {
        const made = await call(server, frank, 'POST', `${V}/backups`, { backup: { volume_id: id } })
        assert.equal(made.status, 202, JSON.stringify(made.body))
        await eventually(async () => (await call(server, frank, 'GET', `${V}/backups/${made.body.backup.id}`)).body.backup.status === 'available', 20_000, 'the backup')
      }
      // Another project's records are not counted.
      await call(server, bob, 'POST', `${V}/volumes`, { volume: { name: 'w1', size: 1 } })
      const lists = [
        { path: 'volumes', key: 'volumes', all: 3 },
        { path: 'volumes/detail', key: 'volumes', all: 3 },
        { path: 'snapshots', key: 'snapshots', all: 2 },
        { path: 'snapshots/detail', key: 'snapshots', all: 2 },
        { path: 'backups', key: 'backups', all: 2 },
        { path: 'backups/detail', key: 'backups', all: 2 },
      ]
      for (const { path, key, all } of lists) {
        const first = await call(server, frank, 'GET', `${V}/${path}?with_count=true&limit=1`, undefined, at('3.45'))
        assert.equal(first.status, 200, `${path}: ${JSON.stringify(first.body)}`)
        assert.equal(first.body[key].length, 1, path)
        assert.equal(first.body.count, all, `${path}: the count ignores the limit`)
        const rest = await call(server, frank, 'GET', `${V}/${path}?with_count=1&marker=${first.body[key][0].id}`, undefined, at('3.60'))
        assert.equal(rest.body[key].length, all - 1, path)
        assert.equal(rest.body.count, all, `${path}: the count ignores the marker`)
        assert.equal((await call(server, frank, 'GET', `${V}/${path}?with_count=false`, undefined, at('3.45'))).body.count, undefined, `${path}: not asked`)
        assert.equal((await call(server, frank, 'GET', `${V}/${path}`, undefined, at('3.45'))).body.count, undefined, `${path}: not asked`)
        // Before 3.45 Cinder ignores the parameter, a bad value too.
        const old = await call(server, frank, 'GET', `${V}/${path}?with_count=true`, undefined, at('3.44'))
        assert.equal(old.status, 200, path)
        assert.equal(old.body.count, undefined, `${path} at 3.44`)
        assert.equal((await call(server, frank, 'GET', `${V}/${path}?with_count=maybe`, undefined, at('3.44'))).status, 200, path)
        const bad = await call(server, frank, 'GET', `${V}/${path}?with_count=maybe`, undefined, at('3.45'))
        assert.equal(bad.status, 400, path)
        assert.match(bad.body.badRequest.message, /with_count/)
      }
      // The count follows the filters.
      const named = await call(server, frank, 'GET', `${V}/volumes?with_count=true&name=w2`, undefined, at('3.45'))
      assert.equal(named.body.count, 1)
      const ofVolume = await call(server, frank, 'GET', `${V}/backups?with_count=true&volume_id=${ids[1]}`, undefined, at('3.45'))
      assert.equal(ofVolume.body.count, 1)
      const none = await call(server, frank, 'GET', `${V}/snapshots/detail?with_count=true&status=error`, undefined, at('3.45'))
      assert.deepEqual([none.body.snapshots.length, none.body.count], [0, 0])
    })

    it('retypes, edits image metadata and force-deletes (admin)', async () => {
      await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'slow' } })
      const vol = (await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, name: 'rt' } })).body.volume
      await waitStatus(server, alice, vol.id, 'available')
      assert.equal((await call(server, alice, 'POST', `${V}/volumes/${vol.id}/action`, { 'os-retype': { new_type: 'slow' } })).status, 202)
      await eventually(async () => (await call(server, alice, 'GET', `${V}/volumes/${vol.id}`)).body.volume.volume_type === 'slow', 10_000, 'the new type')
      await waitStatus(server, alice, vol.id, 'available')
      assert.equal((await call(server, alice, 'POST', `${V}/volumes/${vol.id}/action`, { 'os-retype': { new_type: 'nope' } })).status, 404)
      const set = await call(server, alice, 'POST', `${V}/volumes/${vol.id}/action`, { 'os-set_image_metadata': { metadata: { hw_disk_bus: 'scsi' } } })
      assert.deepEqual(set.body.metadata, { hw_disk_bus: 'scsi' })
      assert.equal((await call(server, alice, 'POST', `${V}/volumes/${vol.id}/action`, { 'os-unset_image_metadata': { key: 'hw_disk_bus' } })).status, 200)
      assert.equal((await call(server, alice, 'POST', `${V}/volumes/${vol.id}/action`, { 'os-frobnicate': {} })).status, 400)
      assert.equal((await call(server, alice, 'POST', `${V}/volumes/${vol.id}/action`, { 'os-force_delete': {} })).status, 403)
      assert.equal((await call(server, admin, 'POST', `${V}/volumes/${vol.id}/action`, { 'os-force_delete': {} })).status, 202)
      await waitGone(server, alice, `${V}/volumes/${vol.id}`)
    })

    it('lists zones for everyone and services for admins', async () => {
      assert.equal((await call(server, alice, 'GET', `${V}/os-availability-zone`)).body.availabilityZoneInfo[0].zoneName, 'nova')
      assert.equal((await call(server, alice, 'GET', `${V}/os-services`)).status, 403)
      const services = await call(server, admin, 'GET', `${V}/os-services`)
      assert.ok(services.body.services.some((s: { binary: string; state: string }) => s.binary === 'cinder-volume' && s.state === 'up'))
    })

    it('manages volume types (admin) and lists the default', async () => {
      const types = await call(server, alice, 'GET', `${V}/types`)
      assert.ok(types.body.volume_types.some((t: { name: string }) => t.name === '__DEFAULT__'))
      assert.equal((await call(server, alice, 'GET', `${V}/types/default`)).body.volume_type.name, '__DEFAULT__')
      assert.equal((await call(server, alice, 'POST', `${V}/types`, { volume_type: { name: 'fast' } })).status, 403)
      const fast = await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'fast', extra_specs: { volume_backend_name: 'file' } } })
      assert.equal(fast.status, 200)
      assert.equal((await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'fast' } })).status, 409)
      // An update that changes nothing answers the type as it is (it was a 500: an UPDATE without columns).
      const same = await call(server, admin, 'PUT', `${V}/types/${fast.body.volume_type.id}`, { volume_type: {} })
      assert.equal(same.status, 200)
      assert.equal(same.body.volume_type.name, 'fast')
      const unknown = await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'ceph', extra_specs: { volume_backend_name: 'rbd' } } })
      assert.equal(unknown.status, 400, 'a backend pcc does not have')
      assert.match(unknown.body.badRequest.message, /volume_backend_name/)
      const misplaced = await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'lvm-here', extra_specs: { volume_backend_name: 'lvm', 'pcc:placement': 'controller' } } })
      assert.equal(misplaced.status, 400, 'LVM lives on storage hosts only')
      const vol = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, volume_type: 'fast' } })
      assert.equal(vol.body.volume.volume_type, 'fast')
      assert.equal((await call(server, admin, 'DELETE', `${V}/types/${fast.body.volume_type.id}`)).status, 400, 'in use')
    })
  })
}
