import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { CommandChannel } from '../../src/server/onboarding/command-channel.js'

for (const dialect of DIALECTS) {
  describe(`command channel across processes (${dialect})`, () => {
    let server: TestServer
    // Two channels over one store stand for two server processes: neither sees the other's waiters in memory.
    let a: CommandChannel
    let b: CommandChannel
    before(async () => {
      server = await startTestServer({ dialect })
      a = new CommandChannel(server.deps.store, { pollMs: 100 })
      b = new CommandChannel(server.deps.store, { pollMs: 100 })
    })
    after(async () => {
      a.stop()
      b.stop()
      await server.close()
    })

    it('work enqueued in one process reaches a long-poll in another within the poll interval, and its result comes back', async () => {
      const host = crypto.randomUUID()
      const polled = b.take(host, 10_000)
      await new Promise((r) => setTimeout(r, 150))
      const sent = Date.now()
      const id = await a.enqueue(host, 'spawn', { spec: { serverId: 's-1' } })
      const got = await polled
      assert.ok(Date.now() - sent < 1000, `delivered after ${Date.now() - sent} ms`)
      assert.deepEqual(got, [{ id, op: 'spawn', args: { spec: { serverId: 's-1' } } }])
      const waiting = a.waitResult(id, 10_000)
      const answered = Date.now()
      assert.equal(await b.complete(host, id, { ok: true, result: { powerState: 1 } }), true)
      assert.deepEqual(await waiting, { ok: true, result: { powerState: 1 } })
      assert.ok(Date.now() - answered < 1000)
    })

    it('the same operation asked again while unfinished is one command; once finished, a new one', async () => {
      const host = crypto.randomUUID()
      const first = await a.enqueue(host, 'destroy', { serverId: 's-2' })
      assert.equal(await b.enqueue(host, 'destroy', { serverId: 's-2' }), first)
      assert.equal((await b.take(host, 0)).length, 1)
      await b.complete(host, first, { ok: true, result: null })
      assert.notEqual(await a.enqueue(host, 'destroy', { serverId: 's-2' }), first)
    })

    it('a failed command carries the agent error; another host cannot complete it', async () => {
      const host = crypto.randomUUID()
      const id = await a.enqueue(host, 'reboot', { serverId: 's-3', type: 'SOFT' })
      assert.equal(await b.complete(crypto.randomUUID(), id, { ok: true, result: null }), false)
      await b.complete(host, id, { ok: false, error: { message: 'guest is not running', code: 409 } })
      assert.deepEqual(await a.waitResult(id, 1000), { ok: false, error: { message: 'guest is not running', code: 409 } })
    })
  })
}
