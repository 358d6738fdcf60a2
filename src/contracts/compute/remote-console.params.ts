/**
 * Remote consoles as Nova's API knows them (nova/api/openstack/compute/schemas/remote_consoles.py): the
 * protocols, the types each offers and the microversion each appears at. `remoteConsoleBody(version)` is the body
 * of POST /servers/{id}/remote-consoles (2.6+); LEGACY_CONSOLE_ACTIONS are the actions of 2.1–2.5. Which of them
 * pcc serves is decided after the body is valid (server/console/remote-consoles.ts), as Nova's compute manager does.
 */
import { Type as T } from '@sinclair/typebox'
import { inRange, type ComputeVersion, type VersionNumber } from './versions.js'

/** Protocol → its first microversion. `rdp` left the schema with the Hyper-V driver; `spice-direct` is 2.99. */
export const CONSOLE_PROTOCOLS: Record<string, { since?: ComputeVersion }> = {
  vnc: {},
  spice: {},
  serial: {},
  mks: { since: '2.8' },
}

/** Console type → the protocol it belongs to and its first microversion. */
export const CONSOLE_TYPES: Record<string, { protocol: string; since?: ComputeVersion }> = {
  novnc: { protocol: 'vnc' },
  xvpvnc: { protocol: 'vnc' },
  'spice-html5': { protocol: 'spice' },
  serial: { protocol: 'serial' },
  webmks: { protocol: 'mks', since: '2.8' },
}

const at = (table: Record<string, { since?: ComputeVersion }>, v: VersionNumber) => Object.keys(table).filter((k) => inRange(v, table[k].since))
const oneOf = (values: string[]) => T.Union(values.map((value) => T.Literal(value)))

/** `{"remote_console": {"protocol", "type"}}`, both required, nothing else. */
export const remoteConsoleBody = (v: VersionNumber) =>
  T.Object(
    { remote_console: T.Object({ protocol: oneOf(at(CONSOLE_PROTOCOLS, v)), type: oneOf(at(CONSOLE_TYPES, v)) }, { additionalProperties: false }) },
    { additionalProperties: false },
  )

/** The console actions of POST /servers/{id}/action below 2.6: the protocol each asks for and the types its body takes. */
export const LEGACY_CONSOLE_ACTIONS: Record<string, { protocol: string; types: string[] }> = {
  'os-getVNCConsole': { protocol: 'vnc', types: ['novnc', 'xvpvnc'] },
  'os-getSPICEConsole': { protocol: 'spice', types: ['spice-html5'] },
  'os-getSerialConsole': { protocol: 'serial', types: ['serial'] },
}

/** The value of a legacy console action: `{"type": T}` with a type of the action's list. */
export const legacyConsoleBody = (action: string) => () => T.Object({ type: oneOf(LEGACY_CONSOLE_ACTIONS[action].types) }, { additionalProperties: false })
