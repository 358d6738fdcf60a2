/**
 * GET /image/v2/images/{id} answers kept views (http/view-cache.ts) stamped with the image's revisions
 * (migration 0128). Whatever changes what an image shows — its row (name, properties, status) or its tags, through
 * the API or written straight into the database as another process would — the show must answer it at once and
 * agree with the list (which renders every time); a kept view never answers a project that may not see the image
 * (private, or shared without membership). Each show is read twice: once to fill the cache, once from it.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminSession, call, projectSession, type Session } from './support.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const PATCH = { 'content-type': 'application/openstack-images-v2.1-json-patch' }

for (const dialect of DIALECTS) {
  describe(`image show from kept views (${dialect})`, { timeout: 300_000 }, () => {
    let server: TestServer
    let admin: Session
    let alice: Session
    let bob: Session

    /** The image as show answers it, read twice (fill, then hit). */
    async function shown(who: Session, id: string, on = server): Promise<Json> {
      let found: Json
      for (let i = 0; i < 2; i++) {
        const reply = await call(on, who, 'GET', `/image/v2/images/${id}`)
        assert.equal(reply.status, 200, JSON.stringify(reply.body))
        assert.equal(reply.headers.get('content-type'), 'application/json; charset=utf-8')
        found = reply.body
      }
      return found
    }

    /** Show agrees with the list (rendered every time) for alice and the admin. */
    async function agree(id: string, what: string): Promise<Json> {
      let member: Json
      for (const who of [alice, admin]) {
        const view = await shown(who, id)
        const list = await call(server, who, 'GET', '/image/v2/images?limit=1000')
        assert.deepEqual(view, list.body.images.find((x: Json) => x.id === id), `after ${what}, ${who === admin ? 'admin' : 'member'}`)
        member ??= view
      }
      return member
    }

    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminSession(server)
      alice = await projectSession(server)
      bob = await projectSession(server)
    })
    after(() => server.close())

    it('answers every change of the row and its tags at once', async () => {
      const created = await call(server, alice, 'POST', '/image/v2/images', { name: 'kept', disk_format: 'raw', container_format: 'bare' })
      assert.equal(created.status, 201, JSON.stringify(created.body))
      const id = created.body.id as string
      assert.equal((await agree(id, 'create')).name, 'kept')
      const patched = await call(server, alice, 'PATCH', `/image/v2/images/${id}`, [{ op: 'replace', path: '/name', value: 'renamed' }, { op: 'add', path: '/colour', value: 'blue' }], PATCH)
      assert.equal(patched.status, 200, JSON.stringify(patched.body))
      const view = await agree(id, 'patch')
      assert.deepEqual([view.name, view.colour], ['renamed', 'blue'])
      assert.equal((await call(server, alice, 'PUT', `/image/v2/images/${id}/tags/red`)).status, 204)
      assert.deepEqual((await agree(id, 'a tag')).tags, ['red'])
      assert.equal((await call(server, alice, 'DELETE', `/image/v2/images/${id}/tags/red`)).status, 204)
      assert.deepEqual((await agree(id, 'a tag removed')).tags, [])

      // Written straight into the database, as another process or an older release would.
      const db = server.deps.store.db
      await db.updateTable('images').set({ min_ram: 256 }).where('id', '=', id).execute()
      assert.equal((await agree(id, 'a row update in the database')).min_ram, 256)
      await db.insertInto('image_tags').values({ image_id: id, tag: 'green' }).execute()
      assert.deepEqual((await agree(id, 'a tag in the database')).tags, ['green'])
      await db.updateTable('image_tags').set({ tag: 'yellow' }).where('image_id', '=', id).execute()
      assert.deepEqual((await agree(id, 'a tag changed in the database')).tags, ['yellow'])
      await db.deleteFrom('image_tags').where('image_id', '=', id).execute()
      assert.deepEqual((await agree(id, 'a tag deleted in the database')).tags, [])

      assert.equal((await call(server, alice, 'DELETE', `/image/v2/images/${id}`)).status, 204)
      assert.equal((await call(server, alice, 'GET', `/image/v2/images/${id}`)).status, 404)
    })

    it('never answers a project that may not see the image', async () => {
      const id = (await call(server, alice, 'POST', '/image/v2/images', { name: 'mine', visibility: 'private' })).body.id as string
      await shown(alice, id)
      await shown(admin, id)
      for (let i = 0; i < 2; i++) assert.equal((await call(server, bob, 'GET', `/image/v2/images/${id}`)).status, 404)
      assert.equal((await call(server, alice, 'PATCH', `/image/v2/images/${id}`, [{ op: 'replace', path: '/visibility', value: 'shared' }], PATCH)).status, 200)
      assert.equal((await call(server, bob, 'GET', `/image/v2/images/${id}`)).status, 404, 'shared, but not with bob')
      assert.equal((await call(server, alice, 'POST', `/image/v2/images/${id}/members`, { member: bob.projectId })).status, 200)
      assert.equal((await shown(bob, id)).visibility, 'shared')
      assert.equal((await call(server, alice, 'DELETE', `/image/v2/images/${id}/members/${bob.projectId}`)).status, 204)
      assert.equal((await call(server, bob, 'GET', `/image/v2/images/${id}`)).status, 404, 'no longer a member')
      assert.equal((await call(server, alice, 'GET', '/image/v2/images/00000000-0000-0000-0000-000000000000')).status, 404)
    })

    if (dialect === 'postgres') {
      // A PATCH writes the row, then the tags; a tag PUT the tag, then the row. Both lock the row first
      // (storage/row-locks.ts): without it they deadlock (40P01), and concurrent PATCHes lose each other's changes.
      it('lets concurrent patches and tag writers of one image all finish; show is current after', async () => {
        const id = (await call(server, alice, 'POST', '/image/v2/images', { name: 'raced' })).body.id as string
        const patcher = async (n: number, rounds: number) => {
          for (let round = 0; round < rounds; round++) {
            const ops = [{ op: 'add', path: `/p${n}`, value: String(round) }, { op: 'replace', path: '/tags', value: [`t${(n + round) % 3}`] }]
            const reply = await call(server, alice, 'PATCH', `/image/v2/images/${id}`, ops, PATCH)
            assert.equal(reply.status, 200, JSON.stringify(reply.body))
          }
        }
        const tagger = async (n: number, rounds: number) => {
          for (let round = 0; round < rounds; round++) assert.equal((await call(server, alice, 'PUT', `/image/v2/images/${id}/tags/x${n}-${round}`)).status, 204)
        }
        await Promise.all([...[0, 1, 2].map((n) => patcher(n, 10)), ...[0, 1, 2].map((n) => tagger(n, 10))])
        const view = await agree(id, 'the race')
        assert.deepEqual([view.p0, view.p1, view.p2], ['9', '9', '9'], 'no patch lost')
      })

      it('answers in one process what another process changed', async () => {
        const masterKey = readFileSync(join(server.dataDir, 'master.key'), 'utf8').trim()
        const other = await startTestServer({ databaseUrl: server.config.databaseUrl, env: { PCC_MASTER_KEY: masterKey, PCC_SIMULATED_HOSTS: '0' } })
        try {
          const id = (await call(server, alice, 'POST', '/image/v2/images', { name: 'two-processes' })).body.id as string
          assert.deepEqual(await shown(alice, id, other), await shown(alice, id))
          assert.equal((await call(other, alice, 'PATCH', `/image/v2/images/${id}`, [{ op: 'replace', path: '/name', value: 'changed-in-other' }], PATCH)).status, 200)
          assert.equal((await agree(id, 'a rename in the other process')).name, 'changed-in-other')
          assert.equal((await call(other, alice, 'PUT', `/image/v2/images/${id}/tags/other`)).status, 204)
          assert.deepEqual((await agree(id, 'a tag in the other process')).tags, ['other'])
          assert.equal((await call(server, alice, 'PATCH', `/image/v2/images/${id}`, [{ op: 'replace', path: '/name', value: 'changed-here' }], PATCH)).status, 200)
          assert.equal((await shown(alice, id, other)).name, 'changed-here')
        } finally {
          await other.close()
        }
      })
    }
  })
}
