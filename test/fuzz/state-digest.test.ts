/**
 * The fuzz suite's "a refused request changes nothing" rests on its state digest (src/testkit/fuzz/state.ts),
 * computed in this process on SQLite and by PostgreSQL itself: both must see a changed, added or removed row and
 * neither a change of a volatile column.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { changes, stateDigest } from '../../src/testkit/fuzz/state.js'

for (const dialect of DIALECTS) {
  describe(`the fuzz suite's state digest (${dialect})`, () => {
    let server: TestServer
    before(async () => {
      server = await startTestServer({ dialect })
    })
    after(() => server?.close())

    it('sees rows changed, added and removed, and not the columns that change on their own', async () => {
      const store = server.deps.store
      const db = store.db
      const digest = () => stateDigest(store)
      // Just started, the server's own jobs still write (their first runs); wait for a quiet moment.
      let first = await digest()
      for (let i = 0; i < 100; i++) {
        const next = await digest()
        if (changes(first, next).length === 0) break
        first = next
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      assert.deepEqual(changes(first, await digest()), [], 'nothing changed, nothing seen')

      await db.updateTable('users').set({ failed_auth_count: 3 }).where('name', '=', 'admin').execute()
      const volatile = await digest()
      assert.deepEqual(changes(first, volatile), [], 'a failed-login count is volatile')

      await db.updateTable('users').set({ enabled: 0 }).where('name', '=', 'admin').execute()
      const changed = await digest()
      assert.deepEqual(changes(volatile, changed).map((c) => c.split(':')[0]), ['users'])

      await db.insertInto('regions').values({ id: 'RegionTwo', description: '', parent_region_id: null }).execute()
      const added = await digest()
      assert.deepEqual(changes(changed, added).map((c) => c.split(':')[0]), ['regions'])
      await db.deleteFrom('regions').where('id', '=', 'RegionTwo').execute()
      assert.deepEqual(changes(changed, await digest()), [], 'the row removed again: as it was')
    })
  })
}
