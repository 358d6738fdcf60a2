/** Cookies of requests, for the few places that read one (the IdP's browser binding, the remote-console token of old noVNC clients). */
import { decodeURIComponentSafe } from '../logger.js'

/**
 * The value of the cookie `name` in a Cookie header (RFC 6265 §5.4: `name=value` pairs separated by `;`),
 * percent-decoded when it is valid percent-encoding, else as sent; undefined when absent or empty.
 */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const pair of (header ?? '').split(';')) {
    const eq = pair.indexOf('=')
    if (eq > 0 && pair.slice(0, eq).trim() === name) return decodeURIComponentSafe(pair.slice(eq + 1).trim()) || undefined
  }
  return undefined
}
