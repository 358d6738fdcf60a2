/**
 * Answers of the block storage API that Cinder's clients (and Tempest's response schemas) hold pcc to: which keys
 * create/update carry versus show/detail, next links of full pages, per-key snapshot metadata, the extension list,
 * and uploading a volume to an image (os-volume_upload_image).
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
})
