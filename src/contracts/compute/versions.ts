/**
 * The ONLY list of compute microversions (2.1 … 2.96) and the named behaviour gates that use them. Field tables,
 * parameter tables and handlers refer to versions through this file: a field names the version it appears in,
 * a behaviour change is a gate (`api.has('keypairCreated201')`). Nothing else compares version numbers.
 */

export const MIN_VERSION = '2.1'
export const MAX_VERSION = '2.96'

/** Every microversion with what it changed (for the record; the gates below are what code uses). */
export const COMPUTE_VERSIONS = [
  ['2.1', 'baseline'],
  ['2.2', 'keypair type; keypair create 201, delete 204'],
  ['2.3', 'server: extended attributes for admins, volumes delete_on_termination'],
  ['2.4', 'volume attachment read-only flag'],
  ['2.5', 'server list: ip6 filter'],
  ['2.6', 'remote consoles API'],
  ['2.7', 'flavor access: 409 on public flavors'],
  ['2.8', 'MKS console'],
  ['2.9', 'server: locked'],
  ['2.10', 'keypairs: user_id for admins'],
  ['2.11', 'services: forced_down'],
  ['2.12', 'interfaces: vif_model'],
  ['2.13', 'server groups: project_id, user_id'],
  ['2.14', 'evacuate: no onSharedStorage, no adminPass body'],
  ['2.15', 'server groups: soft policies'],
  ['2.16', 'server: host_status'],
  ['2.17', 'trigger_crash_dump'],
  ['2.18', 'project id optional in URLs'],
  ['2.19', 'server: description'],
  ['2.20', 'volume ops on shelved servers'],
  ['2.21', 'instance actions of deleted servers'],
  ['2.22', 'force live migration completion'],
  ['2.23', 'migrations: id, type'],
  ['2.24', 'abort live migration'],
  ['2.25', 'live migration: block_migration auto'],
  ['2.26', 'server tags'],
  ['2.27', 'OpenStack-API-Version header'],
  ['2.28', 'hypervisors: cpu_info object'],
  ['2.29', 'evacuate: force'],
  ['2.30', 'live migration: force'],
  ['2.31', 'serial console over HTTP'],
  ['2.32', 'network and BDM tags'],
  ['2.33', 'hypervisors: paging'],
  ['2.34', 'live migration pre-checks asynchronous'],
  ['2.35', 'keypairs: paging'],
  ['2.36', 'proxy APIs removed; limits and quotas without network entries'],
  ['2.37', 'create: networks required, auto/none'],
  ['2.38', 'server list: invalid status is 400'],
  ['2.39', 'limits: no maxImageMeta'],
  ['2.40', 'simple tenant usage: paging'],
  ['2.41', 'aggregates: uuid'],
  ['2.42', 'network and BDM tags again'],
  ['2.43', 'os-hosts removed'],
  ['2.44', 'network proxies removed'],
  ['2.45', 'createImage answers {image_id}'],
  ['2.46', 'request id header documented'],
  ['2.47', 'server: embedded flavor'],
  ['2.48', 'diagnostics standardised'],
  ['2.49', 'tagged attach'],
  ['2.50', 'quota classes: server groups'],
  ['2.51', 'instance action events for owners'],
  ['2.52', 'create: tags'],
  ['2.53', 'services and hypervisors: uuids'],
  ['2.54', 'rebuild: key_name'],
  ['2.55', 'flavor: description'],
  ['2.56', 'migrate: host'],
  ['2.57', 'personality removed; rebuild user_data'],
  ['2.58', 'instance actions: paging, updated_at'],
  ['2.59', 'migrations: paging'],
  ['2.60', 'multiattach volumes'],
  ['2.61', 'flavor: extra_specs'],
  ['2.62', 'instance action events: host, hostId'],
  ['2.63', 'server: trusted_image_certificates'],
  ['2.64', 'server groups: policy and rules'],
  ['2.65', 'abort queued live migration'],
  ['2.66', 'changes-before filter'],
  ['2.67', 'BDM volume_type'],
  ['2.68', 'evacuate/live-migrate force removed'],
  ['2.69', 'down-cell partial records'],
  ['2.70', 'interfaces and volumes: tag'],
  ['2.71', 'server: server_groups in show'],
  ['2.72', 'ports with resource requests'],
  ['2.73', 'server: locked_reason; locked filter'],
  ['2.74', 'create: host, hypervisor_hostname'],
  ['2.75', 'strict query parameters; PUT/rebuild return the full server; flavor swap integer'],
  ['2.76', 'power-update external event'],
  ['2.77', 'unshelve: availability_zone'],
  ['2.78', 'topology API'],
  ['2.79', 'volume attach: delete_on_termination'],
  ['2.80', 'migrations: user_id, project_id'],
  ['2.81', 'image cache'],
  ['2.82', 'accelerator request event'],
  ['2.83', 'server list: more filters for non-admins'],
  ['2.84', 'instance action events: details'],
  ['2.85', 'volume attachment update'],
  ['2.86', 'flavor extra specs validation'],
  ['2.87', 'stable device rescue'],
  ['2.88', 'hypervisors: statistics removed'],
  ['2.89', 'volume attachments: attachment_id'],
  ['2.90', 'server: hostname for everyone; hostname on create/update'],
  ['2.91', 'unshelve: host'],
  ['2.92', 'keypairs: public_key required'],
  ['2.93', 'volume-backed rebuild'],
  ['2.94', 'hostname as FQDN'],
  ['2.95', 'evacuate to stopped'],
  ['2.96', 'server: pinned_availability_zone'],
] as const

