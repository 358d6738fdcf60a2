/**
 * A guest's disk files, as Nova's libvirt driver lays them out (docs/qemu.md, "Images and disks"): the root disk is a qcow2 overlay
 * on the cached image, grown to the flavor's root size (0: the image's own size); the first ephemeral disk
 * (`disk.local`) is formatted ext4 with label `ephemeral0`; swap (`disk.swap`) carries a swap signature. Ephemeral
 * and swap are formatted as sparse raw files (no loop mount needed) and kept as qcow2 so they cost only what they
 * hold, also when they travel between hosts.
 */
import { existsSync, rmSync } from 'node:fs'
import { DriverError, type GuestImageRef, type GuestSpec } from '../../../contracts/host/compute-driver.js'
import type { CachedImage, ImageCache } from './image-cache.js'
import type { InstancePaths } from './host-paths.js'
import { qemuImg, tool } from './qemu-img.js'

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
export async function ensureRootDisk(paths: InstancePaths, spec: GuestSpec, cache: ImageCache): Promise<void> {
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
  const raw = `${target}.raw`
  try {
    await qemuImg.blank(raw, 'raw', bytes)
    await format(raw)
    await qemuImg.convert(raw, 'raw', target, 'qcow2')
  } catch (err) {
    rmSync(target, { force: true })
    throw err
  } finally {
    rmSync(raw, { force: true })
  }
}

/** Ephemeral and swap disks of the flavor, created when missing; a swap of another size is made again. */
export async function ensureFlavorDisks(paths: InstancePaths, spec: GuestSpec, previousSwapMb?: number): Promise<void> {
  const { ephemeral, swap } = spec.flavor
  if (ephemeral > 0 && !existsSync(paths.ephemeral)) {
    await formattedDisk(paths.ephemeral, ephemeral * GIB, (raw) => tool('mkfs.ext4', ['-q', '-F', '-L', 'ephemeral0', '-E', 'lazy_itable_init=1,lazy_journal_init=1', raw], 'formatting the ephemeral disk'))
  }
  if (previousSwapMb !== undefined && previousSwapMb !== swap) rmSync(paths.swap, { force: true })
  if (swap > 0 && !existsSync(paths.swap)) {
    await formattedDisk(paths.swap, swap * MIB, (raw) => tool('mkswap', ['-L', 'swap0', raw], 'formatting the swap disk'))
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
