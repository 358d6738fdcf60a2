/**
 * Image bytes in RBD, as Glance's rbd store keeps them: image `<id>` in the images pool with a protected snapshot
 * `snap` that volumes and guest disks are cloned from. Any pcc-server process reaches any image, so an HA cluster
 * needs no shared filesystem. Other blobs (a cold migration's disk in transit, `transfers/<server>/<disk>`) live
 * beside them with the key's slashes as dots.
 *
 * A put streams into `<name>.partial-<random>` (`rbd import` from standard input), snapshots it and only then
 * renames it into place, so a reader never sees a partial image; a failed put removes its partial image.
 */
import { randomBytes } from 'node:crypto'
import { Writable, type Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { IMAGE_SNAPSHOT } from '../../contracts/host/rbd-names.js'
import { CephError, type Rbd } from '../../lib/ceph/rbd.js'
import { BlobNotFoundError, checkKey, type BlobDigests, type BlobStore, type PutOptions, type RbdSnapshotRef } from './blob-store.js'
import { DigestingCounter } from './digesting-counter.js'


export class RbdBlobStore implements BlobStore {
  constructor(
    private readonly rbd: Rbd,
    readonly pool: string,
  ) {}

  /** `images/<id>` is `<id>`, as Glance names it; any other key keeps its parts, joined by dots. */
  imageName(key: string): string {
    checkKey(key)
    return key.startsWith('images/') ? key.slice('images/'.length) : key.replaceAll('/', '.')
  }

  async put(key: string, source: Readable, options: PutOptions): Promise<BlobDigests> {
    const name = this.imageName(key)
    const partial = `${name}.partial-${randomBytes(6).toString('hex')}`
    const counter = new DigestingCounter(options.maxBytes)
    try {
      // `source` errors (a client gone, the size limit) reach the import through the counter.
      source.on('error', (err) => counter.destroy(err))
      await this.rbd.importFrom(source.pipe(counter), this.pool, partial)
      await this.rbd.snapshot(this.pool, partial, IMAGE_SNAPSHOT)
      await this.rbd.remove(this.pool, name)
      await this.rbd.rename(this.pool, partial, name)
    } catch (err) {
      await this.rbd.remove(this.pool, partial).catch(() => {})
      throw err
    }
    return counter.digests()
  }

  /**
   * A server snapshot that never leaves Ceph, as Nova's direct snapshot of an rbd disk: the disk's snapshot is
   * cloned into `<name>.partial-<random>` and flattened (Ceph copies the bytes itself), its digests read back, and
   * it is put in place as `put` does. The source snapshot is protected for the clone and left for its owner.
   */
  async copyFromRbd(key: string, source: RbdSnapshotRef, options: PutOptions): Promise<BlobDigests> {
    const name = this.imageName(key)
    const partial = `${name}.partial-${randomBytes(6).toString('hex')}`
    try {
      await this.rbd.snapshot(source.pool, source.image, source.snapshot)
      await this.rbd.clone({ pool: source.pool, image: source.image, snap: source.snapshot }, this.pool, partial)
      await this.rbd.flatten(this.pool, partial)
      const counter = new DigestingCounter(options.maxBytes)
      await pipeline(this.rbd.exportTo(this.pool, partial), counter, new Writable({ write: (_chunk, _encoding, done) => done() }))
      await this.rbd.snapshot(this.pool, partial, IMAGE_SNAPSHOT)
      await this.rbd.remove(this.pool, name)
      await this.rbd.rename(this.pool, partial, name)
      return counter.digests()
    } catch (err) {
      await this.rbd.remove(this.pool, partial).catch(() => {})
      throw err
    }
  }

  async open(key: string): Promise<{ stream: Readable; size: number }> {
    const name = this.imageName(key)
    const info = await this.rbd.info(this.pool, name, IMAGE_SNAPSHOT)
    if (!info) throw new BlobNotFoundError(`no blob ${key}`)
    return { stream: this.rbd.exportTo(this.pool, name, IMAGE_SNAPSHOT), size: info.size }
  }

  async delete(key: string): Promise<void> {
    await this.rbd.remove(this.pool, this.imageName(key))
  }

  async exists(key: string): Promise<boolean> {
    return (await this.rbd.info(this.pool, this.imageName(key))) !== undefined
  }

  /** Resolves when the pool answers with this process's rights; the CephError says what failed. */
  async check(): Promise<void> {
    await this.rbd.check(this.pool).catch((err: CephError) => {
      throw new CephError(`the Ceph images pool ${this.pool} is not reachable: ${err.message}`)
    })
  }
}
