/**
 * Block storage quotas (Cinder's volumes, gigabytes, snapshots, in total and per volume type as
 * `volumes_<type>`, `gigabytes_<type>`, `snapshots_<type>`): per-project limits over defaults, usage counted from
 * the rows themselves (creating and deleting volumes count until they are gone), checked inside the transaction
 * that adds the usage. Exceeding is 413 overLimit, as Cinder answers.
 *
 * Defaults are Cinder's, unless the quota class `default` (os-quota-class-sets) says otherwise; per-type
 * quotas default to unlimited. Per-type quotas name the type: a renamed type starts from the defaults again.
 *
 * Concurrent requests of one project are serialised so two of them cannot both pass the last unit of quota:
 * SQLite runs one write transaction at a time anyway; on PostgreSQL a transaction-scoped advisory lock keyed by
 * the project is taken first.
 */
import { sql } from 'kysely'
import { AppError } from '../../contracts/errors.js'
import type { Capabilities } from '../storage/capabilities.js'
import type { Db } from '../storage/store.js'
import { ADVISORY_LOCKS } from '../storage/locks.js'

/** The quotas counted, in total and per volume type. */
export const QUOTA_RESOURCES = ['volumes', 'gigabytes', 'snapshots'] as const
export type QuotaResource = (typeof QUOTA_RESOURCES)[number]

/**
 * Cinder's defaults. `backups` and `backup_gigabytes` count the project's backups and their sizes (backups.ts),
 * with no per-type variant, as in Cinder; per_volume_gigabytes is shown but not enforced. `groups` counts the
 * project's generic volume groups (groups.ts), as Cinder's group quota does.
 */
export const BASE_DEFAULTS: Record<string, number> = { volumes: 10, gigabytes: 1000, snapshots: 10, per_volume_gigabytes: -1, backups: 10, backup_gigabytes: 1000, groups: 10 }
/** A per-type quota nobody set. */
const UNLIMITED = -1

/** The quota class whose limits are every project's defaults. */
export const DEFAULT_QUOTA_CLASS = 'default'

/** A resource's per-type key: `volumes_<type name>`. */
export function typeResource(resource: QuotaResource, typeName: string): string {
  return `${resource}_${typeName}`
}

/** Every quota key: the base ones, then the per-type ones of every volume type. */
export async function quotaKeys(db: Db): Promise<string[]> {
  const types = await db.selectFrom('volume_types').select('name').orderBy('name').execute()
  return [...Object.keys(BASE_DEFAULTS), ...types.flatMap((t) => QUOTA_RESOURCES.map((r) => typeResource(r, t.name)))]
}

function overlay(keys: string[], base: Record<string, number>, rows: { resource: string; hard_limit: number }[]): Record<string, number> {
  const out = Object.fromEntries(keys.map((k) => [k, base[k] ?? UNLIMITED]))
  for (const r of rows) if (r.resource in out) out[r.resource] = r.hard_limit
  return out
}

/** A quota class's limits: Cinder's defaults overlaid with what was set for the class. */
export async function classQuotas(db: Db, className: string, keys?: string[]): Promise<Record<string, number>> {
  const rows = await db.selectFrom('volume_quota_classes').select(['resource', 'hard_limit']).where('class_name', '=', className).execute()
  return overlay(keys ?? (await quotaKeys(db)), BASE_DEFAULTS, rows)
}

/** Every project's defaults: the `default` class. */
export async function defaultQuotas(db: Db, keys?: string[]): Promise<Record<string, number>> {
  return classQuotas(db, DEFAULT_QUOTA_CLASS, keys)
}

/** Every quota of a project: what was set for it, else the defaults. */
export async function projectQuotas(db: Db, projectId: string): Promise<Record<string, number>> {
  const keys = await quotaKeys(db)
  const rows = await db.selectFrom('volume_quotas').select(['resource', 'hard_limit']).where('project_id', '=', projectId).execute()
  return overlay(keys, await defaultQuotas(db, keys), rows)
}

