/**
 * Native image commands (list, show, create, delete) with openstackclient 6.0's output. osc reads images
 * through openstacksdk: a shown image keeps Glance's core fields at the top and folds every other key into
 * `properties` (osc's _format_image), lists are sorted by name, lookups say "No Image found for x", and
 * `image create --file` creates the record, then streams the file to it.
 */
import { createReadStream, statSync } from 'node:fs'
import type { Session } from '../../../client/session.js'
import type { Cell } from '../../output/format.js'
import type { CommandSpec } from '../../spec.js'
import { CliFailure } from '../config.js'
import {
  LIST_OUTPUT_FLAGS, LONG_FLAG, SHOW_OUTPUT_FLAGS, choiceFlag, deleteEach, findResource, intFlag, keyValueFlag, listFlag, oneOf, printList, printShow, query, required,
  sdkWording, stringFlag, withSession,
} from './common.js'
import { dictColumn, headers, listColumn, plain, rows, type Column } from './osc.js'

export type Image = Record<string, unknown> & { id: string; name: string | null }

const CONTAINER_FORMATS = ['ami', 'ari', 'aki', 'bare', 'docker', 'ova', 'ovf']
const DISK_FORMATS = ['ami', 'ari', 'aki', 'vhd', 'vmdk', 'raw', 'qcow2', 'vhdx', 'vdi', 'iso', 'ploop']
const VISIBILITIES = ['public', 'private', 'community', 'shared']

/** The fields osc's _format_image keeps at the top; every other key of the image is a property. */
const CORE_FIELDS = new Set([
  'status', 'name', 'container_format', 'created_at', 'size', 'disk_format', 'updated_at', 'visibility', 'min_disk', 'protected', 'id', 'file', 'checksum', 'owner',
  'virtual_size', 'min_ram', 'schema',
])

const LIST_COLUMNS: Column<Image>[] = [
  { name: 'ID', from: 'id' },
  { name: 'Name', from: 'name' },
  { name: 'Status', from: 'status' },
]
const LONG_COLUMNS: Column<Image>[] = [
  { name: 'ID', from: 'id' },
  { name: 'Name', from: 'name' },
  { name: 'Disk Format', from: 'disk_format' },
  { name: 'Container Format', from: 'container_format' },
  { name: 'Size', from: 'size' },
  { name: 'Checksum', from: 'checksum' },
  { name: 'Status', from: 'status' },
  { name: 'Visibility', from: 'visibility' },
  { name: 'Protected', from: 'protected' },
  { name: 'Project', from: 'owner' },
  { name: 'Tags', from: 'tags', missing: [], format: listColumn },
]

/**
 * osc's _format_image over openstacksdk's to_dict(ignore_none=True): core fields (when set) at the top, `tags`
 * as a list, the rest flattened into `properties`; `self` is dropped by the SDK. Sorted, as osc prints it.
 */
export function imageFields(image: Image): [string, Cell][] {
  const out: [string, Cell][] = [['tags', listColumn(image.tags ?? [])]]
  const properties: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(image)) {
    if (key === 'self' || key === 'tags' || key === 'location' || value === null || value === undefined) continue
    if (CORE_FIELDS.has(key)) out.push([key, plain(value)])
    else properties[key] = value
  }
  if (Object.keys(properties).length) out.push(['properties', dictColumn(properties)])
  return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}

export async function imageApi(session: Session): Promise<string> {
  return `${await session.endpoint('image')}/v2`
}

/** Every image of a list request, following Glance's `next` links as openstacksdk does. */
export async function listImages(session: Session, filters: Record<string, string | number | undefined> = {}): Promise<Image[]> {
  const root = await session.endpoint('image')
  const images: Image[] = []
  for (let url: string | undefined = `${root}/v2/images${query(filters)}`; url; ) {
    const body: { images: Image[]; next?: string } = await session.get(url)
    images.push(...body.images)
    // An explicit --limit asks for one page, as osc switches the SDK's paging off for it.
    url = body.next && filters.limit === undefined ? `${root}${body.next}` : undefined
  }
  return images
}

