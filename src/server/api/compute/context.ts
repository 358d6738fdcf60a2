/**
 * What every authenticated compute route shares: the microversion of the request (parsed once, echoed on
 * every response with `Vary`), the caller (which project, which user), policy checks and body validation.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import type { Static, TSchema } from '@sinclair/typebox'
import { AppError, badRequest, forbidden, notFound } from '../../../contracts/errors.js'
import { apiVersion, MAX_VERSION, MIN_VERSION, parseRequestedVersion, type ApiVersion, type Gate, type VersionNumber } from '../../../contracts/compute/versions.js'
import { check } from '../../../contracts/compute/params.js'
import { allows, visibilityOf, type PolicyTarget, type Visibility } from '../../policy/rules.js'
import { COMPUTE_POLICY, type ComputeOperation } from '../../policy/compute.policy.js'
import { projectOf } from '../../auth/principal.js'

declare module 'fastify' {
  interface FastifyRequest {
    api: ApiVersion
  }
  interface FastifyContextConfig {
    /** The route reads a query parameter given more than once as a list (the server lists' filters). */
    repeatedQuery?: boolean
  }
}

const VARY = 'OpenStack-API-Version, X-OpenStack-Nova-API-Version, Cloud-API-Version'

/** The requested version string from the three headers, by precedence; undefined when none names compute. */
export function requestedVersion(request: FastifyRequest): string | undefined {
  for (const header of ['cloud-api-version', 'openstack-api-version']) {
    const raw = request.headers[header]
    if (raw === undefined) continue
    const items = (Array.isArray(raw) ? raw.join(',') : raw).split(',')
    let found: string | undefined
    for (const item of items) {
      const [service, ...rest] = item.trim().split(/\s+/)
      if (service && service.toLowerCase() === 'compute' && rest.length) found = rest.join(' ')
    }
    if (found !== undefined) return found
  }
  const legacy = request.headers['x-openstack-nova-api-version']
  if (legacy !== undefined) {
    const items = (Array.isArray(legacy) ? legacy.join(',') : legacy).split(',')
    return items[items.length - 1].trim()
  }
  return undefined
}

function versionHeaders(text: string): Record<string, string> {
  return { 'openstack-api-version': `compute ${text}`, 'x-openstack-nova-api-version': text, 'cloud-api-version': `compute ${text}`, vary: VARY }
}

/** Each version's ApiVersion and the headers every answer at it echoes, made once: the hook only looks them up. */
const perVersion = new Map<VersionNumber, { api: ApiVersion; headers: Record<string, string> }>()

function atVersion(version: VersionNumber): { api: ApiVersion; headers: Record<string, string> } {
  let entry = perVersion.get(version)
  if (!entry) {
    const api = apiVersion(version)
    perVersion.set(version, (entry = { api, headers: versionHeaders(api.text) }))
  }
  return entry
}

/** onRequest hook: sets request.api or answers 400 (malformed) / 406 (out of range). Callback-style: no promise per request. */
export function microversionHook(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const raw = requestedVersion(request)
  const parsed = raw === undefined ? parseRequestedVersion(MIN_VERSION) : parseRequestedVersion(raw)
  if (!parsed.ok) {
    if (parsed.status === 400) return done(badRequest(`API Version String ${parsed.requested} is of invalid format. Must be of format MajorNum.MinorNum.`))
    return done(
      new AppError('not_acceptable', `Version ${parsed.requested} is not supported by the API. Minimum is ${MIN_VERSION} and maximum is ${MAX_VERSION}.`, {
        type: 'computeFault',
        headers: versionHeaders(parsed.requested),
      }),
    )
  }
  const { api, headers } = atVersion(parsed.version)
  request.api = api
  reply.headers(headers)
  done()
}

/** Registers the version hook on a scope (the version documents and every authenticated route). */
export function useMicroversions(scope: FastifyInstance): void {
  scope.decorateRequest('api', null as unknown as ApiVersion)
  scope.addHook('onRequest', microversionHook)
}

