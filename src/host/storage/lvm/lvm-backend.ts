/**
 * The LVM backend, as Cinder's reference driver lays it out: volume group `cinder-volumes` (configurable), one
 * logical volume `volume-<id>` per volume and `_snapshot-<id>` per snapshot (an LVM snapshot of the volume's LV,
 * as large as its origin so it never fills up). Thick LVs: a new LV may hold whatever the disk held before, so a
 * blank volume is zeroed when created (BLKZEROOUT, which a thin or discard-capable disk does without writing).
 *
 * A copy into a new LV (clone, image, another backend's export) is tagged `pcc-partial` until it is complete,
 * so a copy interrupted by a crash is made again rather than taken for done.
 *
 * Needs the kernel's device-mapper and LVM's tools; `check()` names what is missing.
 */
import { checkId, type VolumeBackend } from '../backend.js'
import { GIB, VolumeBackendError, type BackendCapacity, type BlockdevSpec, type ByteSource, type VolumeRef } from '../../../contracts/host/volume.js'
import { checkImage, convertInto, nbdBlockdev, nodeSize, run, withPskDir } from '../qemu-img.js'

export const DEFAULT_VOLUME_GROUP = 'cinder-volumes'
const PARTIAL_TAG = 'pcc-partial'

export class LvmBackend implements VolumeBackend {
  readonly name = 'lvm'

  constructor(readonly volumeGroup: string = DEFAULT_VOLUME_GROUP) {
    if (!/^[A-Za-z0-9+_.-]+$/.test(volumeGroup)) throw new VolumeBackendError(`invalid volume group name ${JSON.stringify(volumeGroup)}`)
  }

  private lvName(ref: VolumeRef): string {
    return 'volumeId' in ref ? `volume-${checkId(ref.volumeId)}` : `_snapshot-${checkId(ref.snapshotId)}`
  }

  private devicePath(ref: VolumeRef): string {
    return `/dev/${this.volumeGroup}/${this.lvName(ref)}`
  }

  async check(): Promise<void> {
    await deviceMapperAvailable()
    await run('vgs', ['--noheadings', '-o', 'vg_name', this.volumeGroup]).catch((err: Error) => {
      throw new VolumeBackendError(`volume group ${this.volumeGroup} is not usable: ${err.message}`)
    })
  }

  async capacity(): Promise<BackendCapacity> {
    const out = await run('vgs', ['--noheadings', '--units', 'b', '--nosuffix', '-o', 'vg_size,vg_free', this.volumeGroup])
    const [size, free] = out.trim().split(/\s+/).map(Number)
    return { totalGb: Math.floor(size / GIB), freeGb: Math.floor(free / GIB) }
  }

  /** The LV's size and tags, or undefined when there is no such LV. */
  private async lv(ref: VolumeRef): Promise<{ bytes: number; tags: string[] } | undefined> {
    const out = await run('lvs', ['--noheadings', '--units', 'b', '--nosuffix', '-o', 'lv_size,lv_tags', `${this.volumeGroup}/${this.lvName(ref)}`]).catch(() => undefined)
    if (out === undefined || out.trim() === '') return undefined
    const [size, tags] = out.trim().split(/\s+/)
    return { bytes: Number(size), tags: tags ? tags.split(',') : [] }
  }

  async size(ref: VolumeRef): Promise<number | undefined> {
    return (await this.lv(ref))?.bytes
  }

  blockdev(ref: VolumeRef): BlockdevSpec {
    const readOnly = 'snapshotId' in ref ? { 'read-only': true } : {}
    return { driver: 'raw', ...readOnly, file: { driver: 'host_device', filename: this.devicePath(ref), ...readOnly } }
  }

  async create(volumeId: string, sizeGb: number): Promise<void> {
    await this.place({ volumeId }, sizeGb, async () => {})
  }

