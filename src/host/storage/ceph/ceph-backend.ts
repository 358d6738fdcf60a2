/**
 * The Ceph backend, laid out as Cinder's RBD driver lays it out, so Ceph's own tools and habits apply: volume
 * `volume-<id>` in the volumes pool, snapshot `volume-<id>@snapshot-<id>` (protected, so volumes can be cloned
 * from it). Clones are copy-on-write: a volume from a snapshot is an `rbd clone` of it, a volume from a volume a
 * clone of a snapshot `clone-<new id>` taken for it, and a volume from a raw image in the same cluster a clone of
 * the image's `snap` (Glance's rbd store layout). Removing anything a clone still shares bytes with flattens the
 * clone first (src/lib/ceph/rbd.ts), so no delete ever fails or takes another volume's bytes with it.
 *
 * Byte copies (a qcow2 image, another backend's export) are written into `volume-<id>.partial` and renamed only once
 * complete, so a copy interrupted by a crash is started again rather than taken for done.
 */
import { checkId, type VolumeBackend } from '../backend.js'
import { IMAGE_SNAPSHOT, volumeImage } from '../../../contracts/host/rbd-names.js'
import { GIB, VolumeBackendError, type BackendCapacity, type BlockdevSpec, type ByteSource, type VolumeRef } from '../../../contracts/host/volume.js'
import { CephError, type Rbd } from '../../../lib/ceph/rbd.js'
import { checkImage, convertInto, nbdBlockdev, nodeSize, withPskDir } from '../qemu-img.js'

export interface CephPoolsOfBackend {
  volumes: string
  /** Where images live, when they are in the same cluster (volumes from raw images are then clones). */
  images?: string
}

export class CephBackend implements VolumeBackend {
  readonly name = 'ceph'

  constructor(
    private readonly rbd: Rbd,
    readonly pools: CephPoolsOfBackend,
  ) {}

  private get pool(): string {
    return this.pools.volumes
  }

  private volumeImage(volumeId: string): string {
    return volumeImage(checkId(volumeId))
  }

  private snapName(snapshotId: string): string {
    return `snapshot-${checkId(snapshotId)}`
  }

