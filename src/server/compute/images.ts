/**
 * The seam to the image service. The compute API asks it whether an image may be booted; until the image
 * service (src/server/image/service.ts, built separately) is wired in, every well-formed UUID is accepted as
 * an active image without size constraints and snapshots get an id but no record. Replace `acceptAnyImage` in
 * server-routes by the real image service.
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
  find(imageId: string, projectId: string): Promise<BootImage | undefined>
  /**
   * Records a `queued` snapshot image for createImage/shelve before the API answers, as Nova does (clients GET the
   * image right after the 202); the conductor uploads its data later. Returns the new image id.
   */
  reserveSnapshot(request: { projectId: string; name: string; metadata: Record<string, string>; serverId: string }): Promise<string>
}

export const acceptAnyImage: ImageLookup = {
  find: async (id) => ({ id, status: 'active', minDiskGb: 0, minRamMb: 0 }),
  reserveSnapshot: async () => randomUUID(),
}
