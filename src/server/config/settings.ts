/**
 * The table of every pcc-server setting. One row per setting: its config-file key, environment variable,
 * command-line flag, default and parser. The loader (load.ts) applies them in the order
 * flags > environment > config file > default, and stops the start on anything unknown or invalid.
 */

/** Thrown for a setting that cannot be used; the message names the setting and what is wrong. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

export type TlsSetting = { mode: 'off' } | { mode: 'auto' } | { mode: 'files'; certFile: string; keyFile: string }

export interface Config {
  listen: { host: string; port: number }
  publicUrl: string
  dataDir: string
  databaseUrl: string
  adminPassword: string | undefined
  metricsToken: string | undefined
  simulatedHosts: number
  /** All-in-one: `qemu` makes this machine a QEMU host run by an agent inside pcc-server; `none` (default) does not. */
  localHypervisor: 'none' | 'qemu'
  /** All-in-one: the machine's interfaces for flat (provider/external) networks, by physical network name. */
  localPhysicalInterfaces: Record<string, string>
  tls: TlsSetting
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  /** `on`: a readable start summary on stdout and the JSON log in a file of the data dir; `auto`: on when stdout is a terminal. */
  terminal: 'auto' | 'on' | 'off'
  bodyLimitBytes: number
  taskLeaseSeconds: number
  taskWorkers: number
  masterKey: string | undefined
  /** Largest page of compute lists (Nova's max_limit). */
  computeMaxLimit: number
  /** Memory each view cache of a process may keep of rendered views (servers' detail list and show, network show; http/view-cache.ts); 0: none. */
  viewCacheMb: number
  idpIdTokenSeconds: number
  idpKeyRotationSeconds: number
  idpRefreshReuseSeconds: number
  idpRefreshIdleSeconds: number
  idpRefreshAbsoluteSeconds: number
  idpSecretGraceSeconds: number
  imageMaxBytes: number
  /** A host with no heartbeat for this long is DOWN (os-services state, host_status, the scheduler skips it). */
  hostDownAfterSeconds: number
  /** How often in-process simulated hosts heartbeat. */
  hostHeartbeatSeconds: number
  /** Base duration of each simulated-driver operation (0: instant, for benchmarks). */
  simulatedDelayMs: number
  /** Probability (0–1) that a simulated-driver operation fails; injectable per host too. */
  simulatedFailureRate: number
  /** Scheduler weigher: spread (most free RAM first) or pack (least free RAM first). */
  schedulerWeigher: 'spread' | 'pack'
  /** How often the conductor reconciles the store with what hosts report (0: only at start). */
  reconcileSeconds: number
  /** What reconciliation does with a server whose host is gone or DOWN beyond the timeout: error or evacuate. */
  lostHostPolicy: 'error' | 'evacuate'
  tokenExpirationSeconds: number
  tokenAllowExpiredWindowSeconds: number
  tokenKeyRotationSeconds: number
  lockoutFailureAttempts: number
  lockoutDurationSeconds: number
  /** Finished tasks and soft-deleted servers older than this are purged (0: at the next purge). */
  purgeRetentionDays: number
  /** How often the cluster-wide purge job runs. */
  purgeIntervalSeconds: number
  /** Lifetime of a remote-console URL's token (Nova's [consoleauth] token_ttl). */
  consoleTokenTtlSeconds: number
  /** Host names whose pages may open remote-console websockets besides the public URL's (Nova's [console] allowed_origins). */
  consoleAllowedOrigins: string[]
  /** A remote-console session with no byte either way for this long is closed (0: never). */
  consoleIdleSeconds: number
  /** Where the other pcc-server processes reach this one (remote-console relays); undefined: the address it listens on. */
  advertiseUrl: string | undefined
  /** Address the NBD exports of the control plane's volumes listen on and hypervisors connect to. */
  volumeExportAddress: string
  /** Ports those exports use, one per attached volume (first and last, inclusive). */
  volumeExportPorts: { first: number; last: number }
  /** A ceph.conf: images, volumes and guest disks in RBD (docs/ceph.md); undefined: the file layout. */
  cephConf: string | undefined
  /** The control plane's cephx user (without `client.`). */
  cephUser: string
  cephKeyring: string
  cephImagesPool: string
  cephVolumesPool: string
  cephVmsPool: string
}

