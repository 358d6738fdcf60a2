/** Tables of the image service (Glance v2 model). */

export interface ImageTable {
  id: string
  /** Raised by the database on every UPDATE of the row (migration 0128, for kept views); 0 when inserted. */
  rev: number
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

/** A metadata definition namespace (Glance's metadefs, image/metadefs.ts). */
export interface MetadefNamespaceTable {
  id: string
  /** Its name, unique: the API names namespaces by it. */
  namespace: string
  display_name: string | null
  description: string | null
  /** public | private */
  visibility: string
  protected: number
  /** The owning project. */
  owner: string | null
  created_at: number
  updated_at: number
}

/** An object, property or tag of a namespace: its name and its definition (JSON, without the name). */
export interface MetadefMemberTable {
  namespace_id: string
  name: string
  body: string
  created_at: number
  updated_at: number
}

export interface MetadefResourceTypeTable {
  name: string
  protected: number
  created_at: number
  updated_at: number
}

export interface MetadefNamespaceResourceTypeTable {
  namespace_id: string
  resource_type: string
  prefix: string | null
  properties_target: string | null
  created_at: number
  updated_at: number
}

export interface ImageTables {
  images: ImageTable
  image_tags: ImageTagTable
  image_members: ImageMemberTable
  metadef_namespaces: MetadefNamespaceTable
  metadef_objects: MetadefMemberTable
  metadef_properties: MetadefMemberTable
  metadef_tags: MetadefMemberTable
  metadef_resource_types: MetadefResourceTypeTable
  metadef_namespace_resource_types: MetadefNamespaceResourceTypeTable
}
