/**
 * The task queue's guarantees (tasks/queue.ts), checked on both dialects: the queue with a controlled clock,
 * then the runner with real time.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { retryDelayMs, type TaskRecord } from '../../src/server/tasks/queue.js'
import { PermanentTaskError, TaskRunner, type TaskContext, type TaskHandler } from '../../src/server/tasks/runner.js'
import { SqlTaskQueue } from '../../src/server/tasks/sql-queue.js'
import { createLogger } from '../../src/server/logger.js'
import { DIALECTS } from '../../src/testkit/harness.js'
import { openTestStore, type TestStore } from '../../src/testkit/store.js'

const LEASE = 30_000
const T0 = 1_763_000_000_000
const silent = createLogger('silent')

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

for (const dialect of DIALECTS) {
  describe(`task queue (${dialect})`, () => {
    let t: TestStore
    let clock = T0
    let queue: SqlTaskQueue
    /** A fresh kind per test, so claims in one test never see another test's tasks. */
    let n = 0
    const kind = () => `kind-${++n}`
    before(async () => {
      t = await openTestStore(dialect)
      queue = new SqlTaskQueue(t.store, { leaseMs: LEASE, now: () => clock })
    })
    after(() => t.close())

    it('enqueues inside the caller transaction: a rollback leaves neither the row nor the task', async () => {
      const k = kind()
      await assert.rejects(
        t.store.db.transaction().execute(async (tx) => {
          await tx.insertInto('pcc_meta').values({ key: 'subject-rolled-back', value: 'x' }).execute()
          await queue.enqueue({ kind: k, payload: { n: 1 }, subjectId: 'subject-rolled-back' }, tx)
          throw new Error('abort')
        }),
        /abort/,
      )
      assert.deepEqual(await t.store.db.selectFrom('tasks').select('id').where('kind', '=', k).execute(), [])
      assert.deepEqual(await queue.claim('w1', 10, [k]), [])
      await t.store.db.transaction().execute(async (tx) => {
        await tx.insertInto('pcc_meta').values({ key: 'subject-committed', value: 'x' }).execute()
        await queue.enqueue({ kind: k, payload: { n: 2 }, subjectId: 'subject-committed' }, tx)
      })
      const claimed = await queue.claim('w1', 10, [k])
      assert.equal(claimed.length, 1)
      assert.deepEqual(claimed[0].payload, { n: 2 })
      assert.equal(claimed[0].subjectId, 'subject-committed')
    })

    it('returns the first task for a repeated idempotency key, also when enqueues race', async () => {
      const k = kind()
      const first = await queue.enqueue({ kind: k, payload: { v: 1 }, idempotencyKey: `${k}-key` })
      const again = await queue.enqueue({ kind: k, payload: { v: 2 }, idempotencyKey: `${k}-key` })
      assert.equal(again.id, first.id)
      assert.deepEqual(again.payload, { v: 1 })
      const other = await t.reopen()
      const otherQueue = new SqlTaskQueue(other, { leaseMs: LEASE, now: () => clock })
      const racing = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 ? queue : otherQueue).enqueue({ kind: k, payload: { i }, idempotencyKey: `${k}-race` })),
      )
      assert.equal(new Set(racing.map((r) => r.id)).size, 1)
      const rows = await t.store.db.selectFrom('tasks').select('id').where('kind', '=', k).execute()
      assert.equal(rows.length, 2)
    })

    it('claims due tasks oldest first, up to the limit, only of the kinds asked for', async () => {
      const k = kind()
      const other = kind()
      const late = await queue.enqueue({ kind: k, payload: 'late', runAfter: T0 + 2 })
      const early = await queue.enqueue({ kind: k, payload: 'early', runAfter: T0 + 1 })
      const future = await queue.enqueue({ kind: k, payload: 'future', runAfter: clock + 60_000 })
      await queue.enqueue({ kind: other, payload: 'other kind' })
      clock += 10
      assert.deepEqual(await queue.claim('w1', 5, []), [], 'no kinds: nothing')
      const batch = await queue.claim('w1', 1, [k])
      assert.deepEqual(batch.map((x) => x.id), [early.id])
      const rest = await queue.claim('w1', 5, [k])
      assert.deepEqual(rest.map((x) => x.id), [late.id], 'the future task is not due')
      const claimed = rest[0]
      assert.equal(claimed.status, 'running')
      assert.equal(claimed.attempts, 1)
      assert.equal(claimed.leaseOwner, 'w1')
      assert.equal(claimed.leaseExpiresAt, clock + LEASE)
      clock += 60_000
      const due = await queue.claim('w2', 5, [k])
      // By now the first two tasks' leases have expired too, so they come back, with their attempts counted.
      assert.deepEqual(new Set(due.map((x) => x.id)), new Set([future.id, early.id, late.id]))
    })

    it('does not hand a claimed task to anyone else while its lease lasts; after expiry another owner gets it with attempts+1', async () => {
      const k = kind()
      const task = await queue.enqueue({ kind: k, payload: {} })
      const [mine] = await queue.claim('w1', 10, [k])
      assert.equal(mine.id, task.id)
      clock += LEASE - 1
      assert.deepEqual(await queue.claim('w2', 10, [k]), [])
      assert.deepEqual(await queue.claim('w1', 10, [k]), [], 'not even to the same owner again')
      clock += 2
      const [theirs] = await queue.claim('w2', 10, [k])
      assert.equal(theirs.id, task.id)
      assert.equal(theirs.attempts, 2)
      assert.equal(theirs.leaseOwner, 'w2')
      // The first owner has lost the lease: every write of its own is refused.
      assert.equal(await queue.heartbeat(task.id, 'w1'), false)
      assert.equal(await queue.complete(task.id, 'w1'), false)
      assert.equal(await queue.fail(task.id, 'w1', 'too late'), false)
      const row = await queue.get(task.id)
      assert.equal(row?.status, 'running')
      assert.equal(row?.leaseOwner, 'w2')
      assert.equal(row?.lastError, null)
      assert.equal(await queue.complete(task.id, 'w2'), true)
      assert.equal((await queue.get(task.id))?.status, 'done')
    })

    it('extends the lease on heartbeat', async () => {
      const k = kind()
      const task = await queue.enqueue({ kind: k, payload: {} })
      await queue.claim('w1', 1, [k])
      clock += LEASE - 1000
      assert.equal(await queue.heartbeat(task.id, 'w1'), true)
      clock += 2000
      assert.deepEqual(await queue.claim('w2', 1, [k]), [], 'the original lease has passed but the heartbeat extended it')
      assert.equal((await queue.get(task.id))?.leaseExpiresAt, clock - 2000 + LEASE)
      assert.equal(await queue.heartbeat(task.id, 'w2'), false, 'a non-owner cannot heartbeat')
    })

    it('completes a task: done, finished, never claimed again', async () => {
      const k = kind()
      const task = await queue.enqueue({ kind: k, payload: {} })
      await queue.claim('w1', 1, [k])
      clock += 5
      assert.equal(await queue.complete(task.id, 'w1'), true)
      const done = await queue.get(task.id)
      assert.equal(done?.status, 'done')
      assert.equal(done?.finishedAt, clock)
      assert.equal(done?.leaseOwner, null)
      clock += LEASE * 10
      assert.deepEqual(await queue.claim('w2', 1, [k]), [])
      assert.equal(await queue.complete(task.id, 'w1'), false, 'completing twice is refused')
    })

    it('retries a failed task with exponential backoff, recording the reason', async () => {
      const k = kind()
      const task = await queue.enqueue({ kind: k, payload: {}, maxAttempts: 5 })
      for (let attempt = 1; attempt <= 3; attempt++) {
        const [claimed] = await queue.claim('w1', 1, [k])
        assert.equal(claimed?.id, task.id, `attempt ${attempt} claims it`)
        assert.equal(claimed.attempts, attempt)
        assert.equal(await queue.fail(task.id, 'w1', `failure ${attempt}`), true)
        const row = await queue.get(task.id)
        assert.equal(row?.status, 'queued')
        assert.equal(row?.lastError, `failure ${attempt}`)
        assert.equal(row?.runAfter, clock + retryDelayMs(attempt))
        assert.equal(row?.leaseOwner, null)
        clock += retryDelayMs(attempt) - 1
        assert.deepEqual(await queue.claim('w1', 1, [k]), [], 'not before its backoff')
        clock += 1
      }
      assert.deepEqual([1, 2, 3, 4, 10, 20].map(retryDelayMs), [1000, 2000, 4000, 8000, 300_000, 300_000])
    })

    it('fails a task for good after max attempts, keeping the last error', async () => {
      const k = kind()
      const task = await queue.enqueue({ kind: k, payload: {}, maxAttempts: 2 })
      await queue.claim('w1', 1, [k])
      await queue.fail(task.id, 'w1', 'first')
      clock += retryDelayMs(1)
      await queue.claim('w1', 1, [k])
      assert.equal(await queue.fail(task.id, 'w1', 'second and last'), true)
      const row = await queue.get(task.id)
      assert.equal(row?.status, 'failed')
      assert.equal(row?.attempts, 2)
      assert.equal(row?.lastError, 'second and last')
      assert.equal(row?.finishedAt, clock)
      clock += 3600_000
      assert.deepEqual(await queue.claim('w1', 1, [k]), [])
    })

    it('fails a task at once when the failure is permanent', async () => {
      const k = kind()
      const task = await queue.enqueue({ kind: k, payload: {}, maxAttempts: 5 })
      await queue.claim('w1', 1, [k])
      assert.equal(await queue.fail(task.id, 'w1', 'bad payload', { permanent: true }), true)
      const row = await queue.get(task.id)
      assert.equal(row?.status, 'failed')
      assert.equal(row?.attempts, 1)
      assert.equal(row?.lastError, 'bad payload')
    })

    it('releases every lease of one owner without counting the attempt', async () => {
      const k = kind()
      for (const payload of ['a', 'b', 'c']) await queue.enqueue({ kind: k, payload })
      const [a, b] = await queue.claim('leaving', 2, [k])
      const [c] = await queue.claim('staying', 1, [k])
      assert.equal(await queue.releaseAll('leaving'), 2)
      for (const id of [a.id, b.id]) {
        const row = await queue.get(id)
        assert.equal(row?.status, 'queued')
        assert.equal(row?.attempts, 0)
        assert.equal(row?.leaseOwner, null)
      }
      assert.equal((await queue.get(c.id))?.leaseOwner, 'staying')
      const reclaimed = await queue.claim('next', 5, [k])
      assert.deepEqual(new Set(reclaimed.map((x) => x.id)), new Set([a.id, b.id]), 'claimable at once, no lease to wait out')
      assert.equal(await queue.releaseAll('nobody'), 0)
    })

    it('counts queued and running tasks for the depth metric', async () => {
      const before = await queue.depth()
      const k = kind()
      await queue.enqueue({ kind: k, payload: {} })
      await queue.enqueue({ kind: k, payload: {} })
      await queue.enqueue({ kind: k, payload: {} })
      await queue.claim('w1', 1, [k])
      const after = await queue.depth()
      assert.deepEqual(after, { queued: before.queued + 2, running: before.running + 1 })
      assert.equal(typeof after.queued, 'number')
    })

    it('never hands one task to two claimers that race (two connections, 200 tasks)', async () => {
      const k = kind()
      for (let i = 0; i < 200; i++) await queue.enqueue({ kind: k, payload: { i } })
      const other = new SqlTaskQueue(await t.reopen(), { leaseMs: LEASE, now: () => clock })
      const seen = new Map<string, string>()
      const claimer = async (q: SqlTaskQueue, owner: string) => {
        for (;;) {
          const batch = await q.claim(owner, 7, [k])
          if (batch.length === 0) return
          for (const task of batch) {
            assert.equal(seen.get(task.id), undefined, `task ${task.id} claimed by ${seen.get(task.id)} and ${owner}`)
            seen.set(task.id, owner)
          }
        }
      }
      await Promise.all([claimer(queue, 'a1'), claimer(other, 'b1'), claimer(queue, 'a2'), claimer(other, 'b2')])
      assert.equal(seen.size, 200)
    })
  })

  describe(`task runner (${dialect})`, () => {
    let t: TestStore
    let n = 0
    const kind = () => `run-${++n}`
    before(async () => {
      t = await openTestStore(dialect)
    })
    after(() => t.close())

    function runnerFor(handlers: Record<string, TaskHandler>, options: { leaseMs?: number; concurrency?: number } = {}) {
      const queue = new SqlTaskQueue(t.store, { leaseMs: options.leaseMs ?? LEASE })
      const runner = new TaskRunner(queue, new Map(Object.entries(handlers)), {
        concurrency: options.concurrency ?? 4,
        leaseMs: options.leaseMs ?? LEASE,
        idlePollMs: 50,
        logger: silent,
      })
      queue.onEnqueue(() => runner.wake())
      return { queue, runner }
    }

    it('runs the handler of each task once and marks it done', async () => {
      const k = kind()
      const seen: unknown[] = []
      const { queue, runner } = runnerFor({ [k]: async (task) => void seen.push(task.payload) })
      runner.start()
      try {
        const tasks = await Promise.all([1, 2, 3].map((i) => queue.enqueue({ kind: k, payload: { i } })))
        await until('every task done', async () => (await Promise.all(tasks.map((x) => queue.get(x.id)))).every((x) => x?.status === 'done'))
        assert.deepEqual(seen.map((p) => (p as { i: number }).i).sort(), [1, 2, 3])
      } finally {
        await runner.stop(1000)
      }
    })

    it('keeps the lease alive with heartbeats while a handler runs longer than the lease', async () => {
      const k = kind()
      // A lease of 1 s heartbeated every third of it: a loaded CI machine (Tempest lanes beside the tests) delayed
      // a heartbeat past a 300 ms lease, and the runner took its own task back (attempts 2).
      const { queue, runner } = runnerFor({ [k]: () => sleep(3000) }, { leaseMs: 1000 })
      const thief = new SqlTaskQueue(t.store, { leaseMs: 1000 })
      runner.start()
      try {
        const task = await queue.enqueue({ kind: k, payload: {} })
        await until('claimed', async () => (await queue.get(task.id))?.status === 'running')
        const stolen: TaskRecord[] = []
        while ((await queue.get(task.id))?.status === 'running') {
          stolen.push(...(await thief.claim('thief', 1, [k])))
          await sleep(50)
        }
        assert.deepEqual(stolen, [], 'another owner claimed a task whose handler was still heartbeating')
        const done = await queue.get(task.id)
        assert.equal(done?.status, 'done')
        assert.equal(done?.attempts, 1)
      } finally {
        await runner.stop(1000)
      }
    })

    it('records a handler failure and retries it later; gives up after max attempts', async () => {
      const k = kind()
      let calls = 0
      const { queue, runner } = runnerFor({
        [k]: async () => {
          calls++
          throw new Error(`boom ${calls}`)
        },
      })
      runner.start()
      try {
        const task = await queue.enqueue({ kind: k, payload: {}, maxAttempts: 2 })
        await until('first failure recorded', async () => (await queue.get(task.id))?.lastError === 'boom 1')
        const retrying = await queue.get(task.id)
        assert.equal(retrying?.status, 'queued')
        assert.ok(retrying!.runAfter > Date.now() + 500, 'the retry waits for its backoff')
        // Skip the 1 s backoff rather than sleep through it.
        await t.store.db.updateTable('tasks').set({ run_after: Date.now() }).where('id', '=', task.id).execute()
        runner.wake()
        await until('failed for good', async () => (await queue.get(task.id))?.status === 'failed')
        const failed = await queue.get(task.id)
        assert.equal(failed?.lastError, 'boom 2')
        assert.equal(failed?.attempts, 2)
        assert.equal(calls, 2)
      } finally {
        await runner.stop(1000)
      }
    })

    it('fails a task at once on PermanentTaskError', async () => {
      const k = kind()
      let calls = 0
      const { queue, runner } = runnerFor({
        [k]: async () => {
          calls++
          throw new PermanentTaskError('the subject is gone')
        },
      })
      runner.start()
      try {
        const task = await queue.enqueue({ kind: k, payload: {}, maxAttempts: 5 })
        await until('failed', async () => (await queue.get(task.id))?.status === 'failed')
        const row = await queue.get(task.id)
        assert.equal(row?.lastError, 'the subject is gone')
        assert.equal(row?.attempts, 1)
        await sleep(200)
        assert.equal(calls, 1)
      } finally {
        await runner.stop(1000)
      }
    })

    it('aborts a handler whose lease was taken over and drops its result', async () => {
      const k = kind()
      let context: TaskContext | undefined
      const { queue, runner } = runnerFor(
        {
          [k]: async (_task, ctx) => {
            context = ctx
            await sleep(1500)
          },
        },
        { leaseMs: 300 },
      )
      runner.start()
      try {
        const task = await queue.enqueue({ kind: k, payload: {} })
        await until('running', () => context !== undefined)
        // Another process took the task over (as after a long pause of this one).
        await t.store.db.updateTable('tasks').set({ lease_owner: 'someone-else', lease_expires_at: Date.now() + 60_000 }).where('id', '=', task.id).execute()
        await until('the handler is told', () => context!.signal.aborted, 3000)
        await sleep(1600)
        const row = await queue.get(task.id)
        assert.equal(row?.status, 'running', 'the stale owner must not complete it')
        assert.equal(row?.leaseOwner, 'someone-else')
      } finally {
        await runner.stop(1000)
      }
    })

    it('on stop, waits for short handlers, aborts long ones and hands their leases back', async () => {
      const k = kind()
      const quick = kind()
      let aborted = false
      const { queue, runner } = runnerFor({
        [k]: async (_task, ctx) => {
          await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()))
          aborted = true
        },
        [quick]: () => sleep(200),
      })
      runner.start()
      const long = await queue.enqueue({ kind: k, payload: {} })
      const short = await queue.enqueue({ kind: quick, payload: {} })
      await until('both running', async () => runner.busy === 2)
      await runner.stop(500)
      assert.equal(aborted, true)
      assert.equal((await queue.get(short.id))?.status, 'done', 'a handler that finishes within the grace period completes')
      const released = await queue.get(long.id)
      assert.equal(released?.status, 'queued')
      assert.equal(released?.leaseOwner, null)
      assert.equal(released?.attempts, 0)
    })

    it('on stop, waits for a claim in flight: the task it brings is run or handed back, not left running', async () => {
      const k = kind()
      let openGate!: () => void
      const gate = new Promise<void>((resolve) => (openGate = resolve))
      let claimsStarted = 0
      // A queue whose claim answers only when the test says, as a slow database would in the middle of a stop.
      class SlowClaimQueue extends SqlTaskQueue {
        override async claim(...args: Parameters<SqlTaskQueue['claim']>) {
          claimsStarted++
          const tasks = await super.claim(...args)
          await gate
          return tasks
        }
      }
      const queue = new SlowClaimQueue(t.store, { leaseMs: LEASE })
      let stopped = false
      let ranAfterStop = false
      const runner = new TaskRunner(queue, new Map([[k, async () => void (ranAfterStop ||= stopped)]]), { concurrency: 4, leaseMs: LEASE, idlePollMs: 50, logger: silent })
      const task = await queue.enqueue({ kind: k, payload: {} })
      runner.start()
      await until('a claim in flight', () => claimsStarted > 0)
      const stopping = runner.stop(1000)
      setTimeout(openGate, 100)
      await stopping
      stopped = true
      const after = await queue.get(task.id)
      assert.notEqual(after?.status, 'running', 'no lease is left held by a stopped runner')
      assert.equal(after?.leaseOwner ?? null, null)
      await sleep(200)
      assert.equal(ranAfterStop, false, 'no handler runs once stop has returned')
    })

    it('fails a re-claimed task whose attempts were all used up by expired leases', async () => {
      const k = kind()
      let calls = 0
      const { queue, runner } = runnerFor({ [k]: async () => void calls++ })
      const task = await queue.enqueue({ kind: k, payload: {}, maxAttempts: 2 })
      // Two owners claimed it and died without a word.
      await t.store.db.updateTable('tasks').set({ status: 'running', attempts: 2, lease_owner: 'dead', lease_expires_at: Date.now() - 1 }).where('id', '=', task.id).execute()
      runner.start()
      try {
        await until('failed', async () => (await queue.get(task.id))?.status === 'failed')
        assert.match((await queue.get(task.id))!.lastError!, /gave up after 2 attempts/)
        assert.equal(calls, 0)
      } finally {
        await runner.stop(1000)
      }
    })
  })
}
