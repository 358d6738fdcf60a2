/**
 * The control plane's own machine as a storage place: volumes as files under `<data-dir>/volumes` (the file
 * backend), exported by qemu-storage-daemons that pcc-server starts (runtime files under `<data-dir>/run/volumes`).
 * The daemons outlive a pcc-server restart and are adopted at the next start; with several pcc-server processes,
 * each runs the exports whose address is its own `volumeExportAddress` (docs/block-storage.md, "High availability").
 */
import { createReadStream, createWriteStream } from 'node:fs'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import type { VolumeBackend } from './backend.js'
import { VolumeBackendError, type BackendCapacity } from '../../contracts/host/volume.js'
import { ExportManager } from './exports/export-manager.js'
import { exportSpecOf } from './exports/qsd-command.js'
import { convertInto, convertToFile, nbdBlockdev, removeDeadScratch, withPskDir, withScratchDir } from './qemu-img.js'
import type { ControllerPlace, PlaceImages, PlaceSource, RawSource, RawTarget, WantedExport } from '../../contracts/host/storage-place.js'

export interface LocalPlaceOptions {
  location: string
  backends: Map<string, VolumeBackend>
  exports: ExportManager
  address: string
  /** Scratch space for image bytes on their way in or out (next to the volumes, same filesystem). */
  scratchDir: string
  /** Image bytes by id (the image service's blob store). */
  images: PlaceImages
  /** The exports this place should serve (the store's truth). */
  wanted: () => Promise<WantedExport[]>
  /** Records where clients connect. */
  reportAddress: (address: string) => Promise<void>
}

export class LocalPlace implements ControllerPlace {
  readonly location: string

  constructor(private readonly options: LocalPlaceOptions) {
    this.location = options.location
  }

  /** Throws for a backend this place lacks; every call below is async, so that reaches its caller as a rejection. */
  backend(name: string): VolumeBackend {
    const backend = this.options.backends.get(name)
    if (!backend) throw new VolumeBackendError(`the ${name} backend is not available at ${this.location}`)
    return backend
  }

  async capacity(backend: string): Promise<BackendCapacity> {
    return this.backend(backend).capacity()
  }

  async create(backend: string, volumeId: string, sizeGb: number): Promise<void> {
    return this.backend(backend).create(volumeId, sizeGb)
  }

  async createFrom(backend: string, volumeId: string, sizeGb: number, source: PlaceSource): Promise<void> {
    if (source.kind !== 'image') return this.backend(backend).createFrom(volumeId, sizeGb, source, this.options.exports.liveCopyOf(source))
    if (await this.backend(backend).createFromImage?.(volumeId, sizeGb, { id: source.imageId, format: source.format })) return
    // The image's bytes are copied out of the blob store first: qemu-img reads files, not streams.
    await withScratchDir(this.options.scratchDir, async (dir) => {
      const path = join(dir, 'image')
      const { stream } = await this.options.images.openBytes(source.imageId)
      await pipeline(stream, createWriteStream(path, { mode: 0o600 }))
      await this.backend(backend).createFrom(volumeId, sizeGb, { kind: 'image', path, format: source.format })
    })
  }

  async extend(backend: string, volumeId: string, sizeGb: number): Promise<void> {
    return this.backend(backend).extend(volumeId, sizeGb)
  }

  async delete(backend: string, volumeId: string): Promise<void> {
    return this.backend(backend).delete(volumeId)
  }

  async createSnapshot(backend: string, snapshotId: string, volumeId: string): Promise<void> {
    return this.backend(backend).createSnapshot(snapshotId, volumeId, this.options.exports.liveCopyOf({ kind: 'volume', volumeId }))
  }

  async deleteSnapshot(backend: string, snapshotId: string, volumeId: string): Promise<void> {
    return this.backend(backend).deleteSnapshot(snapshotId, volumeId)
  }

  async uploadToImage(backend: string, volumeId: string, imageId: string, diskFormat: 'raw' | 'qcow2'): Promise<void> {
    // A repeated call (the task queue may run it twice) finds the image already holding the volume's bytes.
    if ((await this.options.images.getById(imageId))?.status === 'active') return
    await withScratchDir(this.options.scratchDir, async (dir) => {
      const path = join(dir, `image.${diskFormat}`)
      await convertToFile(this.backend(backend).blockdev({ volumeId }), path, diskFormat)
      await this.options.images.completeSnapshotImage(imageId, createReadStream(path, { highWaterMark: 1 << 20 }))
    })
  }

  async withRawCopy<T>(from: RawSource, use: (path: string) => Promise<T>): Promise<T> {
    return withScratchDir(this.options.scratchDir, async (dir) => {
      const path = join(dir, 'backup.raw')
      if (from.kind === 'backend') await convertToFile(this.backend(from.backend).blockdev(from.ref), path, 'raw')
      else await withPskDir(from.source, (object) => convertToFile(nbdBlockdev(from.source), path, 'raw', object))
      return use(path)
    })
  }

  async writeRaw(to: RawTarget, fill: (path: string) => Promise<void>): Promise<void> {
    await withScratchDir(this.options.scratchDir, async (dir) => {
      const file = { path: join(dir, 'restore.raw'), format: 'raw' }
      await fill(file.path)
      if (to.kind === 'backend') await convertInto(file, this.backend(to.backend).blockdev({ volumeId: to.volumeId }))
      else await withPskDir(to.source, (object) => convertInto(file, nbdBlockdev(to.source), object))
    })
  }

  /** Removes the scratch directories of copies whose process died in them (at start). */
  removeDeadScratch(): Promise<void> {
    return removeDeadScratch(this.options.scratchDir)
  }

  async syncExports(): Promise<string> {
    const wanted = await this.options.wanted()
    await this.options.exports.converge(wanted.map((w) => exportSpecOf(w, (ref) => this.backend(w.backend).blockdev(ref), this.options.address)))
    await this.options.reportAddress(this.options.address)
    return this.options.address
  }

}
