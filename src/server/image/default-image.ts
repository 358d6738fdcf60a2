/**
 * The image every new cloud starts with, so a first `server create` has something to boot: a small public
 * qcow2 named like CirrOS. Its bytes are generated (qcow2.ts): a valid qcow2 v3 header (4 KiB clusters) with an
 * empty refcount table, refcount block and L1 table, 16 KiB in all, describing a 112 MiB virtual disk.
 */
import { createHash, randomUUID } from 'node:crypto'
import { Readable } from 'node:stream'
import type { BlobStore } from '../blobs/blob-store.js'
import type { Store } from '../storage/store.js'
import { qcow2Image } from './qcow2.js'

export const DEFAULT_IMAGE_NAME = 'cirros-0.6.2-x86_64-disk'
const VIRTUAL_SIZE = 112 * 1024 * 1024

export function defaultImageBytes(): Buffer {
  return qcow2Image({ virtualSize: VIRTUAL_SIZE })
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
