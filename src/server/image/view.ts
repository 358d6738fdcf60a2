/** Glance v2 wire shapes of images and members. Free-form properties sit at the top level, as in Glance. */
import { glanceTime, type ImageMember, type ImageRecord } from './model.js'

export function imageView(image: ImageRecord): Record<string, unknown> {
  return {
    ...image.properties,
    id: image.id,
    name: image.name,
    status: image.status,
    visibility: image.visibility,
    protected: image.protected,
    os_hidden: image.osHidden,
    checksum: image.checksum,
    os_hash_algo: image.osHashAlgo,
    os_hash_value: image.osHashValue,
    owner: image.owner,
    size: image.size,
    virtual_size: image.virtualSize,
    min_ram: image.minRam,
    min_disk: image.minDisk,
    disk_format: image.diskFormat,
    container_format: image.containerFormat,
    tags: image.tags,
    created_at: glanceTime(image.createdAt),
    updated_at: glanceTime(image.updatedAt),
    self: `/v2/images/${image.id}`,
    file: `/v2/images/${image.id}/file`,
    schema: '/v2/schemas/image',
  }
}

export function memberView(member: ImageMember): Record<string, unknown> {
  return {
    image_id: member.imageId,
    member_id: member.memberId,
    status: member.status,
    created_at: glanceTime(member.createdAt),
    updated_at: glanceTime(member.updatedAt),
    schema: '/v2/schemas/member',
  }
}
