/**
 * Compute quotas: per-project hard limits (rows in `quotas`; when a project has none, the `default` quota class's
 * limit from os-quota-class-sets, else the built-in default below) and the
 * usage counted from live rows. -1 means unlimited; an unlimited resource is never counted, so a project with
 * unlimited quotas creates servers without scanning its existing ones.
 */
import { forbidden } from '../../contracts/errors.js'
import type { Db } from '../storage/store.js'
import { parseFlavor } from './server-model.js'

export const DEFAULT_QUOTAS = {
  instances: 10,
  cores: 20,
  ram: 51200,
  metadata_items: 128,
  key_pairs: 100,
  server_groups: 10,
  server_group_members: 10,
  injected_files: 5,
  injected_file_content_bytes: 10240,
  injected_file_path_bytes: 255,
} as const

export type QuotaResource = keyof typeof DEFAULT_QUOTAS
export const QUOTA_RESOURCES = Object.keys(DEFAULT_QUOTAS) as QuotaResource[]

/** The quota class whose limits are every project's defaults. */
export const DEFAULT_CLASS = 'default'

/**
 * A quota class's limits over the built-in defaults. Besides the compute resources a class keeps the nova-network
 * ones (fixed_ips …) that clients below 2.50 send back: stored, shown, and used by nothing.
 */
export async function quotaClassLimits(db: Db, className: string): Promise<Record<string, number>> {
  const rows = await db.selectFrom('quota_classes').select(['resource', 'hard_limit']).where('class_name', '=', className).execute()
  const limits: Record<string, number> = { ...DEFAULT_QUOTAS }
  for (const r of rows) limits[r.resource] = Number(r.hard_limit)
  return limits
}

/** The defaults of every project: the `default` class's limits over the built-in ones. */
export async function defaultQuotas(db: Db): Promise<Record<QuotaResource, number>> {
  const limits = await quotaClassLimits(db, DEFAULT_CLASS)
  return Object.fromEntries(QUOTA_RESOURCES.map((r) => [r, limits[r]])) as Record<QuotaResource, number>
}

export async function quotaLimits(db: Db, projectId: string): Promise<Record<QuotaResource, number>> {
  const rows = await db.selectFrom('quotas').select(['resource', 'hard_limit']).where('project_id', '=', projectId).execute()
  const limits = await defaultQuotas(db)
  for (const r of rows) if (r.resource in limits) limits[r.resource as QuotaResource] = r.hard_limit
  return limits
}

/** Writes a class's limits together: all of them or none. */
export async function setQuotaClassLimits(db: Db, className: string, limits: { resource: string; limit: number }[]): Promise<void> {
  await db.transaction().execute(async (tx) => {
    for (const { resource, limit } of limits) {
      await tx
        .insertInto('quota_classes')
        .values({ class_name: className, resource, hard_limit: limit })
        .onConflict((oc) => oc.columns(['class_name', 'resource']).doUpdateSet({ hard_limit: limit }))
        .execute()
    }
  })
}

export interface ServerUsage {
  instances: number
  cores: number
  ram: number
}

export async function serverUsage(db: Db, projectId: string): Promise<ServerUsage> {
  const rows = await db.selectFrom('servers').select('flavor').where('project_id', '=', projectId).where('deleted', '=', 0).execute()
  let cores = 0
  let ram = 0
  for (const r of rows) {
    const f = parseFlavor(r.flavor)
    cores += f.vcpus
    ram += f.ram
  }
  return { instances: rows.length, cores, ram }
}

export async function usageOf(db: Db, projectId: string, userId: string | undefined): Promise<Record<string, number>> {
  const servers = await serverUsage(db, projectId)
  const keyPairs = userId ? Number((await db.selectFrom('keypairs').select((eb) => eb.fn.countAll().as('n')).where('user_id', '=', userId).executeTakeFirst())?.n ?? 0) : 0
  const groups = Number((await db.selectFrom('server_groups').select((eb) => eb.fn.countAll().as('n')).where('project_id', '=', projectId).executeTakeFirst())?.n ?? 0)
  return { ...servers, key_pairs: keyPairs, server_groups: groups, metadata_items: 0, server_group_members: 0 }
}

export function quotaExceeded(resource: string, requested: number, used: number, limit: number): Error {
  return forbidden(`Quota exceeded for ${resource}: Requested ${requested}, but already used ${used} of ${limit} ${resource}`)
}

/**
 * How many servers of `flavor` fit (between min and max), or throws Nova's 403 when fewer than `min` do.
 * Cores and RAM count only when limited.
 */
export async function checkServerQuota(
  db: Db,
  projectId: string,
  flavor: { vcpus: number; ram: number },
  min: number,
  max: number,
  known?: Record<QuotaResource, number>,
): Promise<number> {
  const limits = known ?? (await quotaLimits(db, projectId))
  if (limits.instances < 0 && limits.cores < 0 && limits.ram < 0) return max
  const used = await serverUsage(db, projectId)
  let allowed = max
  const fit = (limit: number, usedNow: number, per: number) => (limit < 0 || per === 0 ? Infinity : Math.floor((limit - usedNow) / per))
  const checks: [string, number, number, number][] = [
    ['instances', limits.instances, used.instances, 1],
    ['cores', limits.cores, used.cores, flavor.vcpus],
    ['ram', limits.ram, used.ram, flavor.ram],
  ]
  for (const [resource, limit, usedNow, per] of checks) {
    const n = fit(limit, usedNow, per)
    if (n < min) throw quotaExceeded(resource, min * per, usedNow, limit)
    allowed = Math.min(allowed, n)
  }
  return Math.max(min, Math.min(allowed, max))
}

export async function checkMetadataQuota(db: Db, projectId: string, count: number, known?: Record<QuotaResource, number>): Promise<void> {
  if (count === 0) return
  const limits = known ?? (await quotaLimits(db, projectId))
  if (limits.metadata_items >= 0 && count > limits.metadata_items) throw forbidden(`Quota exceeded for metadata_items: Requested ${count}, but already used 0 of ${limits.metadata_items} metadata_items`)
}

/** Whether a project exists (a quota is set only for a known project). */
export async function projectExists(db: Db, projectId: string): Promise<boolean> {
  return (await db.selectFrom('projects').select('id').where('id', '=', projectId).executeTakeFirst()) !== undefined
}

/** Writes a project's limits together: all of them or none. */
export async function setQuotaLimits(db: Db, projectId: string, limits: { resource: string; limit: number }[]): Promise<void> {
  await db.transaction().execute(async (tx) => {
    for (const { resource, limit } of limits) {
      await tx
        .insertInto('quotas')
        .values({ project_id: projectId, resource, hard_limit: limit })
        .onConflict((oc) => oc.columns(['project_id', 'resource']).doUpdateSet({ hard_limit: limit }))
        .execute()
    }
  })
}

/** Removes a project's compute limits: it falls back to the defaults. */
export async function resetQuotaLimits(db: Db, projectId: string): Promise<void> {
  await db.deleteFrom('quotas').where('project_id', '=', projectId).where('resource', 'in', QUOTA_RESOURCES).execute()
}
