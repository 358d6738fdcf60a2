/**
 * The scheduler: builds a request spec from a server row, filters and weighs the hosts, and claims capacity
 * on the best host in one transaction with the caller's own writes (the server's host columns). A failed
 * claim means another scheduler got there first: the next host is tried, and the view is reloaded.
 */
import { sql } from 'kysely'
import type { Store, Db } from '../storage/store.js'
import type { ServerTable } from '../storage/tables/compute.js'
import type { FlavorSnapshot } from '../../contracts/host/compute-driver.js'
import { filterHosts } from './filters.js'
import { loadHostStates, type HostState, type Resources } from './host-state.js'
import { claim, releaseAll } from './claims.js'
import { asList, parseAvailabilityZone, type GroupInfo, type RequestSpec, type SchedulerHints } from './request-spec.js'
import { weighHosts, type WeigherName } from './weighers.js'

export const NO_VALID_HOST = 'No valid host was found. There are not enough hosts available.'

export class NoValidHost extends Error {
  override name = 'NoValidHost'
  constructor(readonly details: string) {
    super(NO_VALID_HOST)
  }
}

/** Thrown by a claim callback when the server can no longer be placed (deleted meanwhile): the claim rolls back. */
export class PlacementVoid extends Error {
  override name = 'PlacementVoid'
}

/** The group's members moved since the view was built (another scheduler placed one). */
class GroupConflict extends Error {
  override name = 'GroupConflict'
  constructor(readonly hosts: Map<string, number>) {
    super('server group conflict')
  }
}

/**
 * Checks a hard (anti-)affinity group against its members as committed now. The no-op UPDATE of the group
 * row holds it until this transaction ends, so placements of one group serialise across processes and two
 * schedulers cannot both put a member on the same host (Nova re-checks late on the compute host instead).
 */
async function checkGroup(tx: Db, spec: RequestSpec, hostId: string): Promise<void> {
  const conflict = await groupConflict(tx, spec, hostId)
  if (conflict) throw new GroupConflict(conflict)
}

/** The group's hosts as committed now when placing on `hostId` would break its policy; undefined when it may. */
async function groupConflict(tx: Db, spec: RequestSpec, hostId: string): Promise<Map<string, number> | undefined> {
  const g = spec.group
  if (!g || (g.policy !== 'affinity' && g.policy !== 'anti-affinity')) return undefined
  await tx.updateTable('server_groups').set({ name: sql<string>`name` }).where('id', '=', g.id).execute()
  const rows = await tx
    .selectFrom('server_group_members')
    .innerJoin('servers', 'servers.id', 'server_group_members.server_id')
    .select('servers.host_id')
    .where('server_group_members.group_id', '=', g.id)
    .where('servers.deleted', '=', 0)
    .where('servers.id', '!=', spec.serverId)
    .where('servers.host_id', 'is not', null)
    .execute()
  const hosts = new Map<string, number>()
  for (const r of rows) hosts.set(r.host_id!, (hosts.get(r.host_id!) ?? 0) + 1)
  const here = hosts.get(hostId) ?? 0
  return (g.policy === 'anti-affinity' ? here >= g.maxPerHost : hosts.size > 0 && here === 0) ? hosts : undefined
}

export function flavorResources(flavor: FlavorSnapshot): Resources {
  return { vcpus: flavor.vcpus, memoryMb: flavor.ram, diskGb: flavor.disk + (flavor.ephemeral ?? 0) + Math.ceil((flavor.swap ?? 0) / 1024) }
}

export interface SchedulerOptions {
  downAfterMs: number
  weigher: WeigherName
  /** Rounds of reload-and-retry after lost claims before giving up. */
  claimRounds?: number
}

export type OnClaim = (tx: Db, spec: RequestSpec, host: HostState) => Promise<void>

export class Scheduler {
  constructor(
    private readonly store: Store,
    readonly options: SchedulerOptions,
  ) {}

  loadHosts(db: Db = this.store.db): Promise<HostState[]> {
    return loadHostStates(db, this.options.downAfterMs)
  }

