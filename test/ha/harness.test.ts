import { test } from 'node:test'
import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'
import { openStore } from '../../src/server/storage/store.js'
import { MIGRATIONS } from '../../src/server/storage/migrations/index.js'
import { startCluster } from '../../src/testkit/cluster.js'

test('three processes started at once on a fresh database: migrations and bootstrap run once, all ready; a killed one restarts', async () => {
  const cluster = await startCluster({ size: 3, env: { PCC_SIMULATED_HOSTS: '0' } })
  const store = await openStore({ dataDir: tmpdir(), databaseUrl: cluster.databaseUrl, poolSize: 1 })
  try {
    for (const node of cluster.nodes) assert.equal((await fetch(`${node.url}/readyz`)).status, 200)
    const applied = await store.db.selectFrom('pcc_migrations').select('id').execute()
    assert.deepEqual(applied.map((m) => m.id).sort(), MIGRATIONS.map((m) => m.id).sort())
    const admins = await store.db.selectFrom('users').select('id').where('name', '=', 'admin').execute()
    assert.equal(admins.length, 1)
    const projects = await store.db.selectFrom('projects').select('id').where('name', '=', 'admin').execute()
    assert.equal(projects.length, 1)
    // Each process first looks at its jobs after a random delay of up to 2 s; then the purge has one row, not three.
    let purgeRows: unknown[] = []
    for (let waited = 0; purgeRows.length === 0 && waited < 15_000; waited += 200) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      purgeRows = await store.db.selectFrom('cluster_jobs').select('name').where('name', '=', 'purge').execute()
    }
    assert.equal(purgeRows.length, 1)

    await cluster.kill(2)
    assert.equal(cluster.nodes[2].alive, false)
    await assert.rejects(fetch(`${cluster.nodes[2].url}/readyz`))
    for (const node of cluster.nodes.slice(0, 2)) assert.equal((await fetch(`${node.url}/readyz`)).status, 200)
    await cluster.restart(2)
    assert.equal((await fetch(`${cluster.nodes[2].url}/readyz`)).status, 200)
  } finally {
    await store.close()
    await cluster.close()
  }
})
