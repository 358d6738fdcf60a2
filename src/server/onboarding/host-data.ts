/**
 * Bytes a host moves through the control plane, with its host credential (hosts accept no inbound connections):
 *
 * - image downloads for its guests' disks (`GET …/images/{id}/file`),
 * - snapshot uploads into the queued image a createImage or shelve made (`PUT …/images/{id}/file`),
 * - disk transfers of a cold migration or resize: the source puts the guest's disks, the destination gets them
 *   (`PUT`/`GET …/transfers/{server_id}/{disk}`); the conductor drops them once the destination has them.
 *
 * A host may touch only what its guests need: an image that a server it holds (or is about to receive) boots
 * from, or that a command waiting for it names as an image; the kernel or ramdisk such an image names, when the
 * image's owner may see it; the queued image a snapshot command waiting for it is to fill; the transfer of a server
 * it holds (put) or holds a claim for (get). Anything else is 404, as another project's resources are. Commands are
 * matched on `"id":"<image>"` (an image reference's id), not on the id anywhere: image properties and server names
 * are users' strings.
 */
import type { Readable } from 'node:stream'
import { conflict, notFound } from '../../contracts/errors.js'
import { guestDiskImages } from '../../contracts/host/rbd-names.js'
import type { BlobStore } from '../blobs/blob-store.js'
import type { ImageService } from '../image/service.js'
import type { Store } from '../storage/store.js'

/** The disks a cold migration moves (swap is made again on the destination, as Nova does). */
export const TRANSFER_DISKS = ['disk', 'disk.local'] as const

export class HostDataService {
  constructor(
    private readonly store: Store,
    private readonly blobs: BlobStore,
    private readonly images: ImageService,
    private readonly maxBytes: number,
    /** The Ceph pool of guests' disks, when the cloud has Ceph (their snapshots are copied into images inside Ceph). */
    private readonly cephVmsPool?: string,
  ) {}

  /** Whether one of the host's open commands (of `op`, or any) names `value` under `key`. */
  private async commandNames(hostId: string, key: string, value: string, op?: string): Promise<boolean> {
    return (await this.openCommand(hostId, key, value, op)) !== undefined
  }

  /** The arguments of one of the host's open commands (of `op`, or any) that names `value` under `key`. */
  private async openCommand(hostId: string, key: string, value: string, op?: string): Promise<Record<string, unknown> | undefined> {
    const command = await this.store.db
      .selectFrom('host_commands')
      .select('args')
      .where('host_id', '=', hostId)
      .where('status', 'in', ['queued', 'delivered'])
      .$if(op !== undefined, (q) => q.where('op', '=', op!))
      .where('args', 'like', `%${JSON.stringify(key)}:${JSON.stringify(value)}%`)
      .executeTakeFirst()
    return command && (JSON.parse(command.args) as Record<string, unknown>)
  }

  /** Whether `hostId` needs image `imageId`: its servers' or claims' image, one named by its open commands, or their kernel/ramdisk. */
  async mayReadImage(hostId: string, imageId: string, depth = 0): Promise<boolean> {
    const db = this.store.db
    const server = await db
      .selectFrom('servers')
      .select('id')
      .where('deleted', '=', 0)
      .where('image_id', '=', imageId)
      .where((eb) => eb.or([eb('host_id', '=', hostId), eb('id', 'in', eb.selectFrom('allocations').select('server_id').where('host_id', '=', hostId))]))
      .executeTakeFirst()
    if (server) return true
    if (await this.commandNames(hostId, 'id', imageId)) return true
    if (depth > 0) return false
    // A kernel or ramdisk image: allowed when an image the host may read names it and the naming image's owner may
    // see it (anyone may write any id into their image's kernel_id).
    const parents = await db.selectFrom('images').select(['id', 'owner', 'properties']).where('properties', 'like', `%${imageId}%`).execute()
    for (const p of parents) {
      const props = JSON.parse(p.properties) as Record<string, string>
      if (props.kernel_id !== imageId && props.ramdisk_id !== imageId) continue
      if (!p.owner || !(await this.images.getVisibleImage(p.owner, 'project', imageId).then(() => true, () => false))) continue
      if (await this.mayReadImage(hostId, p.id, depth + 1)) return true
    }
    return false
  }

