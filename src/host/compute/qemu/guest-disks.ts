/**
 * A guest's disk files, as Nova's libvirt driver lays them out (docs/qemu.md, "Images and disks"): the root disk is a qcow2 overlay
 * on the cached image, grown to the flavor's root size (0: the image's own size); the first ephemeral disk
 * (`disk.local`) is formatted ext4 with label `ephemeral0`; swap (`disk.swap`) carries a swap signature. Ephemeral
 * and swap are formatted as sparse raw files (no loop mount needed) and kept as qcow2 so they cost only what they
 * hold, also when they travel between hosts.
 */
import { execFile } from 'node:child_process'
import { createReadStream, createWriteStream, existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs'
import type { Readable } from 'node:stream'
import { finished, pipeline } from 'node:stream/promises'
import { promisify } from 'node:util'
import { DriverError, type GuestImageRef, type SnapshotData } from '../../../contracts/host/compute-driver.js'
import type { PlannedDisk } from './command-line.js'
import type { DiskLayout, GuestDiskSpec, Monitor } from './disk-layout.js'
import type { CachedImage, ImageCache } from './image-cache.js'
import type { InstancePaths } from './host-paths.js'
import { qemuImg, tool } from './qemu-img.js'

const exec = promisify(execFile)

/** Where a cold migration's disks travel: through the control plane (hosts accept no inbound connections). */
export interface DiskTransfers {
  upload(serverId: string, name: string, data: Readable): Promise<void>
  download(serverId: string, name: string): Promise<Readable>
}

export const GIB = 1024 ** 3
export const MIB = 1024 ** 2

/** The root disk size for a flavor and an image: the flavor's root GiB, or the image's own size for 0. */
export function rootSize(flavorDiskGb: number, image: CachedImage): number {
  if (flavorDiskGb === 0) return image.virtualSize
  const size = flavorDiskGb * GIB
  if (size < image.virtualSize) {
    throw new DriverError(`Flavor's disk is too small for requested image. Flavor disk is ${size} bytes, image is ${image.virtualSize} bytes.`, 400)
  }
  return size
}

/** A disk image to boot from: fetched (once per host) and refused if it is a kernel or ramdisk file. */
export async function bootImage(cache: ImageCache, image: GuestImageRef): Promise<CachedImage> {
  const cached = await cache.get(image)
  if (cached.format === 'file') throw new DriverError(`image ${image.id} (disk_format ${image.diskFormat}) is not a disk: it cannot be a root disk`, 400)
  return cached
}

/** Creates the root overlay unless it exists (a repeated spawn keeps the guest's disk). */
export async function ensureRootDisk(paths: InstancePaths, spec: GuestDiskSpec, cache: ImageCache): Promise<void> {
  if (existsSync(paths.disk)) return
  if (!spec.image) {
    // Booted from a volume (its first): no local root disk (volumes.ts gives the guest the volume).
    if (spec.volumes?.length) return
    throw new DriverError(`server ${spec.serverId} has no image to boot from`, 400)
  }
  const image = await bootImage(cache, spec.image)
  await qemuImg.overlay(paths.disk, image.file, image.format, rootSize(spec.flavor.disk, image))
}

/** A formatted disk of `bytes` at `target` (qcow2): formatted as a sparse raw file, then converted. */
async function formattedDisk(target: string, bytes: number, format: (raw: string) => Promise<unknown>): Promise<void> {
  await formattedRaw(`${target}.raw`, bytes, format, (raw) => qemuImg.convert(raw, 'raw', target, 'qcow2')).catch((err: unknown) => {
    rmSync(target, { force: true })
    throw err
  })
}

/** A sparse raw file of `bytes` at `raw`, formatted, handed to `keep` (which copies it where it belongs), then removed. */
export async function formattedRaw(raw: string, bytes: number, format: (raw: string) => Promise<unknown>, keep: (raw: string) => Promise<unknown>): Promise<void> {
  try {
    await qemuImg.blank(raw, 'raw', bytes)
    await format(raw)
    await keep(raw)
  } finally {
    rmSync(raw, { force: true })
  }
}

/** The ephemeral disk's file system and the swap signature, as Nova's libvirt driver makes them. */
export const FORMAT = {
  ephemeral: (raw: string) => tool('mkfs.ext4', ['-q', '-F', '-L', 'ephemeral0', '-E', 'lazy_itable_init=1,lazy_journal_init=1', raw], 'formatting the ephemeral disk'),
  swap: (raw: string) => tool('mkswap', ['-L', 'swap0', raw], 'formatting the swap disk'),
}

/** Ephemeral and swap disks of the flavor, created when missing; a swap of another size is made again. */
export async function ensureFlavorDisks(paths: InstancePaths, spec: GuestDiskSpec, previousSwapMb?: number): Promise<void> {
  const { ephemeral, swap } = spec.flavor
  if (ephemeral > 0 && !existsSync(paths.ephemeral)) {
    await formattedDisk(paths.ephemeral, ephemeral * GIB, FORMAT.ephemeral)
  }
  if (previousSwapMb !== undefined && previousSwapMb !== swap) rmSync(paths.swap, { force: true })
  if (swap > 0 && !existsSync(paths.swap)) {
    await formattedDisk(paths.swap, swap * MIB, FORMAT.swap)
  }
  if (swap === 0) rmSync(paths.swap, { force: true })
}

/** Grows the root disk to the flavor's size; shrinking is refused (Nova: "Unable to resize disk down"). */
export async function growRootDisk(paths: InstancePaths, flavorDiskGb: number): Promise<void> {
  if (flavorDiskGb === 0 || !existsSync(paths.disk)) return
  const current = Number((await qemuImg.info(paths.disk, 'qcow2'))['virtual-size'])
  const wanted = flavorDiskGb * GIB
  if (wanted < current) throw new DriverError(`Unable to resize disk down: the root disk is ${current} bytes, the flavor's ${wanted}.`, 400)
  if (wanted > current) await qemuImg.resize(paths.disk, 'qcow2', wanted)
}

/**
 * A disk that came from another host (cold migration) is opened only if it points at nothing on this host: no
 * external data file, and no backing file unless it is the root overlay (rebased onto this host's cache next). A
 * qcow2 header names any path, and QEMU would read that path into the guest.
 */
export async function checkReceivedDisk(file: string, overlay: boolean): Promise<void> {
  const info = await qemuImg.info(file, 'qcow2').catch((err: Error) => {
    throw new DriverError(`the disk received from the source host is not a qcow2 disk: ${err.message}`)
  })
  const backing = info['backing-filename'] ?? info['full-backing-filename']
  if (backing && !overlay) throw new DriverError(`the disk received from the source host has a backing file (${String(backing)}): refused`)
  const dataFile = (info['format-specific'] as { data?: Record<string, unknown> } | undefined)?.data?.['data-file']
  if (dataFile) throw new DriverError(`the disk received from the source host has an external data file (${String(dataFile)}): refused`)
}

/** Guest disks as qcow2 files in the instance directory (Nova's `images_type = qcow2`): the root an overlay on the cached image. */
export class FileDisks implements DiskLayout {
  readonly type = 'qcow2'
  readonly shared = false

  constructor(
    private readonly images: ImageCache,
    private readonly transfers?: DiskTransfers,
  ) {}

  planned(p: InstancePaths, _spec: GuestDiskSpec, bus: PlannedDisk['bus']): PlannedDisk[] {
    const disks: PlannedDisk[] = []
    if (existsSync(p.disk)) disks.push({ node: 'root', file: p.disk, format: 'qcow2', bus })
    if (existsSync(p.ephemeral)) disks.push({ node: 'ephemeral0', file: p.ephemeral, format: 'qcow2', bus })
    if (existsSync(p.swap)) disks.push({ node: 'swap', file: p.swap, format: 'qcow2', bus })
    return disks
  }

  hasRoot(p: InstancePaths): boolean {
    return existsSync(p.disk)
  }

  ensureRoot(p: InstancePaths, spec: GuestDiskSpec): Promise<void> {
    return ensureRootDisk(p, spec, this.images)
  }

  ensureFlavorDisks(p: InstancePaths, spec: GuestDiskSpec, previousSwapMb?: number): Promise<void> {
    return ensureFlavorDisks(p, spec, previousSwapMb)
  }

  async rootSize(p: InstancePaths): Promise<number> {
    return Number((await qemuImg.info(p.disk, 'qcow2'))['virtual-size'])
  }

  growRoot(p: InstancePaths, _serverId: string, flavorDiskGb: number): Promise<void> {
    return growRootDisk(p, flavorDiskGb)
  }

  async removeForRebuild(p: InstancePaths): Promise<void> {
    for (const f of [p.disk, p.ephemeral]) rmSync(f, { force: true })
  }

  async remove(p: InstancePaths): Promise<void> {
    for (const f of [p.disk, p.ephemeral, p.swap]) rmSync(f, { force: true })
  }

  /**
   * The root disk as a standalone qcow2 (backing image folded in). A running or paused guest is copied live by
   * QEMU itself (`blockdev-backup`, a point-in-time copy as of the job's start), a stopped one with qemu-img.
   */
  async snapshot(p: InstancePaths, serverId: string, monitor?: Monitor, fixed?: () => Promise<void>): Promise<SnapshotData> {
    if (!existsSync(p.disk)) throw new DriverError(`server ${serverId} has no local root disk to snapshot`, 409)
    const target = `${p.dir}/snapshot-${Date.now()}.qcow2`
    try {
      if (monitor) {
        await qemuImg.blank(target, 'qcow2', await this.rootSize(p))
        await monitor(async (q) => {
          await q.execute('blockdev-add', { driver: 'qcow2', 'node-name': 'snapshot-target', file: { driver: 'file', filename: target } })
          try {
            const since = q.events.length
            await q.execute('blockdev-backup', { 'job-id': 'snapshot', device: 'root', target: 'snapshot-target', sync: 'full' })
            // The copy is of the disk as it was when the job started: a frozen guest may thaw now.
            await fixed?.()
            const done = await q.waitEvent('BLOCK_JOB_COMPLETED', 600_000, { since, match: (e) => e.data?.device === 'snapshot' })
            if (done.data?.error) throw new DriverError(`copying the disk failed: ${String(done.data.error)}`)
          } finally {
            await q.execute('blockdev-del', { 'node-name': 'snapshot-target' }).catch(() => {})
          }
        })
      } else {
        await qemuImg.convert(p.disk, 'qcow2', target, 'qcow2')
      }
    } catch (err) {
      rmSync(target, { force: true })
      throw err
    }
    const data = createReadStream(target)
    void finished(data).catch(() => {}).finally(() => rmSync(target, { force: true }))
    return { diskFormat: 'qcow2', containerFormat: 'bare', data }
  }

  /** A resize on this host keeps a copy of the disks for a revert; a move sends them through the control plane. */
  async sendForMove(p: InstancePaths, serverId: string, toSameHost: boolean): Promise<void> {
    if (toSameHost) {
      const keep = `${p.dir}/resize`
      rmSync(keep, { recursive: true, force: true })
      mkdirSync(keep)
      for (const f of [p.disk, p.ephemeral, p.swap]) if (existsSync(f)) await qemuImg.convert(f, 'qcow2', `${keep}/${f.split('/').pop()}`, 'qcow2').catch(() => exec('cp', ['--reflink=auto', f, keep]))
      return
    }
    if (!this.transfers) throw new DriverError('this host cannot send disks to another host (no transfer channel)')
    for (const [name, file] of [['disk', p.disk], ['disk.local', p.ephemeral]] as const) {
      if (existsSync(file)) await this.transfers.upload(serverId, name, createReadStream(file))
    }
  }

  /** The base image here, the overlay (and ephemeral disk) from there, checked before QEMU ever opens them. */
  async receiveForMove(p: InstancePaths, spec: GuestDiskSpec): Promise<void> {
    if (!this.transfers) throw new DriverError('this host cannot receive disks from another host (no transfer channel)')
    if (!spec.image) throw new DriverError(`server ${spec.serverId} has no image: its disk cannot be rebuilt here`, 400)
    const base = await bootImage(this.images, spec.image)
    for (const [name, file] of [['disk', p.disk], ['disk.local', p.ephemeral]] as const) {
      const data = await this.transfers.download(spec.serverId, name).catch((err: unknown) => {
        if (name === 'disk') throw err
        return undefined
      })
      if (!data) continue
      await pipeline(data, createWriteStream(file))
      await checkReceivedDisk(file, name === 'disk')
    }
    // The overlay names its backing file by the source host's path: point it at this host's cache.
    await qemuImg.rebase(p.disk, base.file, base.format)
  }

  async revertMove(p: InstancePaths, _serverId: string, flavorDiskGb: number): Promise<void> {
    const kept = `${p.dir}/resize`
    if (existsSync(kept) && flavorDiskGb * GIB < (await this.rootSize(p))) {
      for (const f of readdirSync(kept)) renameSync(`${kept}/${f}`, `${p.dir}/${f}`)
    }
  }

  async confirmMove(p: InstancePaths): Promise<void> {
    rmSync(`${p.dir}/resize`, { recursive: true, force: true })
  }
}
