/**
 * Request bodies taken as streams (image uploads, a host's snapshot and disk uploads): the scope's
 * `application/octet-stream` parser hands the raw request through untouched, so the global body limit does not
 * apply and nothing is buffered; the service that stores the bytes enforces its own limit.
 */
import { PassThrough } from 'node:stream'
import type { FastifyRequest } from 'fastify'

/** Consumes the request body as a stream of its own, so a failed upload can still be answered. */
export function uploadStream(request: FastifyRequest): PassThrough {
  const raw = request.raw
  const body = new PassThrough({ highWaterMark: 1 << 20 })
  const abort = () => {
    if (!raw.complete) body.destroy(new Error('the client closed the connection before the upload finished'))
  }
  raw.on('aborted', abort)
  raw.on('error', (err) => body.destroy(err))
  raw.on('close', abort)
  raw.pipe(body)
  return body
}

/** The octet-stream parser that leaves the body to `uploadStream`. */
export function passThroughParser(_request: FastifyRequest, _payload: unknown, done: (err: Error | null, body?: unknown) => void): void {
  done(null, undefined)
}
