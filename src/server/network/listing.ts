/**
 * Neutron's list semantics over rendered items, one implementation for every collection: attribute filters
 * (repeated values OR-ed, booleans in any Python spelling), tag filters, `fields=`, sorting with paired
 * `sort_key`/`sort_dir` (id as the final tie-break) and pagination with `limit`, `marker`, `page_reverse` and
 * `<collection>_links` (`next` when more items follow, `previous` when a marker was given).
 */
import { neutron } from './errors.js'
import type { View } from './views.js'

export type Query = Record<string, string | string[] | undefined>

/** A filter the generic attribute match cannot express (ports' `fixed_ips=ip_address=…`). */
export type CustomFilter = (item: View, values: string[]) => boolean

export interface ListSpec {
  collection: string
  /** Absolute URL of the collection, for pagination links. */
  url: string
  /** Attribute names that may be filtered and sorted on (those of a rendered item). */
  attributes: string[]
  custom?: Record<string, CustomFilter>
}

const RESERVED = new Set(['fields', 'sort_key', 'sort_dir', 'limit', 'marker', 'page_reverse', 'tags', 'tags-any', 'not-tags', 'not-tags-any'])

export const valuesOf = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v])

const TRUE_WORDS = new Set(['true', '1', 'yes', 'on'])
const FALSE_WORDS = new Set(['false', '0', 'no', 'off'])

function matchesScalar(actual: unknown, wanted: string): boolean {
  if (typeof actual === 'boolean') {
    const w = wanted.toLowerCase()
    return actual ? TRUE_WORDS.has(w) : FALSE_WORDS.has(w)
  }
  if (actual === null || actual === undefined) return wanted === '' || wanted === 'null' || wanted === 'None'
  return String(actual) === wanted
}

function matches(actual: unknown, wanted: string[]): boolean {
  if (Array.isArray(actual)) return actual.some((a) => wanted.some((w) => matchesScalar(a, w)))
  return wanted.some((w) => matchesScalar(actual, w))
}

function compare(a: unknown, b: unknown): number {
  if (a === b) return 0
  if (a === null || a === undefined) return -1
  if (b === null || b === undefined) return 1
  if (typeof a === 'number' && typeof b === 'number') return a - b
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b)
  const sa = typeof a === 'string' ? a : JSON.stringify(a)
  const sb = typeof b === 'string' ? b : JSON.stringify(b)
  return sa < sb ? -1 : sa > sb ? 1 : 0
}

function tagFilter(item: View, query: Query): boolean {
  const tags = new Set((item.tags as string[] | undefined) ?? [])
  const list = (key: string) => valuesOf(query[key]).flatMap((v) => v.split(',')).filter((t) => t !== '')
  const all = list('tags')
  const any = list('tags-any')
  const notAll = list('not-tags')
  const notAny = list('not-tags-any')
  if (all.length && !all.every((t) => tags.has(t))) return false
  if (any.length && !any.some((t) => tags.has(t))) return false
  if (notAll.length && notAll.every((t) => tags.has(t))) return false
  if (notAny.length && notAny.some((t) => tags.has(t))) return false
  return true
}

export function filterItems(items: View[], query: Query, spec: ListSpec): View[] {
  const attributes = new Set(spec.attributes)
  const filters: ((item: View) => boolean)[] = []
  for (const [key, raw] of Object.entries(query)) {
    if (RESERVED.has(key) || raw === undefined) continue
    const values = valuesOf(raw)
    const custom = spec.custom?.[key]
    if (custom) filters.push((item) => custom(item, values))
    else if (attributes.has(key)) filters.push((item) => matches(item[key], values))
    // Unknown filters are ignored, as Neutron does without the filter-validation extension.
  }
  return items.filter((item) => tagFilter(item, query) && filters.every((f) => f(item)))
}

export function projectFields(item: View, fields: string[]): View {
  if (fields.length === 0) return item
  const out: View = {}
  for (const f of fields) if (f in item) out[f] = item[f]
  return out
}

