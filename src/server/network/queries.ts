/** Reads shared by the network operations: rows by id, and the child rows views need, fetched in batches. */
import type { Db } from '../storage/store.js'
import type { NetworkTable, SecurityGroupRuleTable } from '../storage/schema.js'
import { chunks, type NetCtx } from './context.js'
import type { FixedIp } from './views.js'

/** Locks the network row for the rest of the transaction: every IP allocation on a network goes through it. */
export async function lockNetwork(ctx: NetCtx, networkId: string): Promise<NetworkTable | undefined> {
  return ctx.db
    .selectFrom('networks')
    .selectAll()
    .where('id', '=', networkId)
    .$if(ctx.rowLocks, (q) => q.forUpdate())
    .executeTakeFirst()
}

export async function subnetIdsByNetwork(db: Db, networkIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(networkIds.map((id) => [id, []]))
  for (const ids of chunks(networkIds)) {
    if (ids.length === 0) continue
    const rows = await db.selectFrom('subnets').select(['id', 'network_id']).where('network_id', 'in', ids).orderBy('created_at').orderBy('id').execute()
    for (const r of rows) out.get(r.network_id)!.push(r.id)
  }
  return out
}

export async function fixedIpsByPort(db: Db, portIds: string[]): Promise<Map<string, FixedIp[]>> {
  const out = new Map<string, FixedIp[]>(portIds.map((id) => [id, []]))
  for (const ids of chunks(portIds)) {
    if (ids.length === 0) continue
    const rows = await db
      .selectFrom('ip_allocations')
      .innerJoin('subnets', 'subnets.id', 'ip_allocations.subnet_id')
      .select(['ip_allocations.port_id', 'ip_allocations.subnet_id', 'ip_allocations.ip_address'])
      .where('ip_allocations.port_id', 'in', ids)
      // A port's addresses in a stable order: as allocated, then in the order the subnets were created.
      .orderBy('ip_allocations.created_at')
      .orderBy('subnets.created_at')
      .orderBy('subnets.id')
      .orderBy('ip_allocations.ip_address')
      .execute()
    for (const r of rows) out.get(r.port_id)!.push({ subnet_id: r.subnet_id, ip_address: r.ip_address })
  }
  return out
}

export async function securityGroupIdsByPort(db: Db, portIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(portIds.map((id) => [id, []]))
  for (const ids of chunks(portIds)) {
    if (ids.length === 0) continue
    const rows = await db.selectFrom('port_security_groups').select(['port_id', 'security_group_id']).where('port_id', 'in', ids).orderBy('security_group_id').execute()
    for (const r of rows) out.get(r.port_id)!.push(r.security_group_id)
  }
  return out
}

export async function rulesByGroup(db: Db, groupIds: string[]): Promise<Map<string, SecurityGroupRuleTable[]>> {
  const out = new Map<string, SecurityGroupRuleTable[]>(groupIds.map((id) => [id, []]))
  for (const ids of chunks(groupIds)) {
    if (ids.length === 0) continue
    const rows = await db.selectFrom('security_group_rules').selectAll().where('security_group_id', 'in', ids).orderBy('created_at').orderBy('id').execute()
    for (const r of rows) out.get(r.security_group_id)!.push(r)
  }
  return out
}

/** Bumps revision_number and updated_at, as every Neutron update does. */
export function touched(now: number, revision: number) {
  return { updated_at: now, revision_number: revision + 1 }
}
