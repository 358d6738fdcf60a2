/**
 * The file backend: each volume is a sparse raw file `volume-<id>` in one directory (the control plane's
 * `<data-dir>/volumes`, or `<root>/var/lib/pcc/volumes` on a storage host), each snapshot a sparse copy
 * `snapshot-<id>` beside it. Raw, not qcow2: the same bytes an LVM or RBD volume holds, so copies between
 * backends need no conversion, and growing a volume is a truncate.
 *
 * Files appear under their final name only once complete (written as `.part`, then renamed), so a copy
 * interrupted by a crash is started again rather than taken for done.
 */
import { statfsSync } from 'node:fs'
import { mkdir, open, rename, rm, stat, truncate } from 'node:fs/promises'
import { join } from 'node:path'
import { checkId, type VolumeBackend } from '../backend.js'
import { GIB, VolumeBackendError, type BackendCapacity, type BlockdevSpec, type ByteSource, type LiveCopy, type VolumeRef } from '../../../contracts/host/volume.js'
import { checkImage, convertInto, nbdBlockdev, nodeSize, run, withPskDir } from '../qemu-img.js'

export class FileBackend implements VolumeBackend {
  readonly name = 'file'

  constructor(readonly dir: string) {}

  private pathOf(ref: VolumeRef): string {
    return 'volumeId' in ref ? join(this.dir, `volume-${checkId(ref.volumeId)}`) : join(this.dir, `snapshot-${checkId(ref.snapshotId)}`)
  }

  async check(): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    await run('qemu-img', ['--version'])
  }

  async capacity(): Promise<BackendCapacity> {
    await mkdir(this.dir, { recursive: true })
    const fs = statfsSync(this.dir)
    return { totalGb: Math.floor((fs.blocks * fs.bsize) / GIB), freeGb: Math.floor((fs.bavail * fs.bsize) / GIB) }
  }

  async size(ref: VolumeRef): Promise<number | undefined> {
    try {
      return (await stat(this.pathOf(ref))).size
    } catch {
      return undefined
    }
  }

  blockdev(ref: VolumeRef): BlockdevSpec {
    const readOnly = 'snapshotId' in ref ? { 'read-only': true } : {}
    return { driver: 'raw', ...readOnly, file: { driver: 'file', filename: this.pathOf(ref), ...readOnly } }
  }

  async create(volumeId: string, sizeGb: number): Promise<void> {
    await this.place(this.pathOf({ volumeId }), sizeGb, async () => {})
  }

  async createFrom(volumeId: string, sizeGb: number, source: ByteSource, live?: LiveCopy): Promise<void> {
    const maxBytes = sizeGb * GIB
    await this.place(this.pathOf({ volumeId }), sizeGb, async (part) => {
      switch (source.kind) {
        case 'volume':
        case 'snapshot': {
          const ref = source.kind === 'volume' ? { volumeId: source.volumeId } : { snapshotId: source.snapshotId, snapshotOf: source.volumeId }
          const from = this.pathOf(ref)
          const bytes = await this.size(ref)
          if (bytes === undefined) throw new VolumeBackendError(`the source ${source.kind} ${'volumeId' in ref ? ref.volumeId : ref.snapshotId} does not exist on this backend`)
          if (bytes > maxBytes) throw new VolumeBackendError(`the source ${source.kind} (${bytes} bytes) is larger than the new volume (${maxBytes} bytes)`)
          // An attached source is copied by its daemon as of one moment, into a copy of its own size (grown after).
          if (source.kind === 'volume' && live) {
            await truncate(part, bytes)
            if (await live(this.fileNode(part))) return
          }
          // Reflinked where the filesystem can (btrfs, XFS), a sparse copy elsewhere.
          await run('cp', ['--reflink=auto', '--sparse=always', from, part], 3_600_000)
          return
        }
        case 'image':
          await checkImage(source.path, source.format, maxBytes)
          await convertInto({ path: source.path, format: source.format }, this.fileNode(part))
          return
        case 'nbd':
          await withPskDir(source.source, async (object) => {
            const bytes = await nodeSize(nbdBlockdev(source.source), object)
            if (bytes > maxBytes) throw new VolumeBackendError(`the source volume (${bytes} bytes) is larger than the new volume (${maxBytes} bytes)`)
            await convertInto({ blockdev: nbdBlockdev(source.source), object }, this.fileNode(part))
          })
      }
    })
  }

  private fileNode(path: string): BlockdevSpec {
    return { driver: 'raw', file: { driver: 'file', filename: path } }
  }

  /**
   * Makes `path` exist at `sizeGb`: nothing to do when it already exists (a repeated call); otherwise `fill`
   * writes a `.part` file that is then grown to the size and renamed into place.
   */
  private async place(path: string, sizeGb: number, fill: (part: string) => Promise<void>): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    if (await exists(path)) return
    const part = `${path}.part`
    await rm(part, { force: true })
    try {
      await growTo(part, sizeGb * GIB, 'wx')
      await fill(part)
      // A copy by cp leaves the source's size: grow it back to the volume's.
      await growTo(part, sizeGb * GIB, 'r+')
      await rename(part, path)
    } catch (err) {
      await rm(part, { force: true })
      throw err
    }
  }

  async extend(volumeId: string, sizeGb: number): Promise<void> {
    const path = this.pathOf({ volumeId })
    const current = await this.size({ volumeId })
    if (current === undefined) throw new VolumeBackendError(`volume ${volumeId} does not exist on this backend`)
    if (current > sizeGb * GIB) throw new VolumeBackendError(`volume ${volumeId} is larger (${current} bytes) than ${sizeGb} GiB: volumes never shrink`)
    if (current === sizeGb * GIB) return
    const handle = await open(path, 'r+')
    try {
      await handle.truncate(sizeGb * GIB)
    } finally {
      await handle.close()
    }
  }

  async delete(volumeId: string): Promise<void> {
    await rm(this.pathOf({ volumeId }), { force: true })
    await rm(`${this.pathOf({ volumeId })}.part`, { force: true })
  }

  /** A copy of the file: through the export daemon while the volume is attached (point in time), else `cp`. */
  async createSnapshot(snapshotId: string, volumeId: string, live?: LiveCopy): Promise<void> {
    const from = this.pathOf({ volumeId })
    const bytes = await this.size({ volumeId })
    if (bytes === undefined) throw new VolumeBackendError(`volume ${volumeId} does not exist on this backend`)
    await this.place(this.pathOf({ snapshotId, snapshotOf: volumeId }), Math.ceil(bytes / GIB), async (part) => {
      if (live && (await live(this.fileNode(part)))) return
      await run('cp', ['--reflink=auto', '--sparse=always', from, part], 3_600_000)
    })
  }

  async deleteSnapshot(snapshotId: string, volumeId: string): Promise<void> {
    const path = this.pathOf({ snapshotId, snapshotOf: volumeId })
    await rm(path, { force: true })
    await rm(`${path}.part`, { force: true })
  }
}

/** Opens (creating with 'wx') a file, grows it to `bytes` when smaller, and syncs it. */
async function growTo(path: string, bytes: number, flags: 'wx' | 'r+'): Promise<void> {
  const handle = await open(path, flags, 0o600)
  try {
    if ((await handle.stat()).size < bytes) await handle.truncate(bytes)
    await handle.sync()
  } finally {
    await handle.close()
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path)
    return true
  } catch {
    return false
  }
}
