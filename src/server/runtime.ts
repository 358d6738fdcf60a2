/**
 * The composition root: from a Config to a listening server. Order matters and each step can fail with a
 * clear message: data dir → store → migrations → master key → bootstrap → token keys → HTTP → task runner.
 * main.ts (the process) and the tests both start servers through here.
 */
import { accessSync, constants as fsConstants, mkdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { buildApp } from './app.js'
import type { OpsState } from './http/ops-routes.js'
import type { Config } from './config/settings.js'
import { loadMasterKey, verifyMasterKey } from './crypto/master-key.js'
import { SecretBox } from './crypto/secret-box.js'
import { bootstrap, type BootstrapResult } from './bootstrap/bootstrap.js'
import { ensureDefaultFlavors } from './compute/flavors.js'
import { ensureStandardNamespaces } from './image/metadef-standard.js'
import { serviceUrls, type AppDeps } from './deps.js'
import { AuthFlow } from './identity/auth-flow.js'
import { lockoutPolicy } from './identity/lockout.js'
import { TokenService } from './identity/token-service.js'
import { createIdp } from './oidc/services.js'
import { NetworkService } from './network/service.js'
import { DataplaneService } from './network/dataplane/service.js'
import { migrate } from './storage/migrations/index.js'
import { openStore, StoreOpenError, type Store } from './storage/store.js'
import { retryStartupRace } from './storage/startup-race.js'
import { SqlTaskQueue } from './tasks/sql-queue.js'
import { TaskRunner, type TaskHandler } from './tasks/runner.js'
import { setUpImageAndVolume } from './volume/wiring.js'
import { CephError } from '../lib/ceph/rbd.js'
import { connectCeph } from './ceph/connect.js'
import { Conductor } from './conductor/conductor.js'
import { computeStorage } from './compute/storage.js'
import { HostDataService } from './onboarding/host-data.js'
import { OnboardingService } from './onboarding/onboarding-service.js'
import { startLocalHypervisor } from './all-in-one/local-hypervisor.js'
import { VERSION } from '../cli/version.js'
import { ClusterJobRunner } from './tasks/cluster-jobs.js'
import { Consoles } from './remote-consoles/consoles.js'
import { purgeJob } from './tasks/purge-job.js'
import { listeningForHosts } from './hosts/agent-driver.js'

/** A start-up failure the operator can fix; main prints its message alone, without a stack trace. */
export class StartupError extends Error {
  override name = 'StartupError'
}

export interface RunningServer {
  app: FastifyInstance
  deps: AppDeps
  /** The address it actually listens on (port 0 resolved). */
  url: string
  bootstrap: BootstrapResult
  /** Periodic jobs that run once across every process on the store (purge, reconciliation). */
  clusterJobs: ClusterJobRunner
  /** Path of the generated CA certificate, when PCC_TLS=auto. */
  caFile?: string
  /** Graceful stop: no new connections, in-flight requests finish, task leases are handed back. */
  stop(): Promise<void>
}

const FS_REASONS: Record<string, string> = {
  ENOTDIR: 'a part of the path is a file, not a directory',
  EEXIST: 'it exists and is not a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
}

function fsReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code
  return code && FS_REASONS[code] ? `${FS_REASONS[code]} (${code})` : ((err as Error).message ?? String(err))
}

/** The data dir must be a directory this process can write: checked first, so the message names it plainly. */
function ensureDataDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true })
  } catch (err) {
    throw new StartupError(`data directory ${dir} cannot be created: ${fsReason(err)}`)
  }
  try {
    if (!statSync(dir).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'EEXIST' })
    accessSync(dir, fsConstants.W_OK)
  } catch (err) {
    throw new StartupError(`data directory ${dir} is not writable: ${fsReason(err)}`)
  }
}

/** The URL this process answers at (port 0 resolved; a wildcard address as the loopback). */
function listeningUrl(app: FastifyInstance, config: Config, https: boolean): string {
  const address = app.server.address()
  const port = typeof address === 'object' && address ? address.port : config.listen.port
  const host = config.listen.host.includes(':') ? `[${config.listen.host}]` : config.listen.host
  return `${https ? 'https' : 'http'}://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`
}

