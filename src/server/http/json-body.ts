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

/** A `\uD800`…`\uDFFF` escape: the only way a JSON body's text (decoded as UTF-8) can carry a surrogate. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/
/** A surrogate that is not half of a pair. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

function holdsLoneSurrogate(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return LONE_SURROGATE.test(value)
  if (typeof value !== 'object' || value === null || depth > 64) return false
  if (Array.isArray(value)) return value.some((v) => holdsLoneSurrogate(v, depth + 1))
  return Object.entries(value).some(([k, v]) => LONE_SURROGATE.test(k) || holdsLoneSurrogate(v, depth + 1))
}

/**
 * The refusal of a parsed JSON body that holds a lone UTF-16 surrogate (`"a\ud800b"`) in any string or key, or
 * undefined. Such a string has no UTF-8 form: stored, it came back mangled (`a\ufffd\ufffd\ufffdb`). Nova refuses
 * it with 400, and so does every family here, in its own error shape. Only bodies whose text escapes a surrogate
 * are walked, so the check costs a regular expression over the text otherwise.
 */
export function loneSurrogateInJson(text: string, value: unknown): AppError | undefined {
  if (!SURROGATE_ESCAPE.test(text) || !holdsLoneSurrogate(value)) return undefined
  return badRequest('Invalid input: the body holds a lone UTF-16 surrogate (\\ud800-\\udfff outside a pair), which is not valid Unicode.')
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
    else
      void parseJson(request, body, (err: Error | null, value?: unknown) => {
        const refused = err ? undefined : loneSurrogateInJson(body, value)
        if (refused) done(refused, undefined)
        else done(err, value)
      })
  })
}
