/**
 * Registers one API family (identity, compute, network…) as an encapsulated Fastify plugin under its path
 * prefix, with the family's own error envelope for every failure: thrown AppErrors, schema validation, bodies
 * that are too large or malformed, unknown routes (404) and known routes called with another method (405).
 */
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError, ERROR_STATUS, type ErrorCode } from '../../contracts/errors.js'
import { renderPlainError, type ErrorRenderer, type PublicError } from './error-renderers.js'
import { isDataException } from '../storage/errors.js'

export interface ApiFamily {
  name: string
  prefix: string
  renderError: ErrorRenderer
  /** Headers every response of the family carries with the request id (Nova's x-compute-request-id). */
  requestIdHeaders?: string[]
  /** Headers every response of the family carries with a fixed value (Keystone's Vary: X-Auth-Token). */
  fixedHeaders?: Record<string, string>
  routes: (scope: FastifyInstance) => Promise<void> | void
}

const STATUS_TO_CODE = new Map<number, ErrorCode>(
  (Object.entries(ERROR_STATUS) as [ErrorCode, number][]).filter(([code]) => code !== 'over_limit').map(([code, status]) => [status, code]),
)

const GENERIC_500 = 'The server has either erred or is incapable of performing the requested operation.'

/** Turns anything thrown into the public part of an error; unexpected errors are logged and hidden. */
export function toPublicError(err: unknown, request: FastifyRequest): PublicError {
  if (err instanceof AppError) {
    return { status: err.status, code: err.code, message: err.message, details: err.options.details, type: err.options.type, extra: err.options.extra }
  }
  const fe = err as FastifyError
  if (fe.validation) {
    // Fastify names the failing field in its message, e.g. "body/server must have required property 'name'".
    return { status: 400, code: 'bad_request', message: `Invalid input: ${fe.message}` }
  }
  if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return { status: 413, code: 'payload_too_large', message: `The request body is larger than the limit of ${request.routeOptions.bodyLimit} bytes.` }
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    const code = STATUS_TO_CODE.get(fe.statusCode) ?? 'bad_request'
    return { status: fe.statusCode, code, message: fe.message }
  }
  if (isDataException(err)) {
    // The database refused a value of the request (PostgreSQL: a number past a column's range…): bad input.
    request.log.info({ err }, 'the database refused a value of the request')
    return { status: 400, code: 'bad_request', message: 'Invalid input: a value of the request cannot be stored (out of range or not valid text).' }
  }
  request.log.error({ err }, 'unexpected error')
  return { status: 500, code: 'internal', message: GENERIC_500, details: `request id ${request.id}` }
}

/** Route patterns of a family, to tell 405 (path exists with another method) from 404. */
class RouteIndex {
  private readonly routes: { pattern: RegExp; methods: Set<string> }[] = []

  add(url: string, methods: string[]): void {
    const source = url.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+').replace(/\*/g, '.*')
    this.routes.push({ pattern: new RegExp(`^${source}/?$`), methods: new Set(methods) })
  }

  allowed(path: string): string[] {
    const methods = new Set<string>()
    for (const r of this.routes) if (r.pattern.test(path)) for (const m of r.methods) methods.add(m)
    return [...methods]
  }
}

export async function registerFamily(app: FastifyInstance, family: ApiFamily): Promise<void> {
  await app.register(
    async (scope) => {
      const index = new RouteIndex()
      scope.addHook('onRoute', (route) => {
        index.add(route.url, ([] as string[]).concat(route.method))
      })
      const send = (reply: FastifyReply, error: PublicError, headers?: Record<string, string>) => {
        if (headers) reply.headers(headers)
        return reply.code(error.status).type('application/json').send(family.renderError(error))
      }
      scope.setErrorHandler((err, request, reply) => {
        const headers = err instanceof AppError ? err.options.headers : undefined
        return send(reply, toPublicError(err, request), headers)
      })
      scope.setNotFoundHandler((request, reply) => {
        const path = request.url.split('?')[0]
        const allowed = index.allowed(path)
        if (allowed.length > 0) {
          return send(reply, { status: 405, code: 'method_not_allowed', message: `The method ${request.method} is not allowed for ${path}.` }, { allow: allowed.join(', ') })
        }
        return send(reply, { status: 404, code: 'not_found', message: `The resource could not be found: ${path}` })
      })
      const requestIdHeaders = family.requestIdHeaders ?? []
      const fixedHeaders = family.fixedHeaders ?? {}
      if (requestIdHeaders.length > 0 || Object.keys(fixedHeaders).length > 0) {
        scope.addHook('onSend', (request, reply, payload, done) => {
          for (const header of requestIdHeaders) reply.header(header, request.id)
          reply.headers(fixedHeaders)
          done(null, payload)
        })
      }
      await family.routes(scope)
    },
    { prefix: family.prefix },
  )
}

/** The family whose prefix `url` is under, if any. */
export function familyOf(families: ApiFamily[], url: string): ApiFamily | undefined {
  const path = url.split('?')[0]
  return families.find((f) => path === f.prefix || path.startsWith(`${f.prefix}/`))
}

/**
 * Errors Fastify meets before any route runs (a path with a malformed percent-escape, a path parameter past
 * `maxParamLength`): answered in the error shape of the family the URL is under, like every other error.
 */
export function frameworkErrors(families: ApiFamily[]) {
  return (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const family = familyOf(families, request.url)
    // A path segment that long names nothing; any other such error is a URL that cannot be read.
    const error: PublicError =
      err.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? { status: 404, code: 'not_found', message: 'The resource could not be found: a path segment is too long.' }
        : { status: 400, code: 'bad_request', message: 'The URL is not valid: a path segment is not a valid percent-encoded UTF-8 string.' }
    for (const header of ['x-openstack-request-id', ...(family?.requestIdHeaders ?? [])]) reply.header(header, request.id)
    return reply.code(error.status).type('application/json').send((family?.renderError ?? renderPlainError)(error))
  }
}

/** What a connection-level failure is, by Node's error code (before any request exists). */
const CLIENT_ERRORS: Record<string, PublicError> = {
  HPE_HEADER_OVERFLOW: { status: 431, code: 'headers_too_large', message: 'The request line and headers are larger than this server accepts.' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, code: 'request_timeout', message: 'The request did not arrive in time.' },
}
const NOT_HTTP: PublicError = { status: 400, code: 'bad_request', message: 'The request is not valid HTTP.' }

/**
 * Fastify's clientErrorHandler: a request Node's parser refuses (headers too large, malformed HTTP) answered in
 * the error shape of the family its request line names, when the line arrived, then the connection closes.
 */
export function clientErrors(families: ApiFamily[]) {
  return (err: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    const error = CLIENT_ERRORS[err.code ?? ''] ?? NOT_HTTP
    const packet = Buffer.isBuffer(err.rawPacket) ? err.rawPacket.toString('latin1') : ''
    const target = packet.split('\r\n')[0].split(' ')[1] ?? ''
    const body = JSON.stringify((familyOf(families, target)?.renderError ?? renderPlainError)(error))
    if (socket.writable) {
      socket.write(`HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
    }
    socket.destroy(err)
  }
}