/** An image by id or name (openstacksdk's find_image). */
export async function findImage(session: Session, nameOrId: string): Promise<Image> {
  const api = await imageApi(session)
  return findResource<Image>(session, {
    wording: sdkWording('Image'),
    byId: (id) => `${api}/images/${id}`,
    one: (body) => body as Image,
    byName: (name) => `${api}/images${query({ name })}`,
    many: (body) => (body as { images: Image[] }).images,
    matches: (image, x) => image.id === x || image.name === x,
  }, nameOrId)
}

/** osc sorts images by name (`--sort name:asc`), comparing str() of each value; the sort is stable. */
function byName(a: Image, b: Image): number {
  const x = String(a.name)
  const y = String(b.name)
  return x < y ? -1 : x > y ? 1 : 0
}

export const imageList: CommandSpec = {
  words: ['image', 'list'],
  summary: 'list available images',
  flags: [
    ...LIST_OUTPUT_FLAGS,
    LONG_FLAG,
    { name: 'public', type: 'boolean', help: 'list only public images' },
    { name: 'private', type: 'boolean', help: 'list only private images' },
    { name: 'community', type: 'boolean', help: 'list only community images' },
    { name: 'shared', type: 'boolean', help: 'list only shared images' },
    { name: 'name', type: 'string', help: 'filter images based on name', placeholder: '<name>' },
    { name: 'status', type: 'string', help: 'filter images based on status', placeholder: '<status>' },
    { name: 'tag', type: 'string', help: 'filter images based on tag', placeholder: '<tag>' },
    { name: 'limit', type: 'string', help: 'maximum number of images to display', placeholder: '<num-images>' },
    { name: 'marker', type: 'string', help: 'the last image of the previous page (name or ID)', placeholder: '<image>' },
  ],
  run: (context, flags) => {
    const visibility = oneOf(flags, VISIBILITIES)
    const limit = intFlag(flags, 'limit')
    return withSession(context, async (session) => {
      const marker = stringFlag(flags, 'marker')
      const filters = {
        visibility,
        name: stringFlag(flags, 'name'),
        status: stringFlag(flags, 'status'),
        tag: stringFlag(flags, 'tag'),
        limit: limit || undefined,
        marker: marker ? (await findImage(session, marker)).id : undefined,
      }
      const images = (await listImages(session, filters)).sort(byName)
      const columns = flags.long ? LONG_COLUMNS : LIST_COLUMNS
      return printList(context, flags, headers(columns), rows(columns, images))
    })
  },
}

export const imageShow: CommandSpec = {
  words: ['image', 'show'],
  summary: 'display image details',
  flags: SHOW_OUTPUT_FLAGS,
  positionals: ['image'],
  run: (context, flags, positionals) => {
    required(positionals, ['image'])
    return withSession(context, async (session) => printShow(context, flags, imageFields(await findImage(session, positionals[0]))))
  },
}

export const imageDelete: CommandSpec = {
  words: ['image', 'delete'],
  summary: 'delete image(s)',
  flags: [],
  positionals: ['image'],
  variadic: true,
  run: (context, _flags, positionals) => {
    required(positionals, ['image'])
    return withSession(context, async (session) => {
      const api = await imageApi(session)
      return deleteEach(context, positionals, async (nameOrId) => {
        const image = await findImage(session, nameOrId)
        await session.send('DELETE', `${api}/images/${encodeURIComponent(image.id)}`)
      }, {
        failed: (x, reason) => `Failed to delete image with name or ID '${x}': ${reason}`,
        summary: (n, total) => `Failed to delete ${n} of ${total} images.`,
      })
    })
  },
}

