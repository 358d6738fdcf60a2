/**
 * Several worker processes on one PostgreSQL (test/fixtures/task-worker.ts: the real queue and runner): no
 * task runs twice, and a task whose process dies is finished by another process, or by the same one restarted,
 * once its lease has expired.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { sql } from 'kysely'
import { SqlTaskQueue } from '../../src/server/tasks/sql-queue.js'
import { openTestStore, type TestStore } from '../../src/testkit/store.js'

const WORKER = fileURLToPath(new URL('../fixtures/task-worker.js', import.meta.url))

interface Run {
  task_id: string
  worker: string
  pid: number
  attempt: number
  started_at: number
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

describe('task queue across processes (postgres)', () => {
  let t: TestStore
  let queue: SqlTaskQueue
  const children = new Set<ChildProcess>()

  async function startWorker(name: string, leaseMs: number, concurrency = 8): Promise<ChildProcess> {
    const child = spawn(process.execPath, [WORKER, t.databaseUrl, name, String(leaseMs), String(concurrency)], { stdio: ['ignore', 'pipe', 'inherit'] })
    children.add(child)
    child.on('exit', () => children.delete(child))
    await new Promise<void>((resolve, reject) => {
      child.stdout!.once('data', () => resolve())
      child.once('exit', (code) => reject(new Error(`worker ${name} exited with ${code} before it was ready`)))
    })
    return child
  }

  function stopWorker(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
    return new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode)
      child.once('exit', (code) => resolve(code))
      child.kill(signal)
    })
  }

  const runs = async (taskId?: string) =>
    (await sql<Run>`SELECT task_id, worker, pid, attempt, started_at FROM task_runs ${taskId ? sql`WHERE task_id = ${taskId}` : sql``} ORDER BY started_at`.execute(t.store.db)).rows

  before(async () => {
    t = await openTestStore('postgres')
    queue = new SqlTaskQueue(t.store, { leaseMs: 30_000 })
    await sql`CREATE TABLE task_runs (task_id text NOT NULL, worker text NOT NULL, pid integer NOT NULL, attempt integer NOT NULL, started_at bigint NOT NULL)`.execute(t.store.db)
  })
  after(async () => {
    for (const child of children) child.kill('SIGKILL')
    await t.close()
  })

  it('two worker processes run each of 500 tasks exactly once', async () => {
    const ids: string[] = []
    await t.store.db.transaction().execute(async (tx) => {
      for (let i = 0; i < 250; i++) ids.push((await queue.enqueue({ kind: 'probe', payload: { sleepMs: i % 3 } }, tx)).id)
    })
    const workers = await Promise.all([startWorker('alpha', 30_000), startWorker('beta', 30_000)])
    // The other half arrives while both are claiming.
    for (let i = 0; i < 250; i++) ids.push((await queue.enqueue({ kind: 'probe', payload: { sleepMs: i % 3 } })).id)
    await until('all 500 tasks done', async () => (await t.store.db.selectFrom('tasks').select('id').where('kind', '=', 'probe').where('status', '=', 'done').execute()).length === 500)
    for (const w of workers) assert.equal(await stopWorker(w, 'SIGTERM'), 0)

    const all = await runs()
    const perTask = new Map<string, Run[]>()
    for (const run of all) perTask.set(run.task_id, [...(perTask.get(run.task_id) ?? []), run])
    const twice = [...perTask.entries()].filter(([, r]) => r.length > 1)
    assert.deepEqual(twice, [], 'tasks executed more than once')
    assert.deepEqual([...perTask.keys()].sort(), [...ids].sort())
    const byWorker = new Map<string, number>()
    for (const run of all) byWorker.set(run.worker, (byWorker.get(run.worker) ?? 0) + 1)
    assert.ok((byWorker.get('alpha') ?? 0) > 0 && (byWorker.get('beta') ?? 0) > 0, `both processes took part: ${JSON.stringify([...byWorker])}`)
    const attempts = await t.store.db.selectFrom('tasks').select('attempts').where('kind', '=', 'probe').where('attempts', '!=', 1).execute()
    assert.deepEqual(attempts, [], 'every task was claimed once')
    await sql`DELETE FROM task_runs`.execute(t.store.db)
  })

  async function killMidRun(leaseMs: number) {
    const doomed = await startWorker('doomed', leaseMs)
    const task = await queue.enqueue({ kind: 'probe', payload: { firstAttemptSleepMs: 120_000 } })
    await until('the task started', async () => (await runs(task.id)).length === 1)
    await stopWorker(doomed, 'SIGKILL')
    const row = await queue.get(task.id)
    assert.equal(row?.status, 'running', 'the killed process still holds the task')
    return { task, leaseExpiresAt: row!.leaseExpiresAt! }
  }

  it('finishes the task of a SIGKILLed process in another process once the lease expires', async () => {
    const leaseMs = 1500
    const { task, leaseExpiresAt } = await killMidRun(leaseMs)
    await startWorker('rescuer', leaseMs)
    await until('the task is done', async () => (await queue.get(task.id))?.status === 'done', 20_000)
    const [first, second, ...more] = await runs(task.id)
    assert.deepEqual(more, [])
    assert.equal(first.worker, 'doomed')
    assert.equal(second.worker, 'rescuer')
    assert.equal(second.attempt, 2)
    assert.ok(second.started_at >= leaseExpiresAt, `taken over ${leaseExpiresAt - second.started_at} ms before the lease expired`)
    assert.equal((await queue.get(task.id))?.attempts, 2)
    for (const child of [...children]) await stopWorker(child, 'SIGTERM')
  })

  it('finishes the task of a SIGKILLed process in the same worker restarted', async () => {
    const leaseMs = 1500
    const { task, leaseExpiresAt } = await killMidRun(leaseMs)
    const restarted = await startWorker('doomed', leaseMs)
    await until('the task is done', async () => (await queue.get(task.id))?.status === 'done', 20_000)
    const [first, second, ...more] = await runs(task.id)
    assert.deepEqual(more, [])
    assert.equal(first.worker, 'doomed')
    assert.equal(second.worker, 'doomed')
    assert.notEqual(second.pid, first.pid)
    assert.ok(second.started_at >= leaseExpiresAt)
    assert.equal(await stopWorker(restarted, 'SIGTERM'), 0)
  })

  it('hands a task back at once when its process stops gracefully (SIGTERM), without using up an attempt', async () => {
    const leaseMs = 60_000
    const leaving = await startWorker('leaving', leaseMs)
    const task = await queue.enqueue({ kind: 'probe', payload: { sleepIn: { worker: 'leaving', ms: 120_000 } } })
    await until('the task started', async () => (await runs(task.id)).length === 1)
    assert.equal(await stopWorker(leaving, 'SIGTERM'), 0)
    const released = await queue.get(task.id)
    assert.equal(released?.status, 'queued')
    assert.equal(released?.leaseOwner, null)
    assert.equal(released?.attempts, 0)
    // Well within the 60 s lease: another process takes it over without waiting.
    const started = Date.now()
    const next = await startWorker('next', leaseMs)
    await until('the task is done', async () => (await queue.get(task.id))?.status === 'done', 10_000)
    assert.ok(Date.now() - started < 10_000)
    assert.equal((await runs(task.id)).at(-1)?.worker, 'next')
    assert.equal(await stopWorker(next, 'SIGTERM'), 0)
  })
})
