import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStore } from '../../src/server/storage/store.js'
import { storageConformance } from './conformance.js'

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
})
