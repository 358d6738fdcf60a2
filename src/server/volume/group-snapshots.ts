/**
 * Group snapshots (Cinder 3.14+): a snapshot of every volume of a group, taken together. Each member is an
 * ordinary volume snapshot (snapshots.ts, the same task and bytes) carrying `group_snapshot_id`; the group snapshot
 * is `creating` until the last member is made and goes when its last member is deleted (group-status.ts). Its
 * members are deleted with it, not one by one.
 */
import { randomUUID } from 'node:crypto'
import { badRequest, notFound } from '../../contracts/errors.js'
import type { Principal } from '../auth/principal.js'
import { authorize } from '../policy/rules.js'
import { volumePolicy } from '../policy/volume.policy.js'
import type { Db, Store } from '../storage/store.js'
import type { VolumeGroupSnapshotTable } from '../storage/tables/volume-groups.js'
import type { TaskQueue } from '../tasks/queue.js'
import { findGroupRow, GROUP_MAY, GROUP_SNAPSHOT_MAY, GROUP_SNAPSHOT_STATUSES, requireStatus } from './group-status.js'
import { page, type PageQuery, type SortKeys } from './listing.js'
import { callerOf, VOLUME_TASKS, type Caller } from './service.js'
import type { SnapshotService } from './snapshots.js'

export interface GroupSnapshotRecord {
  id: string
  projectId: string
  groupId: string
  groupTypeId: string
  name: string | null
  description: string | null
  status: string
  createdAt: number
  updatedAt: number
}

function rowToGroupSnapshot(row: VolumeGroupSnapshotTable): GroupSnapshotRecord {
  return {
    id: row.id,
    projectId: row.project_id,
    groupId: row.group_id,
    groupTypeId: row.group_type_id,
    name: row.name,
    description: row.description,
    status: row.status,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  }
}

const GROUP_SNAPSHOT_SORT_KEYS: SortKeys<GroupSnapshotRecord> = {
  id: (g) => g.id,
  name: (g) => g.name,
  status: (g) => g.status,
  group_id: (g) => g.groupId,
  created_at: (g) => g.createdAt,
  updated_at: (g) => g.updatedAt,
}

/** A group snapshot visible to a caller (its project's, or any when it sees all projects); 404 otherwise. */
export async function findGroupSnapshotRow(db: Db, caller: { projectId: string; visibility: string }, id: string): Promise<VolumeGroupSnapshotTable> {
  const row = await db.selectFrom('volume_group_snapshots').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row || (caller.visibility !== 'all_projects' && row.project_id !== caller.projectId)) throw notFound(`GroupSnapshot ${id} could not be found.`)
  return row
}

export class GroupSnapshotService {
  private readonly now: () => number

  constructor(
    private readonly store: Store,
    private readonly queue: TaskQueue,
    private readonly snapshots: SnapshotService,
    private readonly options: { now?: () => number; wake?: () => void; workDelayMs?: number } = {},
  ) {
    this.now = options.now ?? Date.now
  }

  private async find(db: Db, caller: Caller, id: string): Promise<GroupSnapshotRecord> {
    return rowToGroupSnapshot(await findGroupSnapshotRow(db, caller, id))
  }

  async get(principal: Principal, id: string): Promise<GroupSnapshotRecord> {
    const gs = await this.find(this.store.db, callerOf(principal), id)
    authorize(volumePolicy, 'group_snapshot:get', principal, { projectId: gs.projectId })
    return gs
  }

  async list(principal: Principal, query: { allTenants: boolean; groupId?: string } & PageQuery): Promise<GroupSnapshotRecord[]> {
    const caller = callerOf(principal)
    authorize(volumePolicy, 'group_snapshot:get_all', principal)
    if (query.allTenants) authorize(volumePolicy, 'volume:all_tenants', principal)
    let q = this.store.db.selectFrom('volume_group_snapshots').selectAll()
    if (!query.allTenants) q = q.where('project_id', '=', caller.projectId)
    if (query.groupId !== undefined) q = q.where('group_id', '=', query.groupId)
    return page((await q.execute()).map(rowToGroupSnapshot), query, GROUP_SNAPSHOT_SORT_KEYS, 'group snapshot')
  }

