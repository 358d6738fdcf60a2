/**
 * Where image bytes live. The filesystem store (fs-blob-store.ts) is the embedded default; an object store can
 * replace it behind this interface. Guarantees every implementation keeps:
 *
 * - `put` streams: it never holds the whole blob in memory, and it honours backpressure from the source.
 * - `put` is all or nothing: a failed or too-large write leaves no blob under `key` (a previous blob under the
 *   same key stays until a later put succeeds).
 * - The digests `put` returns are those of exactly the bytes stored.
 * - `open` of a missing key throws BlobNotFoundError; `delete` of a missing key is not an error.
 */
import type { Readable } from 'node:stream'

export interface BlobDigests {
  size: number
  /** Hex MD5 of the bytes (Glance's legacy `checksum`). */
  md5: string
  /** Hex SHA-512 of the bytes (Glance's `os_hash_value` with `os_hash_algo` sha512). */
  sha512: string
}

export interface PutOptions {
  /** Stop and fail with BlobTooLargeError once more than this many bytes arrived. */
  maxBytes: number
}

/** An RBD snapshot in the cluster a store in Ceph keeps its blobs in (a guest's root disk, for a server snapshot). */
export interface RbdSnapshotRef {
  pool: string
  image: string
  snapshot: string
}

export interface BlobStore {
  /** Stores everything `source` yields under `key`. */
  put(key: string, source: Readable, options: PutOptions): Promise<BlobDigests>
  /**
   * Stores the bytes of an RBD snapshot under `key` without them leaving Ceph (a copy-on-write clone, flattened).
   * Only a store in Ceph has it; `put`'s guarantees hold.
   */
  copyFromRbd?(key: string, source: RbdSnapshotRef, options: PutOptions): Promise<BlobDigests>
  /** A stream of the stored bytes. */
  open(key: string): Promise<{ stream: Readable; size: number }>
  delete(key: string): Promise<void>
  exists(key: string): Promise<boolean>
}

/** Keys are service-chosen paths (`images/<id>`); one that could escape a folder or a pool never reaches a store. */
export function checkKey(key: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/.test(key) || key.split('/').includes('..')) throw new Error(`invalid blob key ${JSON.stringify(key)}`)
  return key
}

export class BlobNotFoundError extends Error {
  override name = 'BlobNotFoundError'
}

export class BlobTooLargeError extends Error {
  override name = 'BlobTooLargeError'
  constructor(readonly maxBytes: number) {
    super(`the data is larger than the limit of ${maxBytes} bytes`)
  }
}