export async function startServer(config: Config, logger: Logger, handlers: Map<string, TaskHandler> = new Map()): Promise<RunningServer> {
  ensureDataDir(config.dataDir)
  let store: Store
  try {
    store = await openStore({ dataDir: config.dataDir, databaseUrl: config.databaseUrl, onWarning: (message) => logger.warn(message) })
  } catch (err) {
    throw err instanceof StoreOpenError ? new StartupError(err.message) : err
  }
  let tokensStarted: TokenService | undefined
  for (const warning of store.warnings) logger.warn({ dialect: store.dialect }, warning)
  try {
    const report = await migrate(store)
    logger.info({ applied: report.applied, alreadyApplied: report.alreadyApplied, dialect: store.dialect }, 'migrations done')

    let box: SecretBox
    try {
      box = new SecretBox(loadMasterKey(config.dataDir, config.masterKey))
      await verifyMasterKey(store, box)
    } catch (err) {
      throw new StartupError((err as Error).message)
    }
    const result = await retryStartupRace(() => bootstrap(store, { publicUrl: config.publicUrl, adminPassword: config.adminPassword }))
    await retryStartupRace(() => ensureDefaultFlavors(store.db))
    await retryStartupRace(() => ensureStandardNamespaces(store.db))
    const tokens = new TokenService(store, box, {
      ttlMs: config.tokenExpirationSeconds * 1000,
      allowExpiredWindowMs: config.tokenAllowExpiredWindowSeconds * 1000,
      rotationMs: config.tokenKeyRotationSeconds * 1000,
      identityUrl: serviceUrls(config.publicUrl).identity,
    })
    await tokens.load()
    tokens.start()
    tokensStarted = tokens
    const identityAuth = new AuthFlow(store, box, tokens, lockoutPolicy(config))
    const idp = createIdp(store, box, tokens, identityAuth, config)
    await retryStartupRace(() => idp.clients.ensureBuiltins())

    const queue = new SqlTaskQueue(store, { leaseMs: config.taskLeaseSeconds * 1000 })
    // What Ceph refuses is the operator's to fix: one error line. Checked once, outside the retry of racing inserts
    // below, so monitors that do not answer cost one wait, not three.
    const cephStartup = (err: Error) => {
      throw err instanceof CephError ? new StartupError(err.message) : err
    }
    const ceph = await connectCeph(config).catch(cephStartup)
    const imageVolume = await retryStartupRace(() => setUpImageAndVolume({ config, ceph, store, queue, box, adminProjectId: result.adminProjectId, logger: logger.child({ component: 'volumes' }) })).catch(cephStartup)
    // Periodic reconciliation runs as a cluster job (once per interval across the processes), not per process.
    const hostData = new HostDataService(store, imageVolume.deps.blobs, imageVolume.deps.images, config.imageMaxBytes, config.cephConf && config.cephVmsPool)
    const conductor = new Conductor(store, queue, { ...config, reconcileSeconds: 0 }, logger.child({ component: 'conductor' }))
    conductor.useStorage(computeStorage({ ...imageVolume.deps, hostData }))
    imageVolume.attachCompute(conductor.drivers, conductor.volumeHooks())
    const allHandlers = new Map([...imageVolume.handlers, ...handlers])
    conductor.register(allHandlers)
    const runner = new TaskRunner(queue, allHandlers, { concurrency: config.taskWorkers, leaseMs: config.taskLeaseSeconds * 1000, logger: logger.child({ component: 'tasks' }) })
    imageVolume.attachRunner(runner)
    queue.onEnqueue(() => runner.wake())
    const consoles = new Consoles({
      db: store.db, box, config, logger: logger.child({ component: 'consoles' }),
      open: (serverId, protocol) => conductor.openConsole(serverId, protocol),
      authenticateHost: (credential): Promise<string> => onboarding.authenticateHost(credential),
    })
    const onboarding = new OnboardingService(store, conductor.drivers, config, logger.child({ component: 'onboarding' }), consoles.sessions)
    const hostCeph = imageVolume.deps.hostCeph
    if (hostCeph) onboarding.whenHostDeleted((hostId) => hostCeph.remove(hostId))
    const deps: AppDeps = {
      config, logger, store, box, queue, runner, tokens, identityAuth, idp, conductor, onboarding, consoles,
      network: new NetworkService(store),
      dataplane: new DataplaneService(store),
      urls: serviceUrls(config.publicUrl),
      ...imageVolume.deps,
      hostData,
    }

    let https: { key: Buffer; cert: Buffer } | undefined
    let caFile: string | undefined
    if (config.tls.mode === 'auto') {
      const hosts = [new URL(config.publicUrl).hostname.replace(/^\[|\]$/g, ''), '127.0.0.1', 'localhost']
      // Loaded only when needed: the X.509 library adds start-up time every other configuration can skip.
      const { ensureAutoTls } = await import('./tls/auto-tls.js')
      const files = await ensureAutoTls(join(config.dataDir, 'tls'), hosts)
      https = { key: readFileSync(files.keyFile), cert: readFileSync(files.certFile) }
      caFile = files.caFile
    } else if (config.tls.mode === 'files') {
      try {
        https = { key: readFileSync(config.tls.keyFile), cert: readFileSync(config.tls.certFile) }
      } catch (err) {
        throw new StartupError(`PCC_TLS: cannot read the certificate or key: ${(err as Error).message}`)
      }
    }

    const state: OpsState = { migrated: true, closing: false }
    const app = await buildApp(deps, { https, state })
    try {
      await app.listen({ host: config.listen.host, port: config.listen.port })
    } catch (err) {
      conductor.stop()
      throw new StartupError(`cannot listen on ${config.listen.host}:${config.listen.port}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    }
    listeningForHosts()
    const url = listeningUrl(app, config, !!https)
    consoles.sessions.advertise(config.advertiseUrl ?? url)
    // After listening: reconciliation asks agent hosts for their guests, and agents reach us only once we listen.
    // Tasks start after it, so none runs before the hosts and drivers are known.
    await onboarding.start()
    await imageVolume.start()
    // All-in-one: this machine runs guests too, through an agent of its own dialing this very server. It starts
    // before reconciliation, which asks it about its guests.
    const local =
      config.localHypervisor === 'qemu'
        ? await startLocalHypervisor({ dataDir: config.dataDir, controller: url, caFile, adminUserId: result.adminUserId, version: VERSION, store, onboarding, logger, physicalInterfaces: config.localPhysicalInterfaces })
        : undefined
    await conductor.start()
    runner.start()
    const clusterJobs = new ClusterJobRunner(store, { logger: logger.child({ component: 'cluster-jobs' }), owner: runner.owner, leaseMs: config.taskLeaseSeconds * 1000 })
    const purgeLog = logger.child({ component: 'purge' })
    clusterJobs.add(
      purgeJob(store, {
        retentionMs: config.purgeRetentionDays * 86_400_000,
        intervalMs: config.purgeIntervalSeconds * 1000,
        onReport: (report) => {
          if (report.tasks + report.servers > 0) purgeLog.info({ report }, 'purged old rows')
        },
      }),
    )
    if (config.reconcileSeconds > 0) {
      clusterJobs.add({ name: 'reconcile', intervalMs: config.reconcileSeconds * 1000, run: async () => void (await conductor.reconcile()) })
    }
    clusterJobs.start()
    // All-in-one: the start is done when this machine takes guests, so a `server create` right after the banner
    // finds its host instead of failing with "No valid host was found" (a failure to get there is logged).
    await local?.ready
    let stopping: Promise<void> | undefined
    return {
      app,
      deps,
      url,
      bootstrap: result,
      caFile,
      clusterJobs,
      stop: () =>
        (stopping ??= (async () => {
          state.closing = true
          imageVolume.stop()
          local?.stop()
          await onboarding.stop()
          deps.dataplane.stop()
          await app.close()
          await clusterJobs.stop()
          conductor.stop()
          tokens.stop()
          // Handlers get a while to finish; past a lease's length a dead process's work would move anyway.
          await runner.stop(Math.min(10_000, config.taskLeaseSeconds * 1000))
          await store.close()
        })()),
    }
  } catch (err) {
    tokensStarted?.stop()
    await store.close().catch(() => {})
    throw err
  }
}
