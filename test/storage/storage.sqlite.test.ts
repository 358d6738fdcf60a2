import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { openStore } from '../../src/server/storage/store.js'
import { CHECKPOINT_INTERVAL_MS } from '../../src/server/storage/sqlite-checkpointer.js'
import { storageConformance } from './conformance.js'
import { isDataException } from '../../src/server/storage/errors.js'

storageConformance('sqlite')

describe('SQLite store specifics', () => {
  it('keeps its file in the data dir in WAL mode', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcc-sqlite-'))
    try {
      const store = await openStore({ dataDir: dir, databaseUrl: '' })
      await store.db.schema.createTable('probe').addColumn('x', 'integer').execute()
      await store.close()
      // The header of a WAL-mode database has file format version 2 at bytes 18 and 19.
      const header = readFileSync(join(dir, 'pcc.sqlite')).subarray(0, 20)
      assert.equal(header.subarray(0, 15).toString(), 'SQLite format 3')
      assert.deepEqual([header[18], header[19]], [2, 2])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('checkpoints the WAL in the background, so it is reused instead of growing with every write', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcc-sqlite-'))
    try {
      const store = await openStore({ dataDir: dir, databaseUrl: '' })
      await store.db.schema.createTable('probe').addColumn('x', 'text').execute()
      const wal = join(dir, 'pcc.sqlite-wal')
      // Each round writes about 2 MiB (more than SQLite's own 1,000-page threshold, which is off on the main
      // connection); between rounds the worker checkpoints, and the next round writes the WAL from its start.
      const round = async () => {
        for (let i = 0; i < 20; i++) await sql`INSERT INTO probe (x) VALUES (${'x'.repeat(100_000)})`.execute(store.db)
      }
      await round()
      const afterOne = statSync(wal).size
      for (let r = 0; r < 4; r++) {
        await new Promise((resolve) => setTimeout(resolve, CHECKPOINT_INTERVAL_MS * 3))
        await round()
      }
      assert.ok(statSync(wal).size < afterOne * 2, `the WAL grew from ${afterOne} to ${statSync(wal).size} bytes over five rounds`)
      const rows = await sql<{ n: number }>`SELECT count(*) AS n FROM probe`.execute(store.db)
      assert.equal(rows.rows[0].n, 100)
      await store.close()
      // The last connection to close checkpoints everything and removes the WAL.
      assert.equal(existsSync(wal), false)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("names SQLite's result codes as the repositories match them", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcc-sqlite-'))
    try {
      const store = await openStore({ dataDir: dir, databaseUrl: '' })
      await sql`CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT UNIQUE)`.execute(store.db)
      await sql`CREATE TABLE child (parent_id INTEGER NOT NULL REFERENCES parent (id))`.execute(store.db)
      await sql`INSERT INTO parent (id, name) VALUES (1, 'a')`.execute(store.db)
      const codeOf = async (query: ReturnType<typeof sql>) => {
        const err = (await query.execute(store.db).then(() => undefined, (e: unknown) => e)) as { code?: string } | undefined
        return err?.code
      }
      assert.equal(await codeOf(sql`INSERT INTO parent (id, name) VALUES (2, 'a')`), 'SQLITE_CONSTRAINT_UNIQUE')
      assert.equal(await codeOf(sql`INSERT INTO parent (id, name) VALUES (1, 'b')`), 'SQLITE_CONSTRAINT_PRIMARYKEY')
      assert.equal(await codeOf(sql`INSERT INTO child (parent_id) VALUES (9)`), 'SQLITE_CONSTRAINT_FOREIGNKEY')
      assert.equal(await codeOf(sql`INSERT INTO child (parent_id) VALUES (NULL)`), 'SQLITE_CONSTRAINT_NOTNULL')
      // A value the column cannot hold is the caller's fault (400), not the server's.
      const mismatch = await sql`INSERT INTO parent (id, name) VALUES ('x', 'c')`.execute(store.db).then(() => undefined, (e: unknown) => e)
      assert.equal((mismatch as { code?: string }).code, 'SQLITE_MISMATCH')
      assert.ok(isDataException(mismatch))
      await store.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
