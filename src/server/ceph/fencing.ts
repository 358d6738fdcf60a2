/**
 * Fencing before a server's disks are opened on another host (docs/ceph.md, "Host loss"). A host that stopped
 * answering may still be running the guest (a network partition, a hung agent): every client that still has one of
 * the server's RBD images open — its root, ephemeral and swap disks and its Ceph volumes — is blocklisted by the
 * monitors before the guest starts elsewhere, so a host that comes back can never write to a disk that moved (a
 * client still watching an image, or still holding its exclusive lock after its watch timed out). A
 * blocklisted client is one process's instance (address and nonce): a new QEMU on that host is not affected.
 */
import { guestDiskImages, volumeImage } from '../../contracts/host/rbd-names.js'
import type { CephLink } from './connect.js'

/** Long enough for any partition to heal and its stale guest to be let go; an entry names one process only. */
const FENCE_SECONDS = 30 * 24 * 3600

export class DiskFencing {
  constructor(private readonly ceph: CephLink) {}

  /** Blocklists every client that has one of the server's images open; resolves with their addresses. */
  async fence(serverId: string, volumeIds: string[]): Promise<string[]> {
    const { rbd, pools } = this.ceph
    const images = [
      ...Object.values(guestDiskImages(serverId)).map((image) => ({ pool: pools.vms, image })),
      ...volumeIds.map((id) => ({ pool: pools.volumes, image: volumeImage(id) })),
    ]
    const clients = new Set<string>()
    // A client cut off for longer than its watch timeout (30 s) is no watcher any more, but still holds the lock.
    for (const { pool, image } of images) {
      for (const address of [...(await rbd.watchers(pool, image)), ...(await rbd.lockers(pool, image))]) clients.add(address)
    }
    for (const address of clients) await rbd.blocklist(address, FENCE_SECONDS)
    return [...clients]
  }
}
