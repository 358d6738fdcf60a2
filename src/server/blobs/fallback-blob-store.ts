/**
 * A cloud moved to Ceph keeps the images it had: new blobs go to RBD, and a blob RBD does not hold is read from
 * the filesystem store it was written to before (docs/ceph.md, "Moving an existing cloud").
 */
import type { Readable } from 'node:stream'
import { BlobNotFoundError, type BlobDigests, type BlobStore, type PutOptions } from './blob-store.js'

export class FallbackBlobStore implements BlobStore {
  constructor(
    private readonly primary: BlobStore,
    private readonly earlier: BlobStore,
  ) {}

  put(key: string, source: Readable, options: PutOptions): Promise<BlobDigests> {
    return this.primary.put(key, source, options)
  }

  get copyFromRbd(): BlobStore['copyFromRbd'] {
    return this.primary.copyFromRbd?.bind(this.primary)
  }

  async open(key: string): Promise<{ stream: Readable; size: number }> {
    try {
      return await this.primary.open(key)
    } catch (err) {
      if (!(err instanceof BlobNotFoundError)) throw err
      return this.earlier.open(key)
    }
  }

  async delete(key: string): Promise<void> {
    await this.primary.delete(key)
    await this.earlier.delete(key)
  }

  async exists(key: string): Promise<boolean> {
    return (await this.primary.exists(key)) || this.earlier.exists(key)
  }
}
