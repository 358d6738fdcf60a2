/**
 * The seam to the image service for imageRef: whether an image may be booted, with the sizes the flavor checks
 * need. Snapshot images (createImage, shelve) are made in server-images.ts.
 */
import type { ImageService } from '../image/service.js'
import type { Visibility } from '../policy/rules.js'

export interface BootImage {
  id: string
  status: 'active' | string
  minDiskGb: number
  minRamMb: number
  /** Free-form properties (hw_*, os_type, img_config_drive: the guest's hardware, checked at create). */
  properties: Record<string, string>
}

export interface ImageLookup {
  /** The image if the project may boot it; 400 "Can not find requested image" / "Image X is not active." otherwise. */
  find(imageId: string, projectId: string, visibility: Visibility): Promise<BootImage | undefined>
}

export function imageServiceLookup(service: Pick<ImageService, 'getVisibleImage'>): ImageLookup {
  return {
    find: async (imageId, projectId, visibility) => {
      const image = await service.getVisibleImage(projectId, visibility, imageId)
      return { id: image.id, status: image.status, minDiskGb: image.minDisk, minRamMb: image.minRam, properties: image.properties }
    },
  }
}
