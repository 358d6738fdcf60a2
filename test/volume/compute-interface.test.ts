/** The interfaces compute calls: image lookup for imageRef, snapshot images, attach/detach and boot volumes. */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { AppError } from '../../src/contracts/errors.js'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { defaultImageName } from '../../src/server/image/default-image.js'
import { call, eventually, projectSession, type Session } from '../image/support.js'
import { qcow2Image } from '../../src/testkit/disk-images.js'

async function rejectsWith(promise: Promise<unknown>, status: number, message?: RegExp) {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof AppError, String(err))
    assert.equal(err.status, status)
    if (message) assert.match(err.message, message)
    return true
  })
}

for (const dialect of DIALECTS) {
  describe(`compute-facing image and volume interfaces (${dialect})`, () => {
    let server: TestServer
    let alice: Session
    let bob: Session
    let defaultImageId: string

    before(async () => {
      server = await startTestServer({ dialect })
      alice = await projectSession(server)
      bob = await projectSession(server)
      const row = await server.deps.store.db.selectFrom('images').select('id').where('name', '=', defaultImageName()).executeTakeFirstOrThrow()
      defaultImageId = row.id
    })
    after(() => server.close())

    it('getVisibleImage follows Nova: 400 for missing, invisible or inactive images', async () => {
      const images = server.deps.images
      const found = await images.getVisibleImage(alice.projectId, 'project', defaultImageId)
      assert.equal(found.name, defaultImageName())
      await rejectsWith(images.getVisibleImage(alice.projectId, 'project', '00000000-0000-0000-0000-000000000000'), 400, /Can not find requested image/)
      const priv = (await call(server, alice, 'POST', '/image/v2/images', { name: 'priv', visibility: 'private', disk_format: 'raw', container_format: 'bare' })).body
      await rejectsWith(images.getVisibleImage(alice.projectId, 'project', priv.id), 400, /not active/)
      await images.completeSnapshotImage(priv.id, Readable.from([Buffer.from('abc')]))
      assert.equal((await images.getVisibleImage(alice.projectId, 'project', priv.id)).status, 'active')
      await rejectsWith(images.getVisibleImage(bob.projectId, 'project', priv.id), 400, /Can not find requested image/)
      assert.equal((await images.getVisibleImage(bob.projectId, 'all_projects', priv.id)).id, priv.id, 'with visibility all_projects, every image')
    })

    it('createSnapshotImage makes a queued private image that becomes active with its bytes', async () => {
      const images = server.deps.images
      const image = await images.createSnapshotImage({ projectId: alice.projectId, name: 'snap', properties: { instance_uuid: 'server-9', base_image_ref: defaultImageId }, minDisk: 1 })
      assert.equal(image.status, 'queued')
      assert.equal(image.visibility, 'private')
      assert.equal(image.properties.image_type, 'snapshot')
      const shown = await call(server, alice, 'GET', `/image/v2/images/${image.id}`)
      assert.equal(shown.body.instance_uuid, 'server-9')
      assert.equal((await call(server, bob, 'GET', `/image/v2/images/${image.id}`)).status, 404)
      const done = await images.completeSnapshotImage(image.id, Readable.from([Buffer.alloc(1000, 9)]))
      assert.equal(done.status, 'active')
      assert.equal(done.size, 1000)
      const failed = await images.createSnapshotImage({ projectId: alice.projectId, name: 'broken' })
      await images.killImage(failed.id)
      assert.equal((await call(server, alice, 'GET', `/image/v2/images/${failed.id}`)).body.status, 'killed')
    })

    it('kills images left saving by a dead upload, and only those', async () => {
      const images = server.deps.images
      const db = server.deps.store.db
      const stale = await images.createSnapshotImage({ projectId: alice.projectId, name: 'stale' })
      const fresh = await images.createSnapshotImage({ projectId: alice.projectId, name: 'fresh' })
      await db.updateTable('images').set({ status: 'saving', updated_at: Date.now() - 10 * 60_000 }).where('id', '=', stale.id).execute()
      await db.updateTable('images').set({ status: 'saving', updated_at: Date.now() }).where('id', '=', fresh.id).execute()
      assert.equal(await images.sweepStaleUploads(), 1)
      assert.equal((await images.getById(stale.id))!.status, 'killed')
      assert.equal((await images.getById(fresh.id))!.status, 'saving')
    })

    it('reserves, attaches and detaches; a volume in use cannot be reserved again (400)', async () => {
      const { volumes } = server.deps.volumeServices
      const db = server.deps.store.db
      const vol = (await call(server, alice, 'POST', '/volume/v3/volumes', { volume: { size: 1 } })).body.volume
      await eventually(async () => (await call(server, alice, 'GET', `/volume/v3/volumes/${vol.id}`)).body.volume.status === 'available')
      await rejectsWith(db.transaction().execute((tx) => volumes.reserveForAttach(tx, { volumeId: vol.id, projectId: bob.projectId, serverId: 's-b' })), 404)
      const { attachmentId } = await db.transaction().execute((tx) => volumes.reserveForAttach(tx, { volumeId: vol.id, projectId: alice.projectId, serverId: 's-1' }))
      assert.ok(attachmentId)
      assert.equal((await volumes.getForProject(db, { volumeId: vol.id, projectId: alice.projectId })).status, 'attaching')
      await rejectsWith(db.transaction().execute((tx) => volumes.reserveForAttach(tx, { volumeId: vol.id, projectId: alice.projectId, serverId: 's-2' })), 400)
      await db.transaction().execute((tx) => volumes.attach(tx, { volumeId: vol.id, serverId: 's-1', device: '/dev/vdb', deleteOnTermination: true }))
      const attached = await server.deps.volumeServices.volumes.attachmentsOfServer(db, 's-1')
      assert.deepEqual(attached.map((a) => [a.volumeId, a.device, a.deleteOnTermination]), [[vol.id, '/dev/vdb', true]])
      await rejectsWith(db.transaction().execute((tx) => volumes.reserveForAttach(tx, { volumeId: vol.id, projectId: alice.projectId, serverId: 's-2' })), 400, /in-use/)
      await db.transaction().execute((tx) => volumes.beginDetach(tx, { volumeId: vol.id, serverId: 's-1' }))
      assert.equal((await volumes.getForProject(db, { volumeId: vol.id, projectId: alice.projectId })).status, 'detaching')
      await db.transaction().execute((tx) => volumes.detach(tx, { volumeId: vol.id, serverId: 's-1' }))
      const after = (await call(server, alice, 'GET', `/volume/v3/volumes/${vol.id}`)).body.volume
      assert.equal(after.status, 'available')
      assert.deepEqual(after.attachments, [])
      // A transaction that fails after reserving leaves the volume available.
      await assert.rejects(
        db.transaction().execute(async (tx) => {
          await volumes.reserveForAttach(tx, { volumeId: vol.id, projectId: alice.projectId, serverId: 's-3' })
          throw new Error('compute failed')
        }),
      )
      assert.equal((await volumes.getForProject(db, { volumeId: vol.id, projectId: alice.projectId })).status, 'available')
    })

    it('creates boot volumes from an image, checking min_disk, and deletes them on termination', async () => {
      const { volumes } = server.deps.volumeServices
      const db = server.deps.store.db
      const image = (await call(server, alice, 'POST', '/image/v2/images', { name: 'b', disk_format: 'qcow2', container_format: 'bare', min_disk: 2 })).body
      await server.deps.images.completeSnapshotImage(image.id, Readable.from([qcow2Image(16 * 1024 * 1024)]))
      await rejectsWith(db.transaction().execute((tx) => volumes.createForBoot(tx, { projectId: alice.projectId, userId: alice.userId, source: 'image', sourceId: image.id, size: 1 })), 400, /minDisk/)
      const vol = await db.transaction().execute((tx) => volumes.createForBoot(tx, { projectId: alice.projectId, userId: alice.userId, source: 'image', sourceId: image.id, size: 2, name: 'root' }))
      assert.equal(vol.status, 'creating')
      assert.equal(vol.bootable, true)
      assert.equal(vol.imageMetadata?.image_id, image.id)
      assert.equal(await volumes.build(vol.id), 'available', 'the bytes are made in the caller’s task')
      assert.equal(await volumes.build(vol.id), 'available', 'and only once')
      const blank = await db.transaction().execute((tx) => volumes.createForBoot(tx, { projectId: alice.projectId, userId: alice.userId, source: 'blank', size: 1 }))
      assert.equal(blank.bootable, false)
      await db.transaction().execute(async (tx) => {
        await volumes.reserveForAttach(tx, { volumeId: vol.id, projectId: alice.projectId, serverId: 's-boot' })
        await volumes.attach(tx, { volumeId: vol.id, serverId: 's-boot', device: '/dev/vda', deleteOnTermination: true })
      })
      await db.transaction().execute(async (tx) => {
        await volumes.detach(tx, { volumeId: vol.id, serverId: 's-boot' })
        await volumes.deleteOnTermination(tx, { volumeId: vol.id })
      })
      await eventually(async () => (await call(server, alice, 'GET', `/volume/v3/volumes/${vol.id}`)).status === 404, 10_000, 'boot volume deleted')
    })
  })
}
