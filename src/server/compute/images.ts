/**
 * The seam to the image service. The compute API asks it whether an image may be booted; until the image
 * service (src/server/image/service.ts, built separately) is wired in, every well-formed UUID is accepted as
 * an active image without size constraints and snapshots get an id but no record. server-routes.ts picks the
 * image service (`deps.images`) automatically once it exists.
 */
import { randomUUID } from 'node:crypto'

export interface BootImage {
  id: string
  status: 'active' | string
  minDiskGb: number
  minRamMb: number
}

export interface ImageLookup {
  /** The image if it exists and the project may see it; undefined otherwise. */
  find(imageId: string, projectId: string, admin: boolean): Promise<BootImage | undefined>
  /**
   * Records a `queued` snapshot image for createImage/shelve before the API answers, as Nova does (clients GET the
   * image right after the 202); the conductor uploads its data later. Returns the new image id.
   */
  reserveSnapshot(request: { projectId: string; name: string; metadata: Record<string, string>; serverId: string }): Promise<string>
}

/** The image service as compute uses it (src/server/image/service.ts, merged separately): structural, so this
 * file compiles with or without it. */
export interface ImageServiceLike {
  /** Throws 400 "Can not find requested image" / "Image X is not active." itself. */
  getVisibleImage(projectId: string, isAdmin: boolean, imageId: string): Promise<{ id: string; status: string; minDisk: number; minRam: number }>
  createSnapshotImage(request: { projectId: string; name: string; properties?: Record<string, string> }): Promise<{ id: string }>
}

export function imageServiceLookup(service: ImageServiceLike): ImageLookup {
  return {
    find: async (imageId, projectId, admin) => {
      const image = await service.getVisibleImage(projectId, admin, imageId)
      return { id: image.id, status: image.status, minDiskGb: image.minDisk, minRamMb: image.minRam }
    },
    reserveSnapshot: async (r) => (await service.createSnapshotImage({ projectId: r.projectId, name: r.name, properties: { ...r.metadata, instance_uuid: r.serverId } })).id,
  }
}

export const acceptAnyImage: ImageLookup = {
  find: async (id) => ({ id, status: 'active', minDiskGb: 0, minRamMb: 0 }),
  reserveSnapshot: async () => randomUUID(),
}
