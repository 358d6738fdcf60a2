/**
 * The closed set of error codes every service raises. The HTTP status comes from this table, never from the
 * throw site; each API family renders the code in its own envelope (compute faults, identity errors, OAuth2
 * errors, Neutron errors…), see server/http/error-renderers.ts.
 */
export const ERROR_STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  request_timeout: 408,
  conflict: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  over_limit: 413,
  headers_too_large: 431,
  too_many_requests: 429,
  internal: 500,
  not_implemented: 501,
  unavailable: 503,
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

export interface AppErrorOptions {
  /** Extra public detail (Nova's `details`, Neutron's `detail`). */
  details?: string
  /** Response headers the error needs (WWW-Authenticate, Retry-After, Openstack-Auth-Receipt…). */
  headers?: Record<string, string>
  /** A family-specific error name, when the family distinguishes errors of one code (Neutron's `type`, OAuth2's `error`). */
  type?: string
  /** Extra fields merged into the family's error body (the auth receipt). */
  extra?: Record<string, unknown>
  cause?: unknown
}

/** An error whose message is safe to show to the client. */
export class AppError extends Error {
  override name = 'AppError'
  readonly status: number

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly options: AppErrorOptions = {},
  ) {
    super(message, { cause: options.cause })
    this.status = ERROR_STATUS[code]
  }
}

export const badRequest = (message: string, options?: AppErrorOptions) => new AppError('bad_request', message, options)
export const notFound = (message: string, options?: AppErrorOptions) => new AppError('not_found', message, options)
export const conflict = (message: string, options?: AppErrorOptions) => new AppError('conflict', message, options)
export const forbidden = (message: string, options?: AppErrorOptions) => new AppError('forbidden', message, options)
export const unauthorized = (message: string, options?: AppErrorOptions) => new AppError('unauthorized', message, options)
