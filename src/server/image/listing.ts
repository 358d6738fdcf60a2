/**
 * Glance's list semantics applied to the images a caller can see: filters (exact, `in:` lists, size ranges,
 * tags, free-form properties), `sort_key`/`sort_dir` or `sort=key:dir,…`, and `limit`/`marker` pagination with
 * a top-level `next` link. The visible set is chosen by the query in service.ts; this file orders and pages it.
 */
import { badRequest } from '../../contracts/errors.js'
import type { ImageRecord } from './model.js'

export const DEFAULT_LIMIT = 25
export const MAX_LIMIT = 1000

const SORT_KEYS: Record<string, (i: ImageRecord) => string | number | null> = {
  name: (i) => i.name,
  status: (i) => i.status,
  container_format: (i) => i.containerFormat,
  disk_format: (i) => i.diskFormat,
  size: (i) => i.size,
  id: (i) => i.id,
  created_at: (i) => i.createdAt,
  updated_at: (i) => i.updatedAt,
  visibility: (i) => i.visibility,
  owner: (i) => i.owner,
  min_disk: (i) => i.minDisk,
  min_ram: (i) => i.minRam,
  virtual_size: (i) => i.virtualSize,
}

/** Query keys that are not property filters. */
const CONTROL_KEYS = new Set(['limit', 'marker', 'sort_key', 'sort_dir', 'sort', 'member_status', 'visibility', 'tag', 'size_min', 'size_max'])

const CORE_FILTERS: Record<string, (i: ImageRecord) => string | null> = {
  id: (i) => i.id,
  name: (i) => i.name,
  status: (i) => i.status,
  owner: (i) => i.owner,
  disk_format: (i) => i.diskFormat,
  container_format: (i) => i.containerFormat,
  protected: (i) => String(i.protected),
  os_hidden: (i) => String(i.osHidden),
  min_disk: (i) => String(i.minDisk),
  min_ram: (i) => String(i.minRam),
  size: (i) => (i.size === null ? null : String(i.size)),
  virtual_size: (i) => (i.virtualSize === null ? null : String(i.virtualSize)),
  checksum: (i) => i.checksum,
  os_hash_value: (i) => i.osHashValue,
}

export type ImageQuery = Record<string, string | string[] | undefined>

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[value.length - 1] : value
}

function all(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}

/** `in:a,b` (or `in:"a,b"`) matches any listed value; a plain value matches itself. */
function matcher(raw: string): (v: string | null) => boolean {
  if (raw.startsWith('in:')) {
    const values = new Set(raw.slice(3).split(',').map((s) => s.replace(/^"|"$/g, '')))
    return (v) => v !== null && values.has(v)
  }
  if (raw.startsWith('eq:')) raw = raw.slice(3)
  return (v) => v === raw
}

function nonNegativeInteger(name: string, raw: string): number {
  if (!/^\d+$/.test(raw)) throw badRequest(`Invalid value for '${name}': expected a whole number, got '${raw}'.`)
  return Number(raw)
}

export interface SortSpec {
  key: string
  dir: 'asc' | 'desc'
}

export function parseSort(query: ImageQuery): SortSpec[] {
  const sort = first(query.sort)
  const keys = all(query.sort_key).flatMap((k) => k.split(','))
  const dirs = all(query.sort_dir).flatMap((d) => d.split(','))
  let specs: SortSpec[]
  if (sort !== undefined) {
    if (keys.length || dirs.length) throw badRequest("The 'sort' parameter cannot be combined with 'sort_key' or 'sort_dir'.")
    specs = sort.split(',').map((part) => {
      const [key, dir = 'desc'] = part.split(':')
      return { key, dir: dir as SortSpec['dir'] }
    })
  } else {
    if (dirs.length > 1 && dirs.length !== keys.length) throw badRequest("The number of 'sort_dir' values must match the number of 'sort_key' values.")
    specs = (keys.length ? keys : ['created_at']).map((key, n) => ({ key, dir: (dirs[n] ?? dirs[0] ?? 'desc') as SortSpec['dir'] }))
  }
  for (const s of specs) {
    if (!(s.key in SORT_KEYS)) throw badRequest(`Invalid sort key '${s.key}': expected one of ${Object.keys(SORT_KEYS).join(', ')}.`)
    if (s.dir !== 'asc' && s.dir !== 'desc') throw badRequest(`Invalid sort direction '${s.dir}': expected asc or desc.`)
  }
  // Ties end on id, so pages never skip or repeat an image.
  if (!specs.some((s) => s.key === 'id')) specs.push({ key: 'id', dir: specs[0].dir })
  return specs
}

function compare(a: ImageRecord, b: ImageRecord, specs: SortSpec[]): number {
  for (const s of specs) {
    const va = SORT_KEYS[s.key](a)
    const vb = SORT_KEYS[s.key](b)
    if (va === vb) continue
    // Nulls sort first ascending, as in Glance on MySQL.
    const order = va === null ? -1 : vb === null ? 1 : va < vb ? -1 : 1
    return s.dir === 'asc' ? order : -order
  }
  return 0
}

export interface ListPage {
  images: ImageRecord[]
  /** The query string of the next page, when there may be one. */
  nextQuery?: string
}

export function filterSortPage(images: ImageRecord[], query: ImageQuery): ListPage {
  const limitRaw = first(query.limit)
  const limit = limitRaw === undefined ? DEFAULT_LIMIT : Math.min(nonNegativeInteger('limit', limitRaw), MAX_LIMIT)
  const specs = parseSort(query)
  const filters: ((i: ImageRecord) => boolean)[] = []
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || CONTROL_KEYS.has(key)) continue
    const match = matcher(first(value)!)
    const read = CORE_FILTERS[key]
    filters.push(read ? (i) => match(read(i)) : (i) => match(i.properties[key] ?? null))
  }
  for (const tag of all(query.tag)) filters.push((i) => i.tags.includes(tag))
  const sizeMin = first(query.size_min)
  if (sizeMin !== undefined) {
    const min = nonNegativeInteger('size_min', sizeMin)
    filters.push((i) => i.size !== null && i.size >= min)
  }
  const sizeMax = first(query.size_max)
  if (sizeMax !== undefined) {
    const max = nonNegativeInteger('size_max', sizeMax)
    filters.push((i) => i.size !== null && i.size <= max)
  }
  const matched = images.filter((i) => filters.every((f) => f(i))).sort((a, b) => compare(a, b, specs))
  let start = 0
  const marker = first(query.marker)
  if (marker !== undefined) {
    const at = matched.findIndex((i) => i.id === marker)
    if (at < 0) throw badRequest(`Invalid marker: image ${marker} could not be found.`)
    start = at + 1
  }
  const page = matched.slice(start, start + limit)
  let nextQuery: string | undefined
  // limit=0 is an empty page without a next link: there is no last image to continue after.
  if (limit > 0 && page.length === limit && start + limit < matched.length) {
    const params = new URLSearchParams()
    for (const [key, value] of Object.entries(query)) if (key !== 'marker') for (const v of all(value)) params.append(key, v)
    params.set('marker', page[page.length - 1].id)
    nextQuery = params.toString()
  }
  return { images: page, nextQuery }
}
