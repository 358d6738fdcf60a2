/**
 * Cinder's list paging, shared by volumes and snapshots: sort by any listed key (ties end on id), start after
 * `marker` (404 MarkerNotFound when it is not in the list, as Cinder) or at `offset`, stop after `limit` (0 is an
 * empty page).
 */
import { badRequest, notFound } from '../../contracts/errors.js'

export interface SortSpec {
  key: string
  dir: 'asc' | 'desc'
}

export interface PageQuery {
  sort: SortSpec[]
  marker?: string
  offset?: number
  limit?: number
}

export type SortKeys<T> = Record<string, (record: T) => string | number | null>

export function page<T extends { id: string }>(records: T[], query: PageQuery, keys: SortKeys<T>, kind: string): T[] {
  const specs = [...query.sort]
  for (const s of specs) if (!(s.key in keys)) throw badRequest(`Invalid sort key '${s.key}': expected one of ${Object.keys(keys).join(', ')}.`)
  if (!specs.some((s) => s.key === 'id')) specs.push({ key: 'id', dir: specs[0]?.dir ?? 'desc' })
  const sorted = [...records].sort((a, b) => {
    for (const s of specs) {
      const va = keys[s.key](a)
      const vb = keys[s.key](b)
      if (va === vb) continue
      const order = va === null ? -1 : vb === null ? 1 : va < vb ? -1 : 1
      return s.dir === 'asc' ? order : -order
    }
    return 0
  })
  let start = query.offset ?? 0
  if (query.marker !== undefined) {
    const at = sorted.findIndex((r) => r.id === query.marker)
    if (at < 0) throw notFound(`Marker ${query.marker} could not be found: no such ${kind}.`)
    start = at + 1
  }
  return sorted.slice(start, query.limit === undefined ? undefined : start + query.limit)
}
