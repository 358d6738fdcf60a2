/**
 * The image and block storage services as compute uses them: server create and actions in the API, and the
 * conductor's build, action and delete paths. Built from the process's dependencies in one place.
 */
import type { ImageService } from '../image/service.js'
import type { HostDataService } from '../onboarding/host-data.js'
import type { SnapshotService } from '../volume/snapshots.js'
import type { VolumeService } from '../volume/service.js'
import type { VolumeServices } from '../volume/services.js'
import type { DiskFencing } from '../ceph/fencing.js'

export interface ComputeStorage {
  images: ImageService
  volumes: VolumeService
  snapshots: SnapshotService
  /** Disks of cold migrations on their way between hosts (dropped once the destination has them). */
  transfers?: Pick<HostDataService, 'removeTransfers'>
  /** With Ceph: cuts a lost host off a server's disks before they are opened elsewhere (src/server/ceph/fencing.ts). */
  fencing?: Pick<DiskFencing, 'fence'>
}

export function computeStorage(deps: { images: ImageService; volumeServices: VolumeServices; hostData?: HostDataService; fencing?: DiskFencing }): ComputeStorage {
  return { images: deps.images, volumes: deps.volumeServices.volumes, snapshots: deps.volumeServices.snapshots, transfers: deps.hostData, fencing: deps.fencing }
}
