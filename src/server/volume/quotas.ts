/**
 * Block storage quotas (Cinder's volumes, gigabytes, snapshots): per-project limits with defaults, usage
 * counted from the rows themselves (creating and deleting volumes count until they are gone), checked inside
 * the transaction that adds the usage. Exceeding is 413 overLimit, as Cinder answers.
 *
 * Concurrent requests of one project are serialised so two of them cannot both pass the last unit of quota:
 * SQLite runs one write transaction at a time anyway; on PostgreSQL a transaction-scoped advisory lock keyed by
 * the project is taken first.
 */
import { sql } from 'kysely'
import { AppError } from '../../contracts/errors.js'
import type { Capabilities } from '../storage/capabilities.js'
import type { Db } from '../storage/store.js'

export const QUOTA_RESOURCES = ['volumes', 'gigabytes', 'snapshots'] as const
export type QuotaResource = (typeof QUOTA_RESOURCES)[number]

export const DEFAULT_QUOTAS: Record<QuotaResource, number> = { volumes: 10, gigabytes: 1000, snapshots: 10 }

export async function quotaLimits(db: Db, projectId: string): Promise<Record<QuotaResource, number>> {
  const rows = await db.selectFrom('volume_quotas').select(['resource', 'hard_limit']).where('project_id', '=', projectId).execute()
  const limits = { ...DEFAULT_QUOTAS }
  for (const r of rows) if ((QUOTA_RESOURCES as readonly string[]).includes(r.resource)) limits[r.resource as QuotaResource] = r.hard_limit
  return limits
}

export async function quotaUsage(db: Db, projectId: string): Promise<Record<QuotaResource, number>> {
  const volumes = await db
    .selectFrom('volumes')
    .select((eb) => [eb.fn.countAll<number>().as('count'), eb.fn.sum<number>('size').as('gigabytes')])
    .where('project_id', '=', projectId)
    .executeTakeFirstOrThrow()
  const snapshots = await db
    .selectFrom('volume_snapshots')
    .select((eb) => [eb.fn.countAll<number>().as('count'), eb.fn.sum<number>('size').as('gigabytes')])
    .where('project_id', '=', projectId)
    .executeTakeFirstOrThrow()
  return {
    volumes: Number(volumes.count),
    snapshots: Number(snapshots.count),
    gigabytes: Number(volumes.gigabytes ?? 0) + Number(snapshots.gigabytes ?? 0),
  }
}

/** Throws 413 when adding `delta` would pass a limit (-1 means unlimited). Call inside the writing transaction. */
export async function checkQuota(db: Db, capabilities: Capabilities, projectId: string, delta: Partial<Record<QuotaResource, number>>): Promise<void> {
  if (capabilities.advisoryLocks) await sql`SELECT pg_advisory_xact_lock(7243041, hashtext(${projectId}))`.execute(db)
  const [limits, usage] = await Promise.all([quotaLimits(db, projectId), quotaUsage(db, projectId)])
  for (const resource of QUOTA_RESOURCES) {
    const want = delta[resource] ?? 0
    if (want <= 0 || limits[resource] < 0) continue
    if (usage[resource] + want > limits[resource]) {
      const message =
        resource === 'gigabytes'
          ? `VolumeSizeExceedsAvailableQuota: Requested volume or snapshot exceeds allowed gigabytes quota. Requested ${want}G, quota is ${limits.gigabytes}G and ${usage.gigabytes}G has been consumed.`
          : `${resource === 'volumes' ? 'VolumeLimitExceeded' : 'SnapshotLimitExceeded'}: Maximum number of ${resource} allowed (${limits[resource]}) exceeded for quota '${resource}'.`
      throw new AppError('over_limit', message)
    }
  }
}

/**
 * Cinder's quotas this backend does not count (no backups, no groups, no per-volume limit): every quota set shows
 * them, with Cinder's defaults or what an admin set, as clients expect the keys.
 */
export const UNCOUNTED_QUOTAS: Record<string, number> = { per_volume_gigabytes: -1, backups: 10, backup_gigabytes: 1000, groups: 10 }
export const ALL_QUOTAS = [...QUOTA_RESOURCES, ...Object.keys(UNCOUNTED_QUOTAS)]

/** Every quota of a project: the counted ones (quotaLimits) and the others as stored, else their defaults. */
export async function projectQuotas(db: Db, projectId: string): Promise<Record<string, number>> {
  const stored = await db.selectFrom('volume_quotas').select(['resource', 'hard_limit']).where('project_id', '=', projectId).where('resource', 'in', Object.keys(UNCOUNTED_QUOTAS)).execute()
  return { ...UNCOUNTED_QUOTAS, ...Object.fromEntries(stored.map((r) => [r.resource, r.hard_limit])), ...(await quotaLimits(db, projectId)) }
}

/** Writes a project's limits together: all of them or none. */
export async function setProjectQuotas(db: Db, projectId: string, updates: [string, number][]): Promise<void> {
  await db.transaction().execute(async (tx) => {
    for (const [resource, hard_limit] of updates) {
      await tx
        .insertInto('volume_quotas')
        .values({ project_id: projectId, resource, hard_limit })
        .onConflict((oc) => oc.columns(['project_id', 'resource']).doUpdateSet({ hard_limit }))
        .execute()
    }
  })
}

/** Sets a project's quotas back to the defaults. */
export async function resetProjectQuotas(db: Db, projectId: string): Promise<void> {
  await db.deleteFrom('volume_quotas').where('project_id', '=', projectId).where('resource', 'in', ALL_QUOTAS).execute()
}
