/**
 * The view cache's memory (src/server/http/view-cache.ts): what it counts against its budget is what it
 * holds. A small `Buffer.from(text)` is a slice of Node's shared 8 KiB pool and pins the slab, so 32 MiB counted
 * held ~100 MiB in a soak; entries now own their bytes. The budget is PCC_VIEW_CACHE_MB, and entries of deleted
 * servers are dropped by the sweep (here against the real database of a running server).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ENTRY_OVERHEAD_BYTES, ViewCache } from '../../src/server/http/view-cache.js'
import { loadConfig } from '../../src/server/config/load.js'
import type { TestServer } from '../../src/testkit/harness.js'
import { call, computeTestbed, createBody, type ComputeTestbed } from './helpers.js'

const stamp = { rev: 1, viewRev: 1 }
const ownsItsBytes = (b: Buffer) => b.byteOffset === 0 && b.buffer.byteLength === b.length

describe('server view cache: memory', () => {
  it('keeps each entry in bytes of its own, never a slice of the shared pool', () => {
    const text = JSON.stringify({ id: 'x', name: 'a server view of a few hundred bytes'.repeat(5) })
    const pooled = Buffer.from(text)
    assert.ok(!ownsItsBytes(pooled), 'a small Buffer.from is a pool slice (the leak this guards against)')
    assert.ok(ownsItsBytes(ViewCache.encode(text)))
    assert.equal(ViewCache.encode('é✓').toString(), 'é✓')

    const cache = new ViewCache()
    const entries = cache.variant('2.1|member')
    cache.set(entries, 'a', stamp, pooled)
    const kept = ViewCache.lookup(entries, 'a', stamp)!
    assert.ok(ownsItsBytes(kept), 'a pooled buffer handed in is copied')
    assert.equal(kept.toString(), text)
    assert.equal(cache.bytes, pooled.length + ENTRY_OVERHEAD_BYTES)
  })

  it('counts every entry against the budget and evicts the oldest', () => {
    const cache = new ViewCache({ budgetBytes: 10 * (100 + ENTRY_OVERHEAD_BYTES) })
    const entries = cache.variant('v')
    for (let i = 0; i < 25; i++) cache.set(entries, `s${i}`, stamp, ViewCache.encode('x'.repeat(100)))
    assert.equal(cache.size, 10)
    assert.ok(cache.bytes <= 10 * (100 + ENTRY_OVERHEAD_BYTES))
    assert.equal(ViewCache.lookup(entries, 's14', stamp), undefined)
    assert.ok(ViewCache.lookup(entries, 's24', stamp))
    // Replacing an entry counts the difference only.
    cache.set(entries, 's24', { rev: 2, viewRev: 1 }, ViewCache.encode('y'.repeat(50)))
    assert.equal(cache.bytes, 9 * (100 + ENTRY_OVERHEAD_BYTES) + 50 + ENTRY_OVERHEAD_BYTES)
    const none = new ViewCache({ budgetBytes: 0 })
    none.set(none.variant('v'), 'a', stamp, ViewCache.encode('x'))
    assert.equal(none.size, 0)
  })

  it('PCC_VIEW_CACHE_MB sets the budget (default 32)', () => {
    assert.equal(loadConfig({ argv: [], env: {} }).viewCacheMb, 32)
    assert.equal(loadConfig({ argv: [], env: { PCC_VIEW_CACHE_MB: '8' } }).viewCacheMb, 8)
    assert.equal(loadConfig({ argv: ['--view-cache-mb', '0'], env: {} }).viewCacheMb, 0)
    assert.throws(() => loadConfig({ argv: [], env: { PCC_VIEW_CACHE_MB: '-1' } }), /PCC_VIEW_CACHE_MB/)
  })
})

describe('server view cache: deleted servers', { timeout: 300_000 }, () => {
  let tb: ComputeTestbed
  let server: TestServer
  before(async () => {
    tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0', PCC_VIEW_CACHE_MB: '0' }, true)
    server = tb.server
  })
  after(() => tb.close())

  it("drops the entries of servers deleted since they were kept, in every variant", async () => {
    const ids: string[] = []
    for (const name of ['keep', 'gone']) {
      const created = await call(tb, tb.member, 'POST', '/servers', createBody(name), '2.96')
      assert.equal(created.status, 202, JSON.stringify(created.body))
      ids.push(created.body.server.id)
    }
    const db = server.deps.store.db
    const live = async (chunk: string[]) => new Set((await db.selectFrom('servers').select('id').where('id', 'in', chunk).where('deleted', '=', 0).execute()).map((r) => r.id))
    const cache = new ViewCache({ live })
    for (const variant of ['2.1|member', '2.96|admin']) for (const id of ids) cache.set(cache.variant(variant), id, stamp, ViewCache.encode(`{"id":"${id}"`))
    const full = cache.bytes
    assert.equal(await cache.sweep(), 0)
    assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${ids[1]}`, undefined, '2.96')).status, 204)
    const deadline = Date.now() + 60_000
    while ((await live([ids[1]])).size > 0) {
      assert.ok(Date.now() < deadline, 'the server is deleted')
      await new Promise((r) => setTimeout(r, 100))
    }
    assert.equal(await cache.sweep(), 1)
    assert.equal(cache.size, 2)
    assert.equal(cache.bytes, full / 2)
    assert.equal(ViewCache.lookup(cache.variant('2.96|admin'), ids[1], stamp), undefined)
    assert.ok(ViewCache.lookup(cache.variant('2.96|admin'), ids[0], stamp))
  })

  it('with PCC_VIEW_CACHE_MB=0 the detail list renders every server every time', async () => {
    const r = await call(tb, tb.member, 'GET', '/servers/detail', undefined, '2.96')
    assert.equal(r.status, 200)
    assert.ok(r.body.servers.some((s: { name: string }) => s.name === 'keep'))
  })
})