/** Reads `fields=` (repeatable, also comma-separated) from a query. */
export const fieldsOf = (query: Query): string[] =>
  valuesOf(query.fields)
    .flatMap((f) => f.split(','))
    .filter((f) => f !== '')

function sortItems(items: View[], query: Query, spec: ListSpec): View[] {
  const keys = valuesOf(query.sort_key)
  const dirs = valuesOf(query.sort_dir)
  if (dirs.length > 0 && dirs.length !== keys.length) throw neutron.badRequest('list', 'The number of sort_keys and sort_dirs must be same')
  const attributes = new Set(spec.attributes)
  for (const key of keys) if (!attributes.has(key)) throw neutron.badRequest('list', `${key} is an invalid attribute for sort_keys`)
  for (const dir of dirs) if (dir !== 'asc' && dir !== 'desc') throw neutron.badRequest('list', `${dir} is an invalid value for sort_dirs, valid value is 'asc' and 'desc'`)
  const order = keys.map((k, i) => ({ key: k, sign: (dirs[i] ?? 'asc') === 'desc' ? -1 : 1 }))
  if (!keys.includes('id')) order.push({ key: 'id', sign: 1 })
  return [...items].sort((a, b) => {
    for (const { key, sign } of order) {
      const c = compare(a[key], b[key])
      if (c !== 0) return c * sign
    }
    return 0
  })
}

function pageUrl(spec: ListSpec, query: Query, marker: string, reverse: boolean): string {
  const params = new URLSearchParams()
  for (const [key, raw] of Object.entries(query)) {
    if (key === 'marker' || key === 'page_reverse') continue
    for (const v of valuesOf(raw)) params.append(key, v)
  }
  params.append('marker', marker)
  if (reverse) params.append('page_reverse', 'True')
  return `${spec.url}?${params.toString()}`
}

/** The full list answer: `{<collection>: [...], <collection>_links?: [...]}`. */
export function listResponse(items: View[], query: Query, spec: ListSpec): Record<string, unknown> {
  const sorted = sortItems(filterItems(items, query, spec), query, spec)
  const limitText = valuesOf(query.limit)[0]
  let limit = 0
  if (limitText !== undefined) {
    if (!/^\d+$/.test(limitText)) throw neutron.badRequest('list', `Limit must be an integer 0 or greater and not '${limitText}'`)
    limit = Number(limitText)
  }
  const marker = valuesOf(query.marker)[0]
  const reverse = ['true', '1'].includes((valuesOf(query.page_reverse)[0] ?? '').toLowerCase())
  let markerIndex = -1
  if (marker !== undefined) {
    markerIndex = sorted.findIndex((i) => i.id === marker)
    if (markerIndex < 0) throw neutron.badRequest('list', `marker ${marker} could not be found`)
  }
  let page: View[]
  let more: boolean
  if (!reverse) {
    const start = markerIndex + 1
    page = limit > 0 ? sorted.slice(start, start + limit) : sorted.slice(start)
    more = limit > 0 && start + limit < sorted.length
  } else {
    const end = markerIndex >= 0 ? markerIndex : sorted.length
    const start = limit > 0 ? Math.max(0, end - limit) : 0
    page = sorted.slice(start, end)
    more = start > 0
  }
  const links: { rel: string; href: string }[] = []
  if (page.length > 0) {
    const first = String(page[0].id)
    const last = String(page[page.length - 1].id)
    const hasNext = reverse ? marker !== undefined : more
    const hasPrevious = reverse ? more : marker !== undefined
    if (hasNext) links.push({ rel: 'next', href: pageUrl(spec, query, last, false) })
    if (hasPrevious) links.push({ rel: 'previous', href: pageUrl(spec, query, first, true) })
  }
  const fields = fieldsOf(query)
  const body: Record<string, unknown> = { [spec.collection]: page.map((i) => projectFields(i, fields)) }
  if (links.length > 0) body[`${spec.collection}_links`] = links
  return body
}