export type ComputeVersion = (typeof COMPUTE_VERSIONS)[number][0]

/** Named behaviour changes: the version each starts at. */
export const GATES = {
  keypairType: '2.2',
  keypairCreated201: '2.2',
  ip6Filter: '2.5',
  remoteConsoles: '2.6',
  /** Server diagnostics in one shape for every hypervisor (Nova's 2.48). */
  standardDiagnostics: '2.48',
  flavorAccessPublic409: '2.7',
  keypairUserId: '2.10',
  serverGroupOwner: '2.13',
  evacuateNoAdminPass: '2.14',
  serverGroupSoftPolicies: '2.15',
  description: '2.19',
  volumeOpsOnShelved: '2.20',
  deletedServerActions: '2.21',
  consoleAuthTokensAllTypes: '2.31',
  /** /servers/{id}/migrations and the migration type in os-migrations. */
  serverMigrations: '2.23',
  /** POST /servers/{id}/migrations/{mid}/action force_complete of a running live migration. */
  forceCompleteMigration: '2.22',
  /** DELETE /servers/{id}/migrations/{mid}: abort a running live migration; from 2.65 a queued one too. */
  abortMigration: '2.24',
  abortQueuedMigration: '2.65',
  serverTags: '2.26',
  keypairsPaging: '2.35',
  noProxyApis: '2.36',
  networksRequired: '2.37',
  invalidStatusIs400: '2.38',
  limitsNoImageMeta: '2.39',
  usagePaging: '2.40',
  /** os-hosts is gone (Nova's 2.43). */
  noOsHosts: '2.43',
  createImageReturnsId: '2.45',
  taggedInterfaceAttach: '2.49',
  ownerSeesActionEvents: '2.51',
  createTags: '2.52',
  rebuildKeyName: '2.54',
  flavorDescription: '2.55',
  migrateHost: '2.56',
  noPersonality: '2.57',
  instanceActionsPaging: '2.58',
  flavorExtraSpecs: '2.61',
  actionEventHost: '2.62',
  trustedCerts: '2.63',
  serverGroupPolicy: '2.64',
  changesBefore: '2.66',
  bdmVolumeType: '2.67',
  interfaceTags: '2.70',
  lockedReason: '2.73',
  createHost: '2.74',
  strictQuery: '2.75',
  fullUpdateBody: '2.75',
  volumeAttachmentUpdate: '2.85',
  unshelveAz: '2.77',
  moreListFilters: '2.83',
  actionEventDetails: '2.84',
  hostname: '2.90',
  unshelveHost: '2.91',
  keypairPublicKeyRequired: '2.92',
  volumeBackedRebuild: '2.93',
  fqdnHostname: '2.94',
} as const satisfies Record<string, ComputeVersion>

export type Gate = keyof typeof GATES

/** A parsed microversion: comparable as major * 1000 + minor. */
export type VersionNumber = number

export function versionNumber(v: string): VersionNumber {
  const [major, minor] = v.split('.').map(Number)
  return major * 1000 + minor
}

export function versionString(n: VersionNumber): string {
  return `${Math.floor(n / 1000)}.${n % 1000}`
}

export const MIN = versionNumber(MIN_VERSION)
export const MAX = versionNumber(MAX_VERSION)

const VERSION_FORMAT = /^[1-9]\d*\.([1-9]\d*|0)$/

export type VersionParse = { ok: true; version: VersionNumber } | { ok: false; status: 400 | 406; requested: string }

/** Parses a requested version: `latest`, or MAJOR.MINOR within [MIN, MAX]. */
export function parseRequestedVersion(raw: string): VersionParse {
  if (raw === 'latest') return { ok: true, version: MAX }
  if (!VERSION_FORMAT.test(raw)) return { ok: false, status: 400, requested: raw }
  const n = versionNumber(raw)
  if (n < MIN || n > MAX) return { ok: false, status: 406, requested: raw }
  return { ok: true, version: n }
}

/** The version a request uses, with the helpers handlers need. */
export interface ApiVersion {
  version: VersionNumber
  /** "2.X" */
  text: string
  has(gate: Gate): boolean
}

const GATE_NUMBERS = Object.fromEntries(Object.entries(GATES).map(([k, v]) => [k, versionNumber(v)])) as Record<Gate, number>

export function apiVersion(version: VersionNumber): ApiVersion {
  return { version, text: versionString(version), has: (gate) => version >= GATE_NUMBERS[gate] }
}

/** Whether `version` lies in [since, until). */
export function inRange(version: VersionNumber, since?: ComputeVersion, until?: ComputeVersion): boolean {
  if (since && version < versionNumber(since)) return false
  if (until && version >= versionNumber(until)) return false
  return true
}
