/**
 * Request-body tables: each key of an object with the microversions it is accepted at. `bodyValidator(table,
 * version)` builds the closed object schema of that version (a key outside its range is an "additional
 * property", as in Nova) and compiles it once per version with TypeBox's compiler. Failures are 400s naming
 * the field, in Nova's words.
 */
import { Type as T, type Static, type TOptional, type TProperties, type TSchema, type TUnsafe } from '@sinclair/typebox'
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

/** The schema type of a table entry (what its builder returns, at any version). */
type EntrySchema<E> = E extends { schema: (version: VersionNumber) => infer S extends TSchema } ? S : E extends { schema: infer S extends TSchema } ? S : never
/** Keys every version requires: `required: true` with no version range. */
type AlwaysRequired<Table> = { [K in keyof Table]: Table[K] extends { required: true; since?: undefined; until?: undefined } ? K : never }[keyof Table]

/**
 * What `objectAt(table, v)` accepts, over every version: the keys required at every version, and the others
 * optional (a key outside its versions, or required only at some, may be absent). A table declared with
 * `satisfies ParamTable` keeps the literal types this reads.
 */
export type TableStatic<Table extends ParamTable> = {
  [K in keyof Table as K extends AlwaysRequired<Table> ? K : never]: Static<EntrySchema<Table[K]>>
} & {
  [K in keyof Table as K extends AlwaysRequired<Table> ? never : K]?: Static<EntrySchema<Table[K]>>
}

/**
 * Properties a schema has only at some versions, spread into an object's properties: typed optional, since a body
 * at another version lacks them (a plain conditional spread would type them as always there).
 */
export function onlyAt<P extends TProperties>(present: boolean, props: P): { [K in keyof P]: TOptional<P[K]> } {
  // The cast is on the schema's TypeScript type only: what the schema checks is `props` or nothing.
  return (present ? props : {}) as { [K in keyof P]: TOptional<P[K]> }
}

/** A property required at some versions only: typed optional, since a body at the other versions may lack it. */
export function requiredWhen<S extends TSchema>(required: boolean, schema: S): TOptional<S> {
  // The cast is on the TypeScript type only: the schema is required or optional as `required` says.
  return (required ? schema : T.Optional(schema)) as TOptional<S>
}

/** The object schema of `table` at `version` (closed: unknown keys are refused), typed with TableStatic. */
export function objectAt<Table extends ParamTable>(table: Table, version: VersionNumber): TUnsafe<TableStatic<Table>> {
  const props: Record<string, TSchema> = {}
  for (const [key, entry] of Object.entries(table)) {
    if (!inRange(version, entry.since, entry.until)) continue
    const schema = typeof entry.schema === 'function' ? entry.schema(version) : entry.schema
    const required = typeof entry.required === 'function' ? entry.required(version) : entry.required
    props[key] = required ? schema : T.Optional(schema)
  }
  // The object's type is the table's over every version (TableStatic), not one version's: a cast on the type only.
  return T.Object(props, { additionalProperties: false }) as TSchema as TUnsafe<TableStatic<Table>>
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
