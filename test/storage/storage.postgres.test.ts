import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { sql } from 'kysely'
import pg from 'pg'
import { MIGRATIONS } from '../../src/server/storage/migrations/index.js'
import { openStore } from '../../src/server/storage/store.js'
import { freshDatabase } from '../../src/testkit/postgres.js'
import { TcpRelay } from '../../src/testkit/tcp-relay.js'
import { storageConformance } from './conformance.js'

storageConformance('postgres')

const CHILD = fileURLToPath(new URL('../fixtures/migrate-child.js', import.meta.url))

function runChild(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d))
    child.stderr.on('data', (d: Buffer) => (stderr += d))
    child.on('exit', (code) => resolve({ code, stdout, stderr }))
  })
}

async function query<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<T>(text)).rows
  } finally {
    await client.end()
  }
}

describe('PostgreSQL store specifics', () => {
  it('applies each migration exactly once when three processes migrate one database at the same moment', async () => {
    const url = await freshDatabase()
    const startAt = String(Date.now() + 1500)
    const results = await Promise.all([1, 2, 3].map(() => runChild([url, startAt, 'probe'])))
    for (const r of results) assert.equal(r.code, 0, `a migrating process failed: ${r.stderr}`)
    const reports = results.map((r) => JSON.parse(r.stdout) as { pid: number; applied: string[]; alreadyApplied: number })
    const all = [...MIGRATIONS.map((m) => `${m.id}-${m.name}`), '9999-probe']
    // One process applied everything; the others waited on the lock and found nothing left to do.
    assert.deepEqual(reports.map((r) => r.applied.length).sort(), [0, 0, all.length])
    assert.deepEqual(reports.find((r) => r.applied.length > 0)!.applied, all)
    const probe = await query<{ pid: number }>(url, 'SELECT pid FROM migration_probe')
    assert.equal(probe.length, 1, 'the probe migration ran more than once')
    assert.equal(probe[0].pid, reports.find((r) => r.applied.length > 0)!.pid)
    const recorded = await query<{ id: string }>(url, 'SELECT id FROM pcc_migrations ORDER BY id')
    assert.deepEqual(recorded.map((r) => r.id), [...MIGRATIONS.map((m) => m.id), '9999'])
  })

  it('fails to open with a message naming the server (password hidden) when PostgreSQL is unreachable', async () => {
    await assert.rejects(openStore({ dataDir: '/nonexistent', databaseUrl: 'postgres://pcc:s3cret-pw@127.0.0.1:1/pcc' }), (err: Error) => {
      assert.equal(err.name, 'StoreOpenError')
      assert.match(err.message, /cannot reach the PostgreSQL database postgres:\/\/pcc:\*\*\*@127\.0\.0\.1:1\/pcc/)
      assert.doesNotMatch(err.message, /s3cret-pw/)
      return true
    })
  })

  it('warns when the database collation orders text unlike SQLite', async () => {
    const url = new URL(await freshDatabase())
    const name = `pcc_coll_${Date.now()}`
    await query(url.toString(), `CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`)
    url.pathname = `/${name}`
    const store = await openStore({ dataDir: '/nonexistent', databaseUrl: url.toString() })
    try {
      assert.match(store.warnings.join('\n'), /does not sort text by code point/)
    } finally {
      await store.close()
    }
  })

  it('survives the database connection dropping in the middle of a query: the query fails, the next one reconnects', async () => {
    const database = new URL(await freshDatabase())
    const relay = new TcpRelay({ host: database.hostname, port: Number(database.port) })
    await relay.open()
    const throughRelay = new URL(database)
    throughRelay.port = String(relay.port)
    const store = await openStore({ dataDir: '/nonexistent', databaseUrl: throughRelay.toString() })
    // A connection that errors while checked out must not become an uncaught exception: it would end pcc-server.
    const uncaught: unknown[] = []
    const monitor = (err: unknown) => uncaught.push(err)
    process.on('uncaughtExceptionMonitor', monitor)
    try {
      const slow = sql`SELECT pg_sleep(5)`.execute(store.db)
      await sleep(200)
      relay.cut()
      await assert.rejects(slow, /Connection terminated unexpectedly/)
      await sleep(100)
      assert.deepEqual(uncaught, [])
      relay.restore()
      const { rows } = await sql<{ one: number }>`SELECT 1 AS one`.execute(store.db)
      assert.deepEqual(rows, [{ one: 1 }])
    } finally {
      process.off('uncaughtExceptionMonitor', monitor)
      await store.close()
      await relay.close()
    }
  })
})