  async openImage(hostId: string, imageId: string): Promise<{ stream: Readable; size: number }> {
    const image = await this.images.getById(imageId)
    if (!image || !image.blobKey || !['active', 'deactivated'].includes(image.status) || !(await this.mayReadImage(hostId, imageId))) {
      throw notFound(`Image ${imageId} is not available to this host.`)
    }
    return this.blobs.open(image.blobKey)
  }

  /**
   * The bytes of a snapshot into the queued image a snapshot command waiting for this host names (not an image
   * whose `instance_uuid` property says so: any project may set that on its own images).
   */
  async storeSnapshot(hostId: string, imageId: string, data: Readable, formats: { diskFormat: string; containerFormat: string }): Promise<void> {
    const image = await this.images.getById(imageId)
    if (!image || image.status !== 'queued' || !(await this.commandNames(hostId, 'imageId', imageId, 'snapshot'))) {
      data.resume()
      throw notFound(`Image ${imageId} is not a snapshot this host can store.`)
    }
    await this.images.completeSnapshotImage(imageId, data, formats)
  }

  /**
   * A snapshot of a guest disk in Ceph into the queued image a snapshot command waiting for this host names: the
   * host names only its RBD snapshot; the disk is the root of the command's server, in the vms pool.
   */
  async storeRbdSnapshot(hostId: string, imageId: string, snapshot: string, formats: { diskFormat: string; containerFormat: string }): Promise<void> {
    const image = await this.images.getById(imageId)
    const command = image?.status === 'queued' ? await this.openCommand(hostId, 'imageId', imageId, 'snapshot') : undefined
    if (!command || typeof command.serverId !== 'string') throw notFound(`Image ${imageId} is not a snapshot this host can store.`)
    if (!this.cephVmsPool) throw conflict('This cloud keeps no guest disks in Ceph: upload the snapshot as bytes.')
    await this.images.completeSnapshotImage(imageId, { pool: this.cephVmsPool, image: guestDiskImages(command.serverId).root, snapshot }, formats)
  }

  async putTransfer(hostId: string, serverId: string, disk: string, data: Readable): Promise<void> {
    const held = await this.store.db.selectFrom('servers').select('id').where('id', '=', serverId).where('host_id', '=', hostId).where('deleted', '=', 0).executeTakeFirst()
    if (!held || !(TRANSFER_DISKS as readonly string[]).includes(disk)) {
      data.resume()
      throw notFound(`Server ${serverId} has no disk ${disk} this host can send.`)
    }
    await this.blobs.put(transferKey(serverId, disk), data, { maxBytes: this.maxBytes })
  }

  async openTransfer(hostId: string, serverId: string, disk: string): Promise<{ stream: Readable; size: number }> {
    const claim = await this.store.db.selectFrom('allocations').select('server_id').where('server_id', '=', serverId).where('host_id', '=', hostId).executeTakeFirst()
    if (!claim || !(TRANSFER_DISKS as readonly string[]).includes(disk) || !(await this.blobs.exists(transferKey(serverId, disk)))) {
      throw notFound(`No disk ${disk} of server ${serverId} is waiting for this host.`)
    }
    return this.blobs.open(transferKey(serverId, disk))
  }

  /** Drops a server's transferred disks (the destination has them, or the move ended). */
  async removeTransfers(serverId: string): Promise<void> {
    for (const disk of TRANSFER_DISKS) await this.blobs.delete(transferKey(serverId, disk))
  }
}

function transferKey(serverId: string, disk: string): string {
  return `transfers/${serverId}/${disk}`
}
