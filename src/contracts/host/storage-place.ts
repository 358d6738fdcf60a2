/**
 * A storage place: the machine that holds some volumes' bytes and runs their NBD exports. The control plane's
 * own machine is one (`controller`: pcc-server does the work itself, local-place.ts); every host with the
 * `storage` role is another (the host's id: its pcc-agent does the work, told through the command channel,
 * agent-place.ts). The volume service's tasks call a place; the place calls its backends (file, lvm).
 *
 * The same guarantees as the backends hold: every call is idempotent, failures are VolumeBackendErrors (or the
 * compute driver's DriverError for a host that does not answer) with a message for the operator.
 */
import type { Readable } from 'node:stream'
import type { BackendCapacity, ByteSource, NbdSource, VolumeRef } from './volume.js'

export const CONTROLLER = 'controller'

/** The code a storage agent gives its backends' failures (src/host/storage/storage-role.ts): final, not retried. */
export const BACKEND_FAILURE = 422

/** Image bytes as a place reads and writes them (the image service's blob store, or the host's image endpoints). */
export interface PlaceImages {
  openBytes(imageId: string): Promise<{ stream: Readable; size: number }>
  /** An image's status (`queued` until its bytes are stored, then `active`), or undefined when there is none. */
  getById(imageId: string): Promise<{ status: string } | undefined>
  completeSnapshotImage(imageId: string, data: Readable, formats?: { diskFormat: string; containerFormat: string }): Promise<unknown>
}

/** Where the bytes of a new volume come from, as the volume service names them: an image by id, not a path. */
export type PlaceSource = Exclude<ByteSource, { kind: 'image' }> | { kind: 'image'; imageId: string; format: 'raw' | 'qcow2' }

/** An export this place should serve, as the store knows it (the place adds its block node and address). */
export interface WantedExport {
  /** The exported volume's id; for an export of a snapshot, the snapshot's (it names the export and its daemon). */
  volumeId: string
  /** Set for an export of a snapshot (a backup reading it): the volume it was taken of. Such an export is read-only. */
  snapshotOf?: string
  backend: string
  port: number
  generations: number[]
  keys: { identity: string; key: string }[]
}

/** The backend object an export serves: a volume, or a snapshot of one. */
export function exportedRef(w: Pick<WantedExport, 'volumeId' | 'snapshotOf'>): VolumeRef {
  return w.snapshotOf === undefined ? { volumeId: w.volumeId } : { snapshotId: w.volumeId, snapshotOf: w.snapshotOf }
}

export interface StoragePlace {
  /** `controller` or the storage host's id. */
  readonly location: string
  create(backend: string, volumeId: string, sizeGb: number): Promise<void>
  createFrom(backend: string, volumeId: string, sizeGb: number, source: PlaceSource): Promise<void>
  extend(backend: string, volumeId: string, sizeGb: number): Promise<void>
  delete(backend: string, volumeId: string): Promise<void>
  createSnapshot(backend: string, snapshotId: string, volumeId: string): Promise<void>
  deleteSnapshot(backend: string, snapshotId: string, volumeId: string): Promise<void>
  /** Copies a volume's bytes into the queued image `imageId`, converted to `diskFormat` (raw or qcow2). */
  uploadToImage(backend: string, volumeId: string, imageId: string, diskFormat: 'raw' | 'qcow2'): Promise<void>
  /** Makes the place's NBD exports what the store says; answers the address clients connect to. */
  syncExports(): Promise<string>
  /** A backend's capacity here (scheduler-stats pools): measured by the controller, a storage host's last report. */
  capacity(backend: string): Promise<BackendCapacity>
}

/**
 * Where a backup reads bytes from or a restore writes them to, as the control plane's machine reaches them: a
 * volume (or snapshot) of one of its own backends, or a storage host's volume over NBD, exported to a key of its
 * own for the copy (the volume service grants and revokes it).
 */
export type RawSource = { kind: 'backend'; backend: string; ref: VolumeRef } | { kind: 'nbd'; source: NbdSource }
export type RawTarget = { kind: 'backend'; backend: string; volumeId: string } | { kind: 'nbd'; source: NbdSource }

/**
 * The control plane's place: a storage place that also moves bytes through raw files on its own machine, next to
 * the blob store (backups: docs/block-storage.md, "Backups"). Storage hosts' volumes reach it over NBD.
 */
export interface ControllerPlace extends StoragePlace {
  /** Reads the bytes into a raw file on this machine and runs `use` with its path; the file is gone afterwards. */
  withRawCopy<T>(from: RawSource, use: (path: string) => Promise<T>): Promise<T>
  /** Writes a raw file that `fill` makes at the path it is given (at most the volume's size) over an existing volume's bytes. */
  writeRaw(to: RawTarget, fill: (path: string) => Promise<void>): Promise<void>
}
