/**
 * GET /flavors and /flavors/detail answer kept lists (http/view-cache.ts) stamped with the rows they are rendered
 * from: each flavor's revision (migration 0129) and, for a member, the private flavors its project was given.
 * Whatever changes a flavor — through the API or written straight into the database as another process would —
 * the list must answer it at once, each flavor as its show (which renders every time) answers it; a kept list must
 * never show a member a private flavor its project was not given. Each list is read twice: to fill, then from the cache.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DIALECTS, startTestServer } from '../../src/testkit/harness.js'
import { call, computeTestbed, type ComputeTestbed, type Persona } from './helpers.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

for (const dialect of DIALECTS) {
  describe(`flavor lists from kept answers (${dialect})`, { timeout: 300_000 }, () => {
    let tb: ComputeTestbed
    before(async () => {
      tb = await computeTestbed(dialect)
    })
    after(() => tb.close())

    /** The list read twice (fill, then hit), each flavor checked against its show at the same version. */
    async function listed(who: Persona, path: string, version = '2.96', compute = tb.compute): Promise<Json[]> {
      let flavors: Json[] = []
      for (let i = 0; i < 2; i++) {
        const reply = await call({ ...tb, compute }, who, 'GET', path, undefined, version)
        assert.equal(reply.status, 200, JSON.stringify(reply.body))
        assert.equal(reply.headers.get('content-type'), 'application/json; charset=utf-8')
        flavors = reply.body.flavors
      }
      if (path.startsWith('/flavors/detail')) {
        for (const f of flavors) assert.deepEqual(f, (await call(tb, who, 'GET', `/flavors/${f.id}`, undefined, version)).body.flavor, `flavor ${f.id} at ${version}`)
      }
      return flavors
    }
    const ids = (flavors: Json[]) => flavors.map((f) => f.id)

    it('answers every change of a flavor and of its access at once', async () => {
      const before = ids(await listed(tb.member, '/flavors/detail'))
      assert.ok(before.includes('1'))
      // Older versions are variants of their own: no extra_specs, no description.
      assert.equal('extra_specs' in (await listed(tb.member, '/flavors/detail', '2.1'))[0], false)

      assert.equal((await call(tb, tb.admin, 'POST', '/flavors', { flavor: { name: 'kept.private', id: 'kp', ram: 256, vcpus: 1, disk: 1, 'os-flavor-access:is_public': false } })).status, 200)
      assert.ok(ids(await listed(tb.admin, '/flavors/detail?is_public=None')).includes('kp'))
      assert.deepEqual(ids(await listed(tb.member, '/flavors/detail')), before, 'a private flavor is not shown before access')
      assert.equal((await call(tb, tb.admin, 'POST', '/flavors/kp/action', { addTenantAccess: { tenant: tb.member.projectId } })).status, 200)
      assert.ok(ids(await listed(tb.member, '/flavors/detail')).includes('kp'), 'shown once the project is given it')
      assert.equal(ids(await listed(tb.other, '/flavors/detail')).includes('kp'), false, 'never to another project')
      assert.equal((await call(tb, tb.admin, 'POST', '/flavors/kp/action', { removeTenantAccess: { tenant: tb.member.projectId } })).status, 200)
      assert.equal(ids(await listed(tb.member, '/flavors/detail')).includes('kp'), false, 'hidden again when taken back')

      assert.equal((await call(tb, tb.admin, 'POST', '/flavors/1/os-extra_specs', { extra_specs: { 'hw:cpu_policy': 'shared' } }, '2.96')).status, 200)
      assert.deepEqual((await listed(tb.member, '/flavors/detail')).find((f) => f.id === '1').extra_specs, { 'hw:cpu_policy': 'shared' })
      assert.equal((await call(tb, tb.admin, 'PUT', '/flavors/1', { flavor: { description: 'the smallest' } }, '2.96')).status, 200)
      assert.equal((await listed(tb.member, '/flavors/detail')).find((f) => f.id === '1').description, 'the smallest')

      // Written straight into the database, as another process would: the row's revision tells.
      const db = tb.server.deps.store.db
      await db.updateTable('flavors').set({ name: 'renamed.in.db' }).where('id', '=', '1').execute()
      assert.equal((await listed(tb.member, '/flavors')).find((f) => f.id === '1').name, 'renamed.in.db')
      await db.updateTable('flavors').set({ extra_specs: '{}' }).where('id', '=', '1').execute()
      assert.deepEqual((await listed(tb.member, '/flavors/detail')).find((f) => f.id === '1').extra_specs, {})
      await db.insertInto('flavor_access').values({ flavor_id: 'kp', project_id: tb.member.projectId }).execute()
      assert.ok(ids(await listed(tb.member, '/flavors/detail')).includes('kp'), 'access given in the database')

      // The query's parameters apply to the kept rows as to any list; bad ones are refused, not kept.
      assert.deepEqual(ids(await listed(tb.member, '/flavors?minRam=4096&sort_key=memory_mb&sort_dir=desc')), ['5', '4', '3'])
      assert.equal((await call(tb, tb.member, 'GET', '/flavors?limit=x')).status, 400)
      assert.equal((await call(tb, tb.admin, 'DELETE', '/flavors/kp')).status, 202)
      assert.equal(ids(await listed(tb.member, '/flavors/detail')).includes('kp'), false, 'deleted')
    })

    if (dialect === 'postgres') {
      it('answers in one process what another process changed', async () => {
        const server = tb.server
        const masterKey = readFileSync(join(server.dataDir, 'master.key'), 'utf8').trim()
        const other = await startTestServer({ databaseUrl: server.config.databaseUrl, env: { PCC_MASTER_KEY: masterKey, PCC_SIMULATED_HOSTS: '0' } })
        try {
          const there = `${other.url}/compute/v2.1`
          assert.deepEqual(await listed(tb.member, '/flavors/detail', '2.96', there), await listed(tb.member, '/flavors/detail'))
          assert.equal((await call({ ...tb, compute: there }, tb.admin, 'PUT', '/flavors/2', { flavor: { description: 'changed in the other' } }, '2.96')).status, 200)
          assert.equal((await listed(tb.member, '/flavors/detail')).find((f) => f.id === '2').description, 'changed in the other')
        } finally {
          await other.close()
        }
      })
    }
  })
}
