/**
 * Volume type encryption: the API (admins only; create, show, one field, update, delete, and `{}` for a type
 * without one), its refusals and that they stored nothing, changes refused while volumes of the type exist; then
 * the volumes: one of an encrypted type is `encrypted: true` and has a key of its own, sealed with the master key
 * and in no answer; a clone shares its source's key; a spec pcc cannot apply, an image and a copy that changes
 * encryption are refused at volume create. On SQLite and PostgreSQL. The effect on a guest's bytes:
 * test/drivers/qemu-encrypted-volume.test.ts.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminSession, call, eventually, projectSession, type Session } from '../image/support.js'
import type { RbdConnectionInfo } from '../../src/contracts/host/compute-driver.js'

const V = '/volume/v3'
const LUKS = { provider: 'luks', cipher: 'aes-xts-plain64', key_size: 256, control_location: 'front-end' }

for (const dialect of DIALECTS) {
  describe(`Volume type encryption (${dialect})`, () => {
    let server: TestServer
    let admin: Session
    let alice: Session

    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminSession(server)
      alice = await projectSession(server)
    })
    after(() => server.close())

    let typeCount = 0
    const newType = async () => (await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: `enc-${++typeCount}` } })).body.volume_type.id as string
    const encrypt = (typeId: string, body: Record<string, unknown>, who = admin) => call(server, who, 'POST', `${V}/types/${typeId}/encryption`, { encryption: body })
    const shown = async (typeId: string) => (await call(server, admin, 'GET', `${V}/types/${typeId}/encryption`)).body
    const volumeOf = async (session: Session, body: Record<string, unknown>) => call(server, session, 'POST', `${V}/volumes`, { volume: body })
    const waitAvailable = (session: Session, id: string) =>
      eventually(async () => {
        const v = (await call(server, session, 'GET', `${V}/volumes/${id}`)).body.volume
        return v?.status === 'available' ? v : undefined
      }, 10_000, `volume ${id} to be available`)

    it('creates, shows, shows one field, updates and deletes as Cinder does', async () => {
      const typeId = await newType()
      assert.deepEqual(await shown(typeId), {})
      const created = await encrypt(typeId, { provider: 'LuksEncryptor', key_size: 256, cipher: 'aes-xts-plain64', control_location: 'front-end' })
      assert.equal(created.status, 200)
      const enc = created.body.encryption
      assert.deepEqual(Object.keys(enc).sort(), ['cipher', 'control_location', 'encryption_id', 'key_size', 'provider', 'volume_type_id'])
      assert.equal(enc.volume_type_id, typeId)
      const show = await shown(typeId)
      assert.deepEqual({ ...show, created_at: undefined }, { ...enc, deleted: false, created_at: undefined, updated_at: null, deleted_at: null })
      assert.deepEqual((await call(server, admin, 'GET', `${V}/types/${typeId}/encryption/cipher`)).body, { cipher: 'aes-xts-plain64' })
      assert.equal((await call(server, admin, 'GET', `${V}/types/${typeId}/encryption/colour`)).status, 404)

      // Kept as Cinder keeps it (Tempest sets these and reads them back); volumes of it are refused (below).
      const change = { key_size: 128, provider: 'SomeProvider', control_location: 'back-end' }
      const updated = await call(server, admin, 'PUT', `${V}/types/${typeId}/encryption/${enc.encryption_id}`, { encryption: change })
      assert.equal(updated.status, 200)
      assert.deepEqual(updated.body, { encryption: change })
      assert.deepEqual({ ...(await shown(typeId)), created_at: undefined, updated_at: undefined }, { ...show, ...change, created_at: undefined, updated_at: undefined })

      assert.equal((await call(server, admin, 'DELETE', `${V}/types/${typeId}/encryption/${enc.encryption_id}`)).status, 202)
      assert.deepEqual(await shown(typeId), {})
      assert.equal((await call(server, admin, 'DELETE', `${V}/types/${typeId}/encryption/${enc.encryption_id}`)).status, 404)
    })

    it('defaults to LUKS with aes-xts-plain64 in front of the guest', async () => {
      const typeId = await newType()
      const enc = (await encrypt(typeId, { provider: 'luks' })).body.encryption
      assert.deepEqual({ provider: enc.provider, cipher: enc.cipher, key_size: enc.key_size, control_location: enc.control_location }, { provider: 'luks', cipher: 'aes-xts-plain64', key_size: null, control_location: 'front-end' })
    })

    it('refuses bad specs, a second spec, unknown types and ids; nothing is stored', async () => {
      const typeId = await newType()
      const refusals: [Record<string, unknown>, RegExp][] = [
        [{ cipher: 'aes-xts-plain64' }, /provider/],
        [{ provider: '' }, /provider/],
        [{ provider: 'luks', control_location: 'middle' }, /control_location/],
        [{ provider: 'luks', key_size: -1 }, /key_size/],
        [{ provider: 'luks', key_size: 'big' }, /key_size/],
        [{ provider: 'luks', colour: 'red' }, /colour|additional/],
      ]
      for (const [body, message] of refusals) {
        const r = await encrypt(typeId, body)
        assert.equal(r.status, 400, JSON.stringify(body))
        assert.match(JSON.stringify(r.body.badRequest), message, JSON.stringify(body))
      }
      assert.deepEqual(await shown(typeId), {})
      const enc = (await encrypt(typeId, LUKS)).body.encryption
      const again = await encrypt(typeId, LUKS)
      assert.equal(again.status, 400)
      assert.match(again.body.badRequest.message, /already exists/)
      const badUpdate = await call(server, admin, 'PUT', `${V}/types/${typeId}/encryption/${enc.encryption_id}`, { encryption: { control_location: 'middle' } })
      assert.equal(badUpdate.status, 400)
      assert.equal((await shown(typeId)).control_location, 'front-end')
      // The id in the URL names nothing (a type has one spec): Cinder ignores it, and Debian's Tempest sends `provider`.
      assert.equal((await call(server, admin, 'PUT', `${V}/types/${typeId}/encryption/provider`, { encryption: { key_size: 512 } })).status, 200)
      assert.equal((await shown(typeId)).key_size, 512)
      const plainType = await newType()
      assert.equal((await call(server, admin, 'PUT', `${V}/types/${plainType}/encryption/provider`, { encryption: { key_size: 512 } })).status, 404)
      assert.equal((await call(server, admin, 'DELETE', `${V}/types/${plainType}/encryption/provider`)).status, 404)
      assert.deepEqual(await shown(plainType), {})
      assert.equal((await encrypt('no-such-type', LUKS)).status, 404)
    })

    it('is for admins only', async () => {
      const typeId = await newType()
      assert.equal((await encrypt(typeId, LUKS, alice)).status, 403)
      assert.deepEqual(await shown(typeId), {})
      const enc = (await encrypt(typeId, LUKS)).body.encryption
      assert.equal((await call(server, alice, 'GET', `${V}/types/${typeId}/encryption`)).status, 403)
      assert.equal((await call(server, alice, 'GET', `${V}/types/${typeId}/encryption/cipher`)).status, 403)
      assert.equal((await call(server, alice, 'PUT', `${V}/types/${typeId}/encryption/${enc.encryption_id}`, { encryption: { key_size: 512 } })).status, 403)
      assert.equal((await call(server, alice, 'DELETE', `${V}/types/${typeId}/encryption/${enc.encryption_id}`)).status, 403)
      assert.equal((await shown(typeId)).key_size, 256)
    })

    it('gives each volume of an encrypted type a sealed key of its own, shared by its clones, never shown', async () => {
      const typeId = await newType()
      await encrypt(typeId, LUKS)
      const a = (await volumeOf(alice, { size: 1, volume_type: typeId })).body.volume
      const b = (await volumeOf(alice, { size: 1, volume_type: typeId })).body.volume
      assert.equal(a.encrypted, true)
      const shownA = await waitAvailable(alice, a.id)
      assert.equal(shownA.encrypted, true)
      assert.equal('encryption_key_id' in shownA, false)
      await waitAvailable(alice, b.id)
      const clone = (await volumeOf(alice, { source_volid: a.id })).body.volume
      await waitAvailable(alice, clone.id)
      const db = server.deps.store.db
      const rows = await db.selectFrom('volumes').select(['id', 'encryption_key_id']).where('id', 'in', [a.id, b.id, clone.id]).execute()
      const keyOf = new Map(rows.map((r) => [r.id, r.encryption_key_id]))
      assert.notEqual(keyOf.get(a.id), null)
      assert.notEqual(keyOf.get(a.id), keyOf.get(b.id))
      assert.equal(keyOf.get(clone.id), keyOf.get(a.id))
      const key = await db.selectFrom('volume_encryption_keys').selectAll().where('id', '=', keyOf.get(a.id)!).executeTakeFirstOrThrow()
      assert.match(key.sealed_key, /^v1\./)
      // What a hypervisor is given: the passphrase only through its own endpoint (withKey), the rest in commands.
      const info: RbdConnectionInfo = { driver_volume_type: 'rbd', data: { name: 'p/i', auth_enabled: true, auth_username: 'u', volume_id: a.id, attachment_id: 'x', serial: a.id } }
      const passphrase = (await server.deps.volumeServices.connections.encrypted(info, true)).data.encryption?.passphrase
      assert.equal(Buffer.from(passphrase!, 'base64').length, 32)
      const without = await server.deps.volumeServices.connections.encrypted(info, false)
      assert.deepEqual(without.data.encryption, { format: 'luks', cipher: 'aes-xts-plain64', key_size: 256 })
      for (const path of [`${V}/volumes/${a.id}`, `${V}/volumes/detail`]) assert.equal(JSON.stringify((await call(server, admin, 'GET', path)).body).includes(passphrase!), false)

      // While volumes of the type exist its encryption stays as it is.
      const enc = await shown(typeId)
      for (const [method, body] of [['PUT', { encryption: { key_size: 512 } }], ['DELETE', undefined]] as const) {
        const r = await call(server, admin, method, `${V}/types/${typeId}/encryption/${enc.encryption_id}`, body)
        assert.equal(r.status, 400, method)
        assert.match(r.body.badRequest.message, /Volume type in use/)
      }
      assert.equal((await shown(typeId)).key_size, 256)

      // The last volume with a key takes it along.
      for (const v of [a, clone]) {
        await call(server, alice, 'DELETE', `${V}/volumes/${v.id}`)
        await eventually(async () => (await call(server, alice, 'GET', `${V}/volumes/${v.id}`)).status === 404, 10_000, 'the volume to go')
        const left = await db.selectFrom('volume_encryption_keys').select('id').where('id', '=', keyOf.get(a.id)!).executeTakeFirst()
        assert.equal(left !== undefined, v === a)
      }
    })

    it('refuses volumes it cannot encrypt, and copies that would change encryption', async () => {
      const plainType = await newType()
      const encType = await newType()
      await encrypt(encType, LUKS)
      const backEnd = await newType()
      await encrypt(backEnd, { ...LUKS, control_location: 'back-end' })
      const other = await newType()
      await encrypt(other, { provider: 'nova.volume.encryptors.cryptsetup.CryptsetupEncryptor' })
      const badSize = await newType()
      await encrypt(badSize, { ...LUKS, key_size: 128 })
      const before = (await call(server, alice, 'GET', `${V}/volumes`)).body.volumes.length
      const refusals: [Record<string, unknown>, RegExp][] = [
        [{ size: 1, volume_type: backEnd }, /front-end/],
        [{ size: 1, volume_type: other }, /LUKS only/],
        [{ size: 1, volume_type: badSize }, /256 or 512 bits/],
      ]
      const plain = (await volumeOf(alice, { size: 1, volume_type: plainType })).body.volume
      await waitAvailable(alice, plain.id)
      const enc = (await volumeOf(alice, { size: 1, volume_type: encType })).body.volume
      await waitAvailable(alice, enc.id)
      refusals.push([{ source_volid: plain.id, volume_type: encType }, /unencrypted volume/], [{ source_volid: enc.id, volume_type: plainType }, /encrypted volume type/])
      for (const [body, message] of refusals) {
        const r = await volumeOf(alice, body)
        assert.equal(r.status, 400, JSON.stringify(body))
        assert.match(r.body.badRequest.message, message)
      }
      assert.equal((await call(server, alice, 'GET', `${V}/volumes`)).body.volumes.length, before + 2)
      const retype = await call(server, alice, 'POST', `${V}/volumes/${enc.id}/action`, { 'os-retype': { new_type: plainType } })
      assert.equal(retype.status, 400)
      assert.match(retype.body.badRequest.message, /encrypted/)
      const upload = await call(server, alice, 'POST', `${V}/volumes/${enc.id}/action`, { 'os-volume_upload_image': { image_name: 'x', disk_format: 'raw', container_format: 'bare' } })
      assert.equal(upload.status, 400)
      assert.match(upload.body.badRequest.message, /encrypted/)
    })
  })
}
