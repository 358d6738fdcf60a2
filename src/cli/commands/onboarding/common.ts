/** What the onboarding commands share: the admin session (with --mfa), the host's id, waiting with progress. */
import { randomUUID } from 'node:crypto'
import { Session } from '../../../client/session.js'
import { ResmgrClient } from '../../../client/resmgr.js'
import { ApiError, UnreachableError } from '../../../client/transport.js'
import type { CliContext } from '../../context.js'
import { resolveCredentials } from '../../config/credentials.js'
import type { Host } from '../../host/host.js'
import { CliFailure } from '../config.js'

export const AGENT_SERVICE = 'pcc-agent'
export const HOST_ID_FILE = '/etc/pcc/host_id'
export const AGENT_CONFIG_FILE = '/etc/pcc/agent.json'
export const AGENT_BINARY = '/opt/pcc/pcc-agent.mjs'
/** Everything onboarding puts on a host, removed again by decommission-node. */
export const AGENT_PATHS = ['/opt/pcc', '/etc/pcc', '/var/lib/pcc', '/var/log/pcc', `/run/${AGENT_SERVICE}.pid`]

export interface Connected {
  session: Session
  resmgr: ResmgrClient
  base: string
  close(): Promise<void>
}

/** Logs in as the configured account; a refused login (also a missing MFA code) is "Invalid Credentials" (rule 7). */
export async function connect(context: CliContext, mfa: string | undefined): Promise<Connected> {
  const credentials = resolveCredentials(context.env, context.configDir, { insecure: Boolean(context.global.insecure), caFile: context.global['os-cacert'] as string | undefined })
  const session = Session.create({ ...credentials.auth, passcode: mfa }, credentials.transport)
  try {
    await session.login()
    const resmgr = await ResmgrClient.connect(session)
    const base = credentials.auth.authUrl.replace(/\/identity\/v3\/?$/, '')
    return { session, resmgr, base, close: () => session.transport.close() }
  } catch (err) {
    await session.transport.close()
    if (err instanceof ApiError && err.status === 401) throw new CliFailure(`Invalid Credentials${mfa ? '' : ' (if the account uses multi-factor authentication, pass --mfa <code>)'}`)
    if (err instanceof UnreachableError) throw new CliFailure(`${err.message}: check the account URL (pcctl config get) and the network (pcctl check-url)`)
    throw err
  }
}

/** The id this host registers under, created once and kept in /etc/pcc/host_id. */
export function hostId(host: Host, create: boolean): string | undefined {
  const existing = host.readText(HOST_ID_FILE)?.trim()
  if (existing || !create) return existing || undefined
  const id = randomUUID()
  host.write(HOST_ID_FILE, id + '\n')
  return id
}

export function requireHostId(host: Host): string {
  const id = hostId(host, false)
  if (!id) throw new CliFailure('this host is not onboarded (no /etc/pcc/host_id): run `pcctl prep-node` first')
  return id
}

/** "5m", "90s", "1h30m" or plain seconds → milliseconds. */
export function parseDuration(text: string): number {
  if (/^\d+$/.test(text)) return Number(text) * 1000
  const parts = [...text.matchAll(/(\d+)(h|m|s)/g)]
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) throw new CliFailure(`invalid duration "${text}": use a form like 5m, 90s or 1h30m`)
  return parts.reduce((ms, [, n, unit]) => ms + Number(n) * { h: 3_600_000, m: 60_000, s: 1000 }[unit as 'h' | 'm' | 's'], 0)
}

/**
 * Polls `check` until it returns a value, printing a progress line whenever the status it reports changes.
 * Throws with the last status when `timeoutMs` runs out.
 */
export async function waitFor<T>(
  context: CliContext,
  what: string,
  timeoutMs: number,
  check: () => Promise<{ done: T } | { status: string }>,
  intervalMs = 1000,
): Promise<T> {
  const started = Date.now()
  let last = ''
  for (;;) {
    const result = await check()
    if ('done' in result) return result.done
    if (result.status !== last) {
      context.stderr.write(`  … ${what}: ${result.status} (${Math.round((Date.now() - started) / 1000)}s)\n`)
      last = result.status
    }
    if (Date.now() - started > timeoutMs) throw new CliFailure(`timed out after ${Math.round(timeoutMs / 1000)}s waiting for ${what} (last state: ${last}). Check the agent log /var/log/pcc/agent.log and run the command again`)
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}

export const MFA_FLAG = { name: 'mfa', type: 'string' as const, help: 'current TOTP code, when the account uses multi-factor authentication', placeholder: '<token>' }
