/**
 * Draining a hypervisor host before it leaves the cloud, as Nova operators do it and as Platform9's
 * decommission expects: disable the host's compute service so nothing new lands there, move every server off it
 * (live migration for running and paused servers, cold migration and confirm for stopped ones, one at a time as
 * Nova's default `max_concurrent_live_migrations = 1`), and wait until the host runs none. Only public compute
 * and resource-manager calls, so any client can drain the same way (docs/cli.md, "Decommission drains first").
 *
 * Nothing is ever deleted. A server that cannot move stops the drain: the servers already moved stay where they
 * went, the compute service is enabled again if the drain disabled it, and the caller learns which servers are
 * stuck and why.
 */
import type { ComputeClient, ServerView } from './compute.js'
import type { ResmgrClient } from './resmgr.js'
import { ApiError } from './transport.js'

export type Move = 'live migration' | 'cold migration'

/** A server that cannot leave the host, and why. */
export interface Stuck {
  id: string
  name: string
  why: string
}

export interface Moved {
  id: string
  name: string
  to: string
  status: string
}

export interface DrainOptions {
  hostId: string
  hostname: string
  /** disabled_reason of the compute service while (and after) the drain runs. */
  reason: string
  timeoutMs: number
  progress: (line: string) => void
  pollMs?: number
}

export interface DrainReport {
  moved: Moved[]
  /** Whether this drain disabled the compute service (it was enabled before). */
  disabled: boolean
}

export class DrainFailure extends Error {
  override name = 'DrainFailure'
  constructor(
    message: string,
    readonly stuck: Stuck[],
    readonly moved: Moved[],
    /** The compute service was disabled by the drain and is enabled again. */
    readonly reenabled: boolean,
  ) {
    super(message)
  }
}

/**
 * How a server can leave its host, or why it cannot, from the compute API's action rules (server-states.ts):
 * live migration takes ACTIVE and PAUSED servers, cold migration ACTIVE and SHUTOFF ones, both only when no task
 * runs. The reasons say what the owner can do about it.
 */
