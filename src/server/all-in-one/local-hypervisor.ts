/**
 * All-in-one mode (`PCC_LOCAL_HYPERVISOR=qemu`): pcc-server makes its own machine a QEMU host, the way devstack
 * makes one machine a whole cloud. It runs a pcc-agent inside its own process, exactly the agent an onboarded
 * host runs (same registration, heartbeats, command channel, QEMU driver), with its state under the data dir
 * (`<data-dir>/host`: agent.json with the credential, instances, image cache, logs) and the machine's own facts.
 * It registers the host with a token it makes itself and applies the hypervisor and network roles itself: the
 * machine runs the guests' data plane and their routers, its flat networks on the interfaces
 * `PCC_LOCAL_PHYSICAL_INTERFACES` names. Guests are daemonized
 * QEMU processes: they outlive a pcc-server restart, and the agent finds them again.
 */
import { createHash, randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { Logger } from 'pino'
import { PccAgent, type AgentConfig } from '../../host/agent/agent.js'
import type { OnboardingService } from '../onboarding/onboarding-service.js'
import type { Store } from '../storage/store.js'

export interface LocalHypervisorOptions {
  dataDir: string
  /** The control plane's own URL, as the agent dials it. */
  controller: string
  caFile?: string
  adminUserId: string
  version: string
  store: Store
  onboarding: OnboardingService
  logger: Logger
  /** Flat networks' physical networks → this machine's interfaces. */
  physicalInterfaces?: Record<string, string>
}

export interface LocalHypervisor {
  hostId: string
  root: string
  /**
   * Settles once the machine takes guests: registered, its roles applied and confirmed by the agent (or given up,
   * which is logged). Never rejects.
   */
  ready: Promise<void>
  stop(): void
}

/** Unix socket paths are at most 107 bytes: a long data dir gets its sockets under /run instead. */
function runDir(root: string): string | undefined {
  const longest = join(root, 'run/pcc', `${randomUUID()}.serial`)
  if (Buffer.byteLength(longest) <= 107) return undefined
  return `/run/pcc-${createHash('sha256').update(root).digest('hex').slice(0, 12)}`
}

export async function startLocalHypervisor(o: LocalHypervisorOptions): Promise<LocalHypervisor> {
  const root = resolve(o.dataDir, 'host')
  const file = join(root, 'etc/pcc/agent.json')
  mkdirSync(join(root, 'etc/pcc'), { recursive: true })
  const previous = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as AgentConfig) : undefined
  const config: AgentConfig = {
    ...previous,
    controller: o.controller,
    ...(o.caFile && { ca_file: o.caFile }),
    host_id: previous?.host_id ?? randomUUID(),
    driver: 'qemu',
    facts_root: '/',
    heartbeat_seconds: previous?.heartbeat_seconds ?? 5,
    qemu: { ...previous?.qemu, migration_address: previous?.qemu?.migration_address ?? '127.0.0.1', ...(runDir(root) && { run_dir: runDir(root) }) },
    network: { ...previous?.network, backend: 'linux', physical_interfaces: o.physicalInterfaces ?? previous?.network?.physical_interfaces ?? {} },
  }
  // A registration that never completed (or a first start) needs a fresh one-time token.
  // Bound to this host id: a registration that completed on the server but not in agent.json re-registers it.
  if (!config.credential) config.registration_token = (await o.onboarding.createRegistrationToken(o.adminUserId, 3600, 'pcc-server local hypervisor', config.host_id)).token
  writeFileSync(file, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 })

  const agent = new PccAgent(root, o.version)
  const log = o.logger.child({ component: 'local-hypervisor' })
  agent.run().catch((err: unknown) => log.error({ err }, 'the local hypervisor agent stopped'))
  const hostId = config.host_id!
  // The agent learns of a role at its next heartbeat (every 5 s); this one is in our process, so it is asked to
  // heartbeat at once after each role is assigned: the start waits well under a second instead of two heartbeats.
  const ready = applyRole(o, hostId, () => agent.heartbeat()).then(
    () => log.info({ hostId }, 'this machine takes guests: hypervisor and network roles applied'),
    (err: unknown) => log.error({ err }, 'the hypervisor role could not be applied to this machine'),
  )
  log.info({ hostId, root }, 'this machine runs guests: local hypervisor agent started')
  return { hostId, root, ready, stop: () => agent.stop() }
}

/**
 * Once the agent has registered, the hypervisor and network roles, unless it already has them; resolves when the
 * agent has confirmed both (a role that failed on the machine rejects, naming it).
 */
async function applyRole(o: LocalHypervisorOptions, hostId: string, heartbeatNow: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + 120_000
  for (;;) {
    const host = await o.store.db.selectFrom('hosts').select('id').where('id', '=', hostId).executeTakeFirst()
    if (host) break
    if (Date.now() > deadline) throw new Error('the local agent did not register within 120 s')
    await new Promise((r) => setTimeout(r, 200))
  }
  for (const name of ['hypervisor', 'network']) {
    const role = await o.store.db.selectFrom('host_roles').select('state').where('host_id', '=', hostId).where('role', '=', name).executeTakeFirst()
    if (role?.state === 'ok') continue
    // One role converges at a time: wait for the agent to confirm the one before.
    for (;;) {
      try {
        await o.onboarding.assignRole(hostId, name)
        // A failed early heartbeat changes nothing: the agent's own next one converges the role.
        await heartbeatNow().catch(() => {})
        break
      } catch (err) {
        if ((err as { code?: string }).code !== 'conflict' || Date.now() > deadline) throw err
        await new Promise((r) => setTimeout(r, 200))
      }
    }
  }
  for (;;) {
    const roles = await o.store.db.selectFrom('host_roles').select(['role', 'state']).where('host_id', '=', hostId).where('role', 'in', ['hypervisor', 'network']).execute()
    const failed = roles.find((r) => r.state === 'failed')
    if (failed) throw new Error(`the ${failed.role} role failed on this machine (pcctl host show ${hostId} says why)`)
    if (roles.length === 2 && roles.every((r) => r.state === 'ok')) return
    if (Date.now() > deadline) throw new Error(`the roles were not confirmed within 120 s: ${roles.map((r) => `${r.role} ${r.state}`).join(', ')}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}
