/**
 * Small, valid qcow2 v3 files (QEMU docs/interop/qcow2.txt) with no data clusters: a header, a refcount table and
 * one refcount block, and an empty L1 table, in 4 KiB clusters. They describe a disk of any virtual size in a few
 * KiB, which is what the default image and the simulated hypervisor's snapshots need. An optional label travels
 * in a header extension of a type QEMU ignores, so two disks can be told apart by their bytes.
 */

const CLUSTER_BITS = 12
const CLUSTER = 1 << CLUSTER_BITS
const HEADER_LENGTH = 104
/** A header extension type no QEMU version interprets ("pcc1"); readers skip unknown extensions. */
const LABEL_EXTENSION = 0x70636331

export interface Qcow2Options {
  virtualSize: number
  /** Text stored in a header extension (at most a few KiB). */
  label?: string
}

export function qcow2Image(options: Qcow2Options): Buffer {
  const l2Entries = CLUSTER / 8
  const l1Size = Math.ceil(options.virtualSize / (CLUSTER * l2Entries))
  const l1Clusters = Math.max(1, Math.ceil((l1Size * 8) / CLUSTER))
  const clusters = 3 + l1Clusters
  const file = Buffer.alloc(clusters * CLUSTER)
  // Header, big-endian.
  file.write('QFI\xfb', 0, 'latin1')
  file.writeUInt32BE(3, 4) // version
  file.writeBigUInt64BE(0n, 8) // backing file offset
  file.writeUInt32BE(0, 16) // backing file size
  file.writeUInt32BE(CLUSTER_BITS, 20)
  file.writeBigUInt64BE(BigInt(options.virtualSize), 24)
  file.writeUInt32BE(0, 32) // no encryption
  file.writeUInt32BE(l1Size, 36)
  file.writeBigUInt64BE(BigInt(3 * CLUSTER), 40) // L1 table offset: cluster 3
  file.writeBigUInt64BE(BigInt(1 * CLUSTER), 48) // refcount table offset: cluster 1
  file.writeUInt32BE(1, 56) // refcount table clusters
  file.writeUInt32BE(0, 60) // snapshots
  file.writeBigUInt64BE(0n, 64)
  file.writeBigUInt64BE(0n, 72) // incompatible features
  file.writeBigUInt64BE(0n, 80) // compatible features
  file.writeBigUInt64BE(0n, 88) // autoclear features
  file.writeUInt32BE(4, 96) // refcount order: 16-bit refcounts
  file.writeUInt32BE(HEADER_LENGTH, 100)
  if (options.label !== undefined) writeLabel(file, options.label)
  // Refcount table → refcount block in cluster 2; every cluster of the file is used once.
  file.writeBigUInt64BE(BigInt(2 * CLUSTER), CLUSTER)
  for (let c = 0; c < clusters; c++) file.writeUInt16BE(1, 2 * CLUSTER + c * 2)
  return file
}

/** Header extensions follow the header: (type, length, data padded to 8 bytes)…, then an end marker (type 0). */
function writeLabel(file: Buffer, label: string): void {
  const data = Buffer.from(label, 'utf8')
  const padded = Math.ceil(data.length / 8) * 8
  if (HEADER_LENGTH + 8 + padded + 8 > CLUSTER) throw new Error('qcow2 label too long for the header cluster')
  file.writeUInt32BE(LABEL_EXTENSION, HEADER_LENGTH)
  file.writeUInt32BE(data.length, HEADER_LENGTH + 4)
  data.copy(file, HEADER_LENGTH + 8)
  // The end-of-extensions marker is 8 zero bytes, already there.
}

/** The label of a qcow2 file made by `qcow2Image`, if it has one. */
export function qcow2Label(file: Buffer): string | undefined {
  if (file.length < HEADER_LENGTH + 8 || file.toString('latin1', 0, 4) !== 'QFI\xfb') return undefined
  if (file.readUInt32BE(HEADER_LENGTH) !== LABEL_EXTENSION) return undefined
  const length = file.readUInt32BE(HEADER_LENGTH + 4)
  return file.toString('utf8', HEADER_LENGTH + 8, HEADER_LENGTH + 8 + length)
}

/** The virtual size a qcow2 header declares. */
export function qcow2VirtualSize(file: Buffer): number {
  return Number(file.readBigUInt64BE(24))
}
