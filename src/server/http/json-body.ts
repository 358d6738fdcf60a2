/**
 * JSON request bodies for every API family. Clients such as Tempest (and many HTTP helpers) send
 * `Content-Type: application/json` on every request, also on bodiless ones: role grants, token revocation,
 * deletes, Glance's image actions. Keystone, Nova, Neutron, Glance and Cinder all treat an empty body as no body,
 * so pcc does too: an empty JSON body is an absent body (the same `undefined` Fastify gives a request without a
 * Content-Type). A route whose body is optional declares `type: ['object', 'null']` (Fastify validates an absent
 * body as null); a route that needs one still refuses it with 400 through its schema. Non-empty bodies go through
 * Fastify's own parser (prototype-poisoning checks, 400 for malformed JSON in the family's error shape).
 */
import type { FastifyInstance } from 'fastify'
import { AppError, badRequest } from '../../contracts/errors.js'

/** `\u0000` in JSON text that is not an escaped backslash followed by "u0000". */
const NUL_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\u0000/

/**
 * The refusal of JSON text that holds a NUL character, or undefined. Every parser that reads a body as JSON asks
 * (this file's, compute's for text/plain and Nova's type, Glance's for its patch types), so no media type gets
 * one past the check.
 */
export function nulInJson(text: string): AppError | undefined {
  return NUL_ESCAPE.test(text) ? badRequest('Invalid input: the body holds a NUL character (\\u0000), which no field accepts.') : undefined
}

/**
 * No text field takes a NUL character: PostgreSQL cannot store one (a 500 found by the fuzz suite) and SQLite
 * would, so both dialects refuse it here, in the URL (`%00`) and in JSON bodies, with a 400 in the family's shape.
 */
export function refuseNul(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    done(request.url.includes('%00') ? badRequest('Invalid input: the URL holds a NUL character (%00), which no parameter accepts.') : undefined)
  })
}

export function acceptBodilessJson(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser<string>('application/json', { parseAs: 'string' }, (request, body, done) => {
    const nul = nulInJson(body)
    if (body.length === 0) done(null, undefined)
    else if (nul) done(nul, undefined)
    // Fastify's JSON parser answers through done (its type also allows a promise-returning parser, which it is not).
    else void parseJson(request, body, done)
  })
}
