/** The block storage services, built together by the composition root. */
import type { SecretBox } from '../crypto/secret-box.js'
import type { ImageService } from '../image/service.js'
import type { Store } from '../storage/store.js'
import type { TaskQueue } from '../tasks/queue.js'
import { VolumeConnections } from './connections.js'
import type { PortRange } from './exports.js'
import type { StoragePlaces } from './places/registry.js'
import { QosSpecsService } from './qos-specs.js'
import { VolumeTypeEncryptionService } from './encryption.js'
import { VolumeService, type VolumeServiceOptions } from './service.js'
import { SnapshotService } from './snapshots.js'
import { VolumeTypeService } from './types.js'
import { DefaultTypeService } from './default-types.js'
import { VolumeWorker } from './worker.js'
import { VolumeTransferService } from './transfers.js'
import { CinderAttachActions } from './cinder-attachments.js'
import { GroupTypeService } from './group-types.js'
import { GroupService } from './groups.js'
import { GroupSnapshotService } from './group-snapshots.js'
import { BackupService } from './backups.js'
import { BackupWorker } from './backup-worker.js'
import type { BlobStore } from '../blobs/blob-store.js'
import type { TaskHandler } from '../tasks/runner.js'

export interface VolumeServices {
  volumes: VolumeService
  snapshots: SnapshotService
  volumeTypes: VolumeTypeService
  /** Projects' default volume types (/default-types, 3.62). */
  defaultTypes: DefaultTypeService
  /** Volumes offered to another project (os-volume-transfer, volume-transfers). */
  transfers: VolumeTransferService
  /** Cinder's os-attach / os-detach / os-force_detach records. */
  attachActions: CinderAttachActions
  /** QoS specs and their association with volume types. */
  qosSpecs: QosSpecsService
  /** Generic volume groups: their types, the groups and their snapshots. */
  groupTypes: GroupTypeService
  groups: GroupService
  groupSnapshots: GroupSnapshotService
  /** Volume types' encryption specs. */
  typeEncryption: VolumeTypeEncryptionService
  /** Volume backups (their bytes in the blob store) and the work behind them. */
  backups: BackupService
  backupWorker: BackupWorker
  /** The backend work behind the API (task handlers). */
  worker: VolumeWorker
  /** Every task handler of block storage: the volume worker's and the backup worker's. */
  handlers(): Map<string, TaskHandler>
  /** Attachments' exports and keys (compute and the hypervisor hosts' endpoint). */
  connections: VolumeConnections
  /** Where bytes live: the control plane's place and the storage hosts'. */
  places: StoragePlaces
}

export interface VolumeBackendDeps {
  box: SecretBox
  places: StoragePlaces
  ports: PortRange
  /** A storage host silent for longer gets no new volumes. */
  downAfterMs: number
  /** Where backups keep their chunks (the image store's blob store). */
  blobs: BlobStore
  /** The volumes pool, when Ceph is configured (hypervisors open Ceph volumes there). */
  cephVolumesPool?: string
}

export function createVolumeServices(store: Store, queue: TaskQueue, images: ImageService, backend: VolumeBackendDeps, options: VolumeServiceOptions = {}): VolumeServices {
  const volumes = new VolumeService(store, queue, images, options)
  const worker = new VolumeWorker({ store, box: backend.box, places: backend.places, images, ports: backend.ports, downAfterMs: backend.downAfterMs })
  const connections = new VolumeConnections({ store, box: backend.box, places: backend.places, queue, ports: backend.ports, cephVolumesPool: backend.cephVolumesPool })
  volumes.useBackends(worker, connections, backend.box)
  const snapshots = new SnapshotService(store, queue, volumes, { now: options.now, wake: options.wake })
  const backupWorker = new BackupWorker({ store, places: backend.places, box: backend.box, ports: backend.ports, blobs: backend.blobs, volumes: worker })
  return {
    backups: new BackupService(store, queue, volumes, backend.blobs, { now: options.now, wake: options.wake }),
    backupWorker,
    handlers: () => new Map([...worker.handlers(), ...backupWorker.handlers()]),
    volumes,
    snapshots,
    volumeTypes: new VolumeTypeService(store, options.defaultVolumeType),
    defaultTypes: new DefaultTypeService(store),
    transfers: new VolumeTransferService(store, { now: options.now }),
    attachActions: new CinderAttachActions(store, volumes, { now: options.now }),
    qosSpecs: new QosSpecsService(store),
    groupTypes: new GroupTypeService(store),
    groups: new GroupService(store, queue, volumes, { now: options.now, wake: options.wake }),
    groupSnapshots: new GroupSnapshotService(store, queue, snapshots, { now: options.now, wake: options.wake, workDelayMs: volumes.workDelayMs }),
    typeEncryption: new VolumeTypeEncryptionService(store),
    worker,
    connections,
    places: backend.places,
  }
}
