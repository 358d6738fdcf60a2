/**
 * The purge: a cluster job that deletes rows nobody needs any more, in small batches so no statement holds
 * locks for long.
 *
 * - Tasks that ended (`done` or `failed`) longer than the retention ago.
 * - Servers soft-deleted (`deleted = 1`) longer than the retention ago, with their instance actions and events
 *   (kept until the server row goes, as Nova keeps them for `deleted=true` listings), tags and faults.
 */
import type { Store } from '../storage/store.js'
import type { ClusterJob } from './cluster-jobs.js'

export interface PurgeOptions {
  retentionMs: number
  /** Rows per statement (default 500). */
  batchSize?: number
  now?: () => number
}

export interface PurgeReport {
  tasks: number
  servers: number
}

export async function purgeOldRows(store: Store, options: PurgeOptions, signal?: AbortSignal): Promise<PurgeReport> {
  const db = store.db
  const batch = options.batchSize ?? 500
  const cutoff = (options.now ?? Date.now)() - options.retentionMs
  const report: PurgeReport = { tasks: 0, servers: 0 }

  for (;;) {
    if (signal?.aborted) return report
    const ids = (
      await db.selectFrom('tasks').select('id').where('status', 'in', ['done', 'failed']).where('finished_at', '<', cutoff).limit(batch).execute()
    ).map((r) => r.id)
    if (ids.length === 0) break
    const result = await db.deleteFrom('tasks').where('id', 'in', ids).where('status', 'in', ['done', 'failed']).executeTakeFirst()
    report.tasks += Number(result.numDeletedRows)
    if (ids.length < batch) break
  }

  for (;;) {
    if (signal?.aborted) return report
    const ids = (
      await db.selectFrom('servers').select('id').where('deleted', '=', 1).where('deleted_at', '<', cutoff).limit(batch).execute()
    ).map((r) => r.id)
    if (ids.length === 0) break
    await db.transaction().execute(async (tx) => {
      const actions = tx.selectFrom('instance_actions').select('id').where('server_id', 'in', ids)
      await tx.deleteFrom('instance_action_events').where('action_id', 'in', actions).execute()
      await tx.deleteFrom('instance_actions').where('server_id', 'in', ids).execute()
      await tx.deleteFrom('server_tags').where('server_id', 'in', ids).execute()
      await tx.deleteFrom('instance_faults').where('server_id', 'in', ids).execute()
      await tx.deleteFrom('server_group_members').where('server_id', 'in', ids).execute()
      const result = await tx.deleteFrom('servers').where('id', 'in', ids).where('deleted', '=', 1).executeTakeFirst()
      await tx.deleteFrom('server_view_revisions').where('server_id', 'in', ids).execute()
      report.servers += Number(result.numDeletedRows)
    })
    if (ids.length < batch) break
  }
  return report
}

export function purgeJob(store: Store, options: PurgeOptions & { intervalMs: number; onReport?: (report: PurgeReport) => void }): ClusterJob {
  return {
    name: 'purge',
    intervalMs: options.intervalMs,
    run: async (signal) => {
      const report = await purgeOldRows(store, options, signal)
      options.onReport?.(report)
    },
  }
}
