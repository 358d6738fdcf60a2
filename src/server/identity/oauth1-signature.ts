/**
 * OAuth 1.0a request signatures (RFC 5849), as Keystone's OS-OAUTH1 checks them: the `Authorization: OAuth …`
 * header, the signature base string of §3.4.1 and HMAC-SHA1 (§3.4.2), the only method Keystone accepts.
 * Pure functions: which secrets sign a request, the timestamp window and the nonces seen are the caller's
 * (identity/oauth1.ts).
 */
import { createHmac, timingSafeEqual } from 'node:crypto'

/** The oauth_* parameters of a request's Authorization header, percent-decoded. */
export type OAuthParams = ReadonlyMap<string, string>

/** RFC 5849 §3.6: percent-encode everything but the unreserved characters. */
export function oauthEscape(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}

function unescape(text: string): string | undefined {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

/**
 * The parameters of an `OAuth k="v", …` header (§3.5.1); undefined when there is none or it is malformed. The
 * `realm` is not a parameter of the signature and is left out.
 */
export function parseOAuthHeader(header: string | undefined): OAuthParams | undefined {
  if (typeof header !== 'string' || header.length > 4096) return undefined
  const match = /^\s*OAuth\s+(.*)$/is.exec(header)
  if (!match) return undefined
  const params = new Map<string, string>()
  for (const part of match[1].split(',')) {
    if (part.trim() === '') continue
    const pair = /^\s*([A-Za-z0-9_%.~-]+)\s*=\s*"([^"]*)"\s*$/.exec(part)
    if (!pair) return undefined
    const name = unescape(pair[1])
    const value = unescape(pair[2])
    if (name === undefined || value === undefined || params.has(name)) return undefined
    if (name !== 'realm') params.set(name, value)
  }
  return params
}

/** §3.4.1.2: scheme and host in lower case, the default port dropped, no query or fragment. */
export function normalizedUri(url: string): string | undefined {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return undefined
  }
  const scheme = parsed.protocol.toLowerCase()
  // URL drops the default port of the scheme already; the path keeps its encoding as sent.
  return `${scheme}//${parsed.host.toLowerCase()}${parsed.pathname.replace(/\/\/+/g, '/')}`
}

/**
 * The signature base string (§3.4.1): method, URI, and every parameter but the signature (the header's and the
 * query's), encoded, sorted by name then value, joined.
 */
export function baseString(method: string, uri: string, params: OAuthParams, query: readonly (readonly [string, string])[]): string {
  const pairs = [...params].filter(([k]) => k !== 'oauth_signature').concat(query.map(([k, v]) => [k, v]))
  const encoded = pairs.map(([k, v]) => [oauthEscape(k), oauthEscape(v)] as const)
  encoded.sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0) : a[0] < b[0] ? -1 : 1))
  const normalized = encoded.map(([k, v]) => `${k}=${v}`).join('&')
  return `${oauthEscape(method.toUpperCase())}&${oauthEscape(uri)}&${oauthEscape(normalized)}`
}

/** HMAC-SHA1 over the base string with `consumer secret & token secret` (§3.4.2), base64. */
export function hmacSha1Signature(base: string, consumerSecret: string, tokenSecret: string): string {
  return createHmac('sha1', `${oauthEscape(consumerSecret)}&${oauthEscape(tokenSecret)}`).update(base).digest('base64')
}

/** Whether `given` is the HMAC-SHA1 signature of the request at one of the URIs it may have been sent to; constant time per URI. */
export function signatureMatches(
  given: string,
  request: { method: string; uris: readonly string[]; params: OAuthParams; query: readonly (readonly [string, string])[] },
  secrets: { consumer: string; token: string },
): boolean {
  const givenBytes = Buffer.from(given, 'utf8')
  let ok = false
  for (const uri of new Set(request.uris)) {
    const expected = Buffer.from(hmacSha1Signature(baseString(request.method, uri, request.params, request.query), secrets.consumer, secrets.token), 'utf8')
    if (expected.length === givenBytes.length && timingSafeEqual(expected, givenBytes)) ok = true
  }
  return ok
}
