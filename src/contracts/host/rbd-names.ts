/**
 * RBD image names both sides must agree on, as Nova and Cinder name them (so Ceph tooling and habits apply): a
 * host makes and opens them, the control plane fences them when their host is lost (src/server/ceph/fencing.ts).
 */

/** The protected snapshot of an image in the `images` pool, as Glance names it: volumes and guest disks are its clones. */
export const IMAGE_SNAPSHOT = 'snap'

/** A guest's root, ephemeral and swap disks in the `vms` pool. */
export function guestDiskImages(serverId: string): { root: string; ephemeral: string; swap: string } {
  return { root: `${serverId}_disk`, ephemeral: `${serverId}_disk.eph0`, swap: `${serverId}_disk.swap` }
}

/** A volume in the `volumes` pool. */
export function volumeImage(volumeId: string): string {
  return `volume-${volumeId}`
}
