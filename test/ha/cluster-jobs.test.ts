import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { createLogger } from '../../src/server/logger.js'
import { migrate } from '../../src/server/storage/migrations/index.js'
import { openStore, type Store } from '../../src/server/storage/store.js'
import { ClusterJobRunner } from '../../src/server/tasks/cluster-jobs.js'
import { freshDatabase } from '../../src/testkit/postgres.js'

const logger = createLogger('silent')

async function pgStores(n: number): Promise<{ url: string; stores: Store[] }> {
  const url = await freshDatabase()
  const stores: Store[] = []
  for (let i = 0; i < n; i++) stores.push(await openStore({ dataDir: tmpdir(), databaseUrl: url, poolSize: 3 }))
  await migrate(stores[0])
  return { url, stores }
}

async function jobRow(store: Store, name: string) {
  return store.db.selectFrom('cluster_jobs').selectAll().where('name', '=', name).executeTakeFirstOrThrow()
}

test('PostgreSQL, three runners: a 200 ms job runs about once per interval in total and never twice at once', async () => {
  const { stores } = await pgStores(3)
  const runs: { owner: string; start: number; end: number }[] = []
  let active = 0
  let maxActive = 0
  const runners = stores.map(
    (store, i) => new ClusterJobRunner(store, { logger, owner: `runner-${i}`, leaseMs: 1000 }),
  )
  for (const runner of runners) {
    runner.add({
      name: 'tick',
      intervalMs: 200,
      run: async () => {
        active++
        maxActive = Math.max(maxActive, active)
        const start = Date.now()
        await sleep(30)
        active--
        runs.push({ owner: runner.owner, start, end: Date.now() })
      },
    })
  }
  try {
    runners.forEach((r) => r.start())
    const windowMs = 3000
    await sleep(windowMs)
    await Promise.all(runners.map((r) => r.stop()))
    // ~15 runs in 3 s; allow for start-up and a loaded machine, but three runners running it each would give ~45.
    assert.ok(runs.length >= 7 && runs.length <= 17, `expected about 15 runs, got ${runs.length}`)
    assert.equal(maxActive, 1, 'the job ran concurrently')
    runs.sort((a, b) => a.start - b.start)
    for (let i = 1; i < runs.length; i++) {
      assert.ok(runs[i].start >= runs[i - 1].end, `run ${i} started before run ${i - 1} ended`)
      // Consecutive starts are an interval apart, give or take the database round trip that precedes each start
      // on a loaded machine; a second process running the same due job would start within milliseconds.
      assert.ok(runs[i].start - runs[i - 1].start >= 120, `runs ${i - 1} and ${i} started ${runs[i].start - runs[i - 1].start} ms apart`)
    }
    const row = await jobRow(stores[0], 'tick')
    assert.equal(row.runs, runs.length)
    assert.equal(row.lease_owner, null, 'stop hands the lease back')
  } finally {
    await Promise.all(runners.map((r) => r.stop()))
    await Promise.all(stores.map((s) => s.close()))
  }
})

