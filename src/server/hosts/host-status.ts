/**
 * A host's state as the APIs show it, derived from its record and the clock, never stored: a heartbeat older
 * than the timeout makes a host DOWN without anyone having to notice it first.
 */
import type { HostTable } from '../storage/tables/compute.js'
import type { Db } from '../storage/store.js'

/** Nova's host_status: UP, DOWN, MAINTENANCE (service disabled), UNKNOWN (never heard from). */
export type HostStatus = 'UP' | 'DOWN' | 'MAINTENANCE' | 'UNKNOWN'

export type HostLiveness = Pick<HostTable, 'forced_down' | 'last_heartbeat_at' | 'service_status'>

/** True when the host heartbeated within `downAfterMs` and is not forced down (os-services `state: up`). */
export function isUp(host: HostLiveness, now: number, downAfterMs: number): boolean {
  return !host.forced_down && host.last_heartbeat_at !== null && now - host.last_heartbeat_at <= downAfterMs
}

export function hostStatus(host: HostLiveness, now: number, downAfterMs: number): HostStatus {
  if (host.forced_down) return 'DOWN'
  if (host.last_heartbeat_at === null) return 'UNKNOWN'
  if (now - host.last_heartbeat_at > downAfterMs) return 'DOWN'
  if (host.service_status === 'disabled') return 'MAINTENANCE'
  return 'UP'
}

/** Whether the host named `hostname` is up now; undefined when there is no such host. */
export async function hostIsUp(db: Db, hostname: string, downAfterMs: number): Promise<boolean | undefined> {
  const h = await db.selectFrom('hosts').select(['forced_down', 'last_heartbeat_at', 'service_status']).where('hostname', '=', hostname).executeTakeFirst()
  if (!h) return undefined
  return isUp(h, Date.now(), downAfterMs)
}
