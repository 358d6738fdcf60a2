/**
 * The image and block storage services as compute uses them: server create and actions in the API, and the
 * conductor's build, action and delete paths. Built from the process's dependencies in one place.
 */
import type { ImageService } from '../image/service.js'
import type { SnapshotService } from '../volume/snapshots.js'
import type { VolumeService } from '../volume/service.js'
import type { VolumeServices } from '../volume/services.js'

export interface ComputeStorage {
  images: ImageService
  volumes: VolumeService
  snapshots: SnapshotService
}

export function computeStorage(deps: { images: ImageService; volumeServices: VolumeServices }): ComputeStorage {
  return { images: deps.images, volumes: deps.volumeServices.volumes, snapshots: deps.volumeServices.snapshots }
}
