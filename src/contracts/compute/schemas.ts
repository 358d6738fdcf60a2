/**
 * The compute API's request and answer schemas for the OpenAPI document, built from the tables that check and
 * shape them: request bodies from the parameter tables (one schema per run of microversions that accept the
 * same body), answers from the field tables. OpenAPI cannot make a schema depend on a header, so where the
 * microversion matters each alternative says which versions it holds for in `x-microversions`
 * ({ min, max }, inclusive) and fields shown to admins only say `x-admin-only`.
 */
import type { TSchema } from '@sinclair/typebox'
import { entriesOf, type FieldEntry, type FieldTable } from './fields.js'
import { SERVER_LIST_PARAMS, SERVER_SORT_KEYS } from './server.params.js'
import { COMPUTE_VERSIONS, inRange, MAX_VERSION, MIN_VERSION, versionNumber, versionString, type ComputeVersion, type VersionNumber } from './versions.js'

export type JsonSchema = Record<string, unknown>

/**
 * Where a schema is built later: when the document is (its first request, http/openapi.ts), not when the routes
 * are registered. Building every body at each of some hundred microversions costs about 100 ms, which every
 * start of the server (and of every test file) would otherwise pay for a document it may never serve.
 */
export const LATER = Symbol('built with the OpenAPI document')

function later(build: () => JsonSchema): JsonSchema {
  return { [LATER]: build } as JsonSchema
}

/** `value` with every schema made `later` built, as plain data (what the document holds). */
export function built(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(built)
  if (value === null || typeof value !== 'object') return value
  const own = Object.fromEntries(Object.entries(value).map(([key, v]) => [key, built(v)]))
  const build = (value as { [LATER]?: () => JsonSchema })[LATER]
  return build ? { ...(built(build()) as JsonSchema), ...own } : own
}

const VERSIONS: VersionNumber[] = COMPUTE_VERSIONS.map(([v]) => versionNumber(v))

/** A TypeBox schema as plain JSON (TypeBox's own markers are symbols and do not survive). */
export function plain(schema: TSchema): JsonSchema {
  return JSON.parse(JSON.stringify(schema)) as JsonSchema
}

function range(min: string, max: string): JsonSchema {
  return min === MIN_VERSION && max === MAX_VERSION ? {} : { 'x-microversions': { min, max } }
}

/**
 * The schema `build` makes, over every microversion: one schema when all versions agree, else `anyOf` of one
 * schema per run of consecutive versions that agree, each with its `x-microversions`.
 */
export function versioned(build: (version: VersionNumber) => TSchema): JsonSchema {
  return later(() => {
    const runs: { text: string; from: VersionNumber; to: VersionNumber }[] = []
    for (const version of VERSIONS) {
      // As JSON text: TypeBox's markers are symbols and do not survive, so equal schemas are equal texts.
      const text = JSON.stringify(build(version))
      const last = runs[runs.length - 1]
      if (last && last.text === text) last.to = version
      else runs.push({ text, from: version, to: version })
    }
    const schemas = runs.map((r) => JSON.parse(r.text) as JsonSchema)
    if (runs.length === 1) return schemas[0]
    return { anyOf: runs.map((r, i) => ({ ...schemas[i], ...range(versionString(r.from), versionString(r.to)) })) }
  })
}

function last(until: ComputeVersion | undefined): string {
  if (!until) return MAX_VERSION
  const i = VERSIONS.indexOf(versionNumber(until))
  return versionString(VERSIONS[i - 1])
}

function fieldSchema<T, V extends string>(entry: FieldEntry<T, V>): JsonSchema {
  return { ...plain(entry.type), ...range(entry.since ?? MIN_VERSION, last(entry.until)), ...(entry.admin ? { 'x-admin-only': true } : {}) }
}

export interface Versions {
  since?: ComputeVersion
  until?: ComputeVersion
}

/**
 * The object a field table projects for `view`, over the versions in `versions` (all by default): every key
 * the view can hold, each with the versions it appears in; required are the keys every caller always gets.
 */