  /** Snapshots every volume of an available group (each checked and counted in the quotas as a snapshot). */
  async create(principal: Principal, input: { groupId: string; name: string | null; description: string | null }): Promise<GroupSnapshotRecord> {
    const caller = callerOf(principal)
    const id = await this.store.db.transaction().execute(async (tx) => {
      const group = await findGroupRow(tx, caller, input.groupId)
      authorize(volumePolicy, 'group_snapshot:create', principal, { projectId: group.project_id })
      requireStatus('Group', group.id, group.status, GROUP_MAY.snapshot, 'be snapshotted')
      const members = await tx.selectFrom('volumes').select('id').where('group_id', '=', group.id).orderBy('created_at').execute()
      const gsId = randomUUID()
      const now = this.now()
      // A group without volumes has nothing to wait for: its snapshot is available at once.
      await tx
        .insertInto('volume_group_snapshots')
        .values({
          id: gsId,
          project_id: group.project_id,
          user_id: caller.userId,
          group_id: group.id,
          group_type_id: group.group_type_id,
          name: input.name,
          description: input.description,
          status: members.length > 0 ? 'creating' : 'available',
          created_at: now,
          updated_at: now,
        })
        .execute()
      // Members take the group snapshot's name and description, as Cinder's do.
      for (const m of members) await this.snapshots.createForGroup(tx, caller, { volumeId: m.id, name: input.name, description: input.description, groupSnapshotId: gsId })
      return gsId
    })
    this.options.wake?.()
    return this.find(this.store.db, caller, id)
  }

  /** Deletes an available or errored group snapshot with its member snapshots (their delete task each). */
  async delete(principal: Principal, id: string): Promise<void> {
    const caller = callerOf(principal)
    await this.store.db.transaction().execute(async (tx) => {
      const gs = await this.find(tx, caller, id)
      authorize(volumePolicy, 'group_snapshot:delete', principal, { projectId: gs.projectId })
      if (gs.status === 'deleting') return
      requireStatus('Group snapshot', id, gs.status, GROUP_SNAPSHOT_MAY.delete, 'be deleted')
      const members = await tx.selectFrom('volume_snapshots').select(['id', 'status']).where('group_snapshot_id', '=', id).execute()
      const busy = members.find((m) => m.status === 'creating')
      if (busy) throw badRequest(`Invalid group snapshot: Its snapshot ${busy.id} is still being made; delete the group snapshot when it is done.`)
      if (members.length === 0) {
        await tx.deleteFrom('volume_group_snapshots').where('id', '=', id).execute()
        return
      }
      const now = this.now()
      await tx.updateTable('volume_group_snapshots').set({ status: 'deleting', updated_at: now }).where('id', '=', id).execute()
      await tx.updateTable('volume_snapshots').set({ status: 'deleting', updated_at: now }).where('group_snapshot_id', '=', id).execute()
      for (const m of members) await this.queue.enqueue({ kind: VOLUME_TASKS.snapshotDelete, subjectId: m.id, payload: { id: m.id }, runAfter: now + (this.options.workDelayMs ?? 0) }, tx)
    })
    this.options.wake?.()
  }

  /** reset_status (3.19, admins): sets the status the record shows, nothing else (Cinder's rule). */
  async resetStatus(principal: Principal, id: string, status: string): Promise<void> {
    authorize(volumePolicy, 'group_snapshot:reset_status', principal)
    if (!(GROUP_SNAPSHOT_STATUSES as readonly string[]).includes(status)) {
      throw badRequest(`Invalid input received: Invalid group snapshot status '${status}': expected one of ${GROUP_SNAPSHOT_STATUSES.join(', ')}.`)
    }
    await this.store.db.transaction().execute(async (tx) => {
      await this.find(tx, callerOf(principal), id)
      await tx.updateTable('volume_group_snapshots').set({ status, updated_at: this.now() }).where('id', '=', id).execute()
    })
  }
}
