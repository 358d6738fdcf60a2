/**
 * How each API family writes an error body. Clients parse these shapes, so each follows its original service:
 * Nova faults, Keystone errors, Neutron errors, Glance/Cinder faults, OAuth2 errors.
 */
import type { ErrorCode } from '../../contracts/errors.js'

export interface PublicError {
  status: number
  code: ErrorCode
  message: string
  details?: string
  type?: string
  extra?: Record<string, unknown>
}

export type ErrorRenderer = (error: PublicError) => unknown

/** Nova's fault names (also used by Cinder). */
const FAULT_NAMES: Partial<Record<ErrorCode, string>> = {
  bad_request: 'badRequest',
  unauthorized: 'unauthorized',
  forbidden: 'forbidden',
  not_found: 'itemNotFound',
  method_not_allowed: 'badMethod',
  not_acceptable: 'notAcceptable',
  conflict: 'conflictingRequest',
  payload_too_large: 'requestEntityTooLarge',
  unsupported_media_type: 'mediaTypeNotSupported',
  over_limit: 'overLimit',
  too_many_requests: 'overLimit',
  not_implemented: 'notImplemented',
  unavailable: 'serviceUnavailable',
}

/** HTTP reason phrases, used as Keystone's `title` and Glance's `title`. */
export const REASON_PHRASES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  413: 'Request Entity Too Large',
  415: 'Unsupported Media Type',
  426: 'Upgrade Required',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
}

export const renderComputeFault: ErrorRenderer = (e) => ({
  [e.type ?? FAULT_NAMES[e.code] ?? 'computeFault']: { code: e.status, message: e.message, ...(e.details !== undefined ? { details: e.details } : {}) },
})

export const renderIdentityError: ErrorRenderer = (e) => ({
  error: { code: e.status, title: REASON_PHRASES[e.status] ?? 'Error', message: e.message },
  ...e.extra,
})

/** Neutron's `type` is the exception class name clients match on (NetworkNotFound, IpAddressGenerationFailure…). */
export const renderNeutronError: ErrorRenderer = (e) => ({
  NeutronError: { type: e.type ?? defaultNeutronType(e.code), message: e.message, detail: e.details ?? '' },
})

function defaultNeutronType(code: ErrorCode): string {
  const names: Partial<Record<ErrorCode, string>> = { bad_request: 'BadRequest', not_found: 'NotFound', conflict: 'Conflict', forbidden: 'Forbidden', unauthorized: 'NotAuthorized', over_limit: 'OverQuota' }
  return names[code] ?? 'NeutronException'
}

export const renderGlanceError: ErrorRenderer = (e) => ({
  message: e.message,
  code: `${e.status} ${REASON_PHRASES[e.status] ?? 'Error'}`,
  title: REASON_PHRASES[e.status] ?? 'Error',
})

/** RFC 6749 §5.2: `error` is a fixed token such as invalid_request, invalid_client, invalid_grant. */
export const renderOAuthError: ErrorRenderer = (e) => ({
  error: e.type ?? (e.code === 'unauthorized' ? 'invalid_client' : e.code === 'internal' ? 'server_error' : 'invalid_request'),
  error_description: e.message,
})

/** Our own services (resmgr, health) use the identity shape, which Platform9 clients also read. */
export const renderPlainError: ErrorRenderer = renderIdentityError

const str = { type: 'string' }
const int = { type: 'integer' }
const closed = (properties: Record<string, unknown>, required: string[]) => ({ type: 'object', properties, required, additionalProperties: false })

/** The JSON Schema of each renderer's body, for the OpenAPI document and the fuzz suite's check of error shapes. */
const ERROR_BODIES = new Map<ErrorRenderer, Record<string, unknown>>([
  // One key, the fault's name (badRequest, itemNotFound…).
  [renderComputeFault, { type: 'object', minProperties: 1, maxProperties: 1, additionalProperties: closed({ code: int, message: str, details: str }, ['code', 'message']) }],
  // `extra` adds the auth receipt's fields beside `error`.
  [renderIdentityError, { type: 'object', properties: { error: closed({ code: int, title: str, message: str }, ['code', 'title', 'message']) }, required: ['error'] }],
  [renderNeutronError, closed({ NeutronError: closed({ type: str, message: str, detail: str }, ['type', 'message', 'detail']) }, ['NeutronError'])],
  [renderGlanceError, closed({ message: str, code: str, title: str }, ['message', 'code', 'title'])],
  [renderOAuthError, closed({ error: str, error_description: str }, ['error', 'error_description'])],
])

/** The schema of the error bodies `renderer` writes (the plain shape when there is no family). */
export function errorBodySchema(renderer: ErrorRenderer | undefined): Record<string, unknown> {
  return ERROR_BODIES.get(renderer ?? renderPlainError)!
}