  /** A Ceph failure as the volume service records it. */
  private async ceph<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (err) {
      if (err instanceof CephError) throw new VolumeBackendError(err.message)
      throw err
    }
  }

  async check(): Promise<void> {
    await this.ceph(() => this.rbd.check(this.pool))
  }

  async capacity(): Promise<BackendCapacity> {
    const usage = await this.ceph(() => this.rbd.poolUsage(this.pool))
    return { totalGb: Math.floor((usage.storedBytes + usage.availableBytes) / GIB), freeGb: Math.floor(usage.availableBytes / GIB) }
  }

  async size(ref: VolumeRef): Promise<number | undefined> {
    const info = await this.ceph(() => ('volumeId' in ref ? this.rbd.info(this.pool, this.volumeImage(ref.volumeId)) : this.snapshotInfo(ref.snapshotOf, ref.snapshotId)))
    return info?.size
  }

  /** Undefined when the volume or its snapshot is missing (rbd answers ENOENT for either). */
  private snapshotInfo(volumeId: string, snapshotId: string) {
    return this.rbd.info(this.pool, this.volumeImage(volumeId), this.snapName(snapshotId))
  }

  blockdev(ref: VolumeRef): BlockdevSpec {
    if ('volumeId' in ref) return { driver: 'raw', file: this.rbd.blockdev(this.pool, this.volumeImage(ref.volumeId)) }
    return { driver: 'raw', 'read-only': true, file: { ...this.rbd.blockdev(this.pool, this.volumeImage(ref.snapshotOf), this.snapName(ref.snapshotId)), 'read-only': true } }
  }

  async create(volumeId: string, sizeGb: number): Promise<void> {
    const image = this.volumeImage(volumeId)
    await this.ceph(async () => {
      if (await this.rbd.info(this.pool, image)) return
      await this.rbd.create(this.pool, image, sizeGb * GIB)
    })
  }

  async createFrom(volumeId: string, sizeGb: number, source: ByteSource): Promise<void> {
    const image = this.volumeImage(volumeId)
    const maxBytes = sizeGb * GIB
    await this.ceph(async () => {
      if (await this.rbd.info(this.pool, image)) return
      switch (source.kind) {
        case 'volume': {
          const from = this.volumeImage(source.volumeId)
          const info = await this.rbd.info(this.pool, from)
          if (!info) throw new VolumeBackendError(`the source volume ${source.volumeId} does not exist in pool ${this.pool}`)
          if (info.size > maxBytes) throw new VolumeBackendError(`the source volume (${info.size} bytes) is larger than the new volume (${maxBytes} bytes)`)
          // Cinder's layout: a snapshot of the source for this clone; it goes when the clone no longer needs it.
          await this.rbd.snapshot(this.pool, from, `clone-${checkId(volumeId)}`)
          await this.cloneTo(image, { pool: this.pool, image: from, snap: `clone-${volumeId}` }, maxBytes)
          return
        }
        case 'snapshot': {
          const info = await this.snapshotInfo(source.volumeId, source.snapshotId)
          if (!info) throw new VolumeBackendError(`the source snapshot ${source.snapshotId} does not exist in pool ${this.pool}`)
          if (info.size > maxBytes) throw new VolumeBackendError(`the source snapshot (${info.size} bytes) is larger than the new volume (${maxBytes} bytes)`)
          await this.cloneTo(image, { pool: this.pool, image: this.volumeImage(source.volumeId), snap: this.snapName(source.snapshotId) }, maxBytes)
          return
        }
        case 'image':
          await checkImage(source.path, source.format, maxBytes)
          await this.copyInto(image, maxBytes, (target) => convertInto({ path: source.path, format: source.format }, target))
          return
        case 'nbd':
          await withPskDir(source.source, async (object) => {
            const bytes = await nodeSize(nbdBlockdev(source.source), object)
            if (bytes > maxBytes) throw new VolumeBackendError(`the source volume (${bytes} bytes) is larger than the new volume (${maxBytes} bytes)`)
            await this.copyInto(image, maxBytes, (target) => convertInto({ blockdev: nbdBlockdev(source.source), object }, target))
          })
      }
    })
  }

  /**
   * A volume from an image whose bytes are in this cluster, raw, with Glance's snapshot: a clone, no copy. False
   * when the image is elsewhere or not raw (the caller then copies its bytes in).
   */
  async createFromImage(volumeId: string, sizeGb: number, image: { id: string; format: 'raw' | 'qcow2' }): Promise<boolean> {
    const imagesPool = this.pools.images
    if (imagesPool === undefined || image.format !== 'raw') return false
    return this.ceph(async () => {
      const target = this.volumeImage(volumeId)
      if (await this.rbd.info(this.pool, target)) return true
      const info = await this.rbd.info(imagesPool, checkId(image.id), IMAGE_SNAPSHOT)
      if (!info) return false
      if (info.size > sizeGb * GIB) throw new VolumeBackendError(`the image's virtual size (${info.size} bytes) is larger than the volume (${sizeGb * GIB} bytes)`)
      await this.cloneTo(target, { pool: imagesPool, image: image.id, snap: IMAGE_SNAPSHOT }, sizeGb * GIB)
      return true
    })
  }

  /** A clone, grown to the volume's size (a clone starts at its parent's). */
  private async cloneTo(image: string, from: { pool: string; image: string; snap: string }, bytes: number): Promise<void> {
    const partial = `${image}.partial`
    await this.rbd.remove(this.pool, partial)
    await this.rbd.clone(from, this.pool, partial)
    if ((await this.rbd.info(this.pool, partial))?.size !== bytes) await this.rbd.resize(this.pool, partial, bytes)
    await this.rbd.rename(this.pool, partial, image)
  }

  /** Writes a new image through QEMU under a partial name, then gives it its name. */
  private async copyInto(image: string, bytes: number, copy: (target: BlockdevSpec) => Promise<void>): Promise<void> {
    const partial = `${image}.partial`
    await this.rbd.remove(this.pool, partial)
    await this.rbd.create(this.pool, partial, bytes)
    await copy({ driver: 'raw', file: this.rbd.blockdev(this.pool, partial) })
    await this.rbd.rename(this.pool, partial, image)
  }

  async extend(volumeId: string, sizeGb: number): Promise<void> {
    await this.ceph(async () => {
      const info = await this.rbd.info(this.pool, this.volumeImage(volumeId))
      if (!info) throw new VolumeBackendError(`volume ${volumeId} does not exist in pool ${this.pool}`)
      if (info.size > sizeGb * GIB) throw new VolumeBackendError(`volume ${volumeId} is larger (${info.size} bytes) than ${sizeGb} GiB: volumes never shrink`)
      if (info.size < sizeGb * GIB) await this.rbd.resize(this.pool, this.volumeImage(volumeId), sizeGb * GIB)
    })
  }

  async delete(volumeId: string): Promise<void> {
    await this.ceph(async () => {
      const image = this.volumeImage(volumeId)
      const parent = (await this.rbd.info(this.pool, image))?.parent
      await this.rbd.remove(this.pool, image)
      await this.rbd.remove(this.pool, `${image}.partial`)
      // The snapshot taken of a source volume for this clone has no other use.
      if (parent && parent.snapshot === `clone-${volumeId}`) await this.rbd.removeSnapshot(parent.pool, parent.image, parent.snapshot)
    })
  }

  async createSnapshot(snapshotId: string, volumeId: string): Promise<void> {
    await this.ceph(async () => {
      if (!(await this.rbd.info(this.pool, this.volumeImage(volumeId)))) throw new VolumeBackendError(`volume ${volumeId} does not exist in pool ${this.pool}`)
      await this.rbd.snapshot(this.pool, this.volumeImage(volumeId), this.snapName(snapshotId))
    })
  }

  async deleteSnapshot(snapshotId: string, volumeId: string): Promise<void> {
    await this.ceph(() => this.rbd.removeSnapshot(this.pool, this.volumeImage(volumeId), this.snapName(snapshotId)))
  }
}
