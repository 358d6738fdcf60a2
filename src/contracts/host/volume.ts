/**
 * Volumes as the control plane and the hosts that hold their bytes both name them: block node definitions, byte
 * sources, capacities, export names and the backend's failure. The backends themselves (file, LVM) run on hosts
 * (src/host/storage/); the volume service (src/server/volume/) only names what they do.
 */

/** A QEMU block node definition: the JSON of QMP `blockdev-add` (and of `--blockdev` in qemu-storage-daemon). */
export type BlockdevSpec = { driver: string } & Record<string, unknown>

/**
 * What a backend object's bytes are: a volume, or one of its snapshots with the volume it was taken of (RBD keeps
 * snapshots on their volume, as `volume-<id>@snapshot-<id>`).
 */
export type VolumeRef = { volumeId: string } | { snapshotId: string; snapshotOf: string }

/** An NBD export to read bytes from (a volume of another backend or another place), with its TLS-PSK key. */
export interface NbdSource {
  host: string
  port: number
  export: string
  pskIdentity: string
  /** The pre-shared key (hex). */
  pskKey: string
}

/**
 * Where the bytes of a new volume come from:
 * - `volume` / `snapshot`: an object of the same backend (a clone);
 * - `image`: an image file on this machine (raw or qcow2; other formats are refused before they get here);
 * - `nbd`: another place's export (retype and clones across backends).
 */
export type ByteSource =
  | { kind: 'volume'; volumeId: string }
  | { kind: 'snapshot'; snapshotId: string; volumeId: string }
  | { kind: 'image'; path: string; format: 'raw' | 'qcow2' }
  | { kind: 'nbd'; source: NbdSource }

/**
 * Copies an exported volume's bytes, as of one moment, into the existing node `target` of the same size, through
 * the daemon that serves the volume (QEMU's `blockdev-backup`: writes after the job's start do not reach the copy).
 * False when no daemon serves the volume here (the caller copies the bytes itself).
 */
export type LiveCopy = (target: BlockdevSpec) => Promise<boolean>

export interface BackendCapacity {
  /** GiB this backend can hold in all. */
  totalGb: number
  /** GiB not yet given to volumes and snapshots (file: free space of the filesystem). */
  freeGb: number
}

/** A failure of the backend; the volume service records it as the volume's (or snapshot's) error. */
export class VolumeBackendError extends Error {
  override name = 'VolumeBackendError'
}

export const GIB = 1024 ** 3

/** The NBD export name of a volume's generation: `volume-<id>`, then `volume-<id>.<n>` after online extends. */
export function exportName(volumeId: string, generation: number): string {
  return generation === 0 ? `volume-${volumeId}` : `volume-${volumeId}.${generation}`
}