/** What a project uses of each counted quota, in total and per volume type (snapshots count for their volume's type). */
export async function quotaUsage(db: Db, projectId: string): Promise<Record<string, number>> {
  const volumes = await db
    .selectFrom('volumes')
    .innerJoin('volume_types', 'volume_types.id', 'volumes.volume_type_id')
    .select((eb) => ['volume_types.name as type', eb.fn.countAll<number>().as('count'), eb.fn.sum<number>('volumes.size').as('gigabytes')])
    .where('volumes.project_id', '=', projectId)
    .groupBy('volume_types.name')
    .execute()
  const snapshots = await db
    .selectFrom('volume_snapshots')
    .innerJoin('volumes', 'volumes.id', 'volume_snapshots.volume_id')
    .innerJoin('volume_types', 'volume_types.id', 'volumes.volume_type_id')
    .select((eb) => ['volume_types.name as type', eb.fn.countAll<number>().as('count'), eb.fn.sum<number>('volume_snapshots.size').as('gigabytes')])
    .where('volume_snapshots.project_id', '=', projectId)
    .groupBy('volume_types.name')
    .execute()
  const groups = await db.selectFrom('volume_groups').select((eb) => eb.fn.countAll<number>().as('count')).where('project_id', '=', projectId).executeTakeFirstOrThrow()
  const backups = await db
    .selectFrom('volume_backups')
    .select((eb) => [eb.fn.countAll<number>().as('count'), eb.fn.sum<number>('size').as('gigabytes')])
    .where('project_id', '=', projectId)
    .executeTakeFirstOrThrow()
  const used: Record<string, number> = { volumes: 0, gigabytes: 0, snapshots: 0, groups: Number(groups.count), backups: Number(backups.count), backup_gigabytes: Number(backups.gigabytes ?? 0) }
  const add = (key: string, n: number) => (used[key] = (used[key] ?? 0) + n)
  for (const v of volumes) {
    add('volumes', Number(v.count))
    add(typeResource('volumes', v.type), Number(v.count))
    add('gigabytes', Number(v.gigabytes ?? 0))
    add(typeResource('gigabytes', v.type), Number(v.gigabytes ?? 0))
  }
  for (const s of snapshots) {
    add('snapshots', Number(s.count))
    add(typeResource('snapshots', s.type), Number(s.count))
    add('gigabytes', Number(s.gigabytes ?? 0))
    add(typeResource('gigabytes', s.type), Number(s.gigabytes ?? 0))
  }
  return used
}

/** A change of usage: the totals, and the same amounts for the volume type they belong to. */
export function typedDelta(typeName: string, delta: Partial<Record<QuotaResource, number>>): Record<string, number> {
  const out: Record<string, number> = { ...delta }
  for (const [resource, n] of Object.entries(delta) as [QuotaResource, number][]) out[typeResource(resource, typeName)] = n
  return out
}

function exceeded(resource: string, want: number, limit: number, used: number): string {
  if (resource === 'backup_gigabytes') return `VolumeBackupSizeExceedsAvailableQuota: Requested backup exceeds allowed Backup gigabytes quota. Requested ${want}G, quota is ${limit}G and ${used}G has been consumed.`
  if (resource === 'backups') return `BackupLimitExceeded: Maximum number of backups allowed (${limit}) exceeded.`
  if (resource.startsWith('gigabytes')) {
    return `VolumeSizeExceedsAvailableQuota: Requested volume or snapshot exceeds allowed ${resource} quota. Requested ${want}G, quota is ${limit}G and ${used}G has been consumed.`
  }
  if (resource === 'groups') return `GroupLimitExceeded: Maximum number of groups allowed (${limit}) exceeded for quota 'groups'.`
  const kind = resource.startsWith('volumes') ? 'VolumeLimitExceeded' : 'SnapshotLimitExceeded'
  return `${kind}: Maximum number of ${resource.split('_')[0]} allowed (${limit}) exceeded for quota '${resource}'.`
}

/** Throws 413 when adding `delta` (typedDelta) would pass a limit (-1 means unlimited). Call inside the writing transaction. */
export async function checkQuota(db: Db, capabilities: Capabilities, projectId: string, delta: Record<string, number>): Promise<void> {
  if (capabilities.advisoryLocks) await sql`SELECT pg_advisory_xact_lock(${ADVISORY_LOCKS.volumeQuota}, hashtext(${projectId}))`.execute(db)
  const [limits, usage] = await Promise.all([projectQuotas(db, projectId), quotaUsage(db, projectId)])
  for (const [resource, want] of Object.entries(delta)) {
    const limit = limits[resource] ?? UNLIMITED
    if (want <= 0 || limit < 0) continue
    const used = usage[resource] ?? 0
    if (used + want > limit) throw new AppError('over_limit', exceeded(resource, want, limit, used))
  }
}

/** Writes limits together (a project's or a quota class's): all of them or none. */
export async function setQuotas(db: Db, owner: { projectId: string } | { className: string }, updates: [string, number][]): Promise<void> {
  await db.transaction().execute(async (tx) => {
    for (const [resource, hard_limit] of updates) {
      if ('projectId' in owner) {
        await tx
          .insertInto('volume_quotas')
          .values({ project_id: owner.projectId, resource, hard_limit })
          .onConflict((oc) => oc.columns(['project_id', 'resource']).doUpdateSet({ hard_limit }))
          .execute()
      } else {
        await tx
          .insertInto('volume_quota_classes')
          .values({ class_name: owner.className, resource, hard_limit })
          .onConflict((oc) => oc.columns(['class_name', 'resource']).doUpdateSet({ hard_limit }))
          .execute()
      }
    }
  })
}

/** Sets a project's quotas back to the defaults. */
export async function resetProjectQuotas(db: Db, projectId: string): Promise<void> {
  await db.deleteFrom('volume_quotas').where('project_id', '=', projectId).execute()
}
