/**
 * The storage conformance suite: what every repository may rely on, checked against each dialect with the
 * same tests (storage.sqlite.test.ts, storage.postgres.test.ts).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { sql, type Kysely } from 'kysely'
import { MIGRATIONS, migrate, type Migration } from '../../src/server/storage/migrations/index.js'
import { isForeignKeyViolation, isUniqueViolation } from '../../src/server/storage/errors.js'
import type { Store } from '../../src/server/storage/store.js'
import { prepared } from '../../src/server/storage/prepared.js'
import type { TaskTable } from '../../src/server/storage/schema.js'
import type { Dialect } from '../../src/testkit/harness.js'
import { openTestStore, type TestStore } from '../../src/testkit/store.js'
import type { ServerTable } from '../../src/server/storage/schema.js'

/** Later than 2^31 seconds and 2^32 ms: a value that breaks int4 columns and string-typed int8 alike. */
const MS = 1_763_000_000_123

function taskRow(id: string, overrides: Partial<TaskTable> = {}): TaskTable {
  return {
    id, kind: 'conformance', subject_id: null, payload: '{}', status: 'done', attempts: 0, max_attempts: 1, run_after: MS,
    lease_owner: null, lease_expires_at: null, last_error: null, idempotency_key: null, created_at: MS, updated_at: MS, finished_at: null,
    ...overrides,
  }
}