  async createFrom(volumeId: string, sizeGb: number, source: ByteSource): Promise<void> {
    const maxBytes = sizeGb * GIB
    const target = this.blockdev({ volumeId })
    await this.place({ volumeId }, sizeGb, async () => {
      switch (source.kind) {
        case 'volume':
        case 'snapshot': {
          const ref = source.kind === 'volume' ? { volumeId: source.volumeId } : { snapshotId: source.snapshotId, snapshotOf: source.volumeId }
          const bytes = await this.size(ref)
          if (bytes === undefined) throw new VolumeBackendError(`the source ${source.kind} ${'volumeId' in ref ? ref.volumeId : ref.snapshotId} does not exist in volume group ${this.volumeGroup}`)
          if (bytes > maxBytes) throw new VolumeBackendError(`the source ${source.kind} (${bytes} bytes) is larger than the new volume (${maxBytes} bytes)`)
          await convertInto({ blockdev: this.blockdev(ref) }, target)
          return
        }
        case 'image':
          await checkImage(source.path, source.format, maxBytes)
          await convertInto({ path: source.path, format: source.format }, target)
          return
        case 'nbd':
          await withPskDir(source.source, async (object) => {
            const bytes = await nodeSize(nbdBlockdev(source.source), object)
            if (bytes > maxBytes) throw new VolumeBackendError(`the source volume (${bytes} bytes) is larger than the new volume (${maxBytes} bytes)`)
            await convertInto({ blockdev: nbdBlockdev(source.source), object }, target)
          })
      }
    })
  }

  /**
   * Creates the LV (tagged partial) and zeroes it, so nothing of what the disk held before is ever read (the
   * part of a larger LV after a copied source included); lets `fill` write it, then drops the tag. A complete
   * LV is left alone.
   */
  private async place(ref: { volumeId: string }, sizeGb: number, fill: () => Promise<void>): Promise<void> {
    const existing = await this.lv(ref)
    if (existing && !existing.tags.includes(PARTIAL_TAG)) return
    const name = `${this.volumeGroup}/${this.lvName(ref)}`
    if (!existing) await run('lvcreate', ['--yes', '--wipesignatures', 'y', '--addtag', PARTIAL_TAG, '-n', this.lvName(ref), '-L', `${sizeGb}g`, this.volumeGroup])
    await run('blkdiscard', ['--zeroout', this.devicePath(ref)], 3_600_000)
    await fill()
    await run('lvchange', ['--deltag', PARTIAL_TAG, name])
  }

  async extend(volumeId: string, sizeGb: number): Promise<void> {
    const current = await this.size({ volumeId })
    if (current === undefined) throw new VolumeBackendError(`volume ${volumeId} does not exist in volume group ${this.volumeGroup}`)
    if (current > sizeGb * GIB) throw new VolumeBackendError(`volume ${volumeId} is larger (${current} bytes) than ${sizeGb} GiB: volumes never shrink`)
    if (current === sizeGb * GIB) return
    await run('lvextend', ['-L', `${sizeGb}g`, `${this.volumeGroup}/${this.lvName({ volumeId })}`])
  }

  async delete(volumeId: string): Promise<void> {
    if (!(await this.lv({ volumeId }))) return
    await run('lvremove', ['--yes', `${this.volumeGroup}/${this.lvName({ volumeId })}`])
  }

  async createSnapshot(snapshotId: string, volumeId: string): Promise<void> {
    const ref = { snapshotId, snapshotOf: volumeId }
    if (await this.lv(ref)) return
    const origin = await this.size({ volumeId })
    if (origin === undefined) throw new VolumeBackendError(`volume ${volumeId} does not exist in volume group ${this.volumeGroup}`)
    await run('lvcreate', ['--yes', '--snapshot', '--permission', 'r', '-n', this.lvName(ref), '-L', `${Math.ceil(origin / GIB)}g`, `${this.volumeGroup}/${this.lvName({ volumeId })}`])
  }

  async deleteSnapshot(snapshotId: string, volumeId: string): Promise<void> {
    const ref = { snapshotId, snapshotOf: volumeId }
    if (!(await this.lv(ref))) return
    await run('lvremove', ['--yes', `${this.volumeGroup}/${this.lvName(ref)}`])
  }
}

/** Resolves when the running kernel has device-mapper (`dmsetup version` then reports the driver's version). */
export async function deviceMapperAvailable(): Promise<void> {
  const out = await run('dmsetup', ['version']).catch((err: Error) => err.message)
  if (/not installed/.test(out)) throw new VolumeBackendError('dmsetup is not installed (Debian package dmsetup, with lvm2)')
  if (!/Driver version/.test(out)) throw new VolumeBackendError('device-mapper is not available in the running kernel (dmsetup cannot reach its driver)')
}
