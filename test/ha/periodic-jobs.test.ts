/** Periodic jobs of a real cluster run once per interval across the processes, not once per process. */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { freshDatabase } from '../../src/testkit/postgres.js'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'

test('postgres, three processes: the purge and reconciliation jobs run about once per interval in total', async () => {
  const databaseUrl = await freshDatabase()
  const env = { PCC_MASTER_KEY: randomBytes(32).toString('base64'), PCC_PURGE_INTERVAL_SECONDS: '1', PCC_RECONCILE_SECONDS: '1', PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0' }
  const servers: TestServer[] = []
  try {
    for (let i = 0; i < 3; i++) servers.push(await startTestServer({ dialect: 'postgres', databaseUrl, env }))
    const db = servers[0].deps.store.db
    const before = await db.selectFrom('cluster_jobs').select(['name', 'runs']).execute()
    const windowMs = 4000
    await sleep(windowMs)
    const after = await db.selectFrom('cluster_jobs').select(['name', 'runs', 'last_error']).execute()
    for (const name of ['purge', 'reconcile']) {
      const runs = after.find((j) => j.name === name)!.runs - (before.find((j) => j.name === name)?.runs ?? 0)
      // Once per second in total: ~4; once per process would be ~12.
      assert.ok(runs >= 2 && runs <= 6, `${name} ran ${runs} times in ${windowMs} ms across three processes`)
      assert.equal(after.find((j) => j.name === name)!.last_error, null)
    }
  } finally {
    for (const s of servers) await s.close()
  }
})
