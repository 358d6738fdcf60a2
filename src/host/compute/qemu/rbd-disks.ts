/**
 * Guest disks as RBD images in the Ceph `vms` pool (Nova's `images_type = rbd`, docs/ceph.md "Guest disks"), named as
 * Nova names them: `<server id>_disk`, `<server id>_disk.eph0`, `<server id>_disk.swap`. QEMU opens them through
 * librbd as the host's own cephx user.
 *
 * - Booting clones the image's protected snapshot (`images/<image id>@snap`, where the control plane's image store
 *   keeps it) when the image is raw: no image download to the host, no copy. Another image (qcow2, or one not in
 *   Ceph) is fetched into the host's cache once and written into the pool by qemu-img.
 * - The disks outlive the host: a cold or live migration or an evacuation opens the same images elsewhere.
 * - A resize keeps a snapshot `pcc-resize` of the root until it is confirmed; a revert rolls back to it.
 * - A server snapshot is an RBD snapshot of the root, which the control plane copies into `images` inside Ceph.
 */
import { Readable } from 'node:stream'
import { DriverError, type SnapshotData } from '../../../contracts/host/compute-driver.js'
import { guestDiskImages as names, IMAGE_SNAPSHOT } from '../../../contracts/host/rbd-names.js'
import { CephError, spec as rbdName, type Rbd, type RbdImageInfo } from '../../../lib/ceph/rbd.js'
import type { PlannedDisk } from './command-line.js'
import type { DiskLayout, GuestDiskSpec } from './disk-layout.js'
import { bootImage, FORMAT, formattedRaw, GIB, MIB, rootSize } from './guest-disks.js'
import type { ImageCache } from './image-cache.js'
import type { InstancePaths } from './host-paths.js'
import { tool } from './qemu-img.js'

const RESIZE_SNAP = 'pcc-resize'
const ENOENT = 2
const EEXIST = 17

export interface RbdDisksOptions {
  rbd: Rbd
  pools: { images: string; vms: string }
  images: ImageCache
}

export class RbdDisks implements DiskLayout {
  readonly type = 'rbd'
  readonly shared = true
  private readonly snapshots = new Map<string, RbdImageInfo>()

  constructor(private readonly options: RbdDisksOptions) {}

  private get rbd(): Rbd {
    return this.options.rbd
  }

  private get vms(): string {
    return this.options.pools.vms
  }

  /** The disks follow from the spec (no Ceph call each start): a root unless booted from a volume, the flavor's others. */
  planned(p: InstancePaths, spec: GuestDiskSpec, bus: PlannedDisk['bus']): PlannedDisk[] {
    const n = names(spec.serverId)
    const disk = (node: string, image: string): PlannedDisk => ({ node, file: `rbd:${this.vms}/${image}`, rbd: this.rbd.blockdev(this.vms, image), format: 'raw', bus })
    return [
      ...(this.hasRoot(p, spec) ? [disk('root', n.root)] : []),
      ...(spec.flavor.ephemeral > 0 ? [disk('ephemeral0', n.ephemeral)] : []),
      ...(spec.flavor.swap > 0 ? [disk('swap', n.swap)] : []),
    ]
  }

  /** The protected snapshot a raw image's root disks are cloned from, read once per image (images never change). */
  private async imageSnapshot(imageId: string): Promise<RbdImageInfo | undefined> {
    const known = this.snapshots.get(imageId)
    if (known) return known
    const info = await this.rbd.info(this.options.pools.images, imageId, IMAGE_SNAPSHOT)
    if (info) this.snapshots.set(imageId, info)
    return info
  }

  hasRoot(_p: InstancePaths, spec: GuestDiskSpec): boolean {
    return Boolean(spec.image)
  }

  async ensureRoot(_p: InstancePaths, spec: GuestDiskSpec): Promise<void> {
    const image = spec.image
    if (!image) {
      if (spec.volumes?.length) return
      throw new DriverError(`server ${spec.serverId} has no image to boot from`, 400)
    }
    const root = names(spec.serverId).root
    const source = image.diskFormat === 'raw' ? await this.imageSnapshot(image.id) : undefined
    if (source) {
      const wanted = spec.flavor.disk * GIB
      if (wanted > 0 && wanted < source.size) throw new DriverError(`Flavor's disk is too small for requested image. Flavor disk is ${wanted} bytes, image is ${source.size} bytes.`, 400)
      // Every rbd command is a process that connects to the cluster, so the clone is its own existence check: a
      // repeated spawn finds the root there (EEXIST) and keeps it as it is.
      const cloned = await this.rbd.clone({ pool: this.options.pools.images, image: image.id, snap: IMAGE_SNAPSHOT }, this.vms, root).then(
        () => true,
        (err: unknown) => {
          if (err instanceof CephError && err.errno === EEXIST) return false
          // The image left Ceph since its snapshot was read: forget it and write the image in from the host's cache.
          if (err instanceof CephError && err.errno === ENOENT) return undefined
          throw err
        },
      )
      if (cloned && wanted > source.size) await this.rbd.resize(this.vms, root, wanted)
      if (cloned !== undefined) return
      this.snapshots.delete(image.id)
    }
    if (await this.rbd.info(this.vms, root)) return
    const cached = await bootImage(this.options.images, image)
    const size = rootSize(spec.flavor.disk, cached)
    try {
      await tool('qemu-img', ['convert', '-q', '-f', cached.format, '-O', 'raw', cached.file, this.qemuImgTarget(root)], `writing image ${image.id} into RBD`)
      if (size > cached.virtualSize) await this.rbd.resize(this.vms, root, size)
    } catch (err) {
      await this.rbd.remove(this.vms, root).catch(() => {})
      throw err
    }
  }