export const imageCreate: CommandSpec = {
  words: ['image', 'create'],
  summary: 'create/upload an image',
  flags: [
    ...SHOW_OUTPUT_FLAGS,
    { name: 'id', type: 'string', help: 'image ID to reserve', placeholder: '<id>' },
    { name: 'container-format', type: 'string', help: `image container format: ${CONTAINER_FORMATS.join(', ')} (default bare)`, placeholder: '<container-format>' },
    { name: 'disk-format', type: 'string', help: `image disk format: ${DISK_FORMATS.join(', ')} (default raw)`, placeholder: '<disk-format>' },
    { name: 'min-disk', type: 'string', help: 'minimum disk size needed to boot image, in gigabytes', placeholder: '<disk-gb>' },
    { name: 'min-ram', type: 'string', help: 'minimum RAM size needed to boot image, in megabytes', placeholder: '<ram-mb>' },
    { name: 'file', type: 'string', help: 'upload image from local file (streamed)', placeholder: '<file>' },
    { name: 'protected', type: 'boolean', help: 'prevent image from being deleted' },
    { name: 'unprotected', type: 'boolean', help: 'allow image to be deleted (default)' },
    { name: 'public', type: 'boolean', help: 'image is accessible to the public' },
    { name: 'private', type: 'boolean', help: 'image is inaccessible to the public (default)' },
    { name: 'community', type: 'boolean', help: 'image is accessible to the community' },
    { name: 'shared', type: 'boolean', help: 'image can be shared' },
    { name: 'property', type: 'string', repeatable: true, help: 'set a property on this image (repeat for several)', placeholder: '<key=value>' },
    { name: 'tag', type: 'string', repeatable: true, help: 'set a tag on this image (repeat for several)', placeholder: '<tag>' },
  ],
  positionals: ['image-name'],
  run: (context, flags, positionals) => {
    required(positionals, ['image-name'])
    const name = positionals[0]
    const file = stringFlag(flags, 'file')
    const protection = oneOf(flags, ['protected', 'unprotected'])
    const tags = listFlag(flags, 'tag')
    const body: Record<string, unknown> = {
      name,
      id: stringFlag(flags, 'id'),
      container_format: choiceFlag(flags, 'container-format', CONTAINER_FORMATS) ?? 'bare',
      disk_format: choiceFlag(flags, 'disk-format', DISK_FORMATS) ?? 'raw',
      min_disk: intFlag(flags, 'min-disk') || undefined,
      min_ram: intFlag(flags, 'min-ram') || undefined,
      tags: tags.length ? tags : undefined,
      visibility: oneOf(flags, VISIBILITIES),
      protected: protection === undefined ? undefined : protection === 'protected',
      ...keyValueFlag(flags, 'property'),
      // openstacksdk records these on every image it creates; kept so the two clients' images look alike.
      'owner_specified.openstack.md5': '',
      'owner_specified.openstack.sha256': '',
      'owner_specified.openstack.object': `images/${name}`,
    }
    // The file is checked before anything is created, as osc opens it first.
    let size = 0
    if (file !== undefined) {
      try {
        size = statSync(file).size
      } catch {
        throw new CliFailure(`[Errno 2] No such file or directory: '${file}'`)
      }
    }
    return withSession(context, async (session) => {
      const api = await imageApi(session)
      const image = (await session.send<Image>('POST', `${api}/images`, body)).body
      if (file !== undefined) await upload(session, `${api}/images/${encodeURIComponent(image.id)}/file`, file, size)
      // osc prints the image as created (status queued): the record, not the state after the upload.
      return printShow(context, flags, imageFields(image))
    })
  },
}

/**
 * Streams the file as the image's data; a failed upload deletes the half-made image, as openstacksdk does.
 * `onBytes` hears the running total as the bytes leave (pcctl image build's progress).
 */
export async function upload(session: Session, url: string, file: string, size: number, onBytes?: (sent: number) => void): Promise<void> {
  const token = await session.ensureToken()
  let sent = 0
  const counted = createReadStream(file)
  // A second 'data' listener only watches: pipe() still paces the stream to the socket.
  if (onBytes) counted.on('data', (chunk) => onBytes((sent += chunk.length)))
  try {
    await session.transport.request('PUT', url, {
      headers: { 'x-auth-token': token.id, 'content-type': 'application/octet-stream', 'content-length': String(size) },
      upload: counted,
      // Silence, not the whole upload, is what times out: a large image takes as long as it takes.
      timeoutMs: 120_000,
    })
  } catch (err) {
    await session.send('DELETE', url.replace(/\/file$/, '')).catch(() => undefined)
    throw err
  }
}

export const IMAGE_COMMANDS: CommandSpec[] = [imageList, imageShow, imageCreate, imageDelete]
