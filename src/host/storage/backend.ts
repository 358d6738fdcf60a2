/**
 * The volume backend: where a volume's bytes live and the few operations Cinder's volume manager asks of a driver.
 * One backend object serves one place (the control plane's data dir, or one storage host); the volume service
 * picks the backend of a volume from its type (docs/block-storage.md, "Backends"), and the same code runs in
 * pcc-server for the control plane's volumes and in pcc-agent for a storage host's (src/host/storage/).
 *
 * The interface is kept small on purpose, so that Ceph RBD fits it as a third implementation: every operation
 * names volumes and snapshots by id, and the bytes are reached through a QEMU block node definition
 * (`blockdev`), which qemu-storage-daemon exports over NBD and qemu-img copies from and to. An RBD backend
 * answers `{driver: 'rbd', pool, image}` there and implements snapshots and clones with `rbd snap create` and
 * `rbd clone`.
 *
 * Guarantees every implementation keeps (conformance/suite.ts checks them on each):
 * - Every operation is idempotent: the task queue may run it twice (after a crash, a lost lease). Creating what
 *   exists with the same size, deleting what is gone, extending to the current size all succeed.
 * - A volume created blank reads as zeros; one created from a source holds the source's bytes, and zeros after
 *   them up to its size. A snapshot holds the volume's bytes of its moment, whatever is written afterwards.
 * - Sizes are whole GiB; `extend` never shrinks and keeps every byte.
 * - A failure is a VolumeBackendError with a message an operator can act on (what is missing, what failed).
 */

import { VolumeBackendError, type BackendCapacity, type BlockdevSpec, type ByteSource, type LiveCopy, type VolumeRef } from '../../contracts/host/volume.js'

export interface VolumeBackend {
  /** `file`, `lvm` or `ceph` (the `volume_backend_name` of the volume types that use it). */
  readonly name: string
  /**
   * Whether the backend can work on this machine; resolves, or throws a VolumeBackendError naming exactly what is
   * missing (a program, the volume group, a kernel feature). Cheap enough to call at every start.
   */
  check(): Promise<void>
  capacity(): Promise<BackendCapacity>
  /** Creates a blank volume of `sizeGb` that reads as zeros. */
  create(volumeId: string, sizeGb: number): Promise<void>
  /**
   * Creates a volume of `sizeGb` holding the bytes of `source`. A source larger than `sizeGb` is an error;
   * a repeated call after a crash starts the copy again. `live` copies a source volume that is attached through its
   * export daemon, as for snapshots.
   */
  createFrom(volumeId: string, sizeGb: number, source: ByteSource, live?: LiveCopy): Promise<void>
  /**
   * A volume from an image that the backend reaches where it is stored (RBD: a clone of a raw image's snapshot in
   * the same cluster), with no download. False when it cannot, and the caller copies the image's bytes in.
   */
  createFromImage?(volumeId: string, sizeGb: number, image: { id: string; format: 'raw' | 'qcow2' }): Promise<boolean>
  /** Grows a volume to `sizeGb` (also while it is exported: the export manager then publishes the new size). */
  extend(volumeId: string, sizeGb: number): Promise<void>
  /** Removes a volume and its bytes (an LVM backend wipes them first, so no other volume ever reads them). */
  delete(volumeId: string): Promise<void>
  /**
   * A point-in-time copy of the volume, readable while the volume changes. `live` copies an exported (attached)
   * volume through its export daemon (answering false when it has none); a backend whose snapshots are atomic by
   * nature (LVM, RBD) does not need it.
   */
  createSnapshot(snapshotId: string, volumeId: string, live?: LiveCopy): Promise<void>
  deleteSnapshot(snapshotId: string, volumeId: string): Promise<void>
  /** Size in bytes of a volume or snapshot, or undefined when it does not exist. */
  size(ref: VolumeRef): Promise<number | undefined>
  /** The block node that opens the bytes of a volume or snapshot (read-write for volumes). */
  blockdev(ref: VolumeRef): BlockdevSpec
}

/** Refuses ids that could escape a directory or a volume group: every id pcc makes is a UUID. */
export function checkId(id: string): string {
  if (!/^[0-9a-fA-F-]{1,64}$/.test(id)) throw new VolumeBackendError(`invalid volume or snapshot id ${JSON.stringify(id)}`)
  return id
}