  /** The request spec of a server as its row says (flavor, zone, hints, group). */
  async specFor(server: ServerTable, overrides: Partial<Pick<RequestSpec, 'resources' | 'extraSpecs' | 'forcedHost' | 'availabilityZone' | 'imagesType'>> & { ignoreHosts?: string[] } = {}): Promise<RequestSpec> {
    const db = this.store.db
    const hints = (server.scheduler_hints ? JSON.parse(server.scheduler_hints) : {}) as SchedulerHints
    const flavor = JSON.parse(server.flavor) as FlavorSnapshot
    // Only the zone the create asked for binds a server (Nova's request spec); the zone of the host it landed on does not.
    const az = parseAvailabilityZone(server.pinned_availability_zone)
    const named = [...asList(hints.same_host), ...asList(hints.different_host)]
    const instanceHosts = new Map<string, string>()
    if (named.length > 0) {
      const rows = await db.selectFrom('servers').select(['id', 'host_id']).where('id', 'in', named).where('deleted', '=', 0).execute()
      for (const r of rows) if (r.host_id) instanceHosts.set(r.id, r.host_id)
    }
    let group: GroupInfo | null = null
    const membership = await db.selectFrom('server_group_members').select('group_id').where('server_id', '=', server.id).executeTakeFirst()
    const groupId = membership?.group_id ?? hints.group
    if (groupId) {
      const row = await db.selectFrom('server_groups').selectAll().where('id', '=', groupId).executeTakeFirst()
      if (row) {
        const rules = JSON.parse(row.rules || '{}') as { max_server_per_host?: number }
        const members = await db
          .selectFrom('server_group_members')
          .innerJoin('servers', 'servers.id', 'server_group_members.server_id')
          .select('servers.host_id')
          .where('server_group_members.group_id', '=', groupId)
          .where('servers.deleted', '=', 0)
          .where('servers.id', '!=', server.id)
          .where('servers.host_id', 'is not', null)
          .execute()
        const hosts = new Map<string, number>()
        for (const m of members) hosts.set(m.host_id!, (hosts.get(m.host_id!) ?? 0) + 1)
        group = { id: row.id, policy: row.policy as GroupInfo['policy'], maxPerHost: Number(rules.max_server_per_host ?? 1), hosts }
      }
    }
    return {
      serverId: server.id,
      projectId: server.project_id,
      resources: overrides.resources ?? flavorResources(flavor),
      extraSpecs: overrides.extraSpecs ?? flavor.extra_specs ?? {},
      availabilityZone: overrides.availabilityZone !== undefined ? overrides.availabilityZone : az.zone,
      forcedHost: overrides.forcedHost !== undefined ? overrides.forcedHost : (az.host ?? hints.force_host ?? null),
      forcedNode: overrides.forcedHost !== undefined ? null : (az.node ?? hints.force_node ?? null),
      hints,
      group,
      instanceHosts,
      ignoreHosts: new Set(overrides.ignoreHosts ?? []),
      imagesType: overrides.imagesType ?? null,
    }
  }

  /** Filters and weighs: the candidate hosts, best first (no claim). */
  select(hosts: HostState[], spec: RequestSpec): { hosts: HostState[]; emptiedBy?: string } {
    const result = filterHosts(hosts, spec)
    if (result.hosts.length === 0) return result
    return { hosts: weighHosts(result.hosts, spec, this.options.weigher) }
  }

  /**
   * Places every spec, in order, each in its own claim transaction (with `onClaim`'s writes). Specs of one
   * server group see the hosts the earlier ones got. Stops at the first spec that cannot be placed and
   * throws NoValidHost; the claims already made stay, and the caller releases them (all or nothing).
   * Returns the host of each spec placed; a spec whose onClaim voided is left out.
   */
  async placeAll(specs: RequestSpec[], onClaim: OnClaim, hosts?: HostState[]): Promise<Map<string, HostState>> {
    // One transaction per request only where one process owns the store (SQLite): on PostgreSQL, requests from
    // several processes would hold host locks across their whole placement, waiting on one another with their
    // pool connections; there each claim commits alone and a failed request gives its claims back.
    if (specs.length > 1 && !this.store.capabilities.multiProcess) return this.placeTogether(specs, onClaim, hosts)
    let view = hosts ?? (await this.loadHosts())
    const placed = new Map<string, HostState>()
    const rounds = this.options.claimRounds ?? 8
    for (const spec of specs) {
      let done = false
      let lastReason = ''
      for (let round = 0; round < rounds && !done; round++) {
        const { hosts: candidates, emptiedBy } = this.select(view, spec)
        if (candidates.length === 0) {
          lastReason = `Filter ${emptiedBy} returned 0 hosts`
          // A fresh view can only help when it might differ: reload once before giving up.
          if (round > 0) break
          view = await this.loadHosts()
          const again = this.select(view, spec)
          if (again.hosts.length === 0) {
            lastReason = `Filter ${again.emptiedBy} returned 0 hosts`
            break
          }
          continue
        }
        for (const host of candidates.slice(0, 3)) {
          let voided = false
          let conflict = false
          const ok = await this.store.db
            .transaction()
            .execute(async (tx) => {
              await checkGroup(tx, spec, host.id)
              if (!(await claim(tx, host.id, spec.serverId, spec.resources))) return false
              await onClaim(tx, spec, host)
              return true
            })
            .catch((err: unknown) => {
              if (err instanceof PlacementVoid) {
                voided = true
                return false
              }
              if (err instanceof GroupConflict) {
                // Another scheduler placed a member meanwhile: filter again with the group as it is now.
                spec.group!.hosts = err.hosts
                conflict = true
                return false
              }
              throw err
            })
          if (voided) {
            done = true
            break
          }
          if (ok) {
            host.vcpusUsed += spec.resources.vcpus
            host.memoryMbUsed += spec.resources.memoryMb
            host.diskGbUsed += spec.resources.diskGb
            host.runningVms += 1
            for (const other of specs) if (other.group && spec.group && other.group.id === spec.group.id) other.group.hosts.set(host.id, (other.group.hosts.get(host.id) ?? 0) + 1)
            placed.set(spec.serverId, host)
            done = true
            break
          }
          lastReason = conflict ? 'server group policy conflicts with concurrent placements' : 'claims lost to concurrent schedulers'
          if (conflict) break
        }
        if (!done) view = await this.loadHosts()
      }
      if (!done) throw new NoValidHost(lastReason)
    }
    return placed
  }

