/**
 * Migration records (docs/compute.md, "Migrations"): one row per move of a server, written by the conductor as the
 * move runs, in Nova's statuses, and read by os-migrations and /servers/{id}/migrations.
 */
import { randomUUID } from 'node:crypto'
import type { Db } from '../storage/store.js'
import type { ServerMigrationTable, ServerTable } from '../storage/tables/compute.js'
import { isUniqueViolation } from '../storage/errors.js'
import { nextId } from '../storage/sequences.js'
import type { ServerActionName } from './server-states.js'

export type MigrationType = 'live-migration' | 'migration' | 'resize' | 'evacuation'

/** The actions that move a server, and the kind of migration each records. */
export const MIGRATION_TYPES: Partial<Record<ServerActionName, MigrationType>> = {
  resize: 'resize',
  migrate: 'migration',
  'os-migrateLive': 'live-migration',
  evacuate: 'evacuation',
}

/** Nova's statuses of each kind: when it starts, once the destination is claimed, when it ends well or badly. */
export const MIGRATION_STATUS: Record<MigrationType, { start: string; claimed: string; done: string; failed: string }> = {
  'live-migration': { start: 'queued', claimed: 'preparing', done: 'completed', failed: 'error' },
  migration: { start: 'pre-migrating', claimed: 'pre-migrating', done: 'finished', failed: 'error' },
  resize: { start: 'pre-migrating', claimed: 'pre-migrating', done: 'finished', failed: 'error' },
  evacuation: { start: 'accepted', claimed: 'pre-migrating', done: 'done', failed: 'failed' },
}

/** A cold migration or resize moves through these as the server's task state does. */
export const STEP_STATUS: Partial<Record<string, string>> = {
  resize_migrating: 'migrating',
  resize_migrated: 'post-migrating',
}

/** Live migrations Nova counts as in progress (the ones /servers/{id}/migrations shows). */
export const IN_PROGRESS = ['queued', 'preparing', 'running', 'post-migrating']

/** A resize or cold migration waiting for confirm or revert ends in these. */
export const RESIZE_END = { confirmResize: 'confirmed', revertResize: 'reverted' } as const

const flavorId = (json: string | null | undefined): string | null => (json ? ((JSON.parse(json) as { id?: string }).id ?? null) : null)

/** The row of this move (one per action request): made the first time, found again by a repeated run. */
export async function startMigration(db: Db, server: ServerTable, type: MigrationType, requestId: string, newFlavorId: string | null): Promise<void> {
  const existing = await db.selectFrom('migrations').select('id').where('server_id', '=', server.id).where('request_id', '=', requestId).executeTakeFirst()
  if (existing) return
  try {
    await db
      .insertInto('migrations')
      .values({
        id: await nextId(db, 'migrations'),
        uuid: randomUUID(),
        server_id: server.id,
        project_id: server.project_id,
        user_id: server.user_id,
        request_id: requestId,
        migration_type: type,
        status: MIGRATION_STATUS[type].start,
        source_host: server.host,
        dest_host: null,
        old_flavor_id: flavorId(server.flavor),
        new_flavor_id: newFlavorId ?? flavorId(server.flavor),
        created_at: Date.now(),
        updated_at: null,
      })
      .execute()
  } catch (err) {
    // A repeated run of the same request made its row at the same moment: that row is this move's.
    if (!isUniqueViolation(err)) throw err
  }
}

/** Moves the request's migration on (its status, and the destination once known); a cancelled one stays cancelled. */
export async function updateMigration(db: Db, serverId: string, requestId: string, patch: Partial<Pick<ServerMigrationTable, 'status' | 'dest_host'>>): Promise<void> {
  await db.updateTable('migrations').set({ ...patch, updated_at: Date.now() }).where('server_id', '=', serverId).where('request_id', '=', requestId).where('status', '!=', CANCELLED).execute()
}

/** The status of a live migration aborted (the API's DELETE): it ends so, the server on its source as before. */
export const CANCELLED = 'cancelled'
/** A live migration not copying yet: from 2.65 an abort cancels it here, before any host acts (`cancelQueued`). */
export const QUEUED = ['queued', 'preparing']

/**
 * The source starts copying: `running`, unless an abort cancelled the migration while queued (false then). One
 * conditional update each, this and `cancelQueued`, so exactly one of them wins.
 */
