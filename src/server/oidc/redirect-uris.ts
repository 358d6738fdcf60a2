/**
 * Redirect URIs: which an admin may register, and which a request may use. A request's URI must equal a
 * registered one exactly (RFC 9700 §2.1), with one exception, RFC 8252 §7.3: a registered loopback URI
 * (`http://127.0.0.1`, `http://[::1]`, `http://localhost`) matches the same URI with any port, because a native
 * client (kubelogin) binds whatever port is free at the time.
 */

/** Out-of-band: the code is shown on a page for the user to paste (kubelogin's authcode-keyboard). */
export const OOB_URI = 'urn:ietf:wg:oauth:2.0:oob'

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost'])
/** Schemes a browser would run or read locally instead of sending the code anywhere. */
const REFUSED_SCHEMES = new Set(['javascript:', 'data:', 'file:', 'vbscript:', 'blob:', 'about:'])
const MAX_LENGTH = 2000

function parse(uri: string): URL | undefined {
  try {
    return new URL(uri)
  } catch {
    return undefined
  }
}

const isLoopback = (url: URL) => url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)

/** What is wrong with a URI an admin wants to register, or undefined when it may be registered. */
export function redirectUriProblem(uri: string): string | undefined {
  if (uri === OOB_URI) return undefined
  if (uri.length > MAX_LENGTH) return `a redirect URI has at most ${MAX_LENGTH} characters`
  const url = parse(uri)
  if (!url) return `${JSON.stringify(uri)} is not an absolute URI`
  if (REFUSED_SCHEMES.has(url.protocol)) return `the scheme ${url.protocol} cannot receive a code`
  if (uri.includes('#')) return `${JSON.stringify(uri)} has a fragment (RFC 6749 §3.1.2)`
  if (url.username || url.password) return `${JSON.stringify(uri)} carries credentials`
  // A private-use scheme must be a reverse domain name (RFC 8252 §7.1), so two apps do not claim the same one.
  if (url.protocol !== 'https:' && url.protocol !== 'http:' && !url.protocol.includes('.')) {
    return `the private-use scheme ${url.protocol} must be a reverse domain name such as com.example.app:`
  }
  return undefined
}

/** True when the requested URI may receive this client's codes. */
export function redirectUriAllowed(registered: readonly string[], requested: string): boolean {
  if (registered.includes(requested)) return true
  const url = parse(requested)
  if (!url || !isLoopback(url) || requested.includes('#')) return false
  return registered.some((entry) => {
    const candidate = parse(entry)
    if (!candidate || !isLoopback(candidate)) return false
    // Everything but the port must agree.
    return candidate.hostname === url.hostname && candidate.pathname === url.pathname && candidate.search === url.search && !url.username && !url.password
  })
}
