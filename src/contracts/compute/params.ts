/**
 * Request-body tables: each key of an object with the microversions it is accepted at. `bodyValidator(table,
 * version)` builds the closed object schema of that version (a key outside its range is an "additional
 * property", as in Nova) and compiles it once per version with TypeBox's compiler. Failures are 400s naming
 * the field, in Nova's words.
 */
import { Type as T, type TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { badRequest } from '../errors.js'
import { inRange, type ComputeVersion, type VersionNumber } from './versions.js'

export interface ParamEntry {
  schema: TSchema | ((version: VersionNumber) => TSchema)
  since?: ComputeVersion
  until?: ComputeVersion
  required?: boolean | ((version: VersionNumber) => boolean)
}

export type ParamTable = Record<string, ParamEntry>

/** The object schema of `table` at `version` (closed: unknown keys are refused). */
export function objectAt(table: ParamTable, version: VersionNumber): TSchema {
  const props: Record<string, TSchema> = {}
  for (const [key, entry] of Object.entries(table)) {
    if (!inRange(version, entry.since, entry.until)) continue
    const schema = typeof entry.schema === 'function' ? entry.schema(version) : entry.schema
    const required = typeof entry.required === 'function' ? entry.required(version) : entry.required
    props[key] = required ? schema : T.Optional(schema)
  }
  return T.Object(props, { additionalProperties: false })
}

const compiled = new WeakMap<(version: VersionNumber) => TSchema, Map<VersionNumber, TypeCheck<TSchema>>>()

/**
 * Validates `value` against the schema `build` makes for `version`; compiled once per (builder, version).
 * `name` is the field named when the value itself (not a key inside it) is wrong.
 */
export function check(name: string, version: VersionNumber, build: (version: VersionNumber) => TSchema, value: unknown): void {
  let perVersion = compiled.get(build)
  if (!perVersion) compiled.set(build, (perVersion = new Map()))
  let checker = perVersion.get(version)
  if (!checker) perVersion.set(version, (checker = TypeCompiler.Compile(build(version))))
  if (checker.Check(value)) return
  const first = checker.Errors(value).First()!
  const segments = first.path.split('/').filter(Boolean).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
  if (first.message === 'Unexpected property') {
    // Name the object that has the extra key, and the key, as Nova does.
    const key = segments.pop() ?? ''
    const parent = segments.length ? segments[segments.length - 1] : name
    throw badRequest(`Invalid input for field/attribute ${parent}. Additional properties are not allowed ('${key}' was unexpected)`)
  }
  const field = segments.length ? segments[segments.length - 1] : name
  const shown = first.value === undefined ? '' : ` Value: ${typeof first.value === 'object' ? JSON.stringify(first.value) : String(first.value)}.`
  throw badRequest(`Invalid input for field/attribute ${field}.${shown} ${first.message}`)
}

/** Common value schemas (nova/api/validation/parameter_types.py). */
export const P = {
  uuid: T.String({ pattern: '^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$' }),
  /** 1–255 printable characters without leading or trailing whitespace. */
  name: T.String({ minLength: 1, maxLength: 255, pattern: '^(?!\\s)[^\\x00-\\x1f\\x7f]*(?<!\\s)$' }),
  description: T.Union([T.Null(), T.String({ maxLength: 255, pattern: '^[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f]*$' })]),
  ipv4: T.String({ pattern: '^((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)$' }),
  ipv6: T.String({ pattern: '^[0-9a-fA-F:.]*:[0-9a-fA-F:.]*$', maxLength: 45 }),
  diskConfig: T.Union([T.Literal('AUTO'), T.Literal('MANUAL')]),
  boolean: T.Union([T.Boolean(), T.String({ pattern: '^(1|0|[tT]([rR][uU][eE])?|[fF]([aA][lL][sS][eE])?|[oO][nN]|[oO][fF][fF]|[yY]([eE][sS])?|[nN][oO]?)$' })]),
  metadata: T.Record(T.String({ pattern: '^[a-zA-Z0-9-_:. ]{1,255}$' }), T.String({ maxLength: 255 }), { additionalProperties: false }),
  positiveInt: T.Union([T.Integer({ minimum: 1 }), T.String({ pattern: '^[0-9]*[1-9][0-9]*$' })]),
  nonNegativeInt: T.Union([T.Integer({ minimum: 0 }), T.String({ pattern: '^[0-9]+$' })]),
  tag: T.String({ minLength: 1, maxLength: 60, pattern: '^[^,/]*$' }),
  hostLike: T.String({ minLength: 1, maxLength: 255, pattern: '^[a-zA-Z0-9-._]*$' }),
}

export function boolWord(v: unknown): boolean {
  if (typeof v === 'boolean') return v
  return ['1', 't', 'true', 'on', 'y', 'yes'].includes(String(v).toLowerCase())
}
