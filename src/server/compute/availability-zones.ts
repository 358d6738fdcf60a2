/**
 * The availability zones os-availability-zone shows: the zones of the hosts (an aggregate's zone, or the host's
 * default, aggregates.ts), `nova` when there are none.
 */
import type { HostTable } from '../storage/tables/compute.js'
import type { Db } from '../storage/store.js'
import { hostZones } from './aggregates.js'

export type ZoneHost = Pick<HostTable, 'hostname' | 'availability_zone' | 'service_status' | 'forced_down' | 'last_heartbeat_at' | 'updated_at'>

/** Each zone with its hosts, by name; the `internal` zone (Nova's, for services that are not compute) is left out. */
export async function zonesWithHosts(db: Db): Promise<[string, ZoneHost[]][]> {
  const rows = await db.selectFrom('hosts').select(['hostname', 'availability_zone', 'service_status', 'forced_down', 'last_heartbeat_at', 'updated_at']).execute()
  const zones = await hostZones(db)
  const hosts = rows.map((h) => ({ ...h, availability_zone: zones.get(h.hostname) ?? h.availability_zone }))
  const byZone = new Map<string, ZoneHost[]>()
  for (const h of hosts) byZone.set(h.availability_zone, [...(byZone.get(h.availability_zone) ?? []), h])
  if (byZone.size === 0) byZone.set('nova', [])
  return [...byZone.entries()].filter(([name]) => name !== 'internal').sort(([a], [b]) => a.localeCompare(b))
}
