/**
 * Builds the image and block storage services for the composition root (runtime.ts) in one call: the blob
 * store under the data dir, the image service with its start-up steps (default image, sweep of dead uploads),
 * the volume services with the default type, and the task handlers the runner must serve.
 */
import { join } from 'node:path'
import type { Config } from '../config/settings.js'
import { FsBlobStore } from '../blobs/fs-blob-store.js'
import type { BlobStore } from '../blobs/blob-store.js'
import { ensureDefaultImage } from '../image/default-image.js'
import { ImageService } from '../image/service.js'
import type { Store } from '../storage/store.js'
import type { TaskQueue } from '../tasks/queue.js'
import type { TaskHandler } from '../tasks/runner.js'
import { createVolumeServices, type VolumeServices } from './services.js'

export interface ImageAndVolume {
  deps: { blobs: BlobStore; images: ImageService; volumeServices: VolumeServices }
  handlers: Map<string, TaskHandler>
  /** Lets the services wake the runner after they enqueue work (the runner is built after them). */
  attachRunner(runner: { wake(): void }): void
}

export async function setUpImageAndVolume(options: { config: Config; store: Store; queue: TaskQueue; adminProjectId: string }): Promise<ImageAndVolume> {
  const { config, store, queue } = options
  const blobs = new FsBlobStore(join(config.dataDir, 'blobs'))
  const images = new ImageService(store, blobs, { maxImageBytes: config.imageMaxBytes })
  await ensureDefaultImage(store, blobs, options.adminProjectId)
  await images.sweepStaleUploads()
  let runner: { wake(): void } | undefined
  const volumeServices = createVolumeServices(store, queue, images, { wake: () => runner?.wake() })
  await volumeServices.volumeTypes.ensureDefault()
  return {
    deps: { blobs, images, volumeServices },
    handlers: volumeServices.volumes.handlers(),
    attachRunner: (r) => {
      runner = r
    },
  }
}
