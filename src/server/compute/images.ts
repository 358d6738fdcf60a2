/**
 * The seam to the image service. The compute API asks it whether an image may be booted; until the image
 * service (src/server/image/service.ts, built separately) is wired in, every well-formed UUID is accepted as
 * an active image without size constraints. Replace `acceptAnyImage` in server-routes by the real lookup.
 */
export interface BootImage {
  id: string
  status: 'active' | string
  minDiskGb: number
  minRamMb: number
}

export interface ImageLookup {
  /** The image if it exists and the project may see it; undefined otherwise. */
  find(imageId: string, projectId: string): Promise<BootImage | undefined>
}

export const acceptAnyImage: ImageLookup = {
  find: async (id) => ({ id, status: 'active', minDiskGb: 0, minRamMb: 0 }),
}
