/**
 * Where a guest's root, ephemeral and swap disks live, chosen per host (Nova's `images_type`, docs/qemu.md "Images
 * and disks"): `qcow2` keeps them as files in the instance directory (guest-disks.ts), `rbd` as RBD images in the
 * Ceph `vms` pool (rbd-disks.ts). The config drive, the rescue disk and the saved memory stay files either way.
 *
 * A layout whose disks are `shared` outlives its host: cold and live migration and evacuation move no disk bytes,
 * and a host letting go of a guest (`forget`) keeps them. Only `remove` (the server is deleted) deletes them.
 */
import type { GuestSpec, ImagesType, SnapshotData } from '../../../contracts/host/compute-driver.js'
import type { PlannedDisk } from './command-line.js'
import type { InstancePaths } from './host-paths.js'
import type { QmpClient } from './qmp.js'

export type GuestDiskSpec = Omit<GuestSpec, 'configDrive'>

/** Runs QMP commands on the guest's monitor while it runs (a live copy). */
export type Monitor = <T>(fn: (q: QmpClient) => Promise<T>) => Promise<T>

export interface DiskLayout {
  /** Reported in the host's heartbeat facts (`images_type`). */
  readonly type: ImagesType
  readonly shared: boolean
  /** The root (unless booted from a volume), ephemeral and swap disks the guest has, as block nodes. */
  planned(p: InstancePaths, spec: GuestDiskSpec, bus: PlannedDisk['bus']): PlannedDisk[]
  hasRoot(p: InstancePaths, spec: GuestDiskSpec): boolean
  /** The root disk from the image, grown to the flavor; an existing one is kept (a repeated spawn, an evacuation). */
  ensureRoot(p: InstancePaths, spec: GuestDiskSpec): Promise<void>
  /** The flavor's ephemeral and swap disks, made when missing; a swap of another size is made again. */
  ensureFlavorDisks(p: InstancePaths, spec: GuestDiskSpec, previousSwapMb?: number): Promise<void>
  rootSize(p: InstancePaths, serverId: string): Promise<number>
  /** Grows the root disk to the flavor's size (0: as it is); shrinking is refused. */
  growRoot(p: InstancePaths, serverId: string, flavorDiskGb: number): Promise<void>
  /** Root and ephemeral disks go (a rebuild makes them again). */
  removeForRebuild(p: InstancePaths, serverId: string): Promise<void>
  /** Every disk of the guest goes: the server is deleted (the instance directory goes with the driver's teardown). */
  remove(p: InstancePaths, serverId: string): Promise<void>
  /**
   * The root disk as an image: a point-in-time copy, live when `monitor` is given. `fixed` runs as soon as the
   * copy's point in time is set (a live copy's job started), before the bytes are all copied: the guest, frozen
   * for it, may go on.
   */
  snapshot(p: InstancePaths, serverId: string, monitor?: Monitor, fixed?: () => Promise<void>): Promise<SnapshotData>
  /** Source of a resize or cold migration (guest stopped): keeps what a revert needs, sends what the destination needs. */
  sendForMove(p: InstancePaths, serverId: string, toSameHost: boolean): Promise<void>
  /** Destination of a cold migration: the disks the source sent (or, shared, found where they are). */
  receiveForMove(p: InstancePaths, spec: GuestDiskSpec): Promise<void>
  /** A revert, back where the guest was: the disks as they were before, when the flavor's root is smaller than now. */
  revertMove(p: InstancePaths, serverId: string, flavorDiskGb: number): Promise<void>
  /** A confirmed move: what a revert would have needed goes. */
  confirmMove(p: InstancePaths, serverId: string): Promise<void>
}
