/**
 * Generic volume groups: group types with their group specs (admins), groups of volumes of the group's volume
 * types, group snapshots made of real member snapshots, create-from-src making volumes with the sources' bytes
 * (the file backend's raw files are read here), delete with delete-volumes deleting the members, the groups
 * quota, the status rules (a bad transition is 400 and changes nothing), and other projects seeing nothing. On
 * SQLite and PostgreSQL.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminSession, call, eventually, projectSession, type Session } from '../image/support.js'

const V = '/volume/v3'
const H = { 'openstack-api-version': 'volume 3.60' }
const MIB = 1024 * 1024

for (const dialect of DIALECTS) {
  describe(`volume groups (${dialect})`, () => {
    let server: TestServer
    let admin: Session
    let alice: Session
    let bob: Session
    let volumeType: string
    let otherType: string
    let groupType: string

    const api = (session: Session, method: string, path: string, body?: unknown, headers: Record<string, string> = H) => call(server, session, method, `${V}${path}`, body, headers)
    const status = (session: Session, kind: 'volumes' | 'snapshots' | 'groups' | 'group_snapshots', id: string, wanted: string) =>
      eventually(async () => {
        const reply = await api(session, 'GET', `/${kind}/${id}`)
        const record = reply.body?.[kind.replace(/s$/, '')]
        return record?.status === wanted ? record : undefined
      }, 20_000, `${kind} ${id} to be ${wanted}`)
    const gone = (session: Session, kind: string, id: string) => eventually(async () => (await api(session, 'GET', `/${kind}/${id}`)).status === 404, 20_000, `${kind} ${id} to go`)
    const group = async (session: Session, types = [volumeType]) => {
      const created = await api(session, 'POST', '/groups', { group: { name: 'g', group_type: groupType, volume_types: types } })
      assert.equal(created.status, 202, JSON.stringify(created.body))
      assert.deepEqual(Object.keys(created.body.group).sort(), ['id', 'name'])
      await status(session, 'groups', created.body.group.id, 'available')
      return created.body.group.id as string
    }
    const member = async (session: Session, groupId: string, type = volumeType) => {
      const created = await api(session, 'POST', '/volumes', { volume: { size: 1, volume_type: type, group_id: groupId } })
      assert.equal(created.status, 202, JSON.stringify(created.body))
      assert.equal(created.body.volume.group_id, groupId)
      await status(session, 'volumes', created.body.volume.id, 'available')
      return created.body.volume.id as string
    }
    const file = (kind: 'volume' | 'snapshot', id: string) => join(server.deps.config.dataDir, 'volumes', `${kind}-${id}`)
    /** Writes a marker at 0 and at 1 MiB of a volume's raw file; reads it back from another volume's. */
    const mark = async (volumeId: string, text: string) => {
      const handle = await open(file('volume', volumeId), 'r+')
      await handle.write(Buffer.from(text), 0, text.length, 0)
      await handle.write(Buffer.from(text), 0, text.length, MIB)
      await handle.close()
    }
    const marker = async (volumeId: string, length: number) => {
      const handle = await open(file('volume', volumeId), 'r')
      const [a, b] = [Buffer.alloc(length), Buffer.alloc(length)]
      await handle.read(a, 0, length, 0)
      await handle.read(b, 0, length, MIB)
      await handle.close()
      return [a.toString(), b.toString()]
    }

    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminSession(server)
      alice = await projectSession(server)
      bob = await projectSession(server)
      volumeType = (await api(admin, 'POST', '/types', { volume_type: { name: `groups-${dialect}` } })).body.volume_type.id
      otherType = (await api(admin, 'POST', '/types', { volume_type: { name: `other-${dialect}` } })).body.volume_type.id
      const created = await api(admin, 'POST', '/group_types', { group_type: { name: 'consistent', description: 'd', group_specs: { consistent_group_snapshot_enabled: '<is> False' } } })
      assert.equal(created.status, 202, JSON.stringify(created.body))
      groupType = created.body.group_type.id
    })
    after(() => server.close())

    it('group types: admins create, update, show and delete them and their group specs; others list the public ones', async () => {
      const created = await api(admin, 'POST', '/group_types', { group_type: { name: 'gt-a', description: 'first', is_public: true, group_specs: { key1: 'value1' } } })
      assert.equal(created.status, 202)
      const id = created.body.group_type.id
      assert.deepEqual(created.body.group_type, { id, name: 'gt-a', description: 'first', is_public: true, group_specs: { key1: 'value1' } })
      assert.equal((await api(admin, 'POST', '/group_types', { group_type: { name: 'gt-a' } })).status, 409, 'names are unique')
      const updated = await api(admin, 'PUT', `/group_types/${id}`, { group_type: { name: 'gt-a2', description: 'renamed' } })
      assert.equal(updated.status, 200)
      assert.equal(updated.body.group_type.name, 'gt-a2')
      assert.equal((await api(admin, 'PUT', `/group_types/${id}`, { group_type: {} })).status, 400)

      assert.equal((await api(admin, 'POST', `/group_types/${id}/group_specs`, { group_specs: { key2: 'value2' } })).status, 202)
      assert.deepEqual((await api(admin, 'GET', `/group_types/${id}/group_specs`)).body.group_specs, { key1: 'value1', key2: 'value2' })
      assert.deepEqual((await api(admin, 'PUT', `/group_types/${id}/group_specs/key2`, { key2: 'changed' })).body, { key2: 'changed' })
      assert.equal((await api(admin, 'PUT', `/group_types/${id}/group_specs/key2`, { key3: 'x' })).status, 400, 'body and URI mismatch')
      assert.deepEqual((await api(admin, 'GET', `/group_types/${id}/group_specs/key2`)).body, { key2: 'changed' })
      assert.equal((await api(admin, 'DELETE', `/group_types/${id}/group_specs/key1`)).status, 202)
      assert.equal((await api(admin, 'GET', `/group_types/${id}/group_specs/key1`)).status, 404)
      assert.equal((await api(admin, 'DELETE', `/group_types/${id}/group_specs/key1`)).status, 404)

      const hidden = (await api(admin, 'POST', '/group_types', { group_type: { name: 'gt-private', is_public: false } })).body.group_type.id
      const names = async (session: Session, query = '') => ((await api(session, 'GET', `/group_types${query}`)).body.group_types as { name: string }[]).map((t) => t.name)
      assert.ok((await names(admin, '?is_public=None&sort=name:asc')).includes('gt-private'))
      assert.deepEqual(await names(admin, '?is_public=false'), ['gt-private'])
      assert.ok(!(await names(admin)).includes('gt-private'), 'without is_public, the public ones (as Cinder)')
      assert.ok(!(await names(alice, '?is_public=None')).includes('gt-private'), 'only admins see private group types')
      assert.equal((await api(alice, 'GET', `/group_types/${hidden}`)).status, 404)
      const shown = (await api(alice, 'GET', `/group_types/${id}`)).body.group_type
      assert.equal('group_specs' in shown, false, 'group specs are for admins')
      for (const [method, path, body] of [
        ['POST', '/group_types', { group_type: { name: 'mine' } }],
        ['PUT', `/group_types/${id}`, { group_type: { name: 'mine' } }],
        ['DELETE', `/group_types/${id}`, undefined],
        ['GET', `/group_types/${id}/group_specs`, undefined],
        ['POST', `/group_types/${id}/group_specs`, { group_specs: { a: 'b' } }],
      ] as const) assert.equal((await api(alice, method, path, body)).status, 403, `${method} ${path}`)
      assert.equal((await api(admin, 'GET', '/group_types', undefined, { 'openstack-api-version': 'volume 3.10' })).status, 404, 'group types came with 3.11')
      assert.equal((await api(admin, 'DELETE', `/group_types/${id}`)).status, 202)
      assert.equal((await api(admin, 'GET', `/group_types/${id}`)).status, 404)
    })

    it('groups: volumes join with group_id or an update, of the group’s types only; other projects see nothing', async () => {
      const id = await group(alice)
      const v1 = await member(alice, id)
      const wrongType = await api(alice, 'POST', '/volumes', { volume: { size: 1, volume_type: otherType, group_id: id } })
      assert.equal(wrongType.status, 400, 'a type the group does not have')
      assert.equal((await api(alice, 'POST', '/volumes', { volume: { size: 1, volume_type: volumeType, group_id: 'nope' } })).status, 404)

      const shown = (await api(alice, 'GET', `/groups/${id}?list_volume=true`)).body.group
      assert.equal(shown.group_type, groupType)
      assert.deepEqual(shown.volume_types, [volumeType])
      assert.deepEqual(shown.volumes, [v1])
      assert.equal(shown.project_id, alice.projectId)
      assert.equal(shown.group_snapshot_id, null)
      assert.equal('volumes' in (await api(alice, 'GET', `/groups/${id}`, undefined, { 'openstack-api-version': 'volume 3.24' })).body.group, false, 'volumes came with 3.25')
      assert.ok((await api(alice, 'GET', '/groups/detail')).body.groups.some((g: { id: string }) => g.id === id))
      assert.equal((await api(alice, 'GET', `/volumes/${v1}`)).body.volume.group_id, id)
      assert.equal('group_id' in (await api(alice, 'GET', `/volumes/${v1}`, undefined, { 'openstack-api-version': 'volume 3.12' })).body.volume, false, 'group_id came with 3.13')
      assert.equal((await api(alice, 'DELETE', `/volumes/${v1}`)).status, 400, 'a group member goes with its group')

      // Update: remove, add back, rename; refusals change nothing.
      const loose = (await api(alice, 'POST', '/volumes', { volume: { size: 1, volume_type: otherType } })).body.volume.id
      await status(alice, 'volumes', loose, 'available')
      assert.equal((await api(alice, 'PUT', `/groups/${id}`, { group: { add_volumes: loose } })).status, 400, 'not of the group’s types')
      assert.equal((await api(alice, 'PUT', `/groups/${id}`, { group: { remove_volumes: loose } })).status, 400, 'not in the group')
      assert.equal((await api(alice, 'PUT', `/groups/${id}`, { group: {} })).status, 400, 'nothing to change')
      assert.equal((await api(alice, 'PUT', `/groups/${id}`, { group: { remove_volumes: v1 } })).status, 202)
      assert.equal((await api(alice, 'GET', `/volumes/${v1}`)).body.volume.group_id, null)
      assert.equal((await api(alice, 'PUT', `/groups/${id}`, { group: { name: 'renamed', description: 'again', add_volumes: v1 } })).status, 202)
      const after = (await api(alice, 'GET', `/groups/${id}?list_volume=true`)).body.group
      assert.equal(after.name, 'renamed')
      assert.deepEqual(after.volumes, [v1])

      // Another project: 404 everywhere, and its volume cannot join.
      assert.equal((await api(bob, 'GET', `/groups/${id}`)).status, 404)
      assert.equal((await api(bob, 'PUT', `/groups/${id}`, { group: { name: 'x' } })).status, 404)
      assert.equal((await api(bob, 'POST', `/groups/${id}/action`, { delete: { 'delete-volumes': true } })).status, 404)
      assert.equal((await api(bob, 'POST', '/volumes', { volume: { size: 1, volume_type: volumeType, group_id: id } })).status, 404)
      assert.equal((await api(bob, 'GET', '/groups')).body.groups.length, 0)
      const bobs = (await api(bob, 'POST', '/volumes', { volume: { size: 1, volume_type: volumeType } })).body.volume.id
      await status(bob, 'volumes', bobs, 'available')
      assert.equal((await api(alice, 'PUT', `/groups/${id}`, { group: { add_volumes: bobs } })).status, 400, 'another project’s volume cannot join')
      assert.equal((await api(admin, 'GET', `/groups/${id}`)).status, 200, 'admins see every project’s')

      // The status table: reset is admins' (3.20); an unavailable group takes no volume; a bad status is 400.
      assert.equal((await api(alice, 'POST', `/groups/${id}/action`, { reset_status: { status: 'error' } })).status, 403)
      assert.equal((await api(admin, 'POST', `/groups/${id}/action`, { reset_status: { status: 'bogus' } })).status, 400)
      assert.equal((await api(admin, 'POST', `/groups/${id}/action`, { reset_status: { status: 'error' } }, { 'openstack-api-version': 'volume 3.19' })).status, 404, 'reset_status came with 3.20')
      assert.equal((await api(admin, 'POST', `/groups/${id}/action`, { reset_status: { status: 'error' } })).status, 202)
      assert.equal((await api(alice, 'POST', '/volumes', { volume: { size: 1, volume_type: volumeType, group_id: id } })).status, 400, 'an errored group takes no volume')
      assert.equal((await api(alice, 'PUT', `/groups/${id}`, { group: { remove_volumes: v1 } })).status, 400)
      assert.equal((await api(alice, 'GET', `/volumes/${v1}`)).body.volume.group_id, id, 'nothing changed')
      assert.equal((await api(admin, 'POST', `/groups/${id}/action`, { reset_status: { status: 'available' } })).status, 202)

      // Delete: refused with volumes unless delete-volumes, which deletes them.
      assert.equal((await api(alice, 'POST', `/groups/${id}/action`, { delete: { 'delete-volumes': false } })).status, 400)
      assert.equal((await api(alice, 'DELETE', `/group_types/${groupType}`)).status, 403)
      assert.equal((await api(admin, 'DELETE', `/group_types/${groupType}`)).status, 400, 'a group type in use stays')
      assert.equal((await api(alice, 'POST', `/groups/${id}/action`, { delete: { 'delete-volumes': true } })).status, 202)
      await gone(alice, 'volumes', v1)
      await gone(alice, 'groups', id)
      assert.equal(existsSync(file('volume', v1)), false, 'the member’s bytes are gone')
      assert.equal((await api(alice, 'GET', `/volumes/${loose}`)).status, 200, 'a volume not in the group stays')
    })

    it('group snapshots are real member snapshots; create-from-src makes volumes with the sources’ bytes', async () => {
      const id = await group(alice)
      const [v1, v2] = [await member(alice, id), await member(alice, id)]
      await mark(v1, 'first-volume')
      await mark(v2, 'second-volume')

      const created = await api(alice, 'POST', '/group_snapshots', { group_snapshot: { group_id: id, name: 'gs' } })
      assert.equal(created.status, 202, JSON.stringify(created.body))
      const gsId = created.body.group_snapshot.id
      assert.equal(created.body.group_snapshot.group_type_id, groupType)
      const gs = await status(alice, 'group_snapshots', gsId, 'available')
      assert.equal(gs.group_id, id)
      const snaps = (await api(alice, 'GET', '/snapshots/detail')).body.snapshots.filter((s: { group_snapshot_id: string }) => s.group_snapshot_id === gsId)
      assert.deepEqual(snaps.map((s: { volume_id: string }) => s.volume_id).sort(), [v1, v2].sort())
      for (const s of snaps) {
        assert.equal(s.status, 'available')
        assert.ok(existsSync(file('snapshot', s.id)), 'the member snapshot’s bytes exist')
      }
      assert.equal((await api(alice, 'DELETE', `/snapshots/${snaps[0].id}`)).status, 400, 'a member goes with its group snapshot')
      assert.equal((await api(alice, 'POST', `/groups/${id}/action`, { delete: { 'delete-volumes': true } })).status, 400, 'a group with group snapshots stays')
      assert.equal((await api(bob, 'GET', `/group_snapshots/${gsId}`)).status, 404)
      assert.equal((await api(bob, 'POST', '/group_snapshots', { group_snapshot: { group_id: id } })).status, 404)
      assert.equal((await api(bob, 'POST', '/groups/action', { 'create-from-src': { group_snapshot_id: gsId } })).status, 404)

      // The volumes change after the snapshot: a group made from it has the bytes of the snapshot's time.
      await mark(v1, 'changed-later')
      const fromSnap = await api(alice, 'POST', '/groups/action', { 'create-from-src': { group_snapshot_id: gsId, name: 'from-snap' } })
      assert.equal(fromSnap.status, 202, JSON.stringify(fromSnap.body))
      const g2 = fromSnap.body.group.id
      const shown = await status(alice, 'groups', g2, 'available')
      assert.equal(shown.group_snapshot_id, gsId)
      assert.deepEqual(shown.volume_types, [volumeType])
      const clones = (await api(alice, 'GET', `/groups/${g2}?list_volume=true`)).body.group.volumes as string[]
      assert.equal(clones.length, 2)
      const texts = await Promise.all(clones.map((c) => marker(c, 'second-volume'.length)))
      assert.deepEqual(texts.map((t) => t[0].replace(/\0+$/, '')).sort(), ['first-volume', 'second-volume'])
      for (const t of texts) assert.equal(t[0], t[1])

      const fromGroup = await api(alice, 'POST', '/groups/action', { 'create-from-src': { source_group_id: id, name: 'from-group' } })
      assert.equal(fromGroup.status, 202)
      const g3 = fromGroup.body.group.id
      assert.equal((await status(alice, 'groups', g3, 'available')).source_group_id, id)
      const copies = (await api(alice, 'GET', `/groups/${g3}?list_volume=true`)).body.group.volumes as string[]
      const now = await Promise.all(copies.map((c) => marker(c, 'second-volume'.length)))
      assert.deepEqual(now.map((t) => t[0].replace(/\0+$/, '')).sort(), ['changed-later', 'second-volume'], 'a clone has the source’s bytes now')

      assert.equal((await api(alice, 'POST', '/groups/action', { 'create-from-src': { group_snapshot_id: gsId, source_group_id: id } })).status, 400, 'one source')
      assert.equal((await api(alice, 'POST', '/groups/action', { 'create-from-src': {} })).status, 400)
      const empty = await group(alice)
      assert.equal((await api(alice, 'POST', '/groups/action', { 'create-from-src': { source_group_id: empty } })).status, 400, 'an empty source')

      // Reset status (3.19, admins), then delete: the member snapshots go with it.
      assert.equal((await api(alice, 'POST', `/group_snapshots/${gsId}/action`, { reset_status: { status: 'error' } })).status, 403)
      assert.equal((await api(admin, 'POST', `/group_snapshots/${gsId}/action`, { reset_status: { status: 'nonsense' } })).status, 400)
      assert.equal((await api(admin, 'POST', `/group_snapshots/${gsId}/action`, { reset_status: { status: 'creating' } })).status, 202)
      assert.equal((await api(alice, 'DELETE', `/group_snapshots/${gsId}`)).status, 400, 'a creating group snapshot is not deleted')
      assert.equal((await api(admin, 'POST', `/group_snapshots/${gsId}/action`, { reset_status: { status: 'available' } })).status, 202)
      assert.equal((await api(alice, 'DELETE', `/group_snapshots/${gsId}`)).status, 202)
      await gone(alice, 'group_snapshots', gsId)
      for (const s of snaps) {
        assert.equal((await api(alice, 'GET', `/snapshots/${s.id}`)).status, 404)
        assert.equal(existsSync(file('snapshot', s.id)), false)
      }
      for (const g of [g2, g3, id, empty]) assert.equal((await api(alice, 'POST', `/groups/${g}/action`, { delete: { 'delete-volumes': true } })).status, 202)
      for (const g of [g2, g3, id, empty]) await gone(alice, 'groups', g)
    })

    it('a volume type a group lists cannot be deleted until the group goes', async () => {
      const type = (await api(admin, 'POST', '/types', { volume_type: { name: `listed-${dialect}` } })).body.volume_type.id as string
      const id = await group(alice, [type])
      const refused = await api(admin, 'DELETE', `/types/${type}`)
      assert.equal(refused.status, 400)
      assert.match(refused.body.badRequest.message, /groups with volume type/)
      assert.equal((await api(alice, 'GET', `/groups/${id}`)).body.group.volume_types[0], type, 'the group still names it')
      assert.equal((await api(alice, 'POST', `/groups/${id}/action`, { delete: { 'delete-volumes': false } })).status, 202)
      await gone(alice, 'groups', id)
      assert.equal((await api(admin, 'DELETE', `/types/${type}`)).status, 202)
    })

    it('counts groups in the groups quota', async () => {
      const carol = await projectSession(server)
      assert.equal((await api(admin, 'PUT', `/os-quota-sets/${carol.projectId}`, { quota_set: { groups: 1 } })).status, 200)
      await group(carol)
      const over = await api(carol, 'POST', '/groups', { group: { group_type: groupType, volume_types: [volumeType] } })
      assert.equal(over.status, 413)
      assert.match(over.body.overLimit.message, /groups/)
      assert.equal((await api(admin, 'GET', `/os-quota-sets/${carol.projectId}?usage=true`)).body.quota_set.groups.in_use, 1)
      assert.equal((await api(carol, 'GET', '/groups')).body.groups.length, 1, 'the refused group was not made')
      assert.equal((await api(carol, 'POST', '/groups', { group: { group_type: groupType, volume_types: ['nope'] } })).status, 404)
      assert.equal((await api(carol, 'POST', '/groups', { group: { group_type: 'nope', volume_types: [volumeType] } })).status, 404)
      assert.equal((await api(carol, 'POST', '/groups', { group: { group_type: groupType } })).status, 400)
      assert.equal((await api(carol, 'GET', '/groups', undefined, { 'openstack-api-version': 'volume 3.12' })).status, 404, 'groups came with 3.13')
    })
  })
}
