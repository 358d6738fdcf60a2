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

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: { pid: process.pid } }, destination as pino.DestinationStream)
}
