/**
 * Builds the image and block storage services for the composition root (runtime.ts) in one call: the blob
 * store under the data dir, the image service with its start-up steps (default image, sweep of dead uploads),
 * the volume services with the default type and the control plane's storage place (its exports adopted or
 * started again from the store), and the task handlers the runner must serve.
 */
import { join } from 'node:path'
import type { Logger } from 'pino'
import type { Config } from '../config/settings.js'
import type { SecretBox } from '../crypto/secret-box.js'
import { FsBlobStore } from '../blobs/fs-blob-store.js'
import type { BlobStore } from '../blobs/blob-store.js'
import { FallbackBlobStore } from '../blobs/fallback-blob-store.js'
import { RbdBlobStore } from '../blobs/rbd-blob-store.js'
import type { CephLink } from '../ceph/connect.js'
import { DiskFencing } from '../ceph/fencing.js'
import { HostCephUsers } from '../ceph/host-users.js'
import { CEPH_VOLUME_TYPE, DEFAULT_VOLUME_TYPE } from './model.js'
import { AgentDriver } from '../hosts/agent-driver.js'
import type { DriverRegistry } from '../hosts/driver-registry.js'
import { ensureDefaultImage } from '../image/default-image.js'
import { ImageService } from '../image/service.js'
import type { Store } from '../storage/store.js'
import type { TaskQueue } from '../tasks/queue.js'
import type { TaskHandler } from '../tasks/runner.js'
import { controllerPlace } from '../all-in-one/controller-place.js'
import { StoragePlaces } from './places/registry.js'
import { createVolumeServices, type VolumeServices } from './services.js'
import type { AttachedVolumeHooks } from './worker.js'

export interface ImageAndVolume {
  deps: { blobs: BlobStore; images: ImageService; volumeServices: VolumeServices; hostCeph: HostCephUsers | undefined; fencing: DiskFencing | undefined }
  handlers: Map<string, TaskHandler>
  /** Lets the services wake the runner after they enqueue work (the runner is built after them). */
  attachRunner(runner: { wake(): void }): void
  /** The conductor's drivers (storage hosts' agents) and compute's part of online extends, once they exist. */
  attachCompute(drivers: DriverRegistry, hooks: AttachedVolumeHooks): void
  /** Adopts or restarts the control plane's volume exports (after the HTTP server listens), then every 30 s. */
  start(): Promise<void>
  /** Stops the periodic check (the exports themselves run on: they outlive pcc-server). */
  stop(): void
}

/** How often the control plane checks its exports against the store (a daemon that died is started again). */
const EXPORT_CHECK_MS = 30_000

/** `ceph`: the cluster connectCeph checked (undefined without PCC_CEPH_CONF). */
export async function setUpImageAndVolume(options: { config: Config; ceph: CephLink | undefined; store: Store; queue: TaskQueue; box: SecretBox; adminProjectId: string; logger: Logger }): Promise<ImageAndVolume> {
  const { config, ceph, store, queue } = options
  const files = new FsBlobStore(join(config.dataDir, 'blobs'))
  const blobs = ceph ? new FallbackBlobStore(new RbdBlobStore(ceph.rbd, ceph.pools.images), files) : files
  const images = new ImageService(store, blobs, { maxImageBytes: config.imageMaxBytes })
  await ensureDefaultImage(store, blobs, options.adminProjectId)
  await images.sweepStaleUploads()
  let runner: { wake(): void } | undefined
  let drivers: DriverRegistry | undefined
  let timer: NodeJS.Timeout | undefined
  const controller = controllerPlace({
    dataDir: config.dataDir,
    address: config.volumeExportAddress,
    store,
    box: options.box,
    images,
    ceph,
  })
  const places = new StoragePlaces(controller, (hostId) => {
    const driver = drivers?.get(hostId)
    return driver instanceof AgentDriver ? driver : undefined
  }, store.db)
  const volumeServices = createVolumeServices(
    store,
    queue,
    images,
    { box: options.box, places, blobs, ports: config.volumeExportPorts, downAfterMs: config.hostDownAfterSeconds * 1000, cephVolumesPool: ceph?.pools.volumes },
    { wake: () => runner?.wake(), defaultVolumeType: ceph ? CEPH_VOLUME_TYPE : DEFAULT_VOLUME_TYPE },
  )
  await volumeServices.volumeTypes.ensureDefault()
  return {
    deps: { blobs, images, volumeServices, hostCeph: ceph && new HostCephUsers(ceph, store.db, options.box), fencing: ceph && new DiskFencing(ceph) },
    handlers: volumeServices.handlers(),
    attachRunner: (r) => {
      runner = r
    },
    attachCompute: (registry, hooks) => {
      drivers = registry
      volumeServices.worker.useCompute(hooks)
    },
    start: async () => {
      await controller.backend('file').check().catch((err: Error) => options.logger.warn({ err }, 'the file volume backend cannot work here'))
      await controller.removeDeadScratch().catch((err: Error) => options.logger.warn({ err }, 'the scratch space of interrupted volume copies could not be cleaned'))
      const sync = () => controller.syncExports().catch((err: Error) => options.logger.error({ err }, 'the control plane could not restore its volume exports'))
      await sync()
      timer = setInterval(() => void sync(), EXPORT_CHECK_MS)
      timer.unref()
    },
    stop: () => clearInterval(timer),
  }
}
