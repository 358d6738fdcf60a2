/** The block storage services, built together by the composition root. */
import type { ImageService } from '../image/service.js'
import type { Store } from '../storage/store.js'
import type { TaskQueue } from '../tasks/queue.js'
import { VolumeService, type VolumeServiceOptions } from './service.js'
import { SnapshotService } from './snapshots.js'
import { VolumeTypeService } from './types.js'

export interface VolumeServices {
  volumes: VolumeService
  snapshots: SnapshotService
  volumeTypes: VolumeTypeService
}

export function createVolumeServices(store: Store, queue: TaskQueue, images: ImageService, options: VolumeServiceOptions = {}): VolumeServices {
  const volumes = new VolumeService(store, queue, images, options)
  return { volumes, snapshots: new SnapshotService(store, queue, volumes, { now: options.now, wake: options.wake }), volumeTypes: new VolumeTypeService(store) }
}
