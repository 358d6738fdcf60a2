/**
 * Field tables and the one projector that applies them. A table maps each wire key to one or more entries,
 * each valid on [since, until) for some views, optionally for admins only, optionally omitted for a given
 * object (`omit`). `project()` builds a response object from a table for a (version, view, admin) triple; the
 * list of applicable entries is computed once per triple and cached, so projecting 1,000 rows costs one pass
 * over a short array per row. A key not in a table never reaches the wire. Each entry's `type` describes the
 * value, so the OpenAPI document's response schemas come from the same table (schemas.ts).
 */
import type { TSchema } from '@sinclair/typebox'
import { inRange, type ComputeVersion, type VersionNumber } from './versions.js'

export interface FieldEntry<T, V extends string> {
  /** The JSON Schema of the value `read` returns: the field's description in /openapi.json (schemas.ts). */
  type: TSchema
  since?: ComputeVersion
  /** Exclusive. */
  until?: ComputeVersion
  views: readonly V[]
  /** Shown only to admins (Nova's policy default for the field). */
  admin?: boolean
  read: (source: T) => unknown
  /** The key is left out for this object (e.g. `fault` when there is none). */
  omit?: (source: T) => boolean
}

export type FieldTable<T, V extends string> = Record<string, FieldEntry<T, V> | readonly FieldEntry<T, V>[]>

export interface ProjectOptions<V extends string> {
  version: VersionNumber
  view: V
  admin: boolean
}

type Compiled<T> = { key: string; read: (s: T) => unknown; omit?: (s: T) => boolean }[]

const cache = new WeakMap<object, Map<string, Compiled<unknown>>>()

/** The entries of `table` that apply to one (version, view, admin) triple, in table order. */
export function fieldsFor<T, V extends string>(table: FieldTable<T, V>, options: ProjectOptions<V>): Compiled<T> {
  let perTable = cache.get(table)
  if (!perTable) cache.set(table, (perTable = new Map()))
  const cacheKey = `${options.version}|${options.view}|${options.admin ? 1 : 0}`
  let compiled = perTable.get(cacheKey) as Compiled<T> | undefined
  if (!compiled) {
    compiled = []
    for (const [key, spec] of Object.entries(table)) {
      const entries = (Array.isArray(spec) ? spec : [spec]) as FieldEntry<T, V>[]
      const entry = entries.find((e) => e.views.includes(options.view) && inRange(options.version, e.since, e.until) && (!e.admin || options.admin))
      if (entry) compiled.push({ key, read: entry.read, omit: entry.omit })
    }
    perTable.set(cacheKey, compiled as Compiled<unknown>)
  }
  return compiled
}

/** Builds the wire object for `source`. */
export function project<T, V extends string>(table: FieldTable<T, V>, source: T, options: ProjectOptions<V>): Record<string, unknown> {
  return projector(table, options)(source)
}

/** A function that projects many objects for one (version, view, admin): resolve the fields once per page. */
export function projector<T, V extends string>(table: FieldTable<T, V>, options: ProjectOptions<V>): (source: T) => Record<string, unknown> {
  const fields = fieldsFor(table, options)
  return (source) => {
    const out: Record<string, unknown> = {}
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i]
      if (f.omit !== undefined && f.omit(source)) continue
      out[f.key] = f.read(source)
    }
    return out
  }
}

/** Every (key, entry) of a table, for meta-tests (no overlapping ranges per key and view). */
export function entriesOf<T, V extends string>(table: FieldTable<T, V>): [string, FieldEntry<T, V>][] {
  return Object.entries(table).flatMap(([key, spec]) => ((Array.isArray(spec) ? spec : [spec]) as FieldEntry<T, V>[]).map((e) => [key, e] as [string, FieldEntry<T, V>]))
}