  async ensureFlavorDisks(p: InstancePaths, spec: GuestDiskSpec, previousSwapMb?: number): Promise<void> {
    const n = names(spec.serverId)
    const { ephemeral, swap } = spec.flavor
    if (ephemeral > 0 && !(await this.rbd.info(this.vms, n.ephemeral))) await this.formatted(p, n.ephemeral, ephemeral * GIB, FORMAT.ephemeral)
    if ((previousSwapMb !== undefined && previousSwapMb !== swap) || swap === 0) await this.rbd.remove(this.vms, n.swap)
    if (swap > 0 && !(await this.rbd.info(this.vms, n.swap))) await this.formatted(p, n.swap, swap * MIB, FORMAT.swap)
  }

  async rootSize(_p: InstancePaths, serverId: string): Promise<number> {
    const info = await this.rbd.info(this.vms, names(serverId).root)
    if (!info) throw new DriverError(`the root disk of server ${serverId} (${this.vms}/${names(serverId).root}) is not in Ceph`)
    return info.size
  }

  async growRoot(p: InstancePaths, serverId: string, flavorDiskGb: number): Promise<void> {
    if (flavorDiskGb === 0 || !(await this.rbd.info(this.vms, names(serverId).root))) return
    const current = await this.rootSize(p, serverId)
    const wanted = flavorDiskGb * GIB
    if (wanted < current) throw new DriverError(`Unable to resize disk down: the root disk is ${current} bytes, the flavor's ${wanted}.`, 400)
    if (wanted > current) await this.rbd.resize(this.vms, names(serverId).root, wanted)
  }

  async removeForRebuild(_p: InstancePaths, serverId: string): Promise<void> {
    const n = names(serverId)
    for (const image of [n.root, n.ephemeral]) await this.rbd.remove(this.vms, image)
  }

  async remove(_p: InstancePaths, serverId: string): Promise<void> {
    for (const image of Object.values(names(serverId))) await this.rbd.remove(this.vms, image)
  }

  /**
   * An RBD snapshot of the root: copied into the image inside Ceph by the control plane (`inCeph`), or read out as
   * raw bytes. A running guest goes on writing; the snapshot is what its disk held at that instant
   * (crash-consistent, as Nova's without a guest agent).
   */
  async snapshot(p: InstancePaths, serverId: string, _monitor?: unknown, fixed?: () => Promise<void>): Promise<SnapshotData> {
    const root = names(serverId).root
    if (!(await this.rbd.info(this.vms, root))) throw new DriverError(`server ${serverId} has no root disk to snapshot`, 409)
    const snapshot = `snapshot-${Date.now()}`
    await this.rbd.run(['snap', 'create', '--no-progress', rbdName(this.vms, root, snapshot)])
    await fixed?.()
    const release = () => this.rbd.removeSnapshot(this.vms, root, snapshot)
    const rbd = this.rbd
    const vms = this.vms
    const data = Readable.from(
      (async function* () {
        try {
          yield* rbd.exportTo(vms, root, snapshot)
        } finally {
          await release().catch(() => {})
        }
      })(),
      { objectMode: false },
    )
    return { diskFormat: 'raw', containerFormat: 'bare', data, inCeph: { snapshot, release } }
  }

  /** Nothing travels: the destination opens the same images. The root's state before the move is kept for a revert. */
  async sendForMove(_p: InstancePaths, serverId: string): Promise<void> {
    const root = names(serverId).root
    if (!(await this.rbd.info(this.vms, root))) return
    await this.rbd.removeSnapshot(this.vms, root, RESIZE_SNAP)
    await this.rbd.run(['snap', 'create', '--no-progress', rbdName(this.vms, root, RESIZE_SNAP)])
  }

  async receiveForMove(p: InstancePaths, spec: GuestDiskSpec): Promise<void> {
    if (this.hasRoot(p, spec)) await this.rootSize(p, spec.serverId)
  }

  async revertMove(p: InstancePaths, serverId: string, flavorDiskGb: number): Promise<void> {
    const root = names(serverId).root
    if (!(await this.hasSnapshot(root, RESIZE_SNAP)) || flavorDiskGb * GIB >= (await this.rootSize(p, serverId))) return
    await this.rbd.run(['snap', 'rollback', '--no-progress', rbdName(this.vms, root, RESIZE_SNAP)], 3_600_000)
  }

  async confirmMove(_p: InstancePaths, serverId: string): Promise<void> {
    await this.rbd.removeSnapshot(this.vms, names(serverId).root, RESIZE_SNAP)
  }

  private async hasSnapshot(image: string, snap: string): Promise<boolean> {
    try {
      return (await this.rbd.snapshots(this.vms, image)).includes(snap)
    } catch (err) {
      if (err instanceof CephError && err.errno === 2) return false
      throw err
    }
  }

  /** An ephemeral or swap disk: formatted as a sparse raw file in the instance directory, then imported (sparse). */
  private async formatted(p: InstancePaths, image: string, bytes: number, format: (raw: string) => Promise<unknown>): Promise<void> {
    try {
      await formattedRaw(`${p.dir}/${image}.raw`, bytes, format, (file) => this.rbd.run(['import', '--no-progress', file, rbdName(this.vms, image)], 3_600_000))
    } catch (err) {
      await this.rbd.remove(this.vms, image).catch(() => {})
      throw err
    }
  }

  /** qemu-img's name for an RBD image, as this host's user (its conf names its keyring). */
  private qemuImgTarget(image: string): string {
    return `rbd:${this.vms}/${image}:id=${this.rbd.client.user}:conf=${this.rbd.client.conf}`
  }
}
