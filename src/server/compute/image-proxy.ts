/**
 * Nova's image proxy (`/images`, microversions 2.1–2.35): the image service's images in Nova's shape, and Nova's
 * list filters over them. Tempest's compute image tests and old novaclients use it.
 */
import { isoSeconds, parseIsoTime } from '../../contracts/compute/time.js'
import { badRequest } from '../../contracts/errors.js'
import type { ImageRecord } from '../image/model.js'
import { bookmarkBase } from './server-model.js'

/** Glance status → Nova's (anything else is UNKNOWN) and its progress (anything else 0). */
const STATUS: Record<string, [string, number]> = {
  active: ['ACTIVE', 100],
  queued: ['SAVING', 25],
  saving: ['SAVING', 50],
  deleted: ['DELETED', 0],
  pending_delete: ['DELETED', 0],
  killed: ['ERROR', 0],
}

export interface ProxyUrls {
  /** …/compute/v2.1 */
  compute: string
  /** …/image */
  image: string
}

function links(urls: ProxyUrls, id: string) {
  return [
    { rel: 'self', href: `${urls.compute}/images/${id}` },
    { rel: 'bookmark', href: `${bookmarkBase(urls.compute)}/images/${id}` },
    { rel: 'alternate', type: 'application/vnd.openstack.image', href: `${urls.image}/images/${id}` },
  ]
}

export function imageSummary(image: ImageRecord, urls: ProxyUrls) {
  return { id: image.id, name: image.name, links: links(urls, image.id) }
}

export function imageDetail(image: ImageRecord, urls: ProxyUrls) {
  const [status, progress] = STATUS[image.status] ?? ['UNKNOWN', 0]
  const server = image.properties.instance_uuid
  return {
    id: image.id,
    name: image.name,
    minRam: image.minRam,
    minDisk: image.minDisk,
    metadata: image.properties,
    created: isoSeconds(image.createdAt),
    updated: isoSeconds(image.updatedAt),
    status,
    progress,
    links: links(urls, image.id),
    'OS-EXT-IMG-SIZE:size': image.size,
    ...(server
      ? {
          server: {
            id: server,
            links: [
              { rel: 'self', href: `${urls.compute}/servers/${server}` },
              { rel: 'bookmark', href: `${bookmarkBase(urls.compute)}/servers/${server}` },
            ],
          },
        }
      : {}),
  }
}

type Filter = (image: ImageRecord) => boolean

/** Nova's list filters, each turned into a test on an image (Nova passes them to Glance the same way). */
const FILTERS: Record<string, (value: string) => Filter> = {
  name: (v) => (i) => i.name === v,
  status: (v) => (i) => (STATUS[i.status]?.[0] ?? 'UNKNOWN') === v.toUpperCase(),
  server: (v) => (i) => i.properties.instance_uuid === v || (v.includes('/') && i.properties.instance_uuid === v.slice(v.lastIndexOf('/') + 1)),
  type: (v) => (i) => i.properties.image_type === v,
  minRam: (v) => (i) => i.minRam >= wholeNumber('minRam', v),
  minDisk: (v) => (i) => i.minDisk >= wholeNumber('minDisk', v),
  'changes-since': (v) => {
    const since = parseIsoTime(v)
    if (since === undefined) throw badRequest(`Invalid filter value changes-since: ${v}`)
    return (i) => i.updatedAt >= since
  },
}

function wholeNumber(name: string, raw: string): number {
  if (!/^\d+$/.test(raw)) throw badRequest(`Invalid filter value ${name}: ${raw}`)
  return Number(raw)
}

export interface ProxyPage {
  images: ImageRecord[]
  /** The query of the next page, when this one is full. */
  nextQuery?: string
}

/** Filters, then pages with `limit` and `marker` (a full page links the next, as Nova does). */
export function proxyPage(images: ImageRecord[], query: Record<string, string | undefined>): ProxyPage {
  const tests = Object.entries(query).flatMap(([key, value]) => (value !== undefined && FILTERS[key] ? [FILTERS[key](value)] : []))
  let matched = images.filter((i) => tests.every((t) => t(i)))
  if (query.marker !== undefined) {
    const at = matched.findIndex((i) => i.id === query.marker)
    if (at < 0) throw badRequest(`marker [${query.marker}] not found`)
    matched = matched.slice(at + 1)
  }
  if (query.limit === undefined) return { images: matched }
  const limit = wholeNumber('limit', query.limit)
  const page = matched.slice(0, limit)
  if (limit === 0 || page.length < limit) return { images: page }
  const next = new URLSearchParams(Object.entries(query).filter(([k, v]) => k !== 'marker' && v !== undefined) as [string, string][])
  next.set('marker', page[page.length - 1].id)
  return { images: page, nextQuery: next.toString() }
}
