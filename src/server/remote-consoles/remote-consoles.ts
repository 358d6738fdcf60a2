/**
 * Console URLs: Nova's checks in Nova's order (compute/api.py, then the compute manager, then the driver), then
 * a token and the URL the type's client opens. The body was validated against the microversion's schema
 * before (contracts/compute/remote-console.params.ts); what pcc serves of it is the tables below.
 */
import { AppError, badRequest, conflict } from '../../contracts/errors.js'
import type { ConsoleProtocol } from '../../contracts/host/compute-driver.js'
import type { ServerTable } from '../storage/schema.js'
import type { Db } from '../storage/store.js'
import type { ConsoleTokens } from './console-tokens.js'

/**
 * Each protocol Nova knows: the console types pcc serves for it (any other type of the protocol is Nova's
 * ConsoleTypeInvalid, 400), or none when the protocol is not enabled in pcc (ConsoleTypeUnavailable, 400).
 */
const PROTOCOL_TYPES: Record<string, readonly string[]> = {
  vnc: ['novnc'],
  serial: ['serial'],
  spice: [],
  mks: [],
}

/** Which consoles each compute driver offers; a protocol missing here is Nova's NotImplementedError (501). */
const DRIVER_CONSOLES: Record<string, readonly ConsoleProtocol[]> = {
  simulated: ['serial'],
  qemu: ['serial', 'vnc'],
}

const PROTOCOL_NAMES: Record<ConsoleProtocol, string> = { serial: 'A serial console', vnc: 'VNC' }

/** Task states that refuse console URLs (compute/api.py reject_instance_state). */
const REFUSING_TASKS = ['deleting', 'migrating']

/** The URL a console type's client opens, from the public URL and the token. */
const URL_BUILDERS: Record<string, (base: URL, token: string) => string> = {
  // noVNC reads the websocket's path from `path` (which must hold the token since noVNC 1.1); Tempest does too.
  novnc: (base, token) => `${trimmed(base)}/console/vnc.html?path=${relativePath(base)}console/websocket${encodeURIComponent(`?token=${token}`)}`,
  // Nova answers serial consoles with the websocket URL itself.
  serial: (base, token) => `${base.protocol === 'https:' ? 'wss' : 'ws'}://${base.host}${trimmedPath(base)}/console/websocket?token=${token}`,
}

const trimmedPath = (base: URL) => base.pathname.replace(/\/+$/, '')
const trimmed = (base: URL) => `${base.origin}${trimmedPath(base)}`
/** The public URL's path without its leading slash, ending with one when not empty ("pcc/" for https://x/pcc). */
const relativePath = (base: URL) => (trimmedPath(base) === '' ? '' : `${trimmedPath(base).slice(1)}/`)

export interface RemoteConsoleDeps {
  db: Db
  tokens: ConsoleTokens
  /** The public URL ({base}). */
  publicUrl: string
}

/**
 * A console URL for the server (404 for servers the caller cannot see is the caller's check). 409 without a
 * host or while deleting or migrating; 400 for a type the protocol does not have here; 501 when the server's
 * host has no such console.
 */
export async function remoteConsoleUrl(deps: RemoteConsoleDeps, server: ServerTable, protocol: string, type: string): Promise<string> {
  if (!server.host_id) throw conflict(`Instance ${server.id} is not ready.`)
  if (server.task_state !== null && REFUSING_TASKS.includes(server.task_state)) {
    throw conflict(`Cannot 'get_${protocol}_console' instance ${server.id} while it is in task_state ${server.task_state}`)
  }
  const types = PROTOCOL_TYPES[protocol] ?? []
  if (types.length === 0) throw badRequest(`Unavailable console type ${type}.`)
  if (!types.includes(type)) throw badRequest(`Invalid console type ${type}`)
  const host = await deps.db.selectFrom('hosts').select(['driver', 'hostname']).where('id', '=', server.host_id).executeTakeFirst()
  const offered = host ? DRIVER_CONSOLES[host.driver] : undefined
  const wanted = protocol as ConsoleProtocol
  if (offered && !offered.includes(wanted)) throw new AppError('not_implemented', `${PROTOCOL_NAMES[wanted]} is not available on ${host!.driver} hosts.`)
  const { token } = await deps.tokens.issue({ serverId: server.id, hostId: server.host_id, protocol: wanted, consoleType: type })
  return URL_BUILDERS[type](new URL(deps.publicUrl), token)
}
