/**
 * The documents under /v2/schemas: glanceclient and some openstackclient paths read them to learn which
 * attributes exist and which are read-only. Built from the same value sets the service validates with.
 */
import { CONTAINER_FORMATS, DISK_FORMATS, IMAGE_STATUSES, MEMBER_STATUSES, VISIBILITIES } from './model.js'

const nullableString = (description: string, maxLength = 255) => ({ type: ['null', 'string'], maxLength, description })

export const IMAGE_SCHEMA = {
  name: 'image',
  additionalProperties: { type: 'string' },
  properties: {
    id: { type: 'string', pattern: '^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){12}$', description: 'An identifier for the image' },
    name: nullableString('Descriptive name for the image'),
    status: { type: 'string', readOnly: true, enum: IMAGE_STATUSES, description: 'Status of the image' },
    visibility: { type: 'string', enum: VISIBILITIES, description: 'Scope of image accessibility' },
    protected: { type: 'boolean', description: 'If true, image will not be deletable.' },
    os_hidden: { type: 'boolean', description: 'If true, image will not appear in default image list response.' },
    checksum: { type: ['null', 'string'], readOnly: true, maxLength: 32, description: 'md5 hash of image contents.' },
    os_hash_algo: { type: ['null', 'string'], readOnly: true, maxLength: 64, description: 'Algorithm to calculate the os_hash_value' },
    os_hash_value: { type: ['null', 'string'], readOnly: true, maxLength: 128, description: 'Hexdigest of the image contents using the algorithm specified by the os_hash_algo' },
    owner: { type: ['null', 'string'], maxLength: 255, description: 'Owner of the image' },
    size: { type: ['null', 'integer'], readOnly: true, description: 'Size of image file in bytes' },
    virtual_size: { type: ['null', 'integer'], readOnly: true, description: 'Virtual size of image in bytes' },
    container_format: { type: ['null', 'string'], enum: [null, ...CONTAINER_FORMATS], description: 'Format of the container' },
    disk_format: { type: ['null', 'string'], enum: [null, ...DISK_FORMATS], description: 'Format of the disk' },
    created_at: { type: 'string', readOnly: true, description: 'Date and time of image registration' },
    updated_at: { type: 'string', readOnly: true, description: 'Date and time of the last image modification' },
    tags: { type: 'array', items: { type: 'string', maxLength: 255 }, description: 'List of strings related to the image' },
    direct_url: { type: 'string', readOnly: true, description: 'URL to access the image file kept in external store' },
    min_ram: { type: 'integer', description: 'Amount of ram (in MB) required to boot image.' },
    min_disk: { type: 'integer', description: 'Amount of disk space (in GB) required to boot image.' },
    self: { type: 'string', readOnly: true, description: 'An image self url' },
    file: { type: 'string', readOnly: true, description: 'An image file url' },
    stores: { type: 'string', readOnly: true, description: 'Store in which image data resides.' },
    schema: { type: 'string', readOnly: true, description: 'An image schema url' },
    locations: { type: 'array', items: { type: 'object' }, description: 'A set of URLs to access the image file kept in external store' },
  },
  links: [
    { rel: 'self', href: '{self}' },
    { rel: 'enclosure', href: '{file}' },
    { rel: 'describedby', href: '{schema}' },
  ],
}

export const IMAGES_SCHEMA = {
  name: 'images',
  properties: {
    images: { type: 'array', items: IMAGE_SCHEMA },
    schema: { type: 'string' },
    first: { type: 'string' },
    next: { type: 'string' },
  },
  links: [
    { rel: 'first', href: '{first}' },
    { rel: 'next', href: '{next}' },
    { rel: 'describedby', href: '{schema}' },
  ],
}

export const MEMBER_SCHEMA = {
  name: 'member',
  properties: {
    created_at: { type: 'string', description: 'Date and time of image member creation' },
    image_id: { type: 'string', description: 'An identifier for the image' },
    member_id: { type: 'string', description: 'An identifier for the image member (tenantId)' },
    status: { type: 'string', enum: MEMBER_STATUSES, description: 'The status of this image member' },
    updated_at: { type: 'string', description: 'Date and time of last modification of image member' },
    schema: { type: 'string', readOnly: true },
  },
}

export const MEMBERS_SCHEMA = {
  name: 'members',
  properties: { members: { type: 'array', items: MEMBER_SCHEMA }, schema: { type: 'string' } },
  links: [{ rel: 'describedby', href: '{schema}' }],
}
