/**
 * Volume backups (/backups): a full backup and an incremental one of a file-backend volume, restored to a new
 * volume and onto an existing one with the bytes that were backed up; the incremental stores only the changed
 * chunk; export and import of a record; the refusals (wrong status, dependent backups, another project's backup,
 * admin-only actions, quota) change nothing. On SQLite and PostgreSQL.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { open, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminSession, call, eventually, projectSession, type Session } from '../image/support.js'

const V = '/volume/v3'
const LATEST = { 'openstack-api-version': 'volume 3.60' }
const MIB = 1024 * 1024

for (const dialect of DIALECTS) {
  describe(`volume backups (${dialect})`, () => {
    let server: TestServer
    let admin: Session
    let alice: Session
    let bob: Session

    const status = (session: Session, kind: 'volumes' | 'backups' | 'snapshots', id: string, wanted: string) =>
      eventually(async () => {
        const record = (await call(server, session, 'GET', `${V}/${kind}/${id}`, undefined, LATEST)).body[kind.slice(0, -1)]
        return record?.status === wanted ? record : undefined
      }, 20_000, `${kind} ${id} to be ${wanted}`)
    const volume = async (session: Session, size = 1, metadata: Record<string, string> = {}) => {
      const created = await call(server, session, 'POST', `${V}/volumes`, { volume: { size, metadata } })
      assert.equal(created.status, 202, JSON.stringify(created.body))
      await status(session, 'volumes', created.body.volume.id, 'available')
      return created.body.volume.id as string
    }
    const backup = async (session: Session, body: Record<string, unknown>) => {
      const created = await call(server, session, 'POST', `${V}/backups`, { backup: body }, LATEST)
      assert.equal(created.status, 202, JSON.stringify(created.body))
      return status(session, 'backups', created.body.backup.id, 'available')
    }
    const path = (id: string) => join(server.dataDir, 'volumes', `volume-${id}`)
    /** Writes `text` repeated over 1 MiB at `offset` MiB of the volume's file. */
    const write = async (id: string, offsetMib: number, text: string) => {
      const file = await open(path(id), 'r+')
      await file.write(Buffer.alloc(MIB, text), 0, MIB, offsetMib * MIB)
      await file.close()
    }
    const read = async (id: string, offsetMib: number) => {
      const file = await open(path(id), 'r')
      const buffer = Buffer.alloc(MIB)
      await file.read(buffer, 0, MIB, offsetMib * MIB)
      await file.close()
      return buffer
    }
    const chunkFiles = async () => (await readdir(join(server.dataDir, 'blobs', 'backups', 'chunks')).catch(() => [] as string[])).filter((n) => /^[0-9a-f]{64}$/.test(n)).length

    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminSession(server)
      alice = await projectSession(server)
      bob = await projectSession(server)
    })
    after(() => server.close())

    it('backs up fully and incrementally and restores the bytes to a new and to an existing volume', async () => {
      const id = await volume(alice, 1, { color: 'blue' })
      await write(id, 0, 'a')
      await write(id, 100, 'b')
      const chunksBefore = await chunkFiles()
      const full = await backup(alice, { volume_id: id, name: 'full', description: 'the first', container: 'box', metadata: { k: 'v' } })
      assert.equal(full.is_incremental, false)
      assert.equal(full.size, 1)
      assert.equal(full.container, 'box')
      assert.equal(full.object_count, 2, 'two chunks hold data; zeros are not stored')
      assert.deepEqual(full.metadata, { k: 'v' })
      assert.equal(full.volume_id, id)
      assert.equal(full.snapshot_id, null)
      assert.equal(await chunkFiles(), chunksBefore + 2)
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${id}`)).body.volume.status, 'available', 'the volume is back to available')

      await write(id, 100, 'c')
      const incremental = await backup(alice, { volume_id: id, name: 'incr', incremental: true })
      assert.equal(incremental.is_incremental, true)
      assert.equal(incremental.object_count, 1, 'only the changed chunk is stored')
      assert.equal(await chunkFiles(), chunksBefore + 3)
      assert.equal((await call(server, alice, 'GET', `${V}/backups/${full.id}`)).body.backup.has_dependent_backups, true)

      // The parent cannot go while the incremental depends on it.
      const refused = await call(server, alice, 'DELETE', `${V}/backups/${full.id}`)
      assert.equal(refused.status, 400, JSON.stringify(refused.body))
      assert.match(refused.body.badRequest.message, /Incremental backups exist/)

      // Restore the full backup to a new volume: its bytes and the volume's metadata.
      const restored = await call(server, alice, 'POST', `${V}/backups/${full.id}/restore`, { restore: { name: 'again' } })
      assert.equal(restored.status, 202, JSON.stringify(restored.body))
      assert.equal(restored.body.restore.backup_id, full.id)
      assert.equal(restored.body.restore.volume_name, 'again')
      const newId = restored.body.restore.volume_id as string
      const made = await status(alice, 'volumes', newId, 'available')
      await status(alice, 'backups', full.id, 'available')
      assert.equal(made.metadata.color, 'blue')
      assert.ok((await read(newId, 0)).equals(Buffer.alloc(MIB, 'a')))
      assert.ok((await read(newId, 100)).equals(Buffer.alloc(MIB, 'b')), 'the full backup has the bytes before the change')

      // Restore the incremental onto the new volume: the changed bytes.
      const onto = await call(server, alice, 'POST', `${V}/backups/${incremental.id}/restore`, { restore: { volume_id: newId } })
      assert.equal(onto.status, 202, JSON.stringify(onto.body))
      assert.equal(onto.body.restore.volume_id, newId)
      await status(alice, 'volumes', newId, 'available')
      await status(alice, 'backups', incremental.id, 'available')
      assert.ok((await read(newId, 0)).equals(Buffer.alloc(MIB, 'a')))
      assert.ok((await read(newId, 100)).equals(Buffer.alloc(MIB, 'c')))

      // Deleting both removes every chunk they stored.
      for (const b of [incremental.id, full.id]) {
        assert.equal((await call(server, alice, 'DELETE', `${V}/backups/${b}`)).status, 202)
        await eventually(async () => (await call(server, alice, 'GET', `${V}/backups/${b}`)).status === 404 || undefined, 20_000, `backup ${b} to go`)
      }
      assert.equal(await chunkFiles(), chunksBefore)
      for (const v of [id, newId]) await call(server, alice, 'DELETE', `${V}/volumes/${v}`)
    })

    it('backs up a snapshot and an in-use volume only with force; exports and imports a record', async () => {
      const id = await volume(alice)
      await write(id, 3, 's')
      const snap = await call(server, alice, 'POST', `${V}/snapshots`, { snapshot: { volume_id: id } })
      await status(alice, 'snapshots', snap.body.snapshot.id, 'available')
      const fromSnap = await backup(alice, { volume_id: id, snapshot_id: snap.body.snapshot.id })
      assert.equal(fromSnap.snapshot_id, snap.body.snapshot.id)
      assert.equal(fromSnap.object_count, 1)
      await status(alice, 'snapshots', snap.body.snapshot.id, 'available')

      // An in-use volume needs force (the status set by an admin: the test has no server to attach it to).
      const attached = await call(server, admin, 'POST', `${V}/volumes/${id}/action`, { 'os-reset_status': { status: 'in-use' } })
      assert.equal(attached.status, 202, JSON.stringify(attached.body))
      await status(alice, 'volumes', id, 'in-use')
      const noForce = await call(server, alice, 'POST', `${V}/backups`, { backup: { volume_id: id } })
      assert.equal(noForce.status, 400)
      assert.match(noForce.body.badRequest.message, /force/)
      await backup(alice, { volume_id: id, force: true })
      await status(alice, 'volumes', id, 'in-use')

      // Export (admins only) and import under another id; both restore.
      assert.equal((await call(server, alice, 'GET', `${V}/backups/${fromSnap.id}/export_record`)).status, 403)
      const exported = await call(server, admin, 'GET', `${V}/backups/${fromSnap.id}/export_record`)
      assert.equal(exported.status, 200, JSON.stringify(exported.body))
      const record = exported.body['backup-record']
      assert.ok(record.backup_service.startsWith('cinder.backup.drivers'))
      const again = await call(server, admin, 'POST', `${V}/backups/import_record`, { 'backup-record': record })
      assert.equal(again.status, 400, 'the same id exists already')
      const newId = '0b6c2b9e-7f0e-4c4e-9d55-3c9f1b1e2a77'
      const changed = { ...JSON.parse(Buffer.from(record.backup_url, 'base64').toString()), id: newId }
      const imported = await call(server, admin, 'POST', `${V}/backups/import_record`, { 'backup-record': { backup_service: record.backup_service, backup_url: Buffer.from(JSON.stringify(changed)).toString('base64') } })
      assert.equal(imported.status, 201, JSON.stringify(imported.body))
      assert.equal(imported.body.backup.id, newId)
      const garbage = await call(server, admin, 'POST', `${V}/backups/import_record`, { 'backup-record': { backup_service: record.backup_service, backup_url: 'bm90IGpzb24=' } })
      assert.equal(garbage.status, 400)
      // The original goes; the import keeps the shared chunks and restores them.
      assert.equal((await call(server, alice, 'DELETE', `${V}/backups/${fromSnap.id}`)).status, 202)
      await eventually(async () => (await call(server, alice, 'GET', `${V}/backups/${fromSnap.id}`)).status === 404 || undefined, 20_000, 'the original to go')
      const restored = await call(server, admin, 'POST', `${V}/backups/${newId}/restore`, { restore: {} })
      assert.equal(restored.status, 202, JSON.stringify(restored.body))
      await status(admin, 'volumes', restored.body.restore.volume_id, 'available')
      assert.ok((await read(restored.body.restore.volume_id, 3)).equals(Buffer.alloc(MIB, 's')))

      // 3.47: a volume created from a backup, larger than it; before 3.47 backup_id is not read.
      const fromBackup = await call(server, admin, 'POST', `${V}/volumes`, { volume: { size: 2, backup_id: newId, name: 'from-backup' } }, { 'openstack-api-version': 'volume 3.47' })
      assert.equal(fromBackup.status, 202, JSON.stringify(fromBackup.body))
      const made = await status(admin, 'volumes', fromBackup.body.volume.id, 'available')
      assert.equal(made.size, 2)
      assert.ok((await read(made.id, 3)).equals(Buffer.alloc(MIB, 's')))
      const sameSize = await call(server, admin, 'POST', `${V}/volumes`, { volume: { size: 1, backup_id: newId } }, { 'openstack-api-version': 'volume 3.47' })
      assert.equal(sameSize.status, 202, 'the backup is 1 GiB: a 1 GiB volume fits')
      await status(admin, 'volumes', sameSize.body.volume.id, 'available')
    })

    it('refuses what Cinder refuses, and changes nothing', async () => {
      const id = await volume(alice)
      const b = await backup(alice, { volume_id: id, name: 'mine' })
      // Another project's backup does not exist for bob.
      for (const [method, suffix, body] of [['GET', '', undefined], ['DELETE', '', undefined], ['POST', '/restore', { restore: {} }], ['PUT', '', { backup: { name: 'x' } }]] as const) {
        const answer = await call(server, bob, method, `${V}/backups/${b.id}${suffix}`, body, LATEST)
        assert.equal(answer.status, 404, `${method} ${suffix}: ${JSON.stringify(answer.body)}`)
      }
      assert.equal((await call(server, bob, 'POST', `${V}/backups`, { backup: { volume_id: id } })).status, 404)
      // Only admins reset a status; an admin may.
      assert.equal((await call(server, alice, 'POST', `${V}/backups/${b.id}/action`, { 'os-reset_status': { status: 'error' } })).status, 403)
      assert.equal((await call(server, admin, 'POST', `${V}/backups/${b.id}/action`, { 'os-reset_status': { status: 'creating' } })).status, 400)
      assert.equal((await call(server, admin, 'POST', `${V}/backups/${b.id}/action`, { 'os-reset_status': { status: 'error' } })).status, 202)
      // An errored backup is not restored.
      const notNow = await call(server, alice, 'POST', `${V}/backups/${b.id}/restore`, { restore: {} })
      assert.equal(notNow.status, 400, JSON.stringify(notNow.body))
      assert.equal((await call(server, alice, 'GET', `${V}/backups/${b.id}`)).body.backup.status, 'error')
      await call(server, admin, 'POST', `${V}/backups/${b.id}/action`, { 'os-reset_status': { status: 'available' } })
      // Restoring onto a volume too small, or not available.
      const big = await volume(alice, 2)
      const bigBackup = await backup(alice, { volume_id: big })
      const small = await call(server, alice, 'POST', `${V}/backups/${bigBackup.id}/restore`, { restore: { volume_id: id } })
      assert.equal(small.status, 400, JSON.stringify(small.body))
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${id}`)).body.volume.status, 'available')
      // Incremental without a parent.
      const lone = await volume(alice)
      assert.equal((await call(server, alice, 'POST', `${V}/backups`, { backup: { volume_id: lone, incremental: true } })).status, 400)
      // Update needs 3.9; with it, name and description change.
      assert.equal((await call(server, alice, 'PUT', `${V}/backups/${b.id}`, { backup: { name: 'renamed' } })).status, 404)
      const renamed = await call(server, alice, 'PUT', `${V}/backups/${b.id}`, { backup: { name: 'renamed', description: 'd' } }, LATEST)
      assert.equal(renamed.status, 200, JSON.stringify(renamed.body))
      assert.equal(renamed.body.backup.name, 'renamed')
      // Quota: backups counted (3 made), a limit of 3 refuses the fourth with 413.
      const set = await call(server, admin, 'PUT', `${V}/os-quota-sets/${alice.projectId}`, { quota_set: { backups: 3 } })
      assert.equal(set.status, 200, JSON.stringify(set.body))
      const quota = (await call(server, admin, 'GET', `${V}/os-quota-sets/${alice.projectId}?usage=true`)).body.quota_set
      assert.equal(quota.backups.in_use, 3)
      assert.equal(quota.backup_gigabytes.in_use, 4)
      const over = await call(server, alice, 'POST', `${V}/backups`, { backup: { volume_id: lone } })
      assert.equal(over.status, 413, JSON.stringify(over.body))
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${lone}`)).body.volume.status, 'available')
      const listed = (await call(server, alice, 'GET', `${V}/backups`)).body.backups as { id: string }[]
      assert.equal(listed.length, 3)
      const detail = (await call(server, alice, 'GET', `${V}/backups/detail?sort=size:desc&limit=1`)).body
      assert.equal(detail.backups[0].id, bigBackup.id)
      assert.ok(detail.backups_links)
    })
  })
}
