/** Tables of the image service (Glance v2 model). */

export interface ImageTable {
  id: string
  name: string | null
  /** The owning project; null only for images the bootstrap made for everyone. */
  owner: string | null
  /** queued | saving | active | deactivated | killed | pending_delete */
  status: string
  /** public | private | shared | community */
  visibility: string
  protected: number
  os_hidden: number
  disk_format: string | null
  container_format: string | null
  size: number | null
  virtual_size: number | null
  checksum: string | null
  os_hash_algo: string | null
  os_hash_value: string | null
  min_disk: number
  min_ram: number
  /** Free-form string properties (JSON object of string → string). */
  properties: string
  /** Key of the image's bytes in the blob store, once uploaded. */
  blob_key: string | null
  created_at: number
  updated_at: number
}

export interface ImageTagTable {
  image_id: string
  tag: string
}

export interface ImageMemberTable {
  image_id: string
  /** A project id. */
  member_id: string
  /** pending | accepted | rejected */
  status: string
  created_at: number
  updated_at: number
}

export interface ImageTables {
  images: ImageTable
  image_tags: ImageTagTable
  image_members: ImageMemberTable
}