  /**
   * A multiple create in one transaction: every claim and server update commits together or not at all, so
   * all-or-nothing needs no compensation, and the request pays for one commit instead of one per server.
   */
  private async placeTogether(specs: RequestSpec[], onClaim: OnClaim, hosts?: HostState[]): Promise<Map<string, HostState>> {
    // Two requests locking the same hosts in different orders can deadlock on PostgreSQL: the database aborts
    // one of them, which then simply runs again.
    const groups = specs.map((spec) => (spec.group ? new Map(spec.group.hosts) : undefined))
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.placeTogetherOnce(specs, onClaim, hosts)
      } catch (err) {
        const code = (err as { code?: string }).code
        if (attempt >= 5 || (code !== '40P01' && code !== '40001')) throw err
        // The rolled-back attempt counted its placements in memory: start again from the saved view.
        specs.forEach((spec, i) => {
          if (spec.group) spec.group.hosts = new Map(groups[i])
        })
        hosts = undefined
      }
    }
  }

  private async placeTogetherOnce(specs: RequestSpec[], onClaim: OnClaim, hosts?: HostState[]): Promise<Map<string, HostState>> {
    const rounds = this.options.claimRounds ?? 8
    return this.store.db.transaction().execute(async (tx) => {
      let view = hosts ?? (await this.loadHosts(tx))
      const placed = new Map<string, HostState>()
      for (const spec of specs) {
        let done = false
        let lastReason = ''
        for (let round = 0; round < rounds && !done; round++) {
          const { hosts: candidates, emptiedBy } = this.select(view, spec)
          if (candidates.length === 0) {
            lastReason = `Filter ${emptiedBy} returned 0 hosts`
            if (round > 0) break
            view = await this.loadHosts(tx)
            continue
          }
          for (const host of candidates.slice(0, 3)) {
            const conflict = await groupConflict(tx, spec, host.id)
            if (conflict) {
              spec.group!.hosts = conflict
              lastReason = 'server group policy conflicts with concurrent placements'
              break
            }
            if (!(await claim(tx, host.id, spec.serverId, spec.resources))) {
              lastReason = 'claims lost to concurrent schedulers'
              continue
            }
            try {
              await onClaim(tx, spec, host)
            } catch (err) {
              if (!(err instanceof PlacementVoid)) throw err
              // Deleted meanwhile: give this claim back and go on with the others.
              await releaseAll(tx, spec.serverId, host.id)
              done = true
              break
            }
            host.vcpusUsed += spec.resources.vcpus
            host.memoryMbUsed += spec.resources.memoryMb
            host.diskGbUsed += spec.resources.diskGb
            host.runningVms += 1
            for (const other of specs) if (other.group && spec.group && other.group.id === spec.group.id) other.group.hosts.set(host.id, (other.group.hosts.get(host.id) ?? 0) + 1)
            placed.set(spec.serverId, host)
            done = true
            break
          }
          if (!done) view = await this.loadHosts(tx)
        }
        // Rolls the whole request back: none of its servers keeps a claim.
        if (!done) throw new NoValidHost(lastReason)
      }
      return placed
    })
  }
}