export function moveFor(server: Pick<ServerView, 'status' | 'OS-EXT-STS:task_state'>): { move: Move } | { why: string } {
  const task = server['OS-EXT-STS:task_state']
  if (task) return { why: `a task is running on it (task_state ${task}): wait for it to end` }
  switch (server.status) {
    case 'ACTIVE':
    case 'PAUSED':
      return { move: 'live migration' }
    case 'SHUTOFF':
      return { move: 'cold migration' }
    case 'ERROR':
      return { why: 'it is in ERROR and cannot be migrated: repair it (hard reboot or rebuild) or delete it' }
    case 'VERIFY_RESIZE':
      return { why: 'a resize or migration waits for confirmation: confirm or revert it' }
    case 'SUSPENDED':
      return { why: 'it is SUSPENDED: resume it (it is then migrated live) or stop it' }
    case 'RESCUE':
      return { why: 'it is in RESCUE: unrescue it' }
    case 'SHELVED':
      return { why: 'it is SHELVED: offload it (server shelve offload)' }
    case 'BUILD':
      return { why: 'it is still being built: wait for it to end' }
    default:
      return { why: `it is ${server.status}, which cannot be migrated` }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const label = (s: { id: string; name: string }) => `${s.name} (${s.id})`

export class HostDrain {
  private readonly pollMs: number
  private readonly deadline: number
  private readonly moved: Moved[] = []
  private disabled = false
  private serviceId: string | undefined

  constructor(
    private readonly compute: ComputeClient,
    private readonly resmgr: ResmgrClient,
    private readonly o: DrainOptions,
  ) {
    this.pollMs = o.pollMs ?? 1000
    this.deadline = Date.now() + o.timeoutMs
  }

  /** Drains the host; throws DrainFailure (host left in service as found, minus moved servers) when it cannot. */
  async run(): Promise<DrainReport> {
    try {
      return await this.drain()
    } catch (err) {
      // Whatever stopped the drain (the API unreachable, a 5xx), the host goes back into service as it was found.
      if (!(err instanceof DrainFailure) && this.disabled && this.serviceId) await this.compute.setServiceStatus(this.serviceId, 'enabled').catch(() => {})
      throw err
    }
  }

  private async drain(): Promise<DrainReport> {
    const { hostname } = this.o
    const servers = await this.compute.serversOnHost(hostname)
    const service = (await this.compute.services(hostname)).find((s) => s.host === hostname)
    this.serviceId = service?.id
    // Refusals that need no move are found before anything changes, so they leave everything as it was.
    if (servers.length > 0) {
      await this.check(servers.flatMap((s) => this.refusal(s)))
      if (service?.state === 'down') {
        await this.stop(servers.map((s) => ({ id: s.id, name: s.name, why: `host ${hostname} is DOWN (its agent does not answer), so nothing can migrate off it: start its agent again, or evacuate the server (openstack server evacuate)` })))
      }
      const targets = await this.targets()
      if (targets.length === 0) {
        await this.stop(servers.map((s) => ({ id: s.id, name: s.name, why: 'no other hypervisor (role hypervisor ok, agent responding, compute service enabled and up) can take it: add or enable one' })))
      }
      this.o.progress(`… ${servers.length} server${servers.length === 1 ? '' : 's'} to move off ${hostname}; other hypervisors: ${targets.join(', ')}`)
    }
    if (service?.status === 'enabled') {
      await this.compute.setServiceStatus(service.id, 'disabled', this.o.reason)
      this.disabled = true
      this.o.progress(`✓ compute service of ${hostname} disabled: nothing new is placed there`)
    } else if (service) {
      this.o.progress(`- compute service of ${hostname} already disabled (${service.disabled_reason ?? 'no reason given'})`)
    }
    // Listed again after disabling: a server placed in between is moved too; then until the host runs none.
    for (;;) {
      const left = await this.compute.serversOnHost(hostname)
      if (left.length === 0) break
      if (Date.now() > this.deadline) await this.stop(left.map((s) => ({ id: s.id, name: s.name, why: `still on ${hostname} when the timeout ran out: run the drain again, with a longer timeout if needed` })))
      await this.check(left.flatMap((s) => this.refusal(s)))
      for (const server of left) await this.moveOff(server)
    }
    this.o.progress(`✓ ${hostname} runs no servers`)
    return { moved: this.moved, disabled: this.disabled }
  }

  private refusal(server: ServerView): Stuck[] {
    const plan = moveFor(server)
    return 'why' in plan ? [{ id: server.id, name: server.name, why: plan.why }] : []
  }

  /** The hosts a server could go to: the other hypervisors whose role is ok, agent responding, service up and enabled. */
  private async targets(): Promise<string[]> {
    const [hosts, services] = await Promise.all([this.resmgr.hosts(), this.compute.services()])
    const usable = new Set(services.filter((s) => s.status === 'enabled' && s.state === 'up').map((s) => s.host))
    return hosts
      .filter((h) => h.id !== this.o.hostId && h.roles_status_details.hypervisor === 'ok' && h.info.responding && usable.has(h.info.hostname))
      .map((h) => h.info.hostname)
  }

  private async moveOff(listed: ServerView): Promise<void> {
    // Read again: moving the servers listed before it took time, and its owner may have changed or deleted it.
    const server = await this.compute.server(listed.id)
    if (!server || server['OS-EXT-SRV-ATTR:host'] !== this.o.hostname) return
    const plan = moveFor(server)
    if ('why' in plan) return this.stop([{ id: server.id, name: server.name, why: plan.why }])
    this.o.progress(`… moving ${label(server)} off ${this.o.hostname} by ${plan.move} (${server.status})`)
    const requestId = await this.ask(server, plan.move === 'live migration' ? 'os-migrateLive' : 'migrate', plan.move === 'live migration' ? { host: null, block_migration: 'auto' } : null)
    let after = await this.settle(server)
    if (plan.move === 'cold migration' && after.status === 'VERIFY_RESIZE' && after['OS-EXT-SRV-ATTR:host'] !== this.o.hostname) {
      // A cold migration holds the source's resources until it is confirmed; the drain confirms it at once.
      await this.ask(server, 'confirmResize', null)
      after = await this.settle(server)
    }
    const host = after['OS-EXT-SRV-ATTR:host']
    if (!host || host === this.o.hostname || after.status === 'ERROR' || after.status === 'VERIFY_RESIZE') {
      const why = (requestId && (await this.failureOf(server.id, requestId))) ?? `the ${plan.move} ended with the server ${after.status} on ${host ?? 'no host'}`
      return this.stop([{ id: server.id, name: server.name, why: after.status === 'ERROR' ? `${why} (the server is now in ERROR)` : why }])
    }
    this.moved.push({ id: server.id, name: server.name, to: host, status: after.status })
    this.o.progress(`✓ ${label(server)} is ${after.status} on ${host}`)
  }

  /** Posts an action; a refusal (the server changed meanwhile) stops the drain with the API's words. */
  private async ask(server: ServerView, action: string, body: unknown): Promise<string | undefined> {
    try {
      return await this.compute.action(server.id, action, body)
    } catch (err) {
      if (err instanceof ApiError && err.status >= 400 && err.status < 500) return this.stop([{ id: server.id, name: server.name, why: err.message }])
      throw err
    }
  }

  /** Waits until no task runs on the server, printing each new status; the drain's deadline bounds the wait. */
  private async settle(server: ServerView): Promise<ServerView> {
    let last = ''
    for (;;) {
      const now = await this.compute.server(server.id)
      if (!now) return this.stop([{ id: server.id, name: server.name, why: 'it was deleted while it was being moved (not by the drain)' }])
      if (!now['OS-EXT-STS:task_state']) return now
      const status = `${now.status} (${now['OS-EXT-STS:task_state']})`
      if (status !== last) this.o.progress(`  … ${server.name}: ${status}`)
      last = status
      if (Date.now() > this.deadline) {
        return this.stop([{ id: server.id, name: server.name, why: `still ${status} when the timeout ran out: the move goes on by itself; run the drain again once it has ended, with a longer timeout if needed` }])
      }
      await sleep(this.pollMs)
    }
  }

  /** Why an action failed, from its events (the first line of the traceback, without the exception's kind). */
  private async failureOf(serverId: string, requestId: string): Promise<string | undefined> {
    const events = await this.compute.actionEvents(serverId, requestId).catch(() => [])
    const failed = events.find((e) => e.result === 'Error')
    const first = failed?.traceback?.split('\n')[0]?.trim()
    return first ? first.replace(/^\w+: /, '') : undefined
  }

  private async check(stuck: Stuck[]): Promise<void> {
    if (stuck.length > 0) await this.stop(stuck)
  }

  /**
   * Stops the drain: enables the compute service again if the drain disabled it (the host stays as it was
   * found, minus the servers already moved) and throws what the caller reports.
   */
  private async stop(stuck: Stuck[]): Promise<never> {
    let reenabled = false
    if (this.disabled && this.serviceId) {
      await this.compute.setServiceStatus(this.serviceId, 'enabled')
      this.disabled = false
      reenabled = true
    }
    const lines = stuck.map((s) => `  ${label(s)}: ${s.why}`)
    const moved = this.moved.length ? [`Moved before stopping: ${this.moved.map((m) => `${m.name} → ${m.to}`).join(', ')}.`] : []
    const message = [`${stuck.length} server${stuck.length === 1 ? '' : 's'} cannot be moved off ${this.o.hostname}:`, ...lines, ...moved].join('\n')
    throw new DrainFailure(message, stuck, [...this.moved], reenabled)
  }
}

/** Drains the host (see HostDrain). */
export function drainHost(compute: ComputeClient, resmgr: ResmgrClient, options: DrainOptions): Promise<DrainReport> {
  return new HostDrain(compute, resmgr, options).run()
}
