/**
 * Blob store on the local filesystem, under `<data-dir>/blobs`. A put writes to a temporary file in the same
 * folder and renames it into place only once every byte arrived, so a reader never sees a partial blob.
 */
import { createHash, randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, rename, rm, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { Transform, type Readable, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { BlobNotFoundError, BlobTooLargeError, type BlobDigests, type BlobStore, type PutOptions } from './blob-store.js'

/** Keys are service-chosen ids, but a path must never escape the root. */
const KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/

class DigestingCounter extends Transform {
  readonly md5 = createHash('md5')
  readonly sha512 = createHash('sha512')
  size = 0

  constructor(private readonly maxBytes: number) {
    super()
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.size += chunk.length
    if (this.size > this.maxBytes) return callback(new BlobTooLargeError(this.maxBytes))
    this.md5.update(chunk)
    this.sha512.update(chunk)
    callback(null, chunk)
  }
}

export class FsBlobStore implements BlobStore {
  constructor(private readonly root: string) {}

  private path(key: string): string {
    if (!KEY_PATTERN.test(key)) throw new Error(`invalid blob key ${JSON.stringify(key)}`)
    return join(this.root, key)
  }

  async put(key: string, source: Readable, options: PutOptions): Promise<BlobDigests> {
    const target = this.path(key)
    await mkdir(dirname(target), { recursive: true })
    const temp = `${target}.tmp-${randomBytes(6).toString('hex')}`
    const counter = new DigestingCounter(options.maxBytes)
    try {
      await pipeline(source, counter, createWriteStream(temp, { flags: 'wx' }))
      await rename(temp, target)
    } catch (err) {
      await rm(temp, { force: true })
      throw err
    }
    return { size: counter.size, md5: counter.md5.digest('hex'), sha512: counter.sha512.digest('hex') }
  }

  async open(key: string): Promise<{ stream: Readable; size: number }> {
    const path = this.path(key)
    let size: number
    try {
      size = (await stat(path)).size
    } catch {
      throw new BlobNotFoundError(`no blob ${key}`)
    }
    return { stream: createReadStream(path, { highWaterMark: 1 << 20 }), size }
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true })
  }

  async exists(key: string): Promise<boolean> {
    try {
      await stat(this.path(key))
      return true
    } catch {
      return false
    }
  }
}
