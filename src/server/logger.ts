/** The process logger: structured JSON (pino), with every place a secret can appear redacted. */
import { pino, type Logger } from 'pino'

export const REDACT_PATHS = [
  'req.headers["x-auth-token"]',
  'req.headers["x-subject-token"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["x-subject-token"]',
  '*.password',
  '*.adminPass',
  '*.client_secret',
  '*.refresh_token',
  '*.token',
  '*.secret',
  '*.databaseUrl',
  '*.masterKey',
  '*.adminPassword',
]

/** Query parameters whose values never reach a log line (OAuth 2 and 1.0a flows and some clients put secrets in URLs). */
const SECRET_QUERY_PARAMS = /^(password|token|access_token|id_token|refresh_token|client_secret|code|code_verifier|device_code|user_code|secret|passcode|totp|oauth_token|oauth_token_secret|oauth_verifier|oauth_signature)$/i
/** Parameters that carry another URL whose own query may hold a secret (noVNC's `path=…%3Ftoken%3D…`). */
const NESTED_URL_PARAMS = /^path$/i

/** Path segments that are credentials themselves (the `$2` group): the token of Nova's GET /os-console-auth-tokens/{token}. */
const SECRET_PATH_SEGMENTS = [/^([^?]*\/os-console-auth-tokens\/)([^/?]+)/i]

/** The request URL as logged: secret path segments and secret query parameter values replaced. */
export function redactUrl(url: string): string {
  let redacted = url
  for (const pattern of SECRET_PATH_SEGMENTS) redacted = redacted.replace(pattern, '$1[redacted]')
  return redactUrlQuery(redacted)
}

/** The request URL as logged: path and query, with secret parameter values replaced. */
export function redactUrlQuery(url: string): string {
  const q = url.indexOf('?')
  if (q < 0) return url
  const params = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=')
      const name = decodeURIComponentSafe(eq < 0 ? pair : pair.slice(0, eq))
      if (eq >= 0 && SECRET_QUERY_PARAMS.test(name)) return `${pair.slice(0, eq)}=[redacted]`
      if (eq >= 0 && NESTED_URL_PARAMS.test(name)) {
        const nested = decodeURIComponentSafe(pair.slice(eq + 1))
        if (nested.includes('?')) return `${pair.slice(0, eq)}=${encodeURIComponent(redactUrlQuery(nested))}`
      }
      return pair
    })
  return `${url.slice(0, q)}?${params.join('&')}`
}

/** decodeURIComponent, or the text as it is when it is not valid percent-encoding (input from clients must not throw). */
export function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

interface LoggedRequest {
  method: string
  url: string
  host?: string
  ip?: string
  socket?: { remotePort?: number }
}

/** Replaces Fastify's request serializer (pino's own serializers win over Fastify's defaults). */
const serializers = {
  req: (req: LoggedRequest) => ({ method: req.method, url: redactUrl(req.url), host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort }),
}

/**
 * The logger of a start in a terminal: the JSON log at `level` in `file` (created with its folder), and warnings and
 * errors on stderr too, so the terminal keeps the start summary readable and still shows what goes wrong.
 */
export function createTerminalLogger(level: string, file: string): Logger {
  if (level === 'silent') return createLogger(level)
  // Synchronous: a start that fails exits at once, and the line saying why must be in the file by then.
  const streams = pino.multistream([
    { level: level as pino.Level, stream: pino.destination({ dest: file, mkdir: true, sync: true }) },
    { level: 'warn', stream: process.stderr },
  ])
  return createLogger(level, streams as unknown as NodeJS.WritableStream)
}

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: { pid: process.pid }, serializers }, destination as pino.DestinationStream)
}
