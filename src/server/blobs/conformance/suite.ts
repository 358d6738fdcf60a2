/**
 * The blob store conformance suite: the guarantees of src/server/blobs/blob-store.ts with real bytes, checked on
 * every store (test/image/blob-stores.test.ts: the filesystem and RBD).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { Readable } from 'node:stream'
import { BlobNotFoundError, BlobTooLargeError, type BlobStore } from '../blob-store.js'

export interface StoreUnderTest {
  store: BlobStore
  /** Names of whatever the store holds besides its blobs (partial writes): must be empty after every test. */
  leftovers(): Promise<string[]>
  cleanup(): Promise<void>
}

/** A source that yields `chunks` chunks of random bytes, then fails with `error` if one is given. */
function source(chunks: Buffer[], error?: Error): Readable {
  let i = 0
  return new Readable({
    read() {
      if (i < chunks.length) this.push(chunks[i++])
      else if (error) this.destroy(error)
      else this.push(null)
    },
  })
}

async function readAll(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = []
  for await (const part of stream) parts.push(part as Buffer)
  return Buffer.concat(parts)
}

export function blobStoreConformance(name: string, setup: () => Promise<StoreUnderTest | string>): void {
  describe(`blob store conformance: ${name}`, () => {
    let under: StoreUnderTest | undefined
    let skip: string | undefined
    before(async () => {
      const made = await setup()
      if (typeof made === 'string') skip = made
      else under = made
    })
    after(async () => under?.cleanup())

    const test = (title: string, body: (store: BlobStore) => Promise<void>): void => {
      it(title, async (t) => {
        if (skip) return t.skip(skip)
        await body(under!.store)
        assert.deepEqual(await under!.leftovers(), [], 'a partial write was left behind')
      })
    }

    test('stores a stream and gives back the same bytes, size and digests', async (store) => {
      const chunks = Array.from({ length: 24 }, () => randomBytes(256 * 1024 + 7))
      const bytes = Buffer.concat(chunks)
      const key = `images/${randomUUID()}`
      const digests = await store.put(key, source(chunks), { maxBytes: bytes.length })
      assert.deepEqual(digests, { size: bytes.length, md5: createHash('md5').update(bytes).digest('hex'), sha512: createHash('sha512').update(bytes).digest('hex') })
      assert.equal(await store.exists(key), true)
      const { stream, size } = await store.open(key)
      assert.equal(size, bytes.length)
      assert.ok((await readAll(stream)).equals(bytes))
      await store.delete(key)
      assert.equal(await store.exists(key), false)
    })

    test('keys outside images/ are stored too', async (store) => {
      const key = `transfers/${randomUUID()}/disk`
      await store.put(key, source([Buffer.from('a disk in transit')]), { maxBytes: 100 })
      assert.equal((await readAll((await store.open(key)).stream)).toString(), 'a disk in transit')
      await store.delete(key)
    })

    test('a put larger than its limit fails and leaves the earlier blob under the key as it was', async (store) => {
      const key = `images/${randomUUID()}`
      await store.put(key, source([Buffer.from('first')]), { maxBytes: 10 })
      await assert.rejects(store.put(key, source([randomBytes(8), randomBytes(8)]), { maxBytes: 10 }), BlobTooLargeError)
      assert.equal((await readAll((await store.open(key)).stream)).toString(), 'first')
      await store.delete(key)
    })

    test('a source that fails midway leaves no blob', async (store) => {
      const key = `images/${randomUUID()}`
      await assert.rejects(store.put(key, source([randomBytes(1 << 20)], new Error('client went away')), { maxBytes: 1 << 30 }), /client went away/)
      assert.equal(await store.exists(key), false)
      await assert.rejects(store.open(key), BlobNotFoundError)
    })

    test('a second put under a key replaces the blob', async (store) => {
      const key = `images/${randomUUID()}`
      await store.put(key, source([Buffer.from('one')]), { maxBytes: 10 })
      await store.put(key, source([Buffer.from('two!')]), { maxBytes: 10 })
      const { stream, size } = await store.open(key)
      assert.equal(size, 4)
      assert.equal((await readAll(stream)).toString(), 'two!')
      await store.delete(key)
    })

    test('an empty blob is a blob', async (store) => {
      const key = `images/${randomUUID()}`
      assert.equal((await store.put(key, source([]), { maxBytes: 10 })).size, 0)
      const { stream, size } = await store.open(key)
      assert.equal(size, 0)
      assert.equal((await readAll(stream)).length, 0)
      await store.delete(key)
    })

    test('opening a missing key is BlobNotFoundError; deleting one is no error', async (store) => {
      const key = `images/${randomUUID()}`
      await assert.rejects(store.open(key), BlobNotFoundError)
      await store.delete(key)
      assert.equal(await store.exists(key), false)
    })

    test('keys that could escape the store are refused', async (store) => {
      for (const key of ['../etc/passwd', 'images/../../x', '/abs', 'images/a b']) {
        await assert.rejects(store.put(key, source([Buffer.from('x')]), { maxBytes: 10 }), /invalid blob key/, key)
      }
    })
  })
}
