/** Request parsing shared by the block storage routes: schema fragments and Cinder's query conventions. */
import type { FastifyRequest } from 'fastify'
import { AppError, badRequest } from '../../../contracts/errors.js'
import type { VolumeListQuery } from '../../volume/service.js'
import { atLeast, type VolumeVersion } from '../../volume/microversion.js'
import type { FromSchema, RawQuery } from '../../http/route-types.js'

export const nullableString = (max = 255) => ({ type: ['string', 'null'], maxLength: max }) as const
export const stringMap = { type: 'object', additionalProperties: { type: 'string', maxLength: 255 } } as const
/** A route (or form of one) that came with a microversion: below it, Cinder has no such resource (404). */
export function since(request: FastifyRequest, version: string, what: string): void {
  if (!atLeast(request.volumeVersion, version)) throw new AppError('not_found', `The resource could not be found (${what} needs microversion ${version}).`)
}

export const idParams = { type: 'object', properties: { id: { type: 'string', maxLength: 64 } }, required: ['id'] } as const

export function one(value: unknown): string | undefined {
  return Array.isArray(value) ? String(value[value.length - 1]) : value === undefined ? undefined : String(value)
}

export function intParam(name: string, value: unknown, min: number): number | undefined {
  const raw = one(value)
  if (raw === undefined) return undefined
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw badRequest(`Invalid value '${raw}' for '${name}': expected a whole number of at least ${min}.`)
  return Number(raw)
}

export function boolParam(name: string, value: unknown): boolean | undefined {
  const raw = one(value)?.toLowerCase()
  if (raw === undefined) return undefined
  if (['true', '1', 'yes', 'on'].includes(raw)) return true
  if (['false', '0', 'no', 'off'].includes(raw)) return false
  throw badRequest(`Invalid value '${raw}' for '${name}': expected true or false.`)
}

/** cinderclient sends metadata filters as a Python dict literal; accept JSON too. */
export function metadataParam(value: unknown): Record<string, string> | undefined {
  const raw = one(value)
  if (raw === undefined) return undefined
  for (const text of [raw, raw.replace(/'/g, '"')]) {
    try {
      const parsed = JSON.parse(text) as unknown
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, String(v)]))
    } catch {
      // try the next form
    }
  }
  throw badRequest(`Invalid value for 'metadata': expected a JSON object, got '${raw}'.`)
}

export function sortParam(query: Record<string, unknown>): VolumeListQuery['sort'] {
  const dirOf = (d: string | undefined): 'asc' | 'desc' => {
    const dir = (d ?? 'desc').toLowerCase()
    if (dir !== 'asc' && dir !== 'desc') throw badRequest(`Invalid sort direction '${d}': expected asc or desc.`)
    return dir
  }
  const sort = one(query.sort)
  if (sort !== undefined) {
    if (query.sort_key !== undefined || query.sort_dir !== undefined) throw badRequest("The 'sort' parameter cannot be combined with 'sort_key' or 'sort_dir'.")
    return sort.split(',').map((part) => {
      const [key, dir] = part.split(':')
      return { key: key.trim(), dir: dirOf(dir) }
    })
  }
  const key = one(query.sort_key)
  return [{ key: key ?? 'created_at', dir: dirOf(one(query.sort_dir)) }]
}
/** A list's page: Cinder's limit, marker, offset and sort parameters. */
export function paging(q: Record<string, unknown>) {
  return { limit: intParam('limit', q.limit, 0), marker: one(q.marker), offset: intParam('offset', q.offset, 0), sort: sortParam(q) }
}

/** The microversion from which lists answer `count` when asked (`with_count`). */
export const WITH_COUNT_SINCE = '3.45'

/**
 * Cinder 3.45's `with_count`: the list's answer gets `count`, the number of records matching the filters whatever
 * the limit and marker. Before 3.45 Cinder ignores the parameter (a bad value too); from 3.45 a value that is not a
 * boolean is a 400, as Cinder's get_bool_param. Answers `{ count }` to spread into the list's body, or nothing.
 */
export function countField(version: VolumeVersion, q: Record<string, unknown>): (count: number) => { count?: number } {
  const wanted = atLeast(version, WITH_COUNT_SINCE) && (boolParam('with_count', q.with_count) ?? false)
  return (count) => (wanted ? { count } : {})
}

/** Cinder links the next page whenever this one is full, even when nothing follows (Tempest checks it). */
export function nextPageLinks(href: string, limit: number | undefined, page: { id: string }[], query: URLSearchParams = new URLSearchParams({ limit: String(limit) })): { rel: 'next'; href: string }[] | undefined {
  if (!limit || page.length !== limit) return undefined
  query.set('marker', page[page.length - 1].id)
  return [{ rel: 'next', href: `${href}?${query}` }]
}

export const metadataBody = { type: 'object', required: ['metadata'], properties: { metadata: stringMap } } as const
export const keyParams = { type: 'object', properties: { id: { type: 'string' }, key: { type: 'string', maxLength: 255 } }, required: ['id', 'key'] } as const

/** Route generics of the routes on one record (`/{collection}/:id`) and on one of its keys (`…/:key`). */
export type IdRoute = { Params: FromSchema<typeof idParams> }
export type KeyRoute = { Params: FromSchema<typeof keyParams> }
/** Cinder's list filters are read from the raw query string (no schema names them all). */
export type QueryRoute = { Querystring: RawQuery }