export function storageConformance(dialect: Dialect): void {
  describe(`storage conformance (${dialect})`, () => {
    let t: TestStore
    let store: Store
    before(async () => {
      t = await openTestStore(dialect, { migrate: false })
      store = t.store
    })
    after(() => t.close())

    describe('migrations', () => {
      it('apply every migration in order on an empty database and record each', async () => {
        const report = await migrate(store)
        assert.deepEqual(report.applied, MIGRATIONS.map((m) => `${m.id}-${m.name}`))
        assert.equal(report.alreadyApplied, 0)
        const rows = await store.db.selectFrom('pcc_migrations').select(['id', 'name', 'applied_at']).orderBy('id').execute()
        assert.deepEqual(rows.map((r) => r.id), MIGRATIONS.map((m) => m.id))
        for (const row of rows) assert.equal(typeof row.applied_at, 'number')
      })

      it('are idempotent: a second run applies nothing and changes nothing', async () => {
        await store.db.insertInto('pcc_meta').values({ key: 'idempotent-probe', value: 'kept' }).execute()
        const report = await migrate(store)
        assert.deepEqual(report.applied, [])
        assert.equal(report.alreadyApplied, MIGRATIONS.length)
        const row = await store.db.selectFrom('pcc_meta').select('value').where('key', '=', 'idempotent-probe').executeTakeFirst()
        assert.equal(row?.value, 'kept')
      })

      it('roll a failing migration back entirely and apply it on the next run', async () => {
        let fail = true
        const flaky: Migration = {
          id: '9990',
          name: 'flaky',
          async up(db: Kysely<unknown>) {
            await db.schema.createTable('flaky_probe').addColumn('id', 'text', (c) => c.primaryKey()).execute()
            if (fail) throw new Error('flaky migration failed on purpose')
          },
        }
        await assert.rejects(migrate(store, [...MIGRATIONS, flaky]), /failed on purpose/)
        const recorded = await store.db.selectFrom('pcc_migrations').select('id').where('id', '=', '9990').executeTakeFirst()
        assert.equal(recorded, undefined, 'a failed migration is not recorded')
        await assert.rejects(sql`SELECT count(*) FROM flaky_probe`.execute(store.db), 'its DDL was rolled back with it')
        fail = false
        assert.deepEqual((await migrate(store, [...MIGRATIONS, flaky])).applied, ['9990-flaky'])
        await sql`SELECT count(*) FROM flaky_probe`.execute(store.db)
      })

      it('refuse a database that has migrations this build does not know', async () => {
        // 9990 was applied by the previous test and is not in this build's list.
        await assert.rejects(migrate(store), /migrations this pcc version does not know \(9990\)/)
        await store.db.deleteFrom('pcc_migrations').where('id', '=', '9990').execute()
        await sql`DROP TABLE flaky_probe`.execute(store.db)
      })
    })

    describe('row revisions', () => {
      it('raise a server row’s rev on every update, whatever the update sets, and never on another row', async () => {
        const row = (id: string): ServerTable => ({
          id, rev: 0, display_id: id === 'rev-a' ? 9001 : 9002, name: id, description: null, project_id: 'p', user_id: 'u', host_id: null, host: null, node: null,
          vm_state: 'active', task_state: null, power_state: 1, flavor: '{}', old_flavor: null, new_flavor: null, image_id: null, key_name: null, key_data: null,
          metadata: '{}', access_ip_v4: '', access_ip_v6: '', availability_zone: null, pinned_availability_zone: null, config_drive: 0, disk_config: 'MANUAL',
          user_data: null, hostname: null, locked: 0, locked_by: null, locked_reason: null, launch_index: 0, reservation_id: 'r', root_device_name: null,
          kernel_id: null, ramdisk_id: null, progress: 0, trusted_image_certificates: null, scheduler_hints: null, security_groups: '[]', requested_networks: '"none"',
          block_devices: '[]', created_at: MS, updated_at: MS, launched_at: null, terminated_at: null, deleted_at: null, deleted: 0,
        })
        await store.db.insertInto('servers').values([row('rev-a'), row('rev-b')]).execute()
        const rev = async (id: string) => (await store.db.selectFrom('servers').select('rev').where('id', '=', id).executeTakeFirstOrThrow()).rev
        await store.db.updateTable('servers').set({ task_state: 'rebooting' }).where('id', '=', 'rev-a').execute()
        // The same value again is still a write someone made: it counts.
        await store.db.updateTable('servers').set({ task_state: 'rebooting' }).where('id', '=', 'rev-a').execute()
        await store.db.transaction().execute(async (tx) => {
          await tx.updateTable('servers').set({ name: 'renamed' }).where('id', '=', 'rev-a').execute()
          await tx.updateTable('servers').set({ progress: 50 }).where('id', '=', 'rev-a').execute()
        })
        assert.equal(await rev('rev-a'), 4)
        assert.equal(await rev('rev-b'), 0)
        await store.db.deleteFrom('servers').where('id', 'in', ['rev-a', 'rev-b']).execute()
      })
    })

    describe('transactions', () => {
      it('commit every write together', async () => {
        await store.db.transaction().execute(async (tx) => {
          await tx.insertInto('pcc_meta').values({ key: 'tx-commit-a', value: '1' }).execute()
          await tx.insertInto('pcc_meta').values({ key: 'tx-commit-b', value: '2' }).execute()
        })
        const keys = await store.db.selectFrom('pcc_meta').select('key').where('key', 'like', 'tx-commit-%').orderBy('key').execute()
        assert.deepEqual(keys.map((k) => k.key), ['tx-commit-a', 'tx-commit-b'])
      })

      it('roll every write back when the callback throws, and rethrow its error', async () => {
        await assert.rejects(
          store.db.transaction().execute(async (tx) => {
            await tx.insertInto('pcc_meta').values({ key: 'tx-rollback-a', value: '1' }).execute()
            await tx.updateTable('pcc_meta').set({ value: 'changed' }).where('key', '=', 'tx-commit-a').execute()
            throw new Error('caller changed its mind')
          }),
          /caller changed its mind/,
        )
        assert.equal(await store.db.selectFrom('pcc_meta').select('key').where('key', '=', 'tx-rollback-a').executeTakeFirst(), undefined)
        const kept = await store.db.selectFrom('pcc_meta').select('value').where('key', '=', 'tx-commit-a').executeTakeFirstOrThrow()
        assert.equal(kept.value, '1')
      })

      it('are not visible to other connections before they commit', async () => {
        const other = await t.reopen()
        let release!: () => void
        const holding = new Promise<void>((resolve) => (release = resolve))
        let inserted!: () => void
        const didInsert = new Promise<void>((resolve) => (inserted = resolve))
        const tx = store.db.transaction().execute(async (trx) => {
          await trx.insertInto('pcc_meta').values({ key: 'tx-isolated', value: '1' }).execute()
          inserted()
          await holding
        })
        await didInsert
        assert.equal(await other.db.selectFrom('pcc_meta').select('key').where('key', '=', 'tx-isolated').executeTakeFirst(), undefined)
        release()
        await tx
        assert.deepEqual(await other.db.selectFrom('pcc_meta').select('key').where('key', '=', 'tx-isolated').executeTakeFirst(), { key: 'tx-isolated' })
      })
    })

    describe('constraints', () => {
      it('surface a unique violation as an error isUniqueViolation recognises, and keep the first row', async () => {
        await store.db.insertInto('pcc_meta').values({ key: 'unique-probe', value: 'first' }).execute()
        const err = await store.db.insertInto('pcc_meta').values({ key: 'unique-probe', value: 'second' }).execute().then(
          () => undefined,
          (e: unknown) => e,
        )
        assert.ok(err, 'the duplicate insert must fail')
        assert.ok(isUniqueViolation(err), `not recognised as a unique violation: ${String(err)}`)
        assert.ok(!isForeignKeyViolation(err))
        const row = await store.db.selectFrom('pcc_meta').select('value').where('key', '=', 'unique-probe').executeTakeFirstOrThrow()
        assert.equal(row.value, 'first')
      })

      it('surface a unique violation on a multi-column constraint', async () => {
        await store.db.insertInto('domains').values({ id: 'd-uniq', name: 'uniq', description: '', enabled: 1, options: '{}', extra: '{}', created_at: MS }).execute()
        const project = { domain_id: 'd-uniq', parent_id: null, name: 'same', description: '', enabled: 1, options: '{}', extra: '{}', created_at: MS }
        await store.db.insertInto('projects').values({ id: 'p-1', ...project }).execute()
        const err = await store.db.insertInto('projects').values({ id: 'p-2', ...project }).execute().then(() => undefined, (e: unknown) => e)
        assert.ok(isUniqueViolation(err), `not recognised as a unique violation: ${String(err)}`)
      })

      it('enforce foreign keys', async () => {
        const err = await store.db
          .insertInto('projects')
          .values({ id: 'p-orphan', domain_id: 'no-such-domain', parent_id: null, name: 'orphan', description: '', enabled: 1, options: '{}', extra: '{}', created_at: MS })
          .execute()
          .then(() => undefined, (e: unknown) => e)
        assert.ok(isForeignKeyViolation(err), `not recognised as a foreign key violation: ${String(err)}`)
        assert.ok(!isUniqueViolation(err))
      })

      it('lets a transaction go on after catching nothing but reports the violation to the caller', async () => {
        await assert.rejects(
          store.db.transaction().execute(async (tx) => {
            await tx.insertInto('pcc_meta').values({ key: 'tx-unique-a', value: '1' }).execute()
            await tx.insertInto('pcc_meta').values({ key: 'unique-probe', value: 'dup' }).execute()
          }),
          (err: unknown) => isUniqueViolation(err),
        )
        assert.equal(await store.db.selectFrom('pcc_meta').select('key').where('key', '=', 'tx-unique-a').executeTakeFirst(), undefined)
      })
    })

    describe('values', () => {
      it('round-trip epoch-millisecond integers as numbers', async () => {
        await store.db.insertInto('tasks').values(taskRow('ms-probe', { lease_expires_at: MS + 1, finished_at: null })).execute()
        const row = await store.db.selectFrom('tasks').selectAll().where('id', '=', 'ms-probe').executeTakeFirstOrThrow()
        assert.equal(row.created_at, MS)
        assert.equal(row.lease_expires_at, MS + 1)
        assert.equal(row.finished_at, null)
        assert.equal(row.attempts, 0)
        assert.equal(typeof row.created_at, 'number')
        const found = await store.db.selectFrom('tasks').select('id').where('created_at', '>', MS - 1).where('created_at', '<', MS + 1).execute()
        assert.deepEqual(found.map((r) => r.id), ['ms-probe'])
      })

      it('answer count(*), sum(), max() and min() as numbers', async () => {
        await store.db.insertInto('tasks').values(taskRow('ms-probe-2', { created_at: MS + 10 })).execute()
        const row = await store.db
          .selectFrom('tasks')
          .select((eb) => [
            eb.fn.countAll<number>().as('n'),
            eb.fn.sum<number>('created_at').as('total'),
            eb.fn.max('created_at').as('latest'),
            eb.fn.min('created_at').as('earliest'),
          ])
          .where('id', 'in', ['ms-probe', 'ms-probe-2'])
          .executeTakeFirstOrThrow()
        assert.deepEqual(row, { n: 2, total: 2 * MS + 10, latest: MS + 10, earliest: MS })
      })

      it('keep booleans as the integers 0 and 1, filterable by value', async () => {
        for (const [id, enabled] of [['d-on', 1], ['d-off', 0]] as const) {
          await store.db.insertInto('domains').values({ id, name: id, description: '', enabled, options: '{}', extra: '{}', created_at: MS }).execute()
        }
        const rows = await store.db.selectFrom('domains').select(['id', 'enabled']).where('id', 'in', ['d-on', 'd-off']).orderBy('id').execute()
        assert.deepEqual(rows, [{ id: 'd-off', enabled: 0 }, { id: 'd-on', enabled: 1 }])
        const on = await store.db.selectFrom('domains').select('id').where('enabled', '=', 1).where('id', 'in', ['d-on', 'd-off']).execute()
        assert.deepEqual(on, [{ id: 'd-on' }])
      })

      it('store JSON as text that comes back byte for byte', async () => {
        const value = { nested: { list: [1, 2.5, null, true], text: 'ünïcødé ✓ "quoted" \\ back\nslash' }, emoji: '🚀', empty: {} }
        const text = JSON.stringify(value)
        await store.db.insertInto('domains').values({ id: 'd-json', name: 'json', description: '', enabled: 1, options: text, extra: '{}', created_at: MS }).execute()
        const row = await store.db.selectFrom('domains').select('options').where('id', '=', 'd-json').executeTakeFirstOrThrow()
        assert.equal(typeof row.options, 'string')
        assert.equal(row.options, text)
        assert.deepEqual(JSON.parse(row.options), value)
      })

      it('keep NULL distinct from the empty string', async () => {
        await store.db.insertInto('tasks').values(taskRow('null-probe', { subject_id: '', last_error: null })).execute()
        const row = await store.db.selectFrom('tasks').select(['subject_id', 'last_error']).where('id', '=', 'null-probe').executeTakeFirstOrThrow()
        assert.deepEqual(row, { subject_id: '', last_error: null })
      })
    })

    describe('ordering', () => {
      it('orders text by code point, as SQLite does (upper case before lower case)', async () => {
        const names = ['b', 'B', 'a', 'A', '_', '1', 'ä', 'aa']
        for (const name of names) {
          await store.db.insertInto('regions').values({ id: `order-${name}`, description: name, parent_region_id: null }).execute()
        }
        const rows = await store.db.selectFrom('regions').select('description').where('id', 'like', 'order-%').orderBy('description').execute()
        assert.deepEqual(rows.map((r) => r.description), ['1', 'A', 'B', '_', 'a', 'aa', 'b', 'ä'])
      })

      it('orders numbers numerically with a stable tie-break, and pages with limit/offset and markers', async () => {
        for (let i = 0; i < 12; i++) {
          await store.db.insertInto('tasks').values(taskRow(`page-${String(i).padStart(2, '0')}`, { kind: 'paging', created_at: MS + (i % 4) * 1000 })).execute()
        }
        const all = await store.db.selectFrom('tasks').select(['id', 'created_at']).where('kind', '=', 'paging').orderBy('created_at', 'desc').orderBy('id').execute()
        assert.equal(all.length, 12)
        for (let i = 1; i < all.length; i++) {
          const [a, b] = [all[i - 1], all[i]]
          assert.ok(a.created_at > b.created_at || (a.created_at === b.created_at && a.id < b.id), `order broken at ${i}`)
        }
        const page2 = await store.db.selectFrom('tasks').select('id').where('kind', '=', 'paging').orderBy('created_at', 'desc').orderBy('id').limit(5).offset(5).execute()
        assert.deepEqual(page2.map((r) => r.id), all.slice(5, 10).map((r) => r.id))
        // Marker paging as the list APIs do it: rows strictly after the marker in (created_at desc, id asc).
        const marker = all[4]
        const after = await store.db
          .selectFrom('tasks')
          .select('id')
          .where('kind', '=', 'paging')
          .where((eb) => eb.or([eb('created_at', '<', marker.created_at), eb.and([eb('created_at', '=', marker.created_at), eb('id', '>', marker.id)])]))
          .orderBy('created_at', 'desc')
          .orderBy('id')
          .limit(5)
          .execute()
        assert.deepEqual(after.map((r) => r.id), all.slice(5, 10).map((r) => r.id))
      })
    })

    describe('statements compiled once (prepared)', () => {
      type Db = Store['db']
      const metaValue = prepared((db: Db, key: string) => db.selectFrom('pcc_meta').select('value').where('key', '=', key))
      // A constant the builder writes stays in every run, beside the call's value.
      const keptMeta = prepared((db: Db, key: string) => db.selectFrom('pcc_meta').select('key').where('key', '=', key).where('value', '=', 'kept'))

      it("run with each call's values, never an earlier call's", async () => {
        await store.db.insertInto('pcc_meta').values([{ key: 'prepared-a', value: 'A' }, { key: 'prepared-b', value: 'B' }]).execute()
        assert.deepEqual(await metaValue(store.db, 'prepared-a'), [{ value: 'A' }])
        assert.deepEqual(await metaValue(store.db, 'prepared-b'), [{ value: 'B' }])
        assert.deepEqual(await metaValue(store.db, 'prepared-none'), [])
        assert.deepEqual(await metaValue(store.db, 'prepared-a'), [{ value: 'A' }])
        // Concurrent calls do not share their values either.
        const both = await Promise.all([metaValue(store.db, 'prepared-b'), metaValue(store.db, 'prepared-a')])
        assert.deepEqual(both, [[{ value: 'B' }], [{ value: 'A' }]])
      })

      it("keep the builder's constants", async () => {
        await store.db.insertInto('pcc_meta').values({ key: 'prepared-c', value: 'not kept' }).execute()
        assert.deepEqual(await keptMeta(store.db, 'prepared-c'), [])
        await store.db.updateTable('pcc_meta').set({ value: 'kept' }).where('key', '=', 'prepared-c').execute()
        assert.deepEqual(await keptMeta(store.db, 'prepared-c'), [{ key: 'prepared-c' }])
      })

      it("run in a transaction on its connection: they see its writes, and not once it rolled back", async () => {
        await assert.rejects(
          store.db.transaction().execute(async (tx) => {
            await tx.insertInto('pcc_meta').values({ key: 'prepared-tx', value: 'T' }).execute()
            assert.deepEqual(await metaValue(tx, 'prepared-tx'), [{ value: 'T' }])
            throw new Error('roll back')
          }),
          /roll back/,
        )
        assert.deepEqual(await metaValue(store.db, 'prepared-tx'), [])
      })

      it('refuse a builder that uses a value other than as a parameter', async () => {
        const branching = prepared((db: Db, key: string) => db.selectFrom('pcc_meta').select('value').where('key', '=', typeof key === 'string' ? key : 'other'))
        await assert.rejects(branching(store.db, 'x'), /1 of its values are not parameters/)
      })
    })

    describe('health', () => {
      it('answers ping while open and reports no warnings on the test database', async () => {
        await store.ping()
        assert.deepEqual(store.warnings, [])
      })
    })
  })
}