interface SettingSpec<K extends keyof Config> {
  key: K
  env: string
  flag: string
  help: string
  /** Parses a raw string (from a flag, the environment or a config file value) or throws a ConfigError message. */
  parse: (raw: string) => Config[K]
  /** Default when no source sets it; may depend on settings already resolved. */
  fallback: (partial: Partial<Config>) => Config[K]
  secret?: boolean
}

function integer(min: number, max: number) {
  return (raw: string): number => {
    if (!/^\d+$/.test(raw.trim())) throw new Error(`expected a whole number from ${min} to ${max}, got "${raw}"`)
    const value = Number(raw)
    if (value < min || value > max) throw new Error(`expected a whole number from ${min} to ${max}, got ${value}`)
    return value
  }
}

function parseListen(raw: string): Config['listen'] {
  const match = /^(\[[0-9a-fA-F:]+\]|[^:]+):(\d{1,5})$/.exec(raw.trim())
  if (!match) throw new Error(`expected HOST:PORT (for example 127.0.0.1:8080), got "${raw}"`)
  const port = Number(match[2])
  if (port > 65535) throw new Error(`port ${port} is above 65535`)
  return { host: match[1].replace(/^\[|\]$/g, ''), port }
}

function parseUrl(raw: string): string {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new Error(`expected an http:// or https:// URL, got "${raw}"`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`expected an http:// or https:// URL, got "${raw}"`)
  return url.toString().replace(/\/+$/, '')
}

/** Host names separated by commas (or a JSON array of them, from a config file). */
function hostList(raw: string): string[] {
  const items = raw.trim().startsWith('[') ? (JSON.parse(raw) as unknown[]).map(String) : raw.split(',')
  const hosts = items.map((h) => h.trim().toLowerCase()).filter((h) => h !== '')
  const bad = hosts.find((h) => !/^[a-z0-9.:[\]-]+$/.test(h))
  if (bad !== undefined) throw new Error(`expected host names separated by commas, got "${bad}"`)
  return hosts
}

function parseDatabaseUrl(raw: string): string {
  if (raw === '') return ''
  if (!/^postgres(ql)?:\/\//.test(raw)) throw new Error('expected empty (SQLite in the data dir) or a postgres:// URL')
  return raw
}

function parseTls(raw: string): TlsSetting {
  if (raw === 'off' || raw === '') return { mode: 'off' }
  if (raw === 'auto') return { mode: 'auto' }
  const parts = raw.split(',')
  if (parts.length === 2 && parts[0] && parts[1]) return { mode: 'files', certFile: parts[0], keyFile: parts[1] }
  throw new Error('expected off, auto, or CERT_FILE,KEY_FILE')
}

/** Pool and user names as Ceph's tools take them on a command line. */
function cephName(raw: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(raw.trim())) throw new Error(`expected a Ceph pool or user name (letters, digits, . _ -), got "${raw}"`)
  return raw.trim()
}

