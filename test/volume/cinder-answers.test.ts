/**
 * Answers of the block storage API that Cinder's clients (and Tempest's response schemas) hold pcc to: which keys
 * create/update carry versus show/detail, next links of full pages, per-key snapshot metadata, the extension list,
 * uploading a volume to an image (os-volume_upload_image), quota sets, volume types, service filters, snapshot
 * admin actions, sorting and paging, reservations and the volume summary.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminSession, call, eventually, projectSession, type Reply, type Session } from '../image/support.js'

const V = '/volume/v3'
/** What Cinder's API extensions add to show and detail, never to the create and update answers. */
const SHOW_ONLY = ['os-vol-tenant-attr:tenant_id', 'os-vol-host-attr:host', 'os-vol-mig-status-attr:migstat', 'os-vol-mig-status-attr:name_id', 'volume_image_metadata']
const SNAPSHOT_SHOW_ONLY = ['os-extended-snapshot-attributes:progress', 'os-extended-snapshot-attributes:project_id']

describe('block storage answers as Cinder gives them', () => {
  let server: TestServer
  let admin: Session
  let alice: Session
  let imageId: string

  const status = (session: Session, kind: 'volumes' | 'snapshots', id: string, wanted: string) =>
    eventually(async () => {
      const body = (await call(server, session, 'GET', `${V}/${kind}/${id}`)).body
      const record = body[kind === 'volumes' ? 'volume' : 'snapshot']
      return record?.status === wanted ? record : undefined
    }, 10_000, `${kind} ${id} to be ${wanted}`)

  const createVolume = async (session: Session, volume: Record<string, unknown>) => {
    const created = await call(server, session, 'POST', `${V}/volumes`, { volume: { size: 1, ...volume } })
    assert.equal(created.status, 202, JSON.stringify(created.body))
    await status(session, 'volumes', created.body.volume.id, 'available')
    return created.body.volume
  }

  before(async () => {
    server = await startTestServer()
    admin = await adminSession(server)
    alice = await projectSession(server)
    imageId = (await call(server, alice, 'GET', '/image/v2/images')).body.images[0].id
  })
  after(() => server.close())

  it('create and update answer without the show-only keys; show and detail carry them', async () => {
    for (const who of [alice, admin]) {
      const created = await call(server, who, 'POST', `${V}/volumes`, { volume: { size: 1, imageRef: imageId } })
      assert.equal(created.status, 202)
      for (const key of SHOW_ONLY) assert.equal(key in created.body.volume, false, `create: ${key}`)
      const id = created.body.volume.id
      await status(who, 'volumes', id, 'available')
      const updated = await call(server, who, 'PUT', `${V}/volumes/${id}`, { volume: { name: 'renamed' } })
      assert.equal(updated.body.volume.name, 'renamed')
      for (const key of SHOW_ONLY) assert.equal(key in updated.body.volume, false, `update: ${key}`)
      const shown = (await call(server, who, 'GET', `${V}/volumes/${id}`)).body.volume
      const listed = (await call(server, who, 'GET', `${V}/volumes/detail`)).body.volumes.find((v: { id: string }) => v.id === id)
      for (const view of [shown, listed]) {
        assert.equal(view['os-vol-tenant-attr:tenant_id'], who.projectId)
        assert.equal(view.volume_image_metadata.image_id, imageId)
        assert.equal('os-vol-host-attr:host' in view, who === admin, 'the host is for admins')
      }
    }
  })

  it('snapshot create and update answer the summary; show and detail add the extended attributes', async () => {
    const volume = await createVolume(alice, {})
    const created = await call(server, alice, 'POST', `${V}/snapshots`, { snapshot: { volume_id: volume.id, name: 's' } })
    assert.equal(created.status, 202)
    for (const key of SNAPSHOT_SHOW_ONLY) assert.equal(key in created.body.snapshot, false, `create: ${key}`)
    const id = created.body.snapshot.id
    await status(alice, 'snapshots', id, 'available')
    const updated = await call(server, alice, 'PUT', `${V}/snapshots/${id}`, { snapshot: { name: 's2' } })
    for (const key of SNAPSHOT_SHOW_ONLY) assert.equal(key in updated.body.snapshot, false, `update: ${key}`)
    const shown = (await call(server, alice, 'GET', `${V}/snapshots/${id}`)).body.snapshot
    assert.equal(shown['os-extended-snapshot-attributes:progress'], '100%')
    assert.equal(shown['os-extended-snapshot-attributes:project_id'], alice.projectId)
  })

  it('links the next page whenever a page is full, also when nothing follows', async () => {
    const bob = await projectSession(server)
    const volumes = [await createVolume(bob, { name: 'a' }), await createVolume(bob, { name: 'b' })]
    const snapshots = []
    for (const v of volumes) {
      const snap = (await call(server, bob, 'POST', `${V}/snapshots`, { snapshot: { volume_id: v.id } })).body.snapshot
      snapshots.push(await status(bob, 'snapshots', snap.id, 'available'))
    }
    for (const [collection, all] of [['volumes', volumes], ['snapshots', snapshots]] as const) {
      const seen: string[] = []
      let next: string | undefined = `${V}/${collection}?limit=1`
      let pages = 0
      while (next) {
        const page: Reply['body'] = (await call(server, bob, 'GET', next)).body
        seen.push(...page[collection].map((r: { id: string }) => r.id))
        pages++
        next = page[`${collection}_links`]?.find((l: { rel: string }) => l.rel === 'next')?.href?.replace(/^https?:\/\/[^/]+/, '')
      }
      assert.equal(pages, 3, `${collection}: two full pages, each linking the next, then an empty one`)
      assert.deepEqual(seen.sort(), all.map((r: { id: string }) => r.id).sort())
    }
  })

  it('sets, shows and deletes one snapshot metadata item', async () => {
    const volume = await createVolume(alice, {})
    const snap = (await call(server, alice, 'POST', `${V}/snapshots`, { snapshot: { volume_id: volume.id, metadata: { a: '1' } } })).body.snapshot
    await status(alice, 'snapshots', snap.id, 'available')
    const item = `${V}/snapshots/${snap.id}/metadata/b`
    const put = await call(server, alice, 'PUT', item, { meta: { b: '2' } })
    assert.equal(put.status, 200)
    assert.deepEqual(put.body, { meta: { b: '2' } })
    assert.deepEqual((await call(server, alice, 'GET', item)).body, { meta: { b: '2' } })
    assert.equal((await call(server, alice, 'PUT', item, { meta: { c: '3' } })).status, 400, 'key of the body and of the path differ')
    assert.equal((await call(server, alice, 'DELETE', item)).status, 200)
    assert.equal((await call(server, alice, 'DELETE', item)).status, 404)
    assert.deepEqual((await call(server, alice, 'GET', `${V}/snapshots/${snap.id}/metadata`)).body, { metadata: { a: '1' } })
  })

  it('lists the extensions it implements, in the shape clients validate', async () => {
    const { extensions } = (await call(server, alice, 'GET', `${V}/extensions`)).body
    const aliases = extensions.map((e: { alias: string }) => e.alias)
    for (const alias of ['os-vol-tenant-attr', 'os-volume-actions', 'os-extended-snapshot-attributes', 'os-types-manage']) assert.ok(aliases.includes(alias), alias)
    for (const e of extensions) assert.deepEqual(Object.keys(e).sort(), ['alias', 'description', 'links', 'name', 'updated'])
  })

  it('uploads a volume to a new image; an attached volume needs force; bad requests change nothing', async () => {
    const volume = await createVolume(alice, { size: 2 })
    const action = (body: unknown) => call(server, alice, 'POST', `${V}/volumes/${volume.id}/action`, body)
    assert.equal((await action({ 'os-volume_upload_image': { image_name: 'x', disk_format: 'vmdk' } })).status, 400)
    assert.equal((await action({ 'os-volume_upload_image': { disk_format: 'qcow2' } })).status, 400, 'image_name is required')
    assert.equal((await call(server, alice, 'GET', `${V}/volumes/${volume.id}`)).body.volume.status, 'available')

    const res = await action({ 'os-volume_upload_image': { image_name: 'from-volume', disk_format: 'qcow2' } })
    assert.equal(res.status, 202, JSON.stringify(res.body))
    const answer = res.body['os-volume_upload_image']
    assert.equal(answer.status, 'uploading')
    assert.equal(answer.image_name, 'from-volume')
    assert.equal(answer.disk_format, 'qcow2')
    assert.equal(answer.container_format, 'bare')
    const image = await eventually(async () => {
      const body = (await call(server, alice, 'GET', `/image/v2/images/${answer.image_id}`)).body
      return body.status === 'active' ? body : undefined
    }, 10_000, 'the uploaded image to be active')
    assert.equal(image.name, 'from-volume')
    assert.equal(image.owner, alice.projectId)
    await status(alice, 'volumes', volume.id, 'available')
    const file = await fetch(`${server.url}/image/v2/images/${image.id}/file`, { headers: { 'x-auth-token': alice.token } })
    const bytes = Buffer.from(await file.arrayBuffer())
    assert.equal(bytes.subarray(0, 4).toString('latin1'), 'QFI\xfb', 'a qcow2 file')
    assert.equal(bytes.readBigUInt64BE(24), 2n * 1024n ** 3n, 'describing a disk of the volume size')

    await call(server, admin, 'POST', `${V}/volumes/${volume.id}/action`, { 'os-reset_status': { status: 'in-use' } })
    assert.equal((await action({ 'os-volume_upload_image': { image_name: 'y', disk_format: 'qcow2' } })).status, 400, 'in use, no force')
    assert.equal((await call(server, alice, 'GET', '/image/v2/images?name=y')).body.images.length, 0, 'no image made')
  })

  it('answers every quota set with Cinder\'s keys, the ones it does not count included', async () => {
    const keys = ['backup_gigabytes', 'backups', 'gigabytes', 'groups', 'per_volume_gigabytes', 'snapshots', 'volumes']
    // Besides these, each volume type's own quotas (volumes_<type>, …), unlimited unless set.
    const base = (set: Record<string, unknown>) => Object.keys(set).filter((k) => !/^(volumes|gigabytes|snapshots)_/.test(k)).sort()
    const shown = (await call(server, admin, 'GET', `${V}/os-quota-sets/${alice.projectId}`)).body.quota_set
    assert.deepEqual(base(shown), [...keys, 'id'].sort())
    assert.deepEqual([shown.volumes___DEFAULT__, shown.gigabytes___DEFAULT__, shown.snapshots___DEFAULT__], [-1, -1, -1])
    const updated = await call(server, admin, 'PUT', `${V}/os-quota-sets/${alice.projectId}`, { quota_set: { volumes: 12 } })
    assert.equal(updated.status, 200)
    assert.deepEqual(base(updated.body.quota_set), keys)
    assert.equal(updated.body.quota_set.volumes, 12)
    const usage = (await call(server, admin, 'GET', `${V}/os-quota-sets/${alice.projectId}?usage=true`)).body.quota_set
    assert.deepEqual(usage.backups, { limit: 10, in_use: 0, reserved: 0, allocated: 0 })
    const all = { volumes: 11, gigabytes: 1009, snapshots: 11, backups: 11, backup_gigabytes: 1009, per_volume_gigabytes: 1009, groups: 11 }
    const updatedAll = (await call(server, admin, 'PUT', `${V}/os-quota-sets/${alice.projectId}`, { quota_set: all })).body.quota_set
    assert.deepEqual(Object.fromEntries(Object.keys(all).map((k) => [k, updatedAll[k]])), all, 'the uncounted ones are kept too')
    assert.equal((await call(server, alice, 'DELETE', `${V}/os-quota-sets/${alice.projectId}`)).status, 403)
    assert.equal((await call(server, admin, 'DELETE', `${V}/os-quota-sets/${alice.projectId}`)).status, 200)
    const reset = (await call(server, admin, 'GET', `${V}/os-quota-sets/${alice.projectId}`)).body.quota_set
    assert.deepEqual([reset.volumes, reset.backups, reset.groups], [10, 10, 10])
  })

  it('shows qos_specs_id of a volume type to admins, but not in the create and update answers', async () => {
    const created = (await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'qos-shape' } })).body.volume_type
    assert.equal('qos_specs_id' in created, false)
    assert.equal(created['os-volume-type-access:is_public'], true)
    const updated = (await call(server, admin, 'PUT', `${V}/types/${created.id}`, { volume_type: { description: 'd' } })).body.volume_type
    assert.deepEqual(Object.keys(updated).sort(), ['description', 'extra_specs', 'id', 'is_public', 'name'])
    assert.equal((await call(server, admin, 'GET', `${V}/types/${created.id}`)).body.volume_type.qos_specs_id, null)
  })

  it('manages volume type extra specs as a set and one by one', async () => {
    const type = (await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'specs', extra_specs: { a: '1' } } })).body.volume_type
    const specs = `${V}/types/${type.id}/extra_specs`
    assert.deepEqual((await call(server, admin, 'POST', specs, { extra_specs: { b: '2' } })).body, { extra_specs: { b: '2' } }, 'the answer is what was sent')
    assert.deepEqual((await call(server, admin, 'GET', specs)).body, { extra_specs: { a: '1', b: '2' } })
    assert.deepEqual((await call(server, admin, 'PUT', `${specs}/b`, { b: '3' })).body, { b: '3' })
    assert.equal((await call(server, admin, 'PUT', `${specs}/b`, { c: '3' })).status, 400, 'URI and body differ')
    assert.equal((await call(server, admin, 'PUT', `${specs}/b`, { b: '3', c: '4' })).status, 400, 'one spec only')
    assert.deepEqual((await call(server, admin, 'GET', `${specs}/b`)).body, { b: '3' })
    assert.equal((await call(server, alice, 'GET', `${specs}/b`)).status, 403)
    assert.equal((await call(server, admin, 'DELETE', `${specs}/b`)).status, 202)
    assert.equal((await call(server, admin, 'GET', `${specs}/b`)).status, 404)
    assert.equal((await call(server, admin, 'DELETE', `${specs}/b`)).status, 404)
    assert.deepEqual((await call(server, admin, 'GET', specs)).body, { extra_specs: { a: '1' } })
  })

  it('filters the services by binary and host', async () => {
    const list = async (query: string) => (await call(server, admin, 'GET', `${V}/os-services${query}`)).body.services.map((s: { binary: string }) => s.binary)
    assert.deepEqual(await list('?binary=cinder-volume'), ['cinder-volume'])
    assert.deepEqual(await list('?host=controller&binary=cinder-volume'), ['cinder-volume'], 'the host without its backend part (controller@file)')
    assert.deepEqual(await list('?host=elsewhere'), [])
  })

  it('resets a snapshot\'s status and force-deletes it (admins only)', async () => {
    const volume = await createVolume(alice, {})
    const snap = (await call(server, alice, 'POST', `${V}/snapshots`, { snapshot: { volume_id: volume.id } })).body.snapshot
    await status(alice, 'snapshots', snap.id, 'available')
    const action = (who: Session, body: unknown) => call(server, who, 'POST', `${V}/snapshots/${snap.id}/action`, body)
    assert.equal((await action(alice, { 'os-reset_status': { status: 'error' } })).status, 403)
    assert.equal((await action(admin, { 'os-reset_status': { status: 'sideways' } })).status, 400)
    assert.equal((await action(admin, { 'os-reset_status': { status: 'creating' } })).status, 202)
    assert.equal((await call(server, alice, 'DELETE', `${V}/snapshots/${snap.id}`)).status, 400, 'a creating snapshot stays')
    assert.equal((await action(alice, { 'os-force_delete': {} })).status, 403)
    assert.equal((await action(admin, { 'os-force_delete': {} })).status, 202)
    await eventually(async () => (await call(server, alice, 'GET', `${V}/snapshots/${snap.id}`)).status === 404, 10_000, 'the snapshot to go')
  })

  it('sorts snapshots by any key, pages them, and answers 404 for an unknown marker', async () => {
    const carol = await projectSession(server)
    const volume = await createVolume(carol, {})
    for (const name of ['b', 'a', 'c']) {
      const snap = (await call(server, carol, 'POST', `${V}/snapshots`, { snapshot: { volume_id: volume.id, name } })).body.snapshot
      await status(carol, 'snapshots', snap.id, 'available')
    }
    const names = async (query: string) => (await call(server, carol, 'GET', `${V}/snapshots?${query}`)).body.snapshots.map((x: { name: string }) => x.name)
    assert.deepEqual(await names('sort_key=name&sort_dir=asc'), ['a', 'b', 'c'])
    assert.deepEqual(await names('sort_key=display_name&sort_dir=desc'), ['c', 'b', 'a'])
    assert.deepEqual(await names('sort=name:asc&limit=2'), ['a', 'b'])
    assert.deepEqual(await names('limit=0'), [])
    assert.equal((await call(server, carol, 'GET', `${V}/snapshots?sort_key=colour`)).status, 400)
    assert.equal((await call(server, carol, 'GET', `${V}/snapshots?marker=00000000-0000-0000-0000-000000000000`)).status, 404)
    assert.equal((await call(server, carol, 'GET', `${V}/volumes?marker=00000000-0000-0000-0000-000000000000`)).status, 404)
  })

  it('reserves and unreserves an available volume', async () => {
    const volume = await createVolume(alice, {})
    const action = (body: unknown) => call(server, alice, 'POST', `${V}/volumes/${volume.id}/action`, body)
    assert.equal((await action({ 'os-unreserve': {} })).status, 400, 'nothing to unreserve')
    assert.equal((await action({ 'os-reserve': {} })).status, 202)
    assert.equal((await call(server, alice, 'GET', `${V}/volumes/${volume.id}`)).body.volume.status, 'attaching')
    assert.equal((await action({ 'os-reserve': {} })).status, 400)
    assert.equal((await action({ 'os-unreserve': {} })).status, 202)
    assert.equal((await call(server, alice, 'GET', `${V}/volumes/${volume.id}`)).body.volume.status, 'available')
  })

  it('summarises the caller\'s volumes from 3.12 (with their metadata from 3.36)', async () => {
    const dave = await projectSession(server)
    await createVolume(dave, { size: 2, metadata: { tier: 'gold' } })
    await createVolume(dave, { size: 3, metadata: { tier: 'silver' } })
    const summary = (version: string) => call(server, dave, 'GET', `${V}/volumes/summary`, undefined, { 'openstack-api-version': `volume ${version}` })
    assert.equal((await summary('3.11')).status, 404)
    assert.deepEqual((await summary('3.12')).body, { 'volume-summary': { total_size: 5, total_count: 2 } })
    assert.deepEqual((await summary('3.36')).body['volume-summary'].metadata.tier.sort(), ['gold', 'silver'])
  })
})
