/**
 * Request types derived from route schemas, for Fastify's route generics (`scope.post<{ Body: FromSchema<typeof
 * body>; Params: FromSchema<typeof params> }>(url, { schema: { body, params } }, handler)`): the handler reads
 * `request.body` as what the validator let through instead of casting it. TypeBox schemas give their `Static`
 * type; plain JSON Schema written `as const` gives the type of the subset our routes use (type, properties,
 * required, additionalProperties, items, enum, const, anyOf/oneOf). Anything else reads as `unknown`.
 *
 * (Fastify's TypeBox type provider would infer these from the schema alone; it is not a dependency here.)
 */
import type { Static, TSchema } from '@sinclair/typebox'

type Simplify<T> = { [K in keyof T]: T[K] } & {}

type Primitive<T> = T extends 'string'
  ? string
  : T extends 'integer' | 'number'
    ? number
    : T extends 'boolean'
      ? boolean
      : T extends 'null'
        ? null
        : T extends 'array'
          ? unknown[]
          : T extends 'object'
            ? Record<string, unknown>
            : unknown

type RequiredKeys<S> = S extends { readonly required: readonly (infer K)[] } ? K & string : never

type ObjectOf<S> = S extends { readonly properties: infer P }
  ? Simplify<
      { -readonly [K in keyof P as K extends RequiredKeys<S> ? K : never]: FromSchema<P[K]> } & {
        -readonly [K in keyof P as K extends RequiredKeys<S> ? never : K]?: FromSchema<P[K]>
      } & (S extends { readonly additionalProperties: false } ? unknown : S extends { readonly additionalProperties: infer A extends object } ? Record<string, FromSchema<A> | undefined> : unknown)
    >
  : S extends { readonly additionalProperties: infer A extends object }
    ? Record<string, FromSchema<A>>
    : Record<string, unknown>

type OfType<S, T> = T extends 'object' ? ObjectOf<S> : T extends 'array' ? (S extends { readonly items: infer I } ? FromSchema<I>[] : unknown[]) : Primitive<T>

declare const converted: unique symbol
/**
 * Marks a schema whose custom keyword rewrites the value it checks (an Ajv `modifying` keyword, e.g. the network
 * API's neutronBool turning "true" into true) with the type the handler then reads. Type-only: written as
 * `schema as typeof schema & Converts<T>`, nothing is added to the schema object.
 */
export type Converts<T> = { readonly [converted]?: T }

/** The type of the values `schema` accepts. */
export type FromSchema<S> = [S] extends [undefined]
  ? unknown
  : typeof converted extends keyof S
    ? Exclude<S[typeof converted], undefined>
  : S extends TSchema
    ? Static<S>
    : S extends { readonly const: infer C }
      ? C
      : S extends { readonly enum: readonly (infer E)[] }
        ? E
        : S extends { readonly anyOf: readonly (infer U)[] }
          ? FromSchema<U>
          : S extends { readonly oneOf: readonly (infer U)[] }
            ? FromSchema<U>
            : S extends { readonly type: readonly (infer T)[] }
              ? T extends unknown
                ? OfType<S, T>
                : never
              : S extends { readonly type: infer T }
                ? OfType<S, T>
                : S extends { readonly properties: object }
                  ? ObjectOf<S>
                  : unknown

/**
 * A query string as Fastify's parser hands it over when no schema names its parameters: each value a string,
 * or a list of them when the parameter repeats.
 */
export type RawQuery = Record<string, string | string[] | undefined>

/** A query string after the compute API's useSingleQueryValues hook (api/compute/context.ts): a repeated parameter keeps its last value. */
export type SingleQuery = Record<string, string | undefined>