export async function startCopying(db: Db, serverId: string, requestId: string): Promise<boolean> {
  const r = await db.updateTable('migrations').set({ status: 'running', updated_at: Date.now() }).where('server_id', '=', serverId).where('request_id', '=', requestId).where('status', 'in', QUEUED).executeTakeFirst()
  if (Number(r.numUpdatedRows) > 0) return true
  const row = await db.selectFrom('migrations').select('status').where('server_id', '=', serverId).where('request_id', '=', requestId).executeTakeFirst()
  return row?.status !== CANCELLED
}

/** Cancels a live migration still queued or preparing; false when it started copying meanwhile (or ended). */
export async function cancelQueued(db: Db, migrationId: number): Promise<boolean> {
  const r = await db.updateTable('migrations').set({ status: CANCELLED, updated_at: Date.now() }).where('id', '=', migrationId).where('status', 'in', QUEUED).executeTakeFirst()
  return Number(r.numUpdatedRows) > 0
}

/** A server's migration by its id (any kind, any status); undefined when the server has none of that id. */
export async function findServerMigration(db: Db, serverId: string, migrationId: string): Promise<ServerMigrationTable | undefined> {
  if (!/^\d{1,15}$/.test(migrationId)) return undefined
  const row = await db.selectFrom('migrations').selectAll().where('id', '=', Number(migrationId)).where('server_id', '=', serverId).executeTakeFirst()
  return row && { ...row, id: Number(row.id) }
}

/** Ends a cancelled live migration's record (the conductor's rollback), whatever status it had reached. */
export async function cancelMigration(db: Db, serverId: string, requestId: string): Promise<void> {
  await db.updateTable('migrations').set({ status: CANCELLED, updated_at: Date.now() }).where('server_id', '=', serverId).where('request_id', '=', requestId).execute()
}

/** Confirm or revert ends the server's finished resize or cold migration. */
export async function endResizeMigration(db: Db, serverId: string, status: string): Promise<void> {
  await db
    .updateTable('migrations')
    .set({ status, updated_at: Date.now() })
    .where('server_id', '=', serverId)
    .where('migration_type', 'in', ['resize', 'migration'])
    .where('status', '=', 'finished')
    .execute()
}

export interface MigrationFilters {
  host?: string
  status?: string
  instanceUuid?: string
  migrationType?: string
  sourceCompute?: string
  changesSince?: number
  changesBefore?: number
  userId?: string
  projectId?: string
}

/** Migrations, newest first, as os-migrations filters them; `afterId` pages after a marker's row. */
export async function listMigrations(db: Db, f: MigrationFilters, page: { limit?: number; beforeId?: number } = {}): Promise<ServerMigrationTable[]> {
  let q = db.selectFrom('migrations').selectAll()
  if (f.host !== undefined) q = q.where((eb) => eb.or([eb('source_host', '=', f.host!), eb('dest_host', '=', f.host!)]))
  if (f.status !== undefined) q = q.where('status', '=', f.status)
  if (f.instanceUuid !== undefined) q = q.where('server_id', '=', f.instanceUuid)
  if (f.migrationType !== undefined) q = q.where('migration_type', '=', f.migrationType)
  if (f.sourceCompute !== undefined) q = q.where('source_host', '=', f.sourceCompute)
  if (f.userId !== undefined) q = q.where('user_id', '=', f.userId)
  if (f.projectId !== undefined) q = q.where('project_id', '=', f.projectId)
  if (f.changesSince !== undefined) q = q.where((eb) => eb(eb.fn.coalesce('updated_at', 'created_at'), '>=', f.changesSince!))
  if (f.changesBefore !== undefined) q = q.where((eb) => eb(eb.fn.coalesce('updated_at', 'created_at'), '<=', f.changesBefore!))
  if (page.beforeId !== undefined) q = q.where('id', '<', page.beforeId)
  if (page.limit !== undefined) q = q.limit(page.limit)
  return (await q.orderBy('id', 'desc').execute()).map((r) => ({ ...r, id: Number(r.id) }))
}

export async function findMigrationByUuid(db: Db, uuid: string): Promise<ServerMigrationTable | undefined> {
  const row = await db.selectFrom('migrations').selectAll().where('uuid', '=', uuid).executeTakeFirst()
  return row && { ...row, id: Number(row.id) }
}

/** A server's live migrations in progress (one, at most, in practice). */
export async function serverMigrationsInProgress(db: Db, serverId: string): Promise<ServerMigrationTable[]> {
  const rows = await db.selectFrom('migrations').selectAll().where('server_id', '=', serverId).where('migration_type', '=', 'live-migration').where('status', 'in', IN_PROGRESS).orderBy('id').execute()
  return rows.map((r) => ({ ...r, id: Number(r.id) }))
}
