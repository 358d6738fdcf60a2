/** The compute hosts as os-hypervisors and os-services see them: their rows, their servers, their service state. */
import { deleteHistory } from '../metrics/metric-history.js'
import type { HostTable } from '../storage/tables/compute.js'
import type { Db } from '../storage/store.js'

/** The compute hosts: those whose hypervisor role is applied (a host onboarded without it runs no compute service). */
export async function computeHosts(db: Db): Promise<HostTable[]> {
  return db
    .selectFrom('hosts')
    .selectAll()
    .where('id', 'in', db.selectFrom('host_roles').select('host_id').where('role', '=', 'hypervisor').where('state', 'in', ['ok', 'removing']))
    .orderBy('created_at')
    .orderBy('hostname')
    .execute()
}

/** The live servers on these hosts. */
export async function serversOnHosts(db: Db, hostIds: string[]): Promise<{ id: string; display_id: number; host_id: string | null }[]> {
  return db.selectFrom('servers').select(['id', 'display_id', 'host_id']).where('host_id', 'in', hostIds).where('deleted', '=', 0).execute()
}

/** Writes a host's service state; answers the row as it is now. */
export async function setHostService(db: Db, host: HostTable, patch: Partial<Pick<HostTable, 'service_status' | 'disabled_reason' | 'forced_down'>>): Promise<HostTable> {
  const now = Date.now()
  await db.updateTable('hosts').set({ ...patch, updated_at: now }).where('id', '=', host.id).execute()
  return { ...host, ...patch, updated_at: now }
}

/** The project and flavor of each live server on a host: what os-hosts adds up per project. */
export async function serverFlavorsOnHost(db: Db, hostId: string): Promise<{ project_id: string; flavor: string }[]> {
  return db.selectFrom('servers').select(['project_id', 'flavor']).where('host_id', '=', hostId).where('deleted', '=', 0).execute()
}

/** The first address each host reported, by hostname (Nova's migration records name a host by its address). */
export async function hostAddresses(db: Db): Promise<Map<string, string | null>> {
  const rows = await db.selectFrom('hosts').select(['hostname', 'ip_addresses']).execute()
  return new Map(rows.map((r) => [r.hostname, (JSON.parse(r.ip_addresses || '[]') as string[])[0] ?? null]))
}

export async function hostHasServers(db: Db, hostId: string): Promise<boolean> {
  return (await db.selectFrom('servers').select('id').where('host_id', '=', hostId).where('deleted', '=', 0).executeTakeFirst()) !== undefined
}

/** Removes a host with its claims and roles, together. */
export async function deleteComputeHost(db: Db, hostId: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('allocations').where('host_id', '=', hostId).execute()
    await tx.deleteFrom('host_roles').where('host_id', '=', hostId).execute()
    await tx.deleteFrom('network_agents').where('host_id', '=', hostId).execute()
    await deleteHistory(tx, hostId)
    await tx.deleteFrom('hosts').where('id', '=', hostId).execute()
  })
}
