/** The digests every blob store returns, computed on the bytes as they pass, with the size limit of a put. */
import { createHash } from 'node:crypto'
import { Transform, type TransformCallback } from 'node:stream'
import { BlobTooLargeError, type BlobDigests } from './blob-store.js'

export class DigestingCounter extends Transform {
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

  digests(): BlobDigests {
    return { size: this.size, md5: this.md5.digest('hex'), sha512: this.sha512.digest('hex') }
  }
}
