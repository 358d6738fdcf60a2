/**
 * Cinder microversions 3.61–3.64 (docs/image-volume.md, docs/block-storage.md "Default volume types"): admins'
 * `cluster_name` (3.61), the default-types API (3.62) and a project's default type used for its volumes,
 * `volume_type_id` (3.63) and `encryption_key_id` (3.64) on volumes and backups — each shown from its version and not
 * below it, with Cinder's refusals in Cinder's error shape, storing nothing. On SQLite and PostgreSQL.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminSession, call, eventually, projectSession, type Reply, type Session } from '../image/support.js'

const V = '/volume/v3'
const at = (version: string) => ({ 'openstack-api-version': `volume ${version}` })
const LUKS = { provider: 'luks', cipher: 'aes-xts-plain64', key_size: 256, control_location: 'front-end' }

/** Cinder's error body: `{<kind>: {code, message}}` with the answer's status. */
function assertError(reply: Reply, status: number, kind: string, message?: RegExp): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body))
  assert.equal(reply.body?.[kind]?.code, status, JSON.stringify(reply.body))
  if (message) assert.match(reply.body[kind].message, message)
}

for (const dialect of DIALECTS) {
  describe(`block storage microversions 3.61 to 3.64 (${dialect})`, () => {
    let server: TestServer
    let admin: Session
    let alice: Session
    let bob: Session
    let typeCount = 0

    const newType = async (encrypted = false) => {
      const created = await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: `mv-${dialect}-${++typeCount}` } })
      assert.equal(created.status, 200, JSON.stringify(created.body))
      const { id, name } = created.body.volume_type as { id: string; name: string }
      if (encrypted) assert.equal((await call(server, admin, 'POST', `${V}/types/${id}/encryption`, { encryption: LUKS })).status, 200)
      return { id, name }
    }
    const available = (session: Session, kind: 'volumes' | 'backups', id: string) =>
      eventually(async () => {
        const record = (await call(server, session, 'GET', `${V}/${kind}/${id}`)).body?.[kind.slice(0, -1)]
        return record?.status === 'available' ? record : undefined
      }, 20_000, `${kind} ${id} to be available`)
    const newVolume = async (session: Session, volume: Record<string, unknown> = {}) => {
      const created = await call(server, session, 'POST', `${V}/volumes`, { volume: { size: 1, ...volume } })
      assert.equal(created.status, 202, JSON.stringify(created.body))
      await available(session, 'volumes', created.body.volume.id)
      return created.body.volume.id as string
    }
    const show = async (session: Session, path: string, version: string) => {
      const reply = await call(server, session, 'GET', `${V}/${path}`, undefined, at(version))
      assert.equal(reply.status, 200, JSON.stringify(reply.body))
      return reply.body
    }
    /** The volume as show and the detail list answer it at `version`. */
    const volumeViews = async (session: Session, id: string, version: string) => {
      const shown = (await show(session, `volumes/${id}`, version)).volume
      const listed = (await show(session, session === admin ? 'volumes/detail?all_tenants=1' : 'volumes/detail', version)).volumes.find((v: { id: string }) => v.id === id)
      assert.ok(listed, `volume ${id} is in the detail list`)
      return [shown, listed] as Record<string, unknown>[]
    }
    const keyOf = async (table: 'volumes' | 'volume_backups', id: string) =>
      (await server.deps.store.db.selectFrom(table).select('encryption_key_id').where('id', '=', id).executeTakeFirstOrThrow()).encryption_key_id
    const defaultsRow = (projectId: string) => server.deps.store.db.selectFrom('volume_default_types').selectAll().where('project_id', '=', projectId).executeTakeFirst()

    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminSession(server)
      alice = await projectSession(server)
      bob = await projectSession(server)
    })
    after(() => server.close())

    it('shows cluster_name (admins), volume_type_id and encryption_key_id from their versions, not below', async () => {
      const plainType = await newType()
      const encType = await newType(true)
      const plain = await newVolume(alice, { volume_type: plainType.id })
      const encrypted = await newVolume(alice, { volume_type: encType.id })
      const encKey = await keyOf('volumes', encrypted)
      assert.ok(encKey)

      for (const view of await volumeViews(admin, plain, '3.60')) {
        for (const key of ['cluster_name', 'volume_type_id', 'encryption_key_id']) assert.equal(key in view, false, `3.60: ${key}`)
      }
      // 3.61: admins see the (always empty) cluster; members never do.
      for (const view of await volumeViews(admin, plain, '3.61')) {
        assert.equal(view.cluster_name, null)
        assert.equal('volume_type_id' in view, false, '3.61: volume_type_id came with 3.63')
      }
      for (const view of await volumeViews(alice, plain, '3.64')) assert.equal('cluster_name' in view, false, 'cluster_name is for admins')
      // 3.63: the type's id beside its name.
      for (const view of await volumeViews(alice, plain, '3.62')) assert.equal('volume_type_id' in view, false)
      for (const view of await volumeViews(alice, plain, '3.63')) {
        assert.equal(view.volume_type_id, plainType.id)
        assert.equal(view.volume_type, plainType.name)
      }
      // 3.64: an encrypted volume names its key; an unencrypted one has no such key at all, as in Cinder.
      for (const view of await volumeViews(alice, encrypted, '3.63')) assert.equal('encryption_key_id' in view, false)
      for (const view of await volumeViews(alice, encrypted, '3.64')) {
        assert.equal(view.encryption_key_id, encKey)
        assert.equal(view.encrypted, true)
      }
      for (const view of await volumeViews(alice, plain, '3.64')) assert.equal('encryption_key_id' in view, false)
      // `latest` is 3.64.
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${encrypted}`, undefined, at('latest'))).headers.get('openstack-api-version'), 'volume 3.64')
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${encrypted}`, undefined, at('3.65'))).status, 406)
      // Create and update answer Cinder's detail view: its versioned fields too.
      const created = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, volume_type: encType.id } }, at('3.64'))
      assert.equal(created.status, 202)
      assert.equal(created.body.volume.volume_type_id, encType.id)
      assert.equal(created.body.volume.encryption_key_id, await keyOf('volumes', created.body.volume.id))
      await available(alice, 'volumes', created.body.volume.id)
      const updated = await call(server, alice, 'PUT', `${V}/volumes/${plain}`, { volume: { name: 'renamed' } }, at('3.63'))
      assert.equal(updated.body.volume.volume_type_id, plainType.id)
    })

    it("shows no encryption_key_id for a backup of an unencrypted volume, and the versions' fields in the document", async () => {
      const volume = await newVolume(alice)
      const created = await call(server, alice, 'POST', `${V}/backups`, { backup: { volume_id: volume } }, at('3.64'))
      assert.equal(created.status, 202, JSON.stringify(created.body))
      await available(alice, 'backups', created.body.backup.id)
      const shown = (await show(alice, `backups/${created.body.backup.id}`, '3.64')).backup
      assert.equal(shown.status, 'available')
      assert.equal('encryption_key_id' in shown, false)
      assert.equal(shown.user_id, alice.userId)

      const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> }
      for (const path of ['/volume/v3/default-types', '/volume/v3/default-types/{id}', '/volume/v3/{project_id}/default-types/{id}']) assert.ok(doc.paths[path], path)
      assert.deepEqual(Object.keys(doc.paths['/volume/v3/default-types/{id}']).sort(), ['delete', 'get', 'put'])
    })

    it('sets, shows, lists and unsets a default type: admins only, from 3.62, refusing bad input in Cinder shape', async () => {
      const first = await newType()
      const second = await newType()
      const url = `${V}/default-types/${alice.projectId}`
      const V362 = at('3.62')

      // Below 3.62 the API does not exist, whatever the body.
      assertError(await call(server, admin, 'GET', `${V}/default-types`, undefined, at('3.61')), 404, 'itemNotFound')
      assertError(await call(server, admin, 'PUT', url, { nonsense: true }, at('3.61')), 404, 'itemNotFound')
      assertError(await call(server, admin, 'GET', url), 404, 'itemNotFound')
      // Members are refused every one of them.
      assertError(await call(server, alice, 'PUT', url, { default_type: { volume_type: first.id } }, V362), 403, 'forbidden')
      assertError(await call(server, alice, 'GET', url, undefined, V362), 403, 'forbidden')
      assertError(await call(server, alice, 'GET', `${V}/default-types`, undefined, V362), 403, 'forbidden')
      assertError(await call(server, alice, 'DELETE', url, undefined, V362), 403, 'forbidden')
      assert.equal(await defaultsRow(alice.projectId), undefined)

      // Nothing set yet: 404 in Cinder's words.
      assertError(await call(server, admin, 'GET', url, undefined, V362), 404, 'itemNotFound', new RegExp(`Default type for project ${alice.projectId} not found`))
      // Set by name, replaced by id.
      const set = await call(server, admin, 'PUT', url, { default_type: { volume_type: first.name } }, V362)
      assert.equal(set.status, 200, JSON.stringify(set.body))
      assert.deepEqual(set.body, { default_type: { project_id: alice.projectId, volume_type_id: first.id } })
      const replaced = await call(server, admin, 'PUT', url, { default_type: { volume_type: second.id } }, V362)
      assert.deepEqual(replaced.body, { default_type: { project_id: alice.projectId, volume_type_id: second.id } })
      assert.deepEqual((await call(server, admin, 'GET', url, undefined, V362)).body, { default_type: { project_id: alice.projectId, volume_type_id: second.id } })
      // The project-scoped URL form serves it too.
      assert.equal((await call(server, admin, 'GET', `${V}/${admin.projectId}/default-types/${alice.projectId}`, undefined, V362)).body.default_type.volume_type_id, second.id)
      assert.equal((await call(server, admin, 'PUT', `${V}/default-types/${bob.projectId}`, { default_type: { volume_type: first.id } }, V362)).status, 200)
      const listed = (await call(server, admin, 'GET', `${V}/default-types`, undefined, V362)).body.default_types as { project_id: string; volume_type_id: string }[]
      assert.deepEqual(
        listed.filter((d) => [alice.projectId, bob.projectId].includes(d.project_id)).sort((a, b) => a.project_id.localeCompare(b.project_id)),
        [
          { project_id: alice.projectId, volume_type_id: second.id },
          { project_id: bob.projectId, volume_type_id: first.id },
        ].sort((a, b) => a.project_id.localeCompare(b.project_id)),
      )

      // Refused, changing nothing: an unknown project (404), an unknown type (400), malformed bodies (400).
      const before = await defaultsRow(alice.projectId)
      assertError(await call(server, admin, 'PUT', `${V}/default-types/no-such-project`, { default_type: { volume_type: first.id } }, V362), 404, 'itemNotFound', /Project with id no-such-project not found/)
      assertError(await call(server, admin, 'GET', `${V}/default-types/no-such-project`, undefined, V362), 404, 'itemNotFound', /Project with id/)
      assertError(await call(server, admin, 'DELETE', `${V}/default-types/no-such-project`, undefined, V362), 404, 'itemNotFound', /Project with id/)
      assertError(await call(server, admin, 'PUT', url, { default_type: { volume_type: 'no-such-type' } }, V362), 400, 'badRequest', /no-such-type/)
      for (const body of [{}, { default_type: {} }, { default_type: { volume_type: '' } }, { default_type: { volume_type: 7 } }, { default_type: { volume_type: ' padded ' } }, { default_type: { volume_type: first.id, extra: 1 } }, { default_type: 'x' }]) {
        assertError(await call(server, admin, 'PUT', url, body, V362), 400, 'badRequest')
      }
      assert.deepEqual(await defaultsRow(alice.projectId), before)
      assert.equal(await defaultsRow('no-such-project'), undefined)

      // Unset: 204, then 404 to show, and unsetting again is no error (Cinder's).
      assert.equal((await call(server, admin, 'DELETE', url, undefined, V362)).status, 204)
      assertError(await call(server, admin, 'GET', url, undefined, V362), 404, 'itemNotFound')
      assert.equal((await call(server, admin, 'DELETE', url, undefined, V362)).status, 204)
      assert.equal((await call(server, admin, 'DELETE', `${V}/default-types/${bob.projectId}`, undefined, V362)).status, 204)
    })

    it("gives a project's volumes without a type its default type, and keeps that type from deletion", async () => {
      const own = await newType()
      const V362 = at('3.62')
      const configured = (await call(server, alice, 'GET', `${V}/types/default`)).body.volume_type.name as string
      assert.equal((await call(server, admin, 'PUT', `${V}/default-types/${alice.projectId}`, { default_type: { volume_type: own.id } }, V362)).status, 200)

      // Alice's project: its default, for a volume without a type and for /types/default; Bob's: the configured one.
      const mine = await newVolume(alice)
      assert.equal((await show(alice, `volumes/${mine}`, '3.63')).volume.volume_type_id, own.id)
      assert.equal((await call(server, alice, 'GET', `${V}/types/default`)).body.volume_type.id, own.id)
      const bobs = await newVolume(bob)
      assert.equal((await show(bob, `volumes/${bobs}`, '3.0')).volume.volume_type, configured)
      assert.equal((await call(server, bob, 'GET', `${V}/types/default`)).body.volume_type.name, configured)
      // A type asked for, or a source's, still wins over the default.
      const other = await newType()
      const named = await newVolume(alice, { volume_type: other.id })
      assert.equal((await show(alice, `volumes/${named}`, '3.63')).volume.volume_type_id, other.id)
      const clone = await newVolume(alice, { source_volid: named })
      assert.equal((await show(alice, `volumes/${clone}`, '3.63')).volume.volume_type_id, other.id)

      // A project's default type cannot be deleted (Cinder's 400) until it is unset.
      const spare = await newType()
      assert.equal((await call(server, admin, 'PUT', `${V}/default-types/${bob.projectId}`, { default_type: { volume_type: spare.id } }, V362)).status, 200)
      assertError(await call(server, admin, 'DELETE', `${V}/types/${spare.id}`), 400, 'badRequest', /is a default volume type and cannot be deleted/)
      assert.equal((await call(server, admin, 'GET', `${V}/types/${spare.id}`)).status, 200)
      assert.equal((await call(server, admin, 'DELETE', `${V}/default-types/${bob.projectId}`, undefined, V362)).status, 204)
      assert.equal((await call(server, admin, 'DELETE', `${V}/types/${spare.id}`)).status, 202)

      // Unset: Alice's next volume without a type is of the configured default again.
      assert.equal((await call(server, admin, 'DELETE', `${V}/default-types/${alice.projectId}`, undefined, V362)).status, 204)
      const after = await newVolume(alice)
      assert.equal((await show(alice, `volumes/${after}`, '3.0')).volume.volume_type, configured)
    })
  })
}
