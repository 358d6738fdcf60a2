/**
 * Values for the fuzz suite, from the JSON Schemas of /openapi.json: in `valid` mode a value the schema accepts
 * (as far as a generator can tell: patterns fast-check cannot read become plain strings), in `chaos` mode the
 * same with, at any node, a wrong type or a boundary value instead, a required key left out or an unknown one
 * added. The chaos values are the malformed and boundary inputs every operation must refuse with a 4xx.
 */
import fc from 'fast-check'
import type { JsonSchema } from '../openapi.js'

export type Mode = 'valid' | 'chaos'

export interface ValueOptions {
  mode: Mode
  /** Resolves `$ref`s to the document's components. */
  resolve?: (ref: string) => JsonSchema | undefined
}

/** Strings that break naive code: empty, whitespace, control and NUL characters, quotes, SQL and path syntax, odd Unicode. */
export const NASTY_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\t\n\r',
  "'",
  '"',
  '\\',
  '%',
  '%00',
  '%ff',
  '../..',
  '/',
  ',',
  "' OR '1'='1",
  '; DROP TABLE servers; --',
  '(.*',
  '[',
  '*',
  '?',
  '${x}',
  'null',
  'undefined',
  'true',
  '0',
  '-1',
  '1e309',
  'NaN',
  '\u202e\u0301\ufeff',
  '\ud800',
  '😀'.repeat(64),
  'é'.repeat(300),
]

/** Numbers at and past every boundary a handler or a database column has. */
export const NASTY_NUMBERS = [0, -1, 1, -0.5, 0.5, 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 32, 2 ** 53 + 1, -(2 ** 63), 2 ** 64, 1e308, -1e308, 5e-324]

/** A value nested `depth` levels deep in arrays or objects. */
export function nested(depth: number, kind: 'array' | 'object'): unknown {
  let value: unknown = 1
  for (let i = 0; i < depth; i++) value = kind === 'array' ? [value] : { a: value }
  return value
}

const huge = (n: number) => 'x'.repeat(n)

/** Any wrong or boundary value, whatever the schema says. */
export const chaosValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(null, true, false, {}, [], [null], { '': null }),
  fc.constantFrom(...NASTY_NUMBERS),
  fc.constantFrom(...NASTY_STRINGS),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(huge(256), huge(65_536), huge(300_000)),
  fc.constantFrom(10, 100, 2000).chain((depth) => fc.constantFrom(nested(depth, 'array'), nested(depth, 'object'))),
  fc.array(fc.constantFrom('a', 'a', 'b', ''), { minLength: 100, maxLength: 1000 }),
  fc.jsonValue({ maxDepth: 3 }),
)

function types(schema: JsonSchema): string[] {
  const t = schema.type
  if (Array.isArray(t)) return t as string[]
  if (typeof t === 'string') return [t]
  if (schema.properties || schema.additionalProperties) return ['object']
  if (schema.items) return ['array']
  return []
}

/**
 * Valid values at the edges of what a schema accepts (0 and 1, its minimum and maximum, its shortest and longest
 * strings), one time in three: where valid input breaks a handler, it is mostly there (limit=0 was a 500).
 */
function withEdges<T>(edges: T[], any: fc.Arbitrary<T>): fc.Arbitrary<T> {
  return edges.length === 0 ? any : fc.oneof({ arbitrary: fc.constantFrom(...edges), weight: 1 }, { arbitrary: any, weight: 2 })
}

/**
 * Arbitraries already made, by what shapes them: fast-check's stringMatching tokenizes its sample strings when it is
 * made (a second or more for some patterns), and a large body (a server create) names the same string schema many
 * times; an arbitrary is immutable, so one serves every place.
 */
const stringArbitraries = new Map<string, fc.Arbitrary<string>>()

function stringFor(schema: JsonSchema): fc.Arbitrary<string> {
  const key = JSON.stringify([schema.pattern, schema.minLength, schema.maxLength])
  let made = stringArbitraries.get(key)
  if (!made) stringArbitraries.set(key, (made = makeStringFor(schema)))
  return made
}

function makeStringFor(schema: JsonSchema): fc.Arbitrary<string> {
  const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0
  const longest = typeof schema.maxLength === 'number' ? schema.maxLength : Infinity
  const maxLength = Math.max(minLength, Math.min(typeof schema.maxLength === 'number' ? schema.maxLength : 24, 64))
  let pattern: RegExp | undefined
  try {
    pattern = typeof schema.pattern === 'string' ? new RegExp(schema.pattern) : undefined
  } catch {
    // A pattern JavaScript cannot read: plain strings (the handler refuses those it must).
  }
  const edges = [...new Set(['0', '1', 'x'.repeat(minLength), ...(longest <= 4096 ? ['x'.repeat(longest)] : [])])].filter(
    (s) => s.length >= minLength && s.length <= longest && (!pattern || pattern.test(s)),
  )
  if (pattern) {
    try {
      return withEdges(edges, fc.stringMatching(pattern).filter((s) => s.length >= minLength && s.length <= longest))
    } catch {
      // A pattern fast-check cannot generate from: plain strings.
    }
  }
  return withEdges(edges, fc.string({ minLength, maxLength }))
}

