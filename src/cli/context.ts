/**
 * What every command gets: output streams, environment, where its files live, a logger that never writes
 * secrets, prompting, and an HTTP dispatcher honouring the proxy and TLS settings. Tests build one with
 * scratch folders and captured streams; the process builds it from the real environment (main.ts).
 */
import { appendFileSync, mkdirSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import type { FlagValues } from './spec.js'

export interface CliContext {
  stdout: NodeJS.WritableStream
  stderr: NodeJS.WritableStream
  stdin: NodeJS.ReadableStream
  env: NodeJS.ProcessEnv
  global: FlagValues
  /** ~/.config/pcctl unless XDG_CONFIG_HOME says otherwise. */
  configDir: string
  log: (level: 'debug' | 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void
  /** Asks on the terminal; throws when --no-prompt is set or there is no terminal. */
  prompt: (question: string, options?: { secret?: boolean }) => Promise<string>
}

const SECRET_KEYS = /pass(word|code)?|secret|token|key|credential|authorization/i

/** Replaces the values of secret-looking fields, recursively. */
export function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact)
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_KEYS.test(k) ? '[redacted]' : redact(v)]))
  }
  return value
}

export function defaultConfigDir(env: NodeJS.ProcessEnv): string {
  return join(env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config'), 'pcctl')
}

export function defaultLogDir(env: NodeJS.ProcessEnv): string {
  return join(env.XDG_STATE_HOME || join(env.HOME || homedir(), '.local', 'state'), 'pcctl')
}

/** A logger appending JSON lines to <logDir>/pcctl.log; with --verbose, debug lines also go to stderr. */
export function fileLogger(logDir: string, verbose: boolean, stderr: NodeJS.WritableStream): CliContext['log'] {
  let ready = false
  return (level, message, fields) => {
    const line = JSON.stringify({ time: new Date().toISOString(), level, message, ...(redact(fields ?? {}) as object) })
    if (verbose) stderr.write(`[${level}] ${message}${fields ? ' ' + JSON.stringify(redact(fields)) : ''}\n`)
    try {
      if (!ready) {
        mkdirSync(logDir, { recursive: true, mode: 0o700 })
        ready = true
      }
      appendFileSync(join(logDir, 'pcctl.log'), line + '\n', { mode: 0o600 })
    } catch {
      // A log folder we cannot write must not stop the command.
    }
  }
}