/**
 * A query parameter given more than once counts once, with its last value, as webob's `GET.get()` reads it
 * for Nova; only routes that read repeats as a list (config.repeatedQuery) see arrays. Handlers can then take
 * every parameter as a string (an array reaching one was a 500, found by the fuzz suite).
 */
export function useSingleQueryValues(scope: FastifyInstance): void {
  scope.addHook('preValidation', (request, _reply, done) => {
    if (!request.routeOptions.config.repeatedQuery) {
      const query = request.query as Record<string, unknown>
      for (const [key, value] of Object.entries(query)) if (Array.isArray(value)) query[key] = value[value.length - 1]
    }
    done()
  })
}

/** Who calls; what it may do is the policy table's (`can`, `must`, `serverCaller`), never read from its roles. */
export interface Caller {
  projectId: string
  userId: string
}

export function callerOf(request: FastifyRequest): Caller {
  const p = request.principal
  return { projectId: projectOf(p) ?? '', userId: p.userId }
}

/**
 * The caller as server operations (create, actions, volume and interface attachments) take it: who it is, and what
 * compute's policy table lets it reach, each rule evaluated here once and passed down as a named value, so the
 * domain reads no roles (docs/architecture.md, "Where a permission is decided").
 */
export interface ServerCaller {
  projectId: string
  userId: string
  /** Whose images, volumes, snapshots and networks the request may name (other_projects:use). */
  visibility: Visibility
  /** Private flavors the project has no access to (flavors:all_projects). */
  flavorVisibility: Visibility
  /** A port on an external network that is not shared (network:attach_external_network). */
  attachExternal: boolean
  /** May act on a locked server (servers:locked:override). */
  lockOverride: boolean
}

export function serverCaller(request: FastifyRequest): ServerCaller {
  const { projectId, userId } = callerOf(request)
  return {
    projectId,
    userId,
    visibility: visibilityOf(can(request, 'other_projects:use')),
    flavorVisibility: visibilityOf(can(request, 'flavors:all_projects')),
    attachExternal: can(request, 'network:attach_external_network'),
    lockOverride: can(request, 'servers:locked:override'),
  }
}

export function can(request: FastifyRequest, op: ComputeOperation, target: PolicyTarget = {}): boolean {
  return allows(COMPUTE_POLICY, op, request.principal, target)
}

/**
 * Whether the caller may see a resource of `projectId` at all. Another project's resource is not found (404) rather
 * than forbidden, so routes check this before the operation's own rule (must).
 */
export function visibleProject(request: FastifyRequest, projectId: string): boolean {
  return projectId === callerOf(request).projectId || can(request, 'other_projects:see')
}

export function must(request: FastifyRequest, op: ComputeOperation, target: PolicyTarget = {}): void {
  if (!COMPUTE_POLICY[op](request.principal, target)) throw forbidden(`Policy doesn't allow os_compute_api:${op} to be performed.`)
}

/**
 * Validates a body (or action value) against a per-version schema builder (400 otherwise). After it, `value` has
 * the type of what the builder's schemas accept (`Static` of its return type, over every version), so the handler
 * reads the body without casts.
 */
export function validate<B extends (version: VersionNumber) => TSchema>(name: string, request: FastifyRequest, build: B, value: unknown): asserts value is Static<ReturnType<B>> {
  check(name, request.api.version, build, value)
}

/** 404 for routes that exist only from some version on (Nova's method-level gating). */
export function requireGate(request: FastifyRequest, gate: Gate): void {
  if (!request.api.has(gate)) throw notFound('The resource could not be found.')
}

/** 404 for routes that Nova removed at some version (the proxy APIs at 2.36…). */
export function requireBefore(request: FastifyRequest, gate: Gate): void {
  if (request.api.has(gate)) throw notFound('The resource could not be found.')
}

/** Reads a JSON object body (Fastify parsed it); anything else is a malformed request. */
export function bodyObject(request: FastifyRequest): Record<string, unknown> {
  const body = request.body
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('Malformed request body')
  return body as Record<string, unknown>
}
