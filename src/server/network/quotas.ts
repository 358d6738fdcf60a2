/**
 * Per-project quotas of the network service, Neutron's defaults unless an admin set a limit (-1 = unlimited).
 * Checked inside the creating transaction by counting the project's rows; two creates racing for the last
 * unit may both pass (as in Neutron without reservations) — the limit is a budget, not a lock.
 */
import type { Db } from '../storage/store.js'
import { neutron } from './errors.js'

export const QUOTA_DEFAULTS = {
  network: 100,
  subnet: 100,
  port: 500,
  router: 10,
  floatingip: 50,
  security_group: 10,
  security_group_rule: 100,
} as const

export type QuotaResource = keyof typeof QUOTA_DEFAULTS
export const QUOTA_RESOURCES = Object.keys(QUOTA_DEFAULTS) as QuotaResource[]

const TABLE_OF = {
  network: 'networks',
  subnet: 'subnets',
  port: 'ports',
  router: 'routers',
  floatingip: 'floating_ips',
  security_group: 'security_groups',
  security_group_rule: 'security_group_rules',
} as const

export async function quotaLimits(db: Db, projectId: string): Promise<Record<QuotaResource, number>> {
  const rows = await db.selectFrom('network_quotas').select(['resource', 'limit']).where('project_id', '=', projectId).execute()
  const limits: Record<QuotaResource, number> = { ...QUOTA_DEFAULTS }
  for (const r of rows) if (r.resource in limits) limits[r.resource as QuotaResource] = r.limit
  return limits
}

export async function quotaUsage(db: Db, projectId: string, resource: QuotaResource): Promise<number> {
  const row = await db
    .selectFrom(TABLE_OF[resource])
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('project_id', '=', projectId)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** Throws OverQuota (409) when creating `count` more of `resource` would exceed the project's limit. */
export async function checkQuota(db: Db, projectId: string, resource: QuotaResource, count = 1): Promise<void> {
  if (projectId === '') return
  const limit = (await quotaLimits(db, projectId))[resource]
  if (limit < 0) return
  if ((await quotaUsage(db, projectId, resource)) + count > limit) throw neutron.overQuota([resource])
}

export async function setQuota(db: Db, projectId: string, limits: Partial<Record<string, number>>): Promise<void> {
  for (const resource of QUOTA_RESOURCES) {
    const limit = limits[resource]
    if (limit === undefined) continue
    await db
      .insertInto('network_quotas')
      .values({ project_id: projectId, resource, limit })
      .onConflict((oc) => oc.columns(['project_id', 'resource']).doUpdateSet({ limit }))
      .execute()
  }
}

export async function resetQuota(db: Db, projectId: string): Promise<void> {
  await db.deleteFrom('network_quotas').where('project_id', '=', projectId).execute()
}

/** Projects with at least one limit set, with their full limit sets (GET /v2.0/quotas). */
export async function listQuotas(db: Db): Promise<Record<string, unknown>[]> {
  const projects = await db.selectFrom('network_quotas').select('project_id').distinct().orderBy('project_id').execute()
  const out: Record<string, unknown>[] = []
  for (const { project_id } of projects) out.push({ ...(await quotaLimits(db, project_id)), project_id, tenant_id: project_id })
  return out
}

export async function quotaDetails(db: Db, projectId: string): Promise<Record<string, { limit: number; used: number; reserved: number }>> {
  const limits = await quotaLimits(db, projectId)
  const out: Record<string, { limit: number; used: number; reserved: number }> = {}
  for (const resource of QUOTA_RESOURCES) out[resource] = { limit: limits[resource], used: await quotaUsage(db, projectId, resource), reserved: 0 }
  return out
}