function numberFor(schema: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const min = typeof schema.minimum === 'number' ? schema.minimum : typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : undefined
  const max = typeof schema.maximum === 'number' ? schema.maximum : typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum - 1 : undefined
  const lo = Math.min(min ?? -1000, max ?? 100_000)
  const hi = Math.max(min ?? -1000, max ?? 100_000)
  const edges = [...new Set([0, 1, ...(min === undefined ? [] : [min]), ...(max === undefined ? [] : [max])])].filter((n) => n >= lo && n <= hi)
  return withEdges(edges, integer ? fc.integer({ min: Math.max(lo, Number.MIN_SAFE_INTEGER), max: Math.min(hi, Number.MAX_SAFE_INTEGER) }) : fc.double({ min: lo, max: hi, noNaN: true }))
}

function objectFor(schema: JsonSchema, options: ValueOptions, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>
  const required = new Set((schema.required ?? []) as string[])
  const chaos = options.mode === 'chaos'
  const entries = Object.entries(properties).map(([key, sub]) => {
    const value = valueFor(sub, options, depth + 1)
    // Optional keys are present a quarter of the time (valid input stays likely valid as a whole), half of the
    // time in chaos mode, where a required one is sometimes missing.
    const presence = required.has(key) ? (chaos ? fc.nat(9).map((n) => n > 0) : fc.constant(true)) : chaos ? fc.boolean() : fc.nat(3).map((n) => n === 0)
    return fc.tuple(fc.constant(key), presence, value)
  })
  const extra = chaos ? fc.option(fc.tuple(fc.constantFrom('unexpected', '__proto__', 'constructor', '', 'x'.repeat(300)), chaosValue), { freq: 5 }) : fc.constant(null)
  const additional = schema.additionalProperties && typeof schema.additionalProperties === 'object' ? (schema.additionalProperties as JsonSchema) : undefined
  const free = additional ? fc.option(fc.tuple(fc.string({ minLength: 1, maxLength: 12 }), valueFor(additional, options, depth + 1)), { freq: 2 }) : fc.constant(null)
  return fc.tuple(fc.tuple(...entries), extra, free).map(([fields, more, another]) => {
    const out: Record<string, unknown> = {}
    for (const [key, present, value] of fields) if (present) out[key] = value
    // defineProperty: `__proto__` must become an own key, as JSON.parse makes it.
    for (const pair of [another, more]) if (pair) Object.defineProperty(out, pair[0], { value: pair[1], enumerable: true, writable: true, configurable: true })
    return out
  })
}

/** A value for `schema`. Deeply nested schemas stop at depth 8 with a plain JSON value. */
export function valueFor(schema: JsonSchema | undefined, options: ValueOptions, depth = 0): fc.Arbitrary<unknown> {
  const conforming = conformingFor(schema ?? {}, options, depth)
  if (options.mode === 'valid') return conforming
  return fc.oneof({ arbitrary: conforming, weight: 6 }, { arbitrary: chaosValue, weight: 1 })
}

function conformingFor(schema: JsonSchema, options: ValueOptions, depth: number): fc.Arbitrary<unknown> {
  if (depth > 8) return fc.jsonValue({ maxDepth: 1 })
  if (typeof schema.$ref === 'string') {
    const target = options.resolve?.(schema.$ref)
    return target ? conformingFor(target, options, depth) : fc.jsonValue({ maxDepth: 2 })
  }
  if ('const' in schema) return fc.constant(schema.const)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]))
  const choices = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined
  if (choices?.length) return fc.oneof(...choices.map((c) => conformingFor({ ...schema, anyOf: undefined, oneOf: undefined, ...c }, options, depth)))
  const kinds = types(schema)
  if (kinds.length === 0) return fc.jsonValue({ maxDepth: 2 })
  return fc.oneof(
    ...kinds.map((kind): fc.Arbitrary<unknown> => {
      switch (kind) {
        case 'string':
          return schema.format === 'binary' ? fc.string() : stringFor(schema)
        case 'integer':
          return numberFor(schema, true)
        case 'number':
          return numberFor(schema, false)
        case 'boolean':
          return fc.boolean()
        case 'null':
          return fc.constant(null)
        case 'array': {
          const items = (schema.items ?? {}) as JsonSchema
          const minLength = typeof schema.minItems === 'number' ? schema.minItems : 0
          const maxLength = Math.max(minLength, Math.min(typeof schema.maxItems === 'number' ? schema.maxItems : 3, 4))
          return fc.array(valueFor(items, options, depth + 1), { minLength, maxLength })
        }
        case 'object':
          return objectFor(schema, options, depth)
        default:
          return fc.jsonValue({ maxDepth: 2 })
      }
    }),
  )
}
