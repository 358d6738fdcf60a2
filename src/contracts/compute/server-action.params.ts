/**
 * The value each server action accepts under its key in POST /servers/{id}/action, per microversion
 * (docs/compute.md, "Actions"). `null` means the action takes `null` (Nova accepts any value for most of those).
 */
import { Type as T, type TOptional, type TProperties, type TSchema } from '@sinclair/typebox'
import { objectAt, onlyAt, P } from './params.js'
import { SERVER_REBUILD_FIELDS } from './server-create.params.js'
import { legacyConsoleBody } from './remote-console.params.js'
import { versionNumber, type VersionNumber } from './versions.js'

const at = (v: string) => versionNumber(v)
const anything = T.Unknown()
type Props<P extends TProperties, R extends keyof P> = { [K in keyof P]: K extends R ? P[K] : TOptional<P[K]> }
/** A closed object of `props`, those not named in `required` optional. */
const obj = <P extends TProperties, R extends keyof P & string = never>(props: P, required: readonly R[] = []) =>
  // Object.fromEntries loses the keys' types; Props restates them (each optional unless required, as built).
  T.Object(Object.fromEntries(Object.entries(props).map(([k, s]) => [k, (required as readonly string[]).includes(k) ? s : T.Optional(s)])) as Props<P, R>, { additionalProperties: false })

/**
 * Action name → schema of its value at a version. Declared `satisfies` rather than typed as a record, so each
 * entry keeps its schema's type: the action's handler reads the value as `Static` of it (ActionValue).
 */
export const ACTION_BODIES = {
  reboot: () => obj({ type: T.Union(['HARD', 'Hard', 'hard', 'SOFT', 'Soft', 'soft'].map((v) => T.Literal(v))) }, ['type']),
  rebuild: (v) => objectAt(SERVER_REBUILD_FIELDS, v),
  resize: () => obj({ flavorRef: T.Union([T.String({ minLength: 1, maxLength: 255 }), T.Integer({ minimum: 0 })]), 'OS-DCF:diskConfig': P.diskConfig }, ['flavorRef']),
  confirmResize: () => anything,
  revertResize: () => anything,
  createImage: () => obj({ name: P.name, metadata: P.metadata }, ['name']),
  createBackup: () => obj({ name: P.name, backup_type: T.String({ minLength: 1, maxLength: 255 }), rotation: T.Union([T.Integer({ minimum: 0 }), T.String({ pattern: '^[0-9]+$' })]), metadata: P.metadata }, ['name', 'backup_type', 'rotation']),
  changePassword: () => obj({ adminPass: T.String() }, ['adminPass']),
  'os-start': () => anything,
  'os-stop': () => anything,
  shelve: () => anything,
  shelveOffload: () => anything,
  unshelve: (v) =>
    v >= at('2.91')
      ? T.Union([T.Null(), obj({ availability_zone: T.Union([T.Null(), T.String({ minLength: 1, maxLength: 255 })]), host: P.hostLike })])
      : v >= at('2.77')
        ? T.Union([T.Null(), obj({ availability_zone: T.String({ minLength: 1, maxLength: 255 }) }, ['availability_zone'])])
        : anything,
  suspend: () => anything,
  resume: () => anything,
  pause: () => anything,
  unpause: () => anything,
  lock: (v) => (v >= at('2.73') ? T.Union([T.Null(), obj({ locked_reason: T.String({ minLength: 1, maxLength: 255 }) })]) : anything),
  unlock: () => anything,
  rescue: () => T.Union([T.Null(), obj({ adminPass: T.String(), rescue_image_ref: P.uuid })]),
  unrescue: () => anything,
  evacuate: (v) =>
    v < at('2.14')
      ? obj({ host: P.hostLike, adminPass: T.String(), onSharedStorage: P.boolean }, ['onSharedStorage'])
      : v >= at('2.29') && v < at('2.68')
        ? obj({ host: P.hostLike, adminPass: T.String(), force: T.Boolean() })
        : obj({ host: P.hostLike, adminPass: T.String() }),
  migrate: (v) => (v >= at('2.56') ? T.Union([T.Null(), obj({ host: T.Union([T.Null(), P.hostLike]) })]) : anything),
  'os-migrateLive': (v) =>
    v < at('2.25')
      ? obj({ host: T.Union([T.Null(), P.hostLike]), block_migration: P.boolean, disk_over_commit: P.boolean }, ['host', 'block_migration', 'disk_over_commit'])
      : obj(
          { host: T.Union([T.Null(), P.hostLike]), block_migration: T.Union([P.boolean, T.Literal('auto')]), ...onlyAt(v >= at('2.30') && v < at('2.68'), { force: T.Boolean() }) },
          ['host', 'block_migration'],
        ),
  'os-getConsoleOutput': () => obj({ length: T.Union([T.Null(), T.Integer({ minimum: -1 }), T.String({ pattern: '^-?[0-9]+$' })]) }),
  forceDelete: () => anything,
  restore: () => anything,
  trigger_crash_dump: () => T.Null(),
  'os-resetState': () => obj({ state: T.Union([T.Literal('active'), T.Literal('error')]) }, ['state']),
  addFloatingIp: () => obj({ address: T.String({ minLength: 1, maxLength: 45 }), fixed_address: T.String({ minLength: 1, maxLength: 45 }) }, ['address']),
  removeFloatingIp: () => obj({ address: T.String({ minLength: 1, maxLength: 45 }) }, ['address']),
  addSecurityGroup: () => obj({ name: T.String({ minLength: 1, maxLength: 255 }) }, ['name']),
  removeSecurityGroup: () => obj({ name: T.String({ minLength: 1, maxLength: 255 }) }, ['name']),
  'os-getVNCConsole': legacyConsoleBody('os-getVNCConsole'),
  'os-getSPICEConsole': legacyConsoleBody('os-getSPICEConsole'),
  'os-getSerialConsole': legacyConsoleBody('os-getSerialConsole'),
} satisfies Record<string, (version: VersionNumber) => TSchema>

/** The body keys of POST /servers/{id}/action. */
export type ActionBodyKey = keyof typeof ACTION_BODIES

/** The schema builder of an action's body key; undefined for a key that names no action. */
export function actionBodyOf(key: string): ((version: VersionNumber) => TSchema) | undefined {
  return Object.hasOwn(ACTION_BODIES, key) ? ACTION_BODIES[key as ActionBodyKey] : undefined
}
