/**
 * The OpenAPI document (/openapi.json): every route of every service, described by the schemas that check it.
 *
 * A route's `schema` (body, querystring, params, headers) is what Fastify validates; its `response` schemas only
 * describe, because responses are serialized with JSON.stringify (app.ts), so a schema can never change what a
 * client receives. Where a route checks its input by hand (compute's microversioned bodies, hand-parsed query
 * strings) the description is `config.docs`, built from the same tables the handler checks with; in the
 * document, a part in `config.docs` takes the place of the same part of `schema`. Every operation also gets
 * its family's error body for 4xx and 5xx answers, and path parameters a schema leaves out are strings.
 */
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify'
import swagger from '@fastify/swagger'
import { familyOf, type ApiFamily } from './api-family.js'
import { errorBodySchema } from './error-renderers.js'
import { built } from '../../contracts/compute/schemas.js'

/** A JSON Schema, as plain data (TypeBox schemas are JSON Schemas too). */
export type JsonSchema = Record<string, unknown>

/** What a route's description holds besides what Fastify applies. */
export interface RouteDocs {
  summary?: string
  description?: string
  tags?: string[]
  params?: JsonSchema
  querystring?: JsonSchema
  headers?: JsonSchema
  body?: JsonSchema
  /** Media types the body may come in (default application/json). */
  consumes?: string[]
  /** Status code (or `2XX`, `default`) → schema of the body; `{ type: 'null' }` for none. */
  response?: Record<string, JsonSchema>
  /** Who may call: `[]` for an open route, `[{ hostCredential: [] }]` for an agent's; the default is a token. */
  security?: Record<string, string[]>[]
}

/** Routes anyone may call, without a token: the route's description says so, and the fuzz suite holds it to that. */
export const OPEN: RouteDocs = { security: [] }
/** Routes a host's agent calls with its host credential (`Authorization: Bearer pcch_…`). */
export const HOST_CREDENTIAL: RouteDocs = { security: [{ hostCredential: [] }] }

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's description in /openapi.json where it is not (only) its `schema`; see http/openapi.ts. */
    docs?: RouteDocs
  }
}

export interface RouteKey {
  method: string
  url: string
}

const routeLists = new WeakMap<FastifyInstance, RouteKey[]>()

/** Every route the application registered (method and URL pattern), HEAD included; for the document's meta-test. */
export function registeredRoutes(app: FastifyInstance): RouteKey[] {
  return routeLists.get(app) ?? []
}

/** Adds `docs` to a route's description from a scope's onRoute hook (a family's headers, documented forms). */
export function addDocs(route: RouteOptions, docs: RouteDocs): void {
  const config = (route.config ??= {}) as { docs?: RouteDocs }
  config.docs = { ...docs, ...config.docs }
}

/** The path parameters of a Fastify URL pattern (`/servers/:id` → ['id']). */
export function pathParams(url: string): string[] {
  return [...url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1])
}

function documentedSchema(route: RouteOptions, families: ApiFamily[]): FastifySchema {
  // Compute's schemas are built now, with the document, rather than at start-up (contracts/compute/schemas.ts).
  const docs = built(route.config?.docs ?? {}) as RouteDocs
  const schema: Record<string, unknown> = { ...route.schema, ...docs }
  const params = (schema.params ?? { type: 'object', properties: {} }) as { properties?: Record<string, unknown>; required?: string[] }
  const names = pathParams(route.url)
  const missing = names.filter((name) => !params.properties?.[name])
  if (missing.length > 0) {
    const properties = { ...params.properties, ...Object.fromEntries(missing.map((name) => [name, { type: 'string' }])) }
    schema.params = { ...params, type: 'object', properties, required: names }
  }
  const family = familyOf(families, route.url)
  const error = family ? errorBodySchema(family.renderError) : errorBodySchema(undefined)
  // The family's error body, unless the route answers its errors otherwise (the IdP's pages for browsers).
  schema.response = { '4XX': error, '5XX': error, ...(schema.response as object) }
  return schema as FastifySchema
}

/** Registers @fastify/swagger with pcc's description rules and records every route for registeredRoutes(). */
export async function registerOpenApi(app: FastifyInstance, options: { baseUrl: string; families: ApiFamily[] }): Promise<void> {
  const routes: RouteKey[] = []
  routeLists.set(app, routes)
  app.addHook('onRoute', (route) => {
    for (const method of ([] as string[]).concat(route.method)) routes.push({ method, url: route.url })
  })
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'pcc',
        description: 'Private-cloud control plane: OpenStack-compatible compute, identity, network, volume and image APIs, resource manager and OIDC provider',
        version: '0.1.0',
      },
      servers: [{ url: options.baseUrl }],
      components: {
        securitySchemes: {
          token: { type: 'apiKey', in: 'header', name: 'X-Auth-Token', description: 'A Keystone token (POST /identity/v3/auth/tokens); `Authorization: Bearer <token>` works too' },
          hostCredential: { type: 'http', scheme: 'bearer', description: "A host's credential, answered when it registered" },
          idpAccessToken: { type: 'http', scheme: 'bearer', description: "An access token of pcc's OIDC provider (POST /idp/token)" },
        },
      },
      // Every operation needs a token unless its description says otherwise.
      security: [{ token: [] }],
    },
    transform: ({ url, route }) => ({ schema: documentedSchema(route, options.families), url }),
  })
}

/** An answer that is not JSON: its media type and what it holds. */
export function mediaAnswer(mediaType: string, description: string, schema: JsonSchema = { type: 'string' }): JsonSchema {
  return { description, content: { [mediaType]: { schema } } }
}

/** An answer without a body (204, or 200 to HEAD-like checks). */
export function noBody(description: string): JsonSchema {
  return { type: 'null', description }
}

/** Route options that describe a route in the document only (see `RouteDocs`). */
export function documented(docs: RouteDocs): { config: { docs: RouteDocs } } {
  return { config: { docs } }
}
