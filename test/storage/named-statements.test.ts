/**
 * On PostgreSQL the statements compiled once (storage/prepared.ts) run as named prepared statements, which a
 * connection parses and plans once. A kept plan of a `SELECT *` would fail once another process adds a column
 * ("cached plan must not change result type"), inside a transaction beyond retrying: those run unnamed, so reads
 * and writes still answer after the schema grows under them.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { client, projectMember, type Client } from '../network/helpers.js'
import { preparedShapes, statementName } from '../../src/server/storage/prepared.js'
import type { Db } from '../../src/server/storage/store.js'

describe('named statements on PostgreSQL', { timeout: 120_000 }, () => {
  let server: TestServer
  let a: Client
  before(async () => {
    server = await startTestServer({ dialect: 'postgres' })
    a = client(server, await projectMember(server, 'alice'))
  })
  after(() => server.close())

  it('leave out SELECT *, so reads survive a column added under them', async () => {
    const db = server.deps.store.db
    const net = await a.create('networks', 'network', { name: 'named' })
    // Renamed between reads, so each show renders again and reads the whole row (a prepared SELECT *).
    for (let i = 0; i < 6; i++) {
      assert.equal((await a.put(`/v2.0/networks/${net.id}`, { network: { name: `named-${i}` } })).status, 200)
      assert.equal((await a.get<{ network: { name: string } }>(`/v2.0/networks/${net.id}`)).body.network.name, `named-${i}`)
    }
    await sql`ALTER TABLE networks ADD COLUMN named_test integer`.execute(db)
    try {
      for (let i = 0; i < 6; i++) {
        assert.equal((await a.put(`/v2.0/networks/${net.id}`, { network: { name: `after-${i}` } })).status, 200)
        const shown = await a.get<{ network: { name: string } }>(`/v2.0/networks/${net.id}`)
        assert.equal(shown.status, 200, JSON.stringify(shown.body))
        assert.equal(shown.body.network.name, `after-${i}`)
      }
    } finally {
      await sql`ALTER TABLE networks DROP COLUMN named_test`.execute(db)
    }
  })

  it('give one name to one text, whichever shape compiled it, and different names to different texts', async () => {
    const db = server.deps.store.db
    const statement = preparedShapes<Db, { id: string }>()
    const byName = (marks: unknown[]) => db.selectFrom('networks').select('id').where('name', '=', marks[0] as string)
    const byProject = (marks: unknown[]) => db.selectFrom('networks').select('id').where('project_id', '=', marks[0] as string)
    // Another shape compiling to the same text, compiled between the two: it must not take over a name.
    await statement(db, 'name', ['x'], byName)
    await statement(db, 'name-again', ['y'], byName)
    await statement(db, 'project', ['z'], byProject)
    const nameSql = byName(['?']).compile().sql.replace('?', '$1')
    const projectSql = byProject(['?']).compile().sql.replace('?', '$1')
    assert.ok(statementName(nameSql))
    assert.ok(statementName(projectSql))
    assert.notEqual(statementName(nameSql), statementName(projectSql))
    // Each runs again under its name on every connection of the pool.
    for (let i = 0; i < 20; i++) {
      await Promise.all([statement(db, 'name', [`n${i}`], byName), statement(db, 'name-again', [`m${i}`], byName), statement(db, 'project', [`p${i}`], byProject)])
    }
  })
})