export function fieldsSchema<T, V extends string>(table: FieldTable<T, V>, view: V, versions: Versions = {}): JsonSchema {
  return later(() => {
    const overlaps = (e: FieldEntry<T, V>) =>
      VERSIONS.some((v) => inRange(v, e.since, e.until) && inRange(v, versions.since, versions.until))
    const byKey = new Map<string, FieldEntry<T, V>[]>()
    for (const [key, entry] of entriesOf(table)) {
      if (!entry.views.includes(view) || !overlaps(entry)) continue
      byKey.set(key, [...(byKey.get(key) ?? []), entry])
    }
    const properties: Record<string, JsonSchema> = {}
    const required: string[] = []
    for (const [key, entries] of byKey) {
      properties[key] = entries.length === 1 ? fieldSchema(entries[0]) : { anyOf: entries.map(fieldSchema) }
      const [only] = entries
      if (entries.length === 1 && !only.since && !only.until && !only.admin && !only.omit) required.push(key)
    }
    const schema: JsonSchema = { type: 'object', properties, required }
    return versions.since || versions.until ? { ...schema, ...range(versions.since ?? MIN_VERSION, last(versions.until)) } : schema
  })
}

/**
 * A body only some versions accept (the proxy APIs, until 2.36): one alternative with its `x-microversions`, so
 * that a client (and the fuzz suite) sends it with a version that has the route.
 */
export function acceptedIn(body: JsonSchema, versions: Versions): JsonSchema {
  return { anyOf: [{ ...body, ...range(versions.since ?? MIN_VERSION, last(versions.until)) }] }
}

/** An object with one key holding `inner` (Nova's envelopes: `{"server": …}`, `{"servers": […]}`). */
export function envelope(key: string, inner: JsonSchema, more: Record<string, JsonSchema> = {}): JsonSchema {
  return { type: 'object', properties: { [key]: inner, ...more }, required: [key] }
}

export function listOf(inner: JsonSchema): JsonSchema {
  return { type: 'array', items: inner }
}

/** Query parameters, all strings on the wire; unknown ones are ignored below 2.75 and refused from it where Nova does. */
export function queryOf(params: Record<string, JsonSchema>): JsonSchema {
  return { type: 'object', properties: params, additionalProperties: true }
}

export const Q = {
  str: { type: 'string' },
  /** A non-negative integer in decimal. */
  count: { type: 'string', pattern: '^[0-9]+$' },
  bool: { type: 'string', description: 'true/false, 1/0, yes/no, on/off' },
  time: { type: 'string', description: 'ISO 8601 date and time' },
  sortDir: { type: 'string', enum: ['asc', 'desc'] },
} satisfies Record<string, JsonSchema>

const VERSION_TEXT = `${MIN_VERSION} to ${MAX_VERSION}, or latest`

/** The headers that choose the microversion (the first that names compute counts; the default is 2.1). */
export const MICROVERSION_HEADERS: JsonSchema = {
  type: 'object',
  properties: {
    'openstack-api-version': { type: 'string', description: `compute <version>: ${VERSION_TEXT}`, pattern: '^compute ' },
    'x-openstack-nova-api-version': { type: 'string', description: `<version>: ${VERSION_TEXT}` },
  },
}

/** GET /servers and /servers/detail: the filters of server.params.ts with who may use them, paging and sorting. */
export function serverListQuery(): JsonSchema {
  const filters = Object.fromEntries(
    Object.entries(SERVER_LIST_PARAMS).map(([name, p]) => [name, { type: 'string', description: p.since ? `from ${p.since}` : 'admins only', ...(p.since && p.since !== MIN_VERSION ? range(p.since, MAX_VERSION) : {}) }]),
  )
  return queryOf({ ...filters, limit: Q.count, marker: Q.str, sort_key: { type: 'string', enum: Object.keys(SERVER_SORT_KEYS) }, sort_dir: Q.sortDir })
}