test('PostgreSQL: when the process holding a job is SIGKILLed mid-run, the others take it over after its lease expires', async () => {
  const { url, stores } = await pgStores(2)
  await stores[0].db.schema.createTable('job_log').addColumn('owner', 'text').addColumn('started_at', 'bigint').execute()
  const dir = mkdtempSync(join(tmpdir(), 'pcc-cluster-job-'))
  const moduleUrl = (rel: string) => new URL(rel, import.meta.url).href
  const script = join(dir, 'holder.mjs')
  // A separate process that claims the job and then hangs inside it, holding the lease, until killed.
  writeFileSync(
    script,
    `import { openStore } from ${JSON.stringify(moduleUrl('../../src/server/storage/store.js'))}
import { createLogger } from ${JSON.stringify(moduleUrl('../../src/server/logger.js'))}
import { ClusterJobRunner } from ${JSON.stringify(moduleUrl('../../src/server/tasks/cluster-jobs.js'))}
const store = await openStore({ dataDir: ${JSON.stringify(dir)}, databaseUrl: process.env.DB_URL })
const runner = new ClusterJobRunner(store, { logger: createLogger('silent'), owner: 'doomed', leaseMs: 1000 })
runner.add({ name: 'tick', intervalMs: 200, run: async () => {
  await store.db.insertInto('job_log').values({ owner: 'doomed', started_at: Date.now() }).execute()
  await new Promise(() => {})
} })
runner.start()
`,
  )
  const child = spawn(process.execPath, [script], { env: { ...process.env, DB_URL: url }, stdio: ['ignore', 'ignore', 'pipe'], cwd: fileURLToPath(new URL('../../../', import.meta.url)) })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const runners: ClusterJobRunner[] = []
  try {
    const deadline = Date.now() + 15_000
    let doomedStart: number | undefined
    while (doomedStart === undefined && Date.now() < deadline) {
      const row = await stores[0].db.selectFrom('job_log' as never).select(['started_at' as never]).executeTakeFirst()
      if (row) doomedStart = Number((row as { started_at: number }).started_at)
      else await sleep(50)
    }
    assert.ok(doomedStart !== undefined, `the holder process never ran the job: ${stderr}`)
    // The survivors start while the doomed process still holds the job: they must wait for it.
    const survivorStarts: number[] = []
    for (const [i, store] of stores.entries()) {
      const runner = new ClusterJobRunner(store, { logger, owner: `survivor-${i}`, leaseMs: 1000 })
      runner.add({ name: 'tick', intervalMs: 200, run: async () => void survivorStarts.push(Date.now()) })
      runner.start()
      runners.push(runner)
    }
    await sleep(300)
    assert.equal(survivorStarts.length, 0, 'a survivor ran the job while its holder was alive and heartbeating')
    const killedAt = Date.now()
    child.kill('SIGKILL')
    await sleep(2500)
    assert.ok(survivorStarts.length >= 3, `the survivors ran the job ${survivorStarts.length} times after the holder died`)
    // Not before the dead holder's lease (1 s, renewed every ~333 ms) could have expired.
    assert.ok(survivorStarts[0] >= killedAt + 300, `taken over ${survivorStarts[0] - killedAt} ms after the kill`)
    assert.ok(survivorStarts[0] <= killedAt + 1800, `taken over only ${survivorStarts[0] - killedAt} ms after the kill`)
    const row = await jobRow(stores[0], 'tick')
    assert.ok(row.lease_owner === null || row.lease_owner.startsWith('survivor-'))
  } finally {
    child.kill('SIGKILL')
    await Promise.all(runners.map((r) => r.stop()))
    await Promise.all(stores.map((s) => s.close()))
    rmSync(dir, { recursive: true, force: true })
  }
})

test('SQLite, one process: a failing job is logged and recorded, and the loop keeps running it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pcc-cluster-job-'))
  const store = await openStore({ dataDir: dir, databaseUrl: '' })
  await migrate(store)
  const errors: string[] = []
  const capture = createLogger('error', {
    write: (line: string) => {
      errors.push(line)
      return true
    },
  } as unknown as NodeJS.WritableStream)
  const runner = new ClusterJobRunner(store, { logger: capture, leaseMs: 1000 })
  let calls = 0
  runner.add({
    name: 'flaky',
    intervalMs: 100,
    run: async () => {
      calls++
      if (calls % 2 === 1) throw new Error(`boom ${calls}`)
    },
  })
  try {
    runner.start()
    await sleep(800)
    assert.ok(calls >= 4, `the job ran ${calls} times`)
    assert.ok(errors.some((l) => l.includes('cluster job failed') && l.includes('boom')), 'the failure was logged')
    const row = await jobRow(store, 'flaky')
    assert.ok(row.runs >= 3)
    await runner.stop()
    const after = calls
    await sleep(300)
    assert.equal(calls, after, 'the job ran after stop')
    assert.throws(() => runner.add({ name: 'flaky', intervalMs: 100, run: async () => {} }), /already registered/)
  } finally {
    await runner.stop()
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('SQLite: stop aborts a running job and hands its lease back so the next process need not wait', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pcc-cluster-job-'))
  const store = await openStore({ dataDir: dir, databaseUrl: '' })
  await migrate(store)
  const runner = new ClusterJobRunner(store, { logger, owner: 'stopping', leaseMs: 60_000 })
  let aborted = false
  runner.add({
    name: 'long',
    intervalMs: 50,
    run: (signal) =>
      new Promise<void>((resolve) => {
        signal.addEventListener('abort', () => {
          aborted = true
          resolve()
        })
      }),
  })
  try {
    runner.start()
    const deadline = Date.now() + 5000
    while ((await jobRow(store, 'long').catch(() => undefined))?.lease_owner !== 'stopping' && Date.now() < deadline) await sleep(20)
    assert.equal((await jobRow(store, 'long')).lease_owner, 'stopping')
    await runner.stop()
    assert.ok(aborted, 'the running job saw its signal aborted')
    const row = await jobRow(store, 'long')
    assert.equal(row.lease_owner, null)
    assert.equal(row.lease_expires_at, null)
  } finally {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