function parsePortRange(raw: string): { first: number; last: number } {
  const match = /^(\d{1,5})-(\d{1,5})$/.exec(raw.trim())
  const first = Number(match?.[1])
  const last = Number(match?.[2])
  if (!match || first < 1 || last > 65535 || first > last) throw new Error(`expected FIRST-LAST ports from 1 to 65535, got "${raw}"`)
  return { first, last }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

function fraction(raw: string): number {
  const value = Number(raw)
  if (raw.trim() === '' || !Number.isFinite(value) || value < 0 || value > 1) throw new Error(`expected a number from 0 to 1, got "${raw}"`)
  return value
}

/** `physnet:interface` pairs separated by commas (or a JSON object of them, from a config file). */
function physicalInterfaces(raw: string): Record<string, string> {
  if (raw.trim().startsWith('{')) return JSON.parse(raw) as Record<string, string>
  const out: Record<string, string> = {}
  for (const item of raw.split(',').map((i) => i.trim()).filter(Boolean)) {
    const match = /^([A-Za-z0-9_.-]+):([A-Za-z0-9_.@-]{1,15})$/.exec(item)
    if (!match) throw new Error(`expected PHYSICAL_NETWORK:INTERFACE pairs separated by commas (public:eth1), got "${item}"`)
    out[match[1]] = match[2]
  }
  return out
}

function oneOf<T extends string>(values: readonly T[]) {
  return (raw: string): T => {
    if (!(values as readonly string[]).includes(raw)) throw new Error(`expected one of ${values.join(', ')}, got "${raw}"`)
    return raw as T
  }
}

export const SETTINGS: { [K in keyof Config]: SettingSpec<K> } = {
  listen: {
    key: 'listen', env: 'PCC_LISTEN', flag: '--listen', help: 'address and port to listen on',
    parse: parseListen, fallback: () => ({ host: '127.0.0.1', port: 8080 }),
  },
  tls: {
    key: 'tls', env: 'PCC_TLS', flag: '--tls',
    help: 'off, auto (self-signed CA and certificate in the data dir), or CERT_FILE,KEY_FILE',
    parse: parseTls, fallback: () => ({ mode: 'off' }),
  },
  publicUrl: {
    key: 'publicUrl', env: 'PCC_PUBLIC_URL', flag: '--public-url',
    help: 'URL clients use to reach this server (default: derived from the listen address)',
    parse: parseUrl,
    fallback: (c) => {
      const host = c.listen!.host === '0.0.0.0' || c.listen!.host === '::' ? '127.0.0.1' : c.listen!.host
      const scheme = c.tls!.mode === 'off' ? 'http' : 'https'
      return `${scheme}://${host.includes(':') ? `[${host}]` : host}:${c.listen!.port}`
    },
  },
  dataDir: {
    key: 'dataDir', env: 'PCC_DATA_DIR', flag: '--data-dir', help: 'folder for the SQLite file, keys and blobs',
    parse: (raw) => {
      if (raw.trim() === '') throw new Error('must not be empty')
      return raw
    },
    fallback: () => './data',
  },
  databaseUrl: {
    key: 'databaseUrl', env: 'PCC_DATABASE_URL', flag: '--database-url',
    help: 'empty for SQLite in the data dir, or postgres://user:pass@host:port/db', secret: true,
    parse: parseDatabaseUrl, fallback: () => '',
  },
  metricsToken: {
    key: 'metricsToken', env: 'PCC_METRICS_TOKEN', flag: '--metrics-token',
    help: 'bearer token a Prometheus sends to /metrics to read every guest and host (unset: the process metrics only)', secret: true,
    parse: (raw) => {
      if (raw.length < 16) throw new Error('must be at least 16 characters long')
      return raw
    },
    fallback: () => undefined,
  },
  adminPassword: {
    key: 'adminPassword', env: 'PCC_ADMIN_PASSWORD', flag: '--admin-password',
    help: 'password of the bootstrap admin (generated and printed once when unset)', secret: true,
    parse: (raw) => {
      if (raw.length < 8) throw new Error('must be at least 8 characters long')
      return raw
    },
    fallback: () => undefined,
  },
  localHypervisor: {
    key: 'localHypervisor', env: 'PCC_LOCAL_HYPERVISOR', flag: '--local-hypervisor',
    help: 'qemu: run real guests on this machine (an agent inside pcc-server, state under the data dir); none',
    parse: oneOf(['none', 'qemu'] as const), fallback: () => 'none',
  },
  localPhysicalInterfaces: {
    key: 'localPhysicalInterfaces', env: 'PCC_LOCAL_PHYSICAL_INTERFACES', flag: '--local-physical-interfaces',
    help: 'with a local hypervisor: this machine\'s interfaces for flat networks, as PHYSICAL_NETWORK:INTERFACE,… (public:eth1)',
    parse: physicalInterfaces, fallback: () => ({}),
  },
  simulatedHosts: {
    key: 'simulatedHosts', env: 'PCC_SIMULATED_HOSTS', flag: '--simulated-hosts',
    help: 'number of built-in simulated hypervisor hosts (default 3; 0 with a local hypervisor)', parse: integer(0, 1000),
    fallback: (c) => (c.localHypervisor === 'qemu' ? 0 : 3),
  },
  logLevel: {
    key: 'logLevel', env: 'PCC_LOG_LEVEL', flag: '--log-level', help: LOG_LEVELS.join(', '),
    parse: oneOf(LOG_LEVELS), fallback: () => 'info',
  },
  terminal: {
    key: 'terminal', env: 'PCC_TERMINAL', flag: '--terminal',
    help: 'auto (on when stdout is a terminal), on: a readable summary on stdout, the JSON log in DATA_DIR/log/pcc-server.log (warnings on stderr too); off: the JSON log on stdout',
    parse: oneOf(['auto', 'on', 'off'] as const), fallback: () => 'auto',
  },
  bodyLimitBytes: {
    key: 'bodyLimitBytes', env: 'PCC_BODY_LIMIT_BYTES', flag: '--body-limit-bytes',
    help: 'largest JSON request body accepted (image uploads stream and are not bound by it)',
    parse: integer(1024, 1 << 30), fallback: () => 1 << 20,
  },
  taskLeaseSeconds: {
    key: 'taskLeaseSeconds', env: 'PCC_TASK_LEASE_SECONDS', flag: '--task-lease-seconds',
    help: 'how long a claimed task stays with a process that stops heartbeating', parse: integer(1, 3600),
    fallback: () => 30,
  },
  taskWorkers: {
    key: 'taskWorkers', env: 'PCC_TASK_WORKERS', flag: '--task-workers',
    help: 'tasks this process runs at once', parse: integer(1, 1000), fallback: () => 16,
  },
  computeMaxLimit: {
    key: 'computeMaxLimit', env: 'PCC_COMPUTE_MAX_LIMIT', flag: '--compute-max-limit',
    help: 'largest page the compute API returns (servers, instance actions)', parse: integer(1, 100000), fallback: () => 1000,
  },
  viewCacheMb: {
    key: 'viewCacheMb', env: 'PCC_VIEW_CACHE_MB', flag: '--view-cache-mb',
    help: 'MiB of rendered views each process keeps per cache: servers (GET /servers/detail and /servers/{id}), networks (GET /networks/{id}) (0: none)', parse: integer(0, 65536), fallback: () => 32,
  },
  imageMaxBytes: {
    key: 'imageMaxBytes', env: 'PCC_IMAGE_MAX_BYTES', flag: '--image-max-bytes',
    help: 'largest image an upload may store, in bytes (default 64 GiB)', parse: integer(1, Number.MAX_SAFE_INTEGER),
    fallback: () => 64 * 1024 ** 3,
  },
  masterKey: {
    key: 'masterKey', env: 'PCC_MASTER_KEY', flag: '--master-key',
    help: 'base64 32-byte key for secrets at rest (default: data-dir/master.key, created on first start)', secret: true,
    parse: (raw) => {
      if (Buffer.from(raw, 'base64').length !== 32) throw new Error('must be 32 bytes, base64-encoded')
      return raw
    },
    fallback: () => undefined,
  },
  idpIdTokenSeconds: {
    key: 'idpIdTokenSeconds', env: 'PCC_IDP_ID_TOKEN_SECONDS', flag: '--idp-id-token-seconds',
    help: 'lifetime of an OIDC ID token (expires_in)', parse: integer(60, 7 * 86400), fallback: () => 86399,
  },
  idpKeyRotationSeconds: {
    key: 'idpKeyRotationSeconds', env: 'PCC_IDP_KEY_ROTATION_SECONDS', flag: '--idp-key-rotation-seconds',
    help: 'how often the OIDC signing key is replaced', parse: integer(60, 365 * 86400), fallback: () => 6 * 3600,
  },
  idpRefreshReuseSeconds: {
    key: 'idpRefreshReuseSeconds', env: 'PCC_IDP_REFRESH_REUSE_SECONDS', flag: '--idp-refresh-reuse-seconds',
    help: 'window in which a just-rotated refresh token is still accepted (concurrent kubectl)', parse: integer(0, 300), fallback: () => 3,
  },
  idpRefreshIdleSeconds: {
    key: 'idpRefreshIdleSeconds', env: 'PCC_IDP_REFRESH_IDLE_SECONDS', flag: '--idp-refresh-idle-seconds',
    help: 'a refresh token not used for this long expires', parse: integer(60, 10 * 365 * 86400), fallback: () => 2160 * 3600,
  },
  idpRefreshAbsoluteSeconds: {
    key: 'idpRefreshAbsoluteSeconds', env: 'PCC_IDP_REFRESH_ABSOLUTE_SECONDS', flag: '--idp-refresh-absolute-seconds',
    help: 'a login\'s refresh tokens expire this long after the login', parse: integer(60, 10 * 365 * 86400), fallback: () => 3960 * 3600,
  },
  idpSecretGraceSeconds: {
    key: 'idpSecretGraceSeconds', env: 'PCC_IDP_SECRET_GRACE_SECONDS', flag: '--idp-secret-grace-seconds',
    help: 'how long a rotated IdP client secret stays valid', parse: integer(0, 30 * 86400), fallback: () => 86400,
  },
  hostDownAfterSeconds: {
    key: 'hostDownAfterSeconds', env: 'PCC_HOST_DOWN_AFTER_SECONDS', flag: '--host-down-after-seconds',
    help: 'a host without a heartbeat for this long is DOWN (Nova service_down_time)', parse: integer(1, 86400), fallback: () => 60,
  },
  hostHeartbeatSeconds: {
    key: 'hostHeartbeatSeconds', env: 'PCC_HOST_HEARTBEAT_SECONDS', flag: '--host-heartbeat-seconds',
    help: 'heartbeat interval of the in-process simulated hosts', parse: integer(1, 3600), fallback: () => 10,
  },
  simulatedDelayMs: {
    key: 'simulatedDelayMs', env: 'PCC_SIMULATED_DELAY_MS', flag: '--simulated-delay-ms',
    help: 'base duration of each simulated hypervisor operation in ms (0: instant)', parse: integer(0, 600_000), fallback: () => 300,
  },
  simulatedFailureRate: {
    key: 'simulatedFailureRate', env: 'PCC_SIMULATED_FAILURE_RATE', flag: '--simulated-failure-rate',
    help: 'probability 0-1 that a simulated hypervisor operation fails', parse: fraction, fallback: () => 0,
  },
  schedulerWeigher: {
    key: 'schedulerWeigher', env: 'PCC_SCHEDULER_WEIGHER', flag: '--scheduler-weigher',
    help: 'spread (most free RAM first) or pack (least free RAM first)', parse: oneOf(['spread', 'pack'] as const), fallback: () => 'spread',
  },
  reconcileSeconds: {
    key: 'reconcileSeconds', env: 'PCC_RECONCILE_SECONDS', flag: '--reconcile-seconds',
    help: 'interval of the conductor reconciliation with the hosts (0: only at start)', parse: integer(0, 86400), fallback: () => 60,
  },
  lostHostPolicy: {
    key: 'lostHostPolicy', env: 'PCC_LOST_HOST_POLICY', flag: '--lost-host-policy',
    help: 'servers of a vanished or long-DOWN host: error (ERROR with a fault) or evacuate (rebuild elsewhere)',
    parse: oneOf(['error', 'evacuate'] as const), fallback: () => 'error',
  },
  tokenExpirationSeconds: {
    key: 'tokenExpirationSeconds', env: 'PCC_TOKEN_EXPIRATION_SECONDS', flag: '--token-expiration-seconds',
    help: 'lifetime of identity tokens (keep well above 120 s: clients re-authenticate below that)',
    parse: integer(1, 30 * 86400), fallback: () => 3600,
  },
  tokenAllowExpiredWindowSeconds: {
    key: 'tokenAllowExpiredWindowSeconds', env: 'PCC_TOKEN_ALLOW_EXPIRED_WINDOW_SECONDS', flag: '--token-allow-expired-window-seconds',
    help: 'how long after expiry a token still validates with ?allow_expired=1', parse: integer(0, 30 * 86400), fallback: () => 172800,
  },
  tokenKeyRotationSeconds: {
    key: 'tokenKeyRotationSeconds', env: 'PCC_TOKEN_KEY_ROTATION_SECONDS', flag: '--token-key-rotation-seconds',
    help: 'how often the token key ring rotates (staged → primary → secondary)', parse: integer(1, 365 * 86400), fallback: () => 86400,
  },
  lockoutFailureAttempts: {
    key: 'lockoutFailureAttempts', env: 'PCC_LOCKOUT_FAILURE_ATTEMPTS', flag: '--lockout-failure-attempts',
    help: 'failed logins (wrong passwords and TOTP codes) in a row that lock a user (0, the default as in Keystone: never)', parse: integer(0, 1000), fallback: () => 0,
  },
  lockoutDurationSeconds: {
    key: 'lockoutDurationSeconds', env: 'PCC_LOCKOUT_DURATION_SECONDS', flag: '--lockout-duration-seconds',
    help: 'how long a locked user stays locked', parse: integer(1, 365 * 86400), fallback: () => 1800,
  },
  purgeRetentionDays: {
    key: 'purgeRetentionDays', env: 'PCC_PURGE_RETENTION_DAYS', flag: '--purge-retention-days',
    help: 'finished tasks and deleted servers (with their instance actions) are kept this many days', parse: integer(0, 3650), fallback: () => 7,
  },
  purgeIntervalSeconds: {
    key: 'purgeIntervalSeconds', env: 'PCC_PURGE_INTERVAL_SECONDS', flag: '--purge-interval-seconds',
    help: 'how often one process of the cluster purges old rows', parse: integer(1, 7 * 86400), fallback: () => 3600,
  },
  consoleTokenTtlSeconds: {
    key: 'consoleTokenTtlSeconds', env: 'PCC_CONSOLE_TOKEN_TTL_SECONDS', flag: '--console-token-ttl-seconds',
    help: 'how long a remote-console URL works (Nova [consoleauth] token_ttl)', parse: integer(0, 86400), fallback: () => 600,
  },
  consoleAllowedOrigins: {
    key: 'consoleAllowedOrigins', env: 'PCC_CONSOLE_ALLOWED_ORIGINS', flag: '--console-allowed-origins',
    help: 'host names (comma-separated) whose web pages may open consoles, besides the public URL\'s', parse: hostList, fallback: () => [],
  },
  consoleIdleSeconds: {
    key: 'consoleIdleSeconds', env: 'PCC_CONSOLE_IDLE_SECONDS', flag: '--console-idle-seconds',
    help: 'a remote-console session idle this long (no byte either way) is closed; 0: never', parse: integer(0, 7 * 86400), fallback: () => 3600,
  },
  advertiseUrl: {
    key: 'advertiseUrl', env: 'PCC_ADVERTISE_URL', flag: '--advertise-url',
    help: 'URL the other pcc-server processes reach this one at, for console relays (default: the address it listens on)',
    parse: parseUrl, fallback: () => undefined,
  },
  volumeExportAddress: {
    key: 'volumeExportAddress', env: 'PCC_VOLUME_EXPORT_ADDRESS', flag: '--volume-export-address',
    help: "address the control plane's volume exports (NBD) listen on; hypervisors connect to it (default: the public URL's host)",
    parse: (raw) => {
      if (!/^[A-Za-z0-9.:-]+$/.test(raw.trim())) throw new Error(`expected a host name or IP address, got "${raw}"`)
      return raw.trim()
    },
    fallback: (partial) => new URL(partial.publicUrl!).hostname.replace(/^\[|\]$/g, ''),
  },
  volumeExportPorts: {
    key: 'volumeExportPorts', env: 'PCC_VOLUME_EXPORT_PORTS', flag: '--volume-export-ports',
    help: 'ports for volume exports, FIRST-LAST (one per attached volume; default 10810-11809)',
    parse: parsePortRange,
    fallback: () => ({ first: 10810, last: 11809 }),
  },
  cephConf: {
    key: 'cephConf', env: 'PCC_CEPH_CONF', flag: '--ceph-conf',
    help: 'a ceph.conf: keep images, volumes and guest disks in RBD (default: none, files on the machines)',
    parse: (raw) => (raw.trim() === '' ? undefined : raw.trim()), fallback: () => undefined,
  },
  cephUser: {
    key: 'cephUser', env: 'PCC_CEPH_USER', flag: '--ceph-user',
    help: "the control plane's cephx user, without client. (default admin)", parse: cephName, fallback: () => 'admin',
  },
  cephKeyring: {
    key: 'cephKeyring', env: 'PCC_CEPH_KEYRING', flag: '--ceph-keyring',
    help: "the keyring of that user (default /etc/ceph/ceph.client.USER.keyring)", parse: (raw) => raw.trim(),
    fallback: (partial) => `/etc/ceph/ceph.client.${partial.cephUser!}.keyring`,
  },
  cephImagesPool: {
    key: 'cephImagesPool', env: 'PCC_CEPH_IMAGES_POOL', flag: '--ceph-images-pool', help: 'RBD pool of image bytes (default images)', parse: cephName, fallback: () => 'images',
  },
  cephVolumesPool: {
    key: 'cephVolumesPool', env: 'PCC_CEPH_VOLUMES_POOL', flag: '--ceph-volumes-pool', help: 'RBD pool of volumes (default volumes)', parse: cephName, fallback: () => 'volumes',
  },
  cephVmsPool: {
    key: 'cephVmsPool', env: 'PCC_CEPH_VMS_POOL', flag: '--ceph-vms-pool', help: "RBD pool of servers' root and ephemeral disks (default vms)", parse: cephName, fallback: () => 'vms',
  },
}

/**
 * Settings that mean something only together with another: each rule names the setting, when it is refused, and
 * what to do instead. Checked once every setting is resolved.
 */
export const SETTING_REQUIREMENTS: { setting: keyof Config; refused: (config: Config) => boolean; message: string }[] = [
  {
    setting: 'localPhysicalInterfaces',
    refused: (c) => Object.keys(c.localPhysicalInterfaces).length > 0 && c.localHypervisor !== 'qemu',
    message: 'PCC_LOCAL_PHYSICAL_INTERFACES names this machine\'s interfaces for its own guests: it needs PCC_LOCAL_HYPERVISOR=qemu',
  },
]

/** Settings in resolution order: a fallback may read only settings listed before it. */
export const SETTING_ORDER: (keyof Config)[] = [
  'listen', 'tls', 'publicUrl', 'dataDir', 'databaseUrl', 'adminPassword', 'metricsToken', 'localHypervisor', 'localPhysicalInterfaces', 'simulatedHosts', 'logLevel', 'terminal',
  'bodyLimitBytes', 'taskLeaseSeconds', 'taskWorkers', 'masterKey', 'idpIdTokenSeconds', 'idpKeyRotationSeconds',
  'idpRefreshReuseSeconds', 'idpRefreshIdleSeconds', 'idpRefreshAbsoluteSeconds', 'idpSecretGraceSeconds',
  'imageMaxBytes', 'hostDownAfterSeconds', 'hostHeartbeatSeconds', 'simulatedDelayMs', 'simulatedFailureRate',
  'schedulerWeigher', 'reconcileSeconds', 'lostHostPolicy', 'tokenExpirationSeconds', 'tokenAllowExpiredWindowSeconds',
  'tokenKeyRotationSeconds', 'lockoutFailureAttempts', 'lockoutDurationSeconds', 'computeMaxLimit', 'viewCacheMb',
  'purgeRetentionDays', 'purgeIntervalSeconds',
  'consoleTokenTtlSeconds', 'consoleAllowedOrigins', 'consoleIdleSeconds', 'advertiseUrl', 'volumeExportAddress', 'volumeExportPorts',
  'cephConf', 'cephUser', 'cephKeyring', 'cephImagesPool', 'cephVolumesPool', 'cephVmsPool',
]
