/**
 * Statements prepared with `keepWhileUnchanged` (storage/prepared.ts) answer from what they read last while the
 * SQLite database has had no commit (storage/sqlite-change-watch.ts), and read again after any: one made through
 * the same store, through another connection, or by another process. Inside a transaction they always read, so a
 * transaction sees its own writes; what they keep is frozen, since every caller shares it.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { sql, type Kysely } from 'kysely'
import { DatabaseSync } from '@photostructure/sqlite'
import { openStore, type Store } from '../../src/server/storage/store.js'
import { prepared } from '../../src/server/storage/prepared.js'
import { SqliteChangeWatch } from '../../src/server/storage/sqlite-change-watch.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a table of the test's own, outside the schema
type AnyDb = Kysely<any>

const valueOf = prepared((db: AnyDb, id: string) => db.selectFrom('kept_test').select(['id', 'v']).where('id', '=', id), { keepWhileUnchanged: true })

describe('answers kept while the SQLite database is unchanged', () => {
  let dir: string
  let store: Store
  let db: AnyDb
  let statements = 0
  const file = () => join(dir, 'pcc.sqlite')

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pcc-kept-'))
    store = await openStore({ dataDir: dir, databaseUrl: '' })
    db = store.db as unknown as AnyDb
    await sql`CREATE TABLE kept_test (id text PRIMARY KEY, v integer NOT NULL)`.execute(db)
    await sql`INSERT INTO kept_test VALUES ('a', 1), ('b', 10)`.execute(db)
    // Counts the statements that reach the database.
    const execute = db.executeQuery.bind(db)
    db.executeQuery = ((query: Parameters<typeof execute>[0]) => {
      statements++
      return execute(query)
    }) as typeof db.executeQuery
  })
  after(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const read = async (id: string) => {
    const before = statements
    const rows = await valueOf(db, id)
    return { v: rows[0]?.v as number | undefined, ran: statements > before, rows }
  }

  it('reads once, then answers without a statement until a commit of this store', async () => {
    assert.deepEqual(await read('a').then(({ v, ran }) => ({ v, ran })), { v: 1, ran: true })
    assert.deepEqual(await read('a').then(({ v, ran }) => ({ v, ran })), { v: 1, ran: false })
    // Each set of values has its own answer.
    assert.deepEqual(await read('b').then(({ v, ran }) => ({ v, ran })), { v: 10, ran: true })
    await db.updateTable('kept_test').set({ v: 2 }).where('id', '=', 'a').execute()
    assert.deepEqual(await read('a').then(({ v, ran }) => ({ v, ran })), { v: 2, ran: true })
    // A commit that touches another row still reads again: the watch knows commits, not rows.
    await db.updateTable('kept_test').set({ v: 11 }).where('id', '=', 'b').execute()
    assert.deepEqual(await read('a').then(({ v, ran }) => ({ v, ran })), { v: 2, ran: true })
  })

  it('reads again after a commit through another connection and by another process', async () => {
    await read('a')
    assert.equal((await read('a')).ran, false)
    const other = new DatabaseSync(file())
    try {
      other.prepare("UPDATE kept_test SET v = 3 WHERE id = 'a'").run()
    } finally {
      other.close()
    }
    assert.deepEqual(await read('a').then(({ v, ran }) => ({ v, ran })), { v: 3, ran: true })
    assert.equal((await read('a')).ran, false)
    const binding = createRequire(import.meta.url).resolve('@photostructure/sqlite')
    const script = `const { DatabaseSync } = require(${JSON.stringify(binding)}); const d = new DatabaseSync(process.argv[1]); d.exec('PRAGMA busy_timeout = 5000'); d.prepare("UPDATE kept_test SET v = 4 WHERE id = 'a'").run(); d.close()`
    execFileSync(process.execPath, ['-e', script, file()])
    assert.deepEqual(await read('a').then(({ v, ran }) => ({ v, ran })), { v: 4, ran: true })
  })

  it('always reads inside a transaction, which sees its own writes; a rollback leaves the kept answer true', async () => {
    await read('a')
    await assert.rejects(
      db.transaction().execute(async (tx) => {
        await tx.updateTable('kept_test').set({ v: 99 }).where('id', '=', 'a').execute()
        assert.equal((await valueOf(tx, 'a'))[0].v, 99)
        throw new Error('roll back')
      }),
      /roll back/,
    )
    assert.equal((await read('a')).v, 4)
  })

  it('shares what it keeps frozen, so no caller can change another caller’s answer', async () => {
    const { rows } = await read('a')
    assert.ok(Object.isFrozen(rows) && Object.isFrozen(rows[0]))
    assert.throws(() => {
      ;(rows[0] as { v: number }).v = 5
    }, TypeError)
    assert.equal((await read('a')).v, 4)
  })
})

describe('SQLite change watch', () => {
  it('gives one generation while nothing commits and a new one after each commit', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcc-watch-'))
    const db = new DatabaseSync(join(dir, 'w.sqlite'))
    const watch = new SqliteChangeWatch(join(dir, 'w.sqlite-shm'))
    try {
      db.exec('PRAGMA journal_mode = WAL')
      db.exec('CREATE TABLE t (v integer)')
      const first = watch.generation()
      db.prepare('SELECT count(*) FROM t').get()
      assert.equal(watch.generation(), first, 'a read is no commit')
      db.exec('INSERT INTO t VALUES (1)')
      const second = watch.generation()
      assert.notEqual(second, first)
      assert.equal(watch.generation(), second)
      db.exec('BEGIN; INSERT INTO t VALUES (2); INSERT INTO t VALUES (3); COMMIT')
      assert.notEqual(watch.generation(), second)
    } finally {
      watch.close()
      db.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('gives a new generation on every call when it cannot read the header', () => {
    const watch = new SqliteChangeWatch(join(tmpdir(), 'pcc-no-such-database.sqlite-shm'))
    const first = watch.generation()
    assert.notEqual(watch.generation(), first)
  })
})
