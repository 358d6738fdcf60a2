/**
 * Blob store on the local filesystem, under `<data-dir>/blobs`. A put writes to a temporary file in the same
 * folder and renames it into place only once every byte arrived, so a reader never sees a partial blob.
 */
import { randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, rename, rm, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { BlobNotFoundError, checkKey, type BlobDigests, type BlobStore, type PutOptions } from './blob-store.js'
import { DigestingCounter } from './digesting-counter.js'

export class FsBlobStore implements BlobStore {
  constructor(private readonly root: string) {}

  private path(key: string): string {
    return join(this.root, checkKey(key))
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
    return counter.digests()
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
