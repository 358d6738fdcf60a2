/**
 * Backups of encrypted volumes (docs/block-storage.md, "Backups"): a plaintext mark is written through QEMU's luks
 * driver (the view a guest has, with the volume's own key) into an encrypted file-backend volume; the backup's
 * chunks hold the LUKS container, never the mark; the backup keeps a copy of the key that outlives the volume; a
 * restore into a new volume and over an existing one of the same type opens, with the restored volume's key, to
 * the mark; what Cinder refuses (and what pcc's shared keys cannot allow) is 400 and changes nothing; an exported
 * record names the key and its import shares it; when every backup and volume is gone, so are the keys. On SQLite
 * and PostgreSQL.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdir, open, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { RbdConnectionInfo } from '../../src/contracts/host/compute-driver.js'
import { PBKDF_CALIBRATION_FAILURE } from '../../src/host/compute/qemu/volumes.js'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminSession, call, eventually, projectSession, type Session } from '../image/support.js'

const run = promisify(execFile)
const V = '/volume/v3'
const LATEST = { 'openstack-api-version': 'volume 3.60' }
const V363 = { 'openstack-api-version': 'volume 3.63' }
const V364 = { 'openstack-api-version': 'volume 3.64' }
const LUKS = { provider: 'luks', cipher: 'aes-xts-plain64', key_size: 256, control_location: 'front-end' }
const MIB = 1024 * 1024
const MARK = 'PCC-BACKUP-PLAINTEXT-MARK-5E1D'
const LUKS_MAGIC = Buffer.from('LUKS\xba\xbe', 'latin1')

for (const dialect of DIALECTS) {
  describe(`backups of encrypted volumes (${dialect})`, () => {
    let server: TestServer
    let admin: Session
    let alice: Session
    let work: string
    let typeCount = 0

    const status = (kind: 'volumes' | 'backups' | 'snapshots', id: string, wanted: string) =>
      eventually(async () => {
        const record = (await call(server, alice, 'GET', `${V}/${kind}/${id}`, undefined, LATEST)).body[kind.slice(0, -1)]
        return record?.status === wanted ? record : undefined
      }, 20_000, `${kind} ${id} to be ${wanted}`)
    const gone = (kind: 'volumes' | 'backups', id: string) =>
      eventually(async () => (await call(server, alice, 'GET', `${V}/${kind}/${id}`)).status === 404 || undefined, 20_000, `${kind} ${id} to go`)
    const newType = async (encrypted: boolean) => {
      const id = (await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: `encb-${++typeCount}` } })).body.volume_type.id as string
      if (encrypted) assert.equal((await call(server, admin, 'POST', `${V}/types/${id}/encryption`, { encryption: LUKS })).status, 200)
      return id
    }
    const volume = async (volumeType: string) => {
      const created = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, volume_type: volumeType } })
      assert.equal(created.status, 202, JSON.stringify(created.body))
      await status('volumes', created.body.volume.id, 'available')
      return created.body.volume.id as string
    }
    const backup = async (body: Record<string, unknown>) => {
      const created = await call(server, alice, 'POST', `${V}/backups`, { backup: body }, LATEST)
      assert.equal(created.status, 202, JSON.stringify(created.body))
      return (await status('backups', created.body.backup.id, 'available')).id as string
    }
    const restore = async (backupId: string, body: Record<string, unknown>) => {
      const answer = await call(server, alice, 'POST', `${V}/backups/${backupId}/restore`, { restore: body })
      assert.equal(answer.status, 202, JSON.stringify(answer.body))
      await status('volumes', answer.body.restore.volume_id, 'available')
      await status('backups', backupId, 'available')
      return answer.body.restore.volume_id as string
    }
    const db = () => server.deps.store.db
    const keyOf = async (table: 'volumes' | 'volume_backups', id: string) =>
      (await db().selectFrom(table).select('encryption_key_id').where('id', '=', id).executeTakeFirstOrThrow()).encryption_key_id
    const keyExists = async (keyId: string) => (await db().selectFrom('volume_encryption_keys').select('id').where('id', '=', keyId).executeTakeFirst()) !== undefined
    /** The passphrase a hypervisor would be given for the volume (its own endpoint's path, withKey). */
    const passphrase = async (volumeId: string) => {
      const info: RbdConnectionInfo = { driver_volume_type: 'rbd', data: { name: 'p/i', auth_enabled: true, auth_username: 'u', volume_id: volumeId, attachment_id: 'x', serial: volumeId } }
      const key = (await server.deps.volumeServices.connections.encrypted(info, true)).data.encryption?.passphrase
      assert.ok(key, `volume ${volumeId} has a key`)
      return key
    }
    const file = (volumeId: string) => join(server.dataDir, 'volumes', `volume-${volumeId}`)

    /** QEMU's luks driver over the volume's file, opened with the volume's key: the plaintext a guest sees. */
    const luks = async (volumeId: string) => {
      const keyFile = join(work, `key-${volumeId}`)
      await writeFile(keyFile, await passphrase(volumeId), { mode: 0o600 })
      return { object: ['--object', `secret,id=k,file=${keyFile}`], opts: `driver=luks,key-secret=k,file.driver=file,file.filename=${file(volumeId)}` }
    }
    /**
     * Formats the volume as the QEMU driver does at its first attach (a LUKS header at the start of the bytes it
     * has, the payload the rest; a short PBKDF2 time keeps the test fast) and writes the mark through it.
     */
    const writeMark = async (volumeId: string) => {
      const view = await luks(volumeId)
      const header = join(work, `header-${volumeId}`)
      const create = () => run('qemu-img', ['create', '-q', '-f', 'luks', ...view.object, '-o', 'key-secret=k,iter-time=10', header, '0'])
      // As the QEMU driver does (volumes.ts): QEMU's key-derivation calibration can fail on the host's load alone.
      await create().catch((err: Error) => (PBKDF_CALIBRATION_FAILURE.test(err.message) ? create() : Promise.reject(err)))
      const target = await open(file(volumeId), 'r+')
      await target.write(await readFile(header), 0, undefined, 0)
      await target.close()
      const pattern = join(work, 'mark')
      await writeFile(pattern, Buffer.alloc(MIB, MARK))
      await run('qemu-io', [...view.object, '--image-opts', view.opts, '-c', `write -s ${pattern} 0 1M`])
    }
    /** The first MiB of plaintext, read through the volume's own key. */
    const readPlain = async (volumeId: string) => {
      const view = await luks(volumeId)
      const out = join(work, `plain-${volumeId}`)
      await run('qemu-img', ['dd', ...view.object, '--image-opts', `if=${view.opts}`, `of=${out}`, 'bs=1M', 'count=1', '-O', 'raw'])
      return readFile(out)
    }
    const chunkFiles = async () => {
      const dir = join(server.dataDir, 'blobs', 'backups', 'chunks')
      return (await readdir(dir).catch(() => [] as string[])).filter((n) => /^[0-9a-f]{64}$/.test(n)).map((n) => join(dir, n))
    }

    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminSession(server)
      alice = await projectSession(server)
      work = join(server.dataDir, 'luks-test')
      await mkdir(work, { mode: 0o700 })
    })
    after(() => server.close())

    it('backs up the ciphertext with a key of its own, and restores it to a new volume and over an existing one', async () => {
      const encType = await newType(true)
      const source = await volume(encType)
      await writeMark(source)
      const onDisk = await readFile(file(source))
      assert.deepEqual(onDisk.subarray(0, 6), LUKS_MAGIC, 'the backend holds a LUKS container')
      assert.equal(onDisk.includes(MARK), false, 'and no plaintext')
      assert.ok((await readPlain(source)).equals(Buffer.alloc(MIB, MARK)), 'the luks view reads the mark')

      const chunksBefore = new Set(await chunkFiles())
      const backupId = await backup({ volume_id: source, name: 'enc' })
      const newChunks = (await chunkFiles()).filter((c) => !chunksBefore.has(c))
      assert.ok(newChunks.length >= 1, 'the header and the written payload (one 4 MiB chunk) are stored')
      for (const chunk of newChunks) assert.equal((await readFile(chunk)).includes(MARK), false, `chunk ${chunk} holds no plaintext`)
      assert.ok((await Promise.all(newChunks.map((c) => readFile(c)))).some((c) => c.subarray(0, 6).equals(LUKS_MAGIC)), 'the LUKS header is backed up')

      // The backup's key is a copy of the volume's: its own row, the same passphrase; its id is shown from 3.64 only.
      const sourceKey = (await keyOf('volumes', source))!
      const backupKey = (await keyOf('volume_backups', backupId))!
      assert.ok(backupKey && backupKey !== sourceKey)
      const sealed = await db().selectFrom('volume_encryption_keys').select(['id', 'sealed_key']).where('id', 'in', [sourceKey, backupKey]).execute()
      assert.equal(sealed.length, 2)
      assert.equal(sealed[0].sealed_key, sealed[1].sealed_key)
      const shown = await call(server, alice, 'GET', `${V}/backups/${backupId}`, undefined, V363)
      assert.equal(JSON.stringify(shown.body).includes(backupKey), false, 'below 3.64 the key id is in no answer')
      assert.equal((await call(server, alice, 'GET', `${V}/backups/${backupId}`, undefined, V364)).body.backup.encryption_key_id, backupKey)
      const listed = (await call(server, alice, 'GET', `${V}/backups/detail`, undefined, V364)).body.backups.find((b: { id: string }) => b.id === backupId)
      assert.equal(listed.encryption_key_id, backupKey, "the detail list shows the backup's own key, not the volume's")
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${source}`, undefined, V364)).body.volume.encryption_key_id, sourceKey)
      assert.equal('encryption_key_id' in (await call(server, alice, 'GET', `${V}/volumes/${source}`, undefined, V363)).body.volume, false)

      // The volume goes, its key with it; the backup's stays and still restores.
      assert.equal((await call(server, alice, 'DELETE', `${V}/volumes/${source}`)).status, 202)
      await gone('volumes', source)
      assert.equal(await keyExists(sourceKey), false)
      assert.equal(await keyExists(backupKey), true)

      // Into a new volume: of the backed-up volume's type, holding the backup's key, reading the mark.
      const restored = await restore(backupId, {})
      const made = (await call(server, alice, 'GET', `${V}/volumes/${restored}`)).body.volume
      assert.equal(made.volume_type, `encb-${typeCount}`)
      assert.equal(made.encrypted, true)
      assert.equal(await keyOf('volumes', restored), backupKey)
      assert.ok((await readPlain(restored)).equals(Buffer.alloc(MIB, MARK)), 'the restored volume opens to the plaintext')

      // 3.47: a volume created from the backup, larger than it, reads the mark too.
      const fromBackup = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 2, backup_id: backupId } }, { 'openstack-api-version': 'volume 3.47' })
      assert.equal(fromBackup.status, 202, JSON.stringify(fromBackup.body))
      await status('volumes', fromBackup.body.volume.id, 'available')
      assert.ok((await readPlain(fromBackup.body.volume.id)).equals(Buffer.alloc(MIB, MARK)))

      // Over an existing volume of the same type: it takes the backup's key, and its own goes.
      const existing = await volume(encType)
      const existingKey = (await keyOf('volumes', existing))!
      assert.equal(await restore(backupId, { volume_id: existing }), existing)
      assert.equal(await keyOf('volumes', existing), backupKey)
      assert.equal(await keyExists(existingKey), false)
      assert.ok((await readPlain(existing)).equals(Buffer.alloc(MIB, MARK)))

      // Everything goes: the backup, then the volumes; the last holder takes the key along.
      assert.equal((await call(server, alice, 'DELETE', `${V}/backups/${backupId}`)).status, 202)
      await gone('backups', backupId)
      assert.equal(await keyExists(backupKey), true, 'restored volumes still hold the key')
      for (const v of [restored, fromBackup.body.volume.id, existing]) {
        assert.equal((await call(server, alice, 'DELETE', `${V}/volumes/${v}`)).status, 202)
        await gone('volumes', v)
      }
      assert.equal(await keyExists(backupKey), false)
      assert.deepEqual(new Set(await chunkFiles()), chunksBefore, 'the backup\'s chunks are gone')
    })

    it('refuses restores whose encryption does not fit, and changes nothing', async () => {
      const encType = await newType(true)
      const otherEncType = await newType(true)
      const plainType = await newType(false)
      const encrypted = await volume(encType)
      await writeMark(encrypted)
      const encBackup = await backup({ volume_id: encrypted })
      const plain = await volume(plainType)
      const plainBackup = await backup({ volume_id: plain })
      const otherEnc = await volume(otherEncType)
      const sameTypeWithSnapshot = await volume(encType)
      const snap = await call(server, alice, 'POST', `${V}/snapshots`, { snapshot: { volume_id: sameTypeWithSnapshot } })
      await status('snapshots', snap.body.snapshot.id, 'available')

      const refusals: [string, string, RegExp][] = [
        [encBackup, plain, /restored only into an encrypted volume of that type/],
        [encBackup, otherEnc, /restored only into an encrypted volume of that type/],
        [plainBackup, encrypted, /unencrypted volume: its bytes cannot be restored into an encrypted volume/],
        [encBackup, sameTypeWithSnapshot, /snapshots need the key it has/],
      ]
      for (const [b, v, why] of refusals) {
        const keyBefore = await keyOf('volumes', v)
        const answer = await call(server, alice, 'POST', `${V}/backups/${b}/restore`, { restore: { volume_id: v } })
        assert.equal(answer.status, 400, JSON.stringify(answer.body))
        assert.match(answer.body.badRequest.message, why)
        assert.equal((await call(server, alice, 'GET', `${V}/volumes/${v}`)).body.volume.status, 'available')
        assert.equal((await call(server, alice, 'GET', `${V}/backups/${b}`)).body.backup.status, 'available')
        assert.equal(await keyOf('volumes', v), keyBefore)
      }
      const volumesBefore = (await call(server, alice, 'GET', `${V}/volumes`)).body.volumes.length
      const newOfOtherType = await call(server, alice, 'POST', `${V}/volumes`, { volume: { backup_id: encBackup, volume_type: otherEncType } }, { 'openstack-api-version': 'volume 3.47' })
      assert.equal(newOfOtherType.status, 400, JSON.stringify(newOfOtherType.body))
      const newOfPlainType = await call(server, alice, 'POST', `${V}/volumes`, { volume: { backup_id: encBackup, volume_type: plainType } }, { 'openstack-api-version': 'volume 3.47' })
      assert.equal(newOfPlainType.status, 400, JSON.stringify(newOfPlainType.body))
      assert.match(newOfPlainType.body.badRequest.message, /must be of an encrypted volume type/)
      assert.equal((await call(server, alice, 'GET', `${V}/volumes`)).body.volumes.length, volumesBefore)

      // The type the backup was made of is gone (its volume first): nothing to restore a new volume as.
      const doomedType = await newType(true)
      const doomed = await volume(doomedType)
      const orphan = await backup({ volume_id: doomed })
      assert.equal((await call(server, alice, 'DELETE', `${V}/volumes/${doomed}`)).status, 202)
      await gone('volumes', doomed)
      assert.equal((await call(server, admin, 'DELETE', `${V}/types/${doomedType}`)).status, 202)
      const noType = await call(server, alice, 'POST', `${V}/backups/${orphan}/restore`, { restore: {} })
      assert.equal(noType.status, 400, JSON.stringify(noType.body))
      assert.match(noType.body.badRequest.message, /not available any more/)
      assert.equal((await call(server, alice, 'GET', `${V}/volumes`)).body.volumes.length, volumesBefore)
      assert.equal((await call(server, alice, 'GET', `${V}/backups/${orphan}`)).body.backup.status, 'available')

      // Restoring a volume's own backup over it keeps its key (the backup's is a copy): its snapshots still open.
      assert.equal(await restore(encBackup, { volume_id: encrypted }), encrypted)
      const ownKey = await keyOf('volumes', encrypted)
      const snapOfOwn = await call(server, alice, 'POST', `${V}/snapshots`, { snapshot: { volume_id: encrypted } })
      await status('snapshots', snapOfOwn.body.snapshot.id, 'available')
      assert.equal(await restore(encBackup, { volume_id: encrypted }), encrypted)
      assert.equal(await keyOf('volumes', encrypted), ownKey)
      assert.ok((await readPlain(encrypted)).equals(Buffer.alloc(MIB, MARK)))
    })

    it('exports a record naming the key, whose import shares it', async () => {
      const encType = await newType(true)
      const source = await volume(encType)
      await writeMark(source)
      const backupId = await backup({ volume_id: source })
      const backupKey = (await keyOf('volume_backups', backupId))!
      const exported = await call(server, admin, 'GET', `${V}/backups/${backupId}/export_record`)
      assert.equal(exported.status, 200, JSON.stringify(exported.body))
      const record = JSON.parse(Buffer.from(exported.body['backup-record'].backup_url, 'base64').toString())
      assert.equal(record.encryption_key_id, backupKey)
      assert.equal(JSON.stringify(record).includes(await passphrase(source)), false, 'the key itself does not travel')
      const encode = (r: unknown) => ({ 'backup-record': { backup_service: exported.body['backup-record'].backup_service, backup_url: Buffer.from(JSON.stringify(r)).toString('base64') } })

      const unknownKey = await call(server, admin, 'POST', `${V}/backups/import_record`, encode({ ...record, id: '4a3c8f0e-1b2d-4e5f-8a9b-0c1d2e3f4a5b', encryption_key_id: 'no-such-key' }))
      assert.equal(unknownKey.status, 400, JSON.stringify(unknownKey.body))
      assert.match(unknownKey.body.badRequest.message, /encryption key/)

      const importedId = '7d9e1f2a-3b4c-4d5e-8f6a-7b8c9d0e1f2a'
      const imported = await call(server, admin, 'POST', `${V}/backups/import_record`, encode({ ...record, id: importedId }))
      assert.equal(imported.status, 201, JSON.stringify(imported.body))
      assert.equal(await keyOf('volume_backups', importedId), backupKey)
      // The original goes; the import keeps the key and restores to the plaintext.
      assert.equal((await call(server, alice, 'DELETE', `${V}/backups/${backupId}`)).status, 202)
      await gone('backups', backupId)
      assert.equal(await keyExists(backupKey), true)
      const restored = await call(server, admin, 'POST', `${V}/backups/${importedId}/restore`, { restore: {} })
      assert.equal(restored.status, 202, JSON.stringify(restored.body))
      const restoredId = restored.body.restore.volume_id as string
      await eventually(async () => (await call(server, admin, 'GET', `${V}/volumes/${restoredId}`)).body.volume?.status === 'available' || undefined, 20_000, 'the restore')
      assert.ok((await readPlain(restoredId)).equals(Buffer.alloc(MIB, MARK)))
      assert.equal((await call(server, admin, 'DELETE', `${V}/backups/${importedId}`)).status, 202)
      await eventually(async () => (await call(server, admin, 'GET', `${V}/backups/${importedId}`)).status === 404 || undefined, 20_000, 'the import to go')
      assert.equal((await call(server, admin, 'DELETE', `${V}/volumes/${restoredId}`)).status, 202)
      await eventually(async () => (await call(server, admin, 'GET', `${V}/volumes/${restoredId}`)).status === 404 || undefined, 20_000, 'the volume to go')
      assert.equal(await keyExists(backupKey), false)
    })
  })
}
