/**
 * The image every new cloud starts with, so a first `server create` has something to boot: a small public
 * qcow2 named like CirrOS. Its bytes are generated here: a valid qcow2 v3 header (4 KiB clusters) with an
 * empty refcount table, refcount block and L1 table, 16 KiB in all, describing a 112 MiB virtual disk.
 */
import { createHash, randomUUID } from 'node:crypto'
import { Readable } from 'node:stream'
import type { BlobStore } from '../blobs/blob-store.js'
import type { Store } from '../storage/store.js'

export const DEFAULT_IMAGE_NAME = 'cirros-0.6.2-x86_64-disk'
const VIRTUAL_SIZE = 112 * 1024 * 1024
const CLUSTER_BITS = 12
const CLUSTER = 1 << CLUSTER_BITS

export function defaultImageBytes(): Buffer {
  const clusters = 4
  const file = Buffer.alloc(clusters * CLUSTER)
  // Header (QEMU docs/interop/qcow2.txt), big-endian.
  file.write('QFI\xfb', 0, 'latin1')
  file.writeUInt32BE(3, 4) // version
  file.writeBigUInt64BE(0n, 8) // backing file offset
  file.writeUInt32BE(0, 16) // backing file size
  file.writeUInt32BE(CLUSTER_BITS, 20)
  file.writeBigUInt64BE(BigInt(VIRTUAL_SIZE), 24)
  file.writeUInt32BE(0, 32) // no encryption
  const l2Entries = CLUSTER / 8
  const l1Size = Math.ceil(VIRTUAL_SIZE / (CLUSTER * l2Entries))
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
  file.writeUInt32BE(104, 100) // header length
  // Refcount table → refcount block in cluster 2; every cluster of the file is used once.
  file.writeBigUInt64BE(BigInt(2 * CLUSTER), CLUSTER)
  for (let c = 0; c < clusters; c++) file.writeUInt16BE(1, 2 * CLUSTER + c * 2)
  return file
}

/** Creates the default image when no image of that name exists yet; safe to run at every start. */
export async function ensureDefaultImage(store: Store, blobs: BlobStore, ownerProjectId: string): Promise<string> {
  const existing = await store.db.selectFrom('images').select('id').where('name', '=', DEFAULT_IMAGE_NAME).where('visibility', '=', 'public').executeTakeFirst()
  if (existing) return existing.id
  const id = randomUUID()
  const bytes = defaultImageBytes()
  const blobKey = `images/${id}`
  const digests = await blobs.put(blobKey, Readable.from([bytes]), { maxBytes: bytes.length })
  const now = Date.now()
  await store.db
    .insertInto('images')
    .values({
      id,
      name: DEFAULT_IMAGE_NAME,
      owner: ownerProjectId,
      status: 'active',
      visibility: 'public',
      protected: 0,
      os_hidden: 0,
      disk_format: 'qcow2',
      container_format: 'bare',
      size: digests.size,
      virtual_size: VIRTUAL_SIZE,
      checksum: digests.md5,
      os_hash_algo: 'sha512',
      os_hash_value: createHash('sha512').update(bytes).digest('hex'),
      min_disk: 0,
      min_ram: 0,
      properties: JSON.stringify({ os_distro: 'cirros', os_version: '0.6.2', hw_architecture: 'x86_64', hw_disk_bus: 'virtio', hw_vif_model: 'virtio' }),
      blob_key: blobKey,
      created_at: now,
      updated_at: now,
    })
    .execute()
  return id
}
