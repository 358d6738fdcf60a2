/**
 * Volume transfers (os-volume-transfer, and volume-transfers from 3.55): the key is shown once; the volume is
 * awaiting-transfer while offered and nothing else takes it; another project accepts with the key and gets the
 * volume, its snapshots (unless no_snapshots) and their quota usage; a wrong key, a full quota or a withdrawn
 * transfer change nothing; other projects see nothing of a transfer. On SQLite and PostgreSQL.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminSession, call, eventually, projectSession, type Session } from '../image/support.js'

const V = '/volume/v3'
const V355 = { 'openstack-api-version': 'volume 3.55' }
const V357 = { 'openstack-api-version': 'volume 3.57' }

for (const dialect of DIALECTS) {
  describe(`volume transfers (${dialect})`, () => {
    let server: TestServer
    let admin: Session
    let alice: Session
    let bob: Session

    const status = (session: Session, kind: 'volumes' | 'snapshots', id: string, wanted: string) =>
      eventually(async () => {
        const record = (await call(server, session, 'GET', `${V}/${kind}/${id}`)).body[kind === 'volumes' ? 'volume' : 'snapshot']
        return record?.status === wanted ? record : undefined
      }, 10_000, `${kind} ${id} to be ${wanted}`)
    const volume = async (session: Session, size = 1) => {
      const created = await call(server, session, 'POST', `${V}/volumes`, { volume: { size } })
      assert.equal(created.status, 202, JSON.stringify(created.body))
      await status(session, 'volumes', created.body.volume.id, 'available')
      return created.body.volume.id as string
    }
    const offer = async (session: Session, volumeId: string, path = 'os-volume-transfer', headers: Record<string, string> = {}, extra: Record<string, unknown> = {}) => {
      const created = await call(server, session, 'POST', `${V}/${path}`, { transfer: { volume_id: volumeId, name: 'gift', ...extra } }, headers)
      assert.equal(created.status, 202, JSON.stringify(created.body))
      return created.body.transfer
    }
    const usage = async (projectId: string) => (await call(server, admin, 'GET', `${V}/os-quota-sets/${projectId}?usage=true`)).body.quota_set

    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminSession(server)
      alice = await projectSession(server)
      bob = await projectSession(server)
    })
    after(() => server.close())

    it('offers a volume with a one-time key; another project accepts it with its snapshots and their quota usage', async () => {
      const id = await volume(alice, 2)
      const snap = await call(server, alice, 'POST', `${V}/snapshots`, { snapshot: { volume_id: id } })
      await status(alice, 'snapshots', snap.body.snapshot.id, 'available')
      const [aliceBefore, bobBefore] = [await usage(alice.projectId), await usage(bob.projectId)]
      const transfer = await offer(alice, id)
      assert.equal(typeof transfer.auth_key, 'string')
      assert.ok(transfer.auth_key.length >= 16)
      assert.equal(transfer.volume_id, id)
      assert.equal(transfer.name, 'gift')
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${id}`)).body.volume.status, 'awaiting-transfer')
      const shown = (await call(server, alice, 'GET', `${V}/os-volume-transfer/${transfer.id}`)).body.transfer
      assert.equal('auth_key' in shown, false, 'the key is shown once')
      assert.equal(shown.volume_id, id)
      assert.ok(shown.created_at)
      const listed = (await call(server, alice, 'GET', `${V}/os-volume-transfer`)).body.transfers
      assert.deepEqual(Object.keys(listed.find((t: { id: string }) => t.id === transfer.id)).sort(), ['id', 'links', 'name', 'volume_id'])

      const accepted = await call(server, bob, 'POST', `${V}/os-volume-transfer/${transfer.id}/accept`, { accept: { auth_key: transfer.auth_key } })
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body))
      assert.deepEqual(accepted.body.transfer.volume_id, id)
      const taken = (await call(server, bob, 'GET', `${V}/volumes/${id}`)).body.volume
      assert.equal(taken.status, 'available')
      assert.equal(taken.user_id, bob.userId)
      assert.equal(taken['os-vol-tenant-attr:tenant_id'], bob.projectId)
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${id}`)).status, 404, 'gone from the giving project')
      assert.equal((await call(server, bob, 'GET', `${V}/snapshots/${snap.body.snapshot.id}`)).status, 200, 'the snapshot went with it')
      const [aliceAfter, bobAfter] = [await usage(alice.projectId), await usage(bob.projectId)]
      assert.equal(aliceBefore.volumes.in_use - aliceAfter.volumes.in_use, 1)
      assert.equal(bobAfter.volumes.in_use - bobBefore.volumes.in_use, 1)
      assert.equal(bobAfter.gigabytes.in_use - bobBefore.gigabytes.in_use, 4, 'the volume and its snapshot: 2 + 2 GiB')
      assert.equal(bobAfter.snapshots.in_use - bobBefore.snapshots.in_use, 1)
      assert.equal((await call(server, alice, 'GET', `${V}/os-volume-transfer/${transfer.id}`)).status, 404, 'an accepted transfer is over')
    })

    it('refuses a wrong key (400) and changes nothing; other projects see nothing of a transfer', async () => {
      const id = await volume(alice)
      const transfer = await offer(alice, id)
      const wrong = await call(server, bob, 'POST', `${V}/os-volume-transfer/${transfer.id}/accept`, { accept: { auth_key: 'not-the-key' } })
      assert.equal(wrong.status, 400)
      assert.match(wrong.body.badRequest.message, /Invalid auth key/)
      const noKey = await call(server, bob, 'POST', `${V}/os-volume-transfer/${transfer.id}/accept`, { accept: {} })
      assert.equal(noKey.status, 400)
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${id}`)).body.volume.status, 'awaiting-transfer')
      assert.equal((await call(server, bob, 'GET', `${V}/os-volume-transfer/${transfer.id}`)).status, 404)
      assert.equal((await call(server, bob, 'DELETE', `${V}/os-volume-transfer/${transfer.id}`)).status, 404)
      assert.equal((await call(server, bob, 'GET', `${V}/os-volume-transfer/detail`)).body.transfers.length, 0)
      const missing = await call(server, bob, 'POST', `${V}/os-volume-transfer/00000000-0000-0000-0000-000000000000/accept`, { accept: { auth_key: transfer.auth_key } })
      assert.equal(missing.status, 404)
      const all = (await call(server, admin, 'GET', `${V}/os-volume-transfer?all_tenants=1`)).body.transfers
      assert.ok(all.some((t: { id: string }) => t.id === transfer.id), 'admins list every project’s with all_tenants')
      assert.equal((await call(server, alice, 'GET', `${V}/os-volume-transfer?all_tenants=1`)).status, 403)
    })

    it('keeps an offered volume from everything else, and refuses to offer one that is not available', async () => {
      const id = await volume(alice)
      await offer(alice, id)
      assert.equal((await call(server, alice, 'POST', `${V}/os-volume-transfer`, { transfer: { volume_id: id } })).status, 400, 'offered twice')
      assert.equal((await call(server, alice, 'DELETE', `${V}/volumes/${id}`)).status, 400, 'not deleted while offered')
      assert.equal((await call(server, alice, 'POST', `${V}/volumes/${id}/action`, { 'os-extend': { new_size: 2 } })).status, 400, 'not extended while offered')
      assert.equal((await call(server, bob, 'POST', `${V}/os-volume-transfer`, { transfer: { volume_id: id } })).status, 404, "another project's volume")
      assert.equal((await call(server, alice, 'POST', `${V}/os-volume-transfer`, { transfer: { volume_id: 'nope' } })).status, 404)
      assert.equal((await call(server, alice, 'POST', `${V}/os-volume-transfer`, { transfer: {} })).status, 400)
      const reader = await projectSession(server, 'reader')
      const theirs = await volume(alice)
      assert.equal((await call(server, reader, 'POST', `${V}/os-volume-transfer`, { transfer: { volume_id: theirs } })).status, 404)
    })

    it('withdrawing makes the volume available again', async () => {
      const id = await volume(alice)
      const transfer = await offer(alice, id)
      assert.equal((await call(server, alice, 'DELETE', `${V}/os-volume-transfer/${transfer.id}`)).status, 202)
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${id}`)).body.volume.status, 'available')
      const late = await call(server, bob, 'POST', `${V}/os-volume-transfer/${transfer.id}/accept`, { accept: { auth_key: transfer.auth_key } })
      assert.equal(late.status, 404)
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${id}`)).body.volume['os-vol-tenant-attr:tenant_id'], alice.projectId)
    })

    it('refuses an accept the accepting project has no quota for (413), and nothing moves', async () => {
      const carol = await projectSession(server)
      assert.equal((await call(server, admin, 'PUT', `${V}/os-quota-sets/${carol.projectId}`, { quota_set: { volumes: 0 } })).status, 200)
      const id = await volume(alice)
      const transfer = await offer(alice, id)
      const refused = await call(server, carol, 'POST', `${V}/os-volume-transfer/${transfer.id}/accept`, { accept: { auth_key: transfer.auth_key } })
      assert.equal(refused.status, 413, JSON.stringify(refused.body))
      const still = (await call(server, alice, 'GET', `${V}/volumes/${id}`)).body.volume
      assert.equal(still.status, 'awaiting-transfer')
      assert.equal(still['os-vol-tenant-attr:tenant_id'], alice.projectId)
      assert.equal((await call(server, alice, 'GET', `${V}/os-volume-transfer/${transfer.id}`)).status, 200)
    })

    it('serves volume-transfers from 3.55 with no_snapshots, and 3.57 its projects', async () => {
      assert.equal((await call(server, alice, 'GET', `${V}/volume-transfers`)).status, 404, 'not before 3.55')
      const id = await volume(alice)
      const snap = await call(server, alice, 'POST', `${V}/snapshots`, { snapshot: { volume_id: id } })
      await status(alice, 'snapshots', snap.body.snapshot.id, 'available')
      const transfer = await offer(alice, id, 'volume-transfers', V355, { no_snapshots: true })
      assert.equal(transfer.no_snapshots, true)
      assert.match(transfer.links[0].href, /\/volume-transfers\//)
      const shown = (await call(server, alice, 'GET', `${V}/volume-transfers/${transfer.id}`, undefined, V357)).body.transfer
      assert.equal(shown.source_project_id, alice.projectId)
      assert.equal(shown.destination_project_id, null)
      assert.equal(shown.accepted, false)
      const accepted = await call(server, bob, 'POST', `${V}/volume-transfers/${transfer.id}/accept`, { accept: { auth_key: transfer.auth_key } }, V355)
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body))
      assert.equal((await call(server, bob, 'GET', `${V}/volumes/${id}`)).status, 200)
      assert.equal((await call(server, alice, 'GET', `${V}/snapshots/${snap.body.snapshot.id}`)).status, 200, 'no_snapshots: the snapshot stays')
    })
  })
}
