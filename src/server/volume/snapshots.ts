/**
 * Volume snapshots (simulated like volumes: a size, a status, no bytes). creating → available → deleting → gone,
 * through the same task queue. A snapshot of an in-use volume needs `force`, as in Cinder.
 */
import { randomUUID } from 'node:crypto'
import { badRequest, notFound } from '../../contracts/errors.js'
import type { Principal } from '../auth/principal.js'
import { authorize, type Visibility } from '../policy/rules.js'
import { volumePolicy } from '../policy/volume.policy.js'
import type { Db, Store } from '../storage/store.js'
import type { TaskQueue } from '../tasks/queue.js'
import { rowToSnapshot, type SnapshotRecord } from './model.js'
import { checkQuota, typedDelta } from './quotas.js'
import { page, type PageQuery, type SortKeys } from './listing.js'

/** Keys snapshots sort by (`display_name` is the old name of `name`, still accepted by Cinder). */
const SNAPSHOT_SORT_KEYS: SortKeys<SnapshotRecord> = {
  id: (s) => s.id,
  name: (s) => s.name,
  display_name: (s) => s.name,
  status: (s) => s.status,
  size: (s) => s.size,
  volume_id: (s) => s.volumeId,
  created_at: (s) => s.createdAt,
  updated_at: (s) => s.updatedAt,
}
import { callerOf, computeCaller, VOLUME_TASKS, type Caller, type VolumeService } from './service.js'

export interface SnapshotInput {
  volume_id: string
  name?: string | null
  description?: string | null
  force?: boolean
  metadata?: Record<string, string>
}

export class SnapshotService {
  private readonly now: () => number

  constructor(
    private readonly store: Store,
    private readonly queue: TaskQueue,
    private readonly volumes: VolumeService,
    private readonly options: { now?: () => number; wake?: () => void } = {},
  ) {
    this.now = options.now ?? Date.now
  }

  async find(caller: Caller, id: string, db: Db = this.store.db): Promise<SnapshotRecord> {
    const row = await db.selectFrom('volume_snapshots').selectAll().where('id', '=', id).executeTakeFirst()
    if (!row || (caller.visibility !== 'all_projects' && row.project_id !== caller.projectId)) throw notFound(`Snapshot ${id} could not be found.`)
    return rowToSnapshot(row)
  }

  async get(principal: Principal, id: string): Promise<SnapshotRecord> {
    const snapshot = await this.find(callerOf(principal), id)
    authorize(volumePolicy, 'snapshot:get', principal, { projectId: snapshot.projectId })
    return snapshot
  }

  async list(principal: Principal, query: { allTenants: boolean; name?: string; status?: string; volumeId?: string } & PageQuery): Promise<{ snapshots: SnapshotRecord[]; count: number }> {
    const caller = callerOf(principal)
    if (query.allTenants) authorize(volumePolicy, 'volume:all_tenants', principal)
    let q = this.store.db.selectFrom('volume_snapshots').selectAll()
    if (!query.allTenants) q = q.where('project_id', '=', caller.projectId)
    if (query.name !== undefined) q = q.where('name', '=', query.name)
    if (query.status !== undefined) q = q.where('status', '=', query.status)
    if (query.volumeId !== undefined) q = q.where('volume_id', '=', query.volumeId)
    const matching = (await q.execute()).map(rowToSnapshot)
    return { snapshots: page(matching, query, SNAPSHOT_SORT_KEYS, 'snapshot'), count: matching.length }
  }

  async create(principal: Principal, input: SnapshotInput): Promise<SnapshotRecord> {
    const caller = callerOf(principal)
    const id = await this.store.db.transaction().execute((tx) =>
      this.insertSnapshot(tx, caller, input, (projectId) => authorize(volumePolicy, 'snapshot:create', principal, { projectId })),
    )
    this.options.wake?.()
    return this.find(caller, id)
  }

  /**
   * A snapshot for compute (createImage of a volume-backed server: `force` for in-use volumes), inside the
   * caller's transaction, with the API's checks and quotas. Returns its id; it becomes available through the queue.
   */
  async createForCompute(tx: Db, request: { projectId: string; userId: string; visibility?: Visibility; volumeId: string; name: string; description?: string | null; force: boolean }): Promise<string> {
    const caller = computeCaller(request)
    const id = await this.insertSnapshot(tx, caller, { volume_id: request.volumeId, name: request.name, description: request.description ?? null, force: request.force }, () => {})
    this.options.wake?.()
    return id
  }

  /**
   * A member snapshot of a group snapshot (group-snapshots.ts), inside the caller's transaction, with the API's
   * checks and quotas (an in-use member is snapshotted as with force, as Cinder does for groups). It is made by
   * the same task as any snapshot; the group snapshot settles when its last member is done.
   */
  async createForGroup(tx: Db, caller: Caller, input: { volumeId: string; name: string | null; description: string | null; groupSnapshotId: string }): Promise<string> {
    return this.insertSnapshot(tx, caller, { volume_id: input.volumeId, name: input.name, description: input.description, force: true }, () => {}, input.groupSnapshotId)
  }

  private async insertSnapshot(tx: Db, caller: Caller, input: SnapshotInput, authorizeFor: (projectId: string) => void, groupSnapshotId: string | null = null): Promise<string> {
    const volume = await this.volumes.find(caller, input.volume_id, tx)
    authorizeFor(volume.projectId)
    const ok = volume.status === 'available' || (volume.status === 'in-use' && input.force === true)
    if (!ok) {
      throw badRequest(
        volume.status === 'in-use'
          ? `Invalid volume: Volume ${volume.id} is in-use: pass force=true to snapshot an attached volume.`
          : `Invalid volume: Volume ${volume.id} status must be available, but it is ${volume.status}.`,
      )
    }
    await checkQuota(tx, this.store.capabilities, volume.projectId, typedDelta(volume.volumeTypeName, { snapshots: 1, gigabytes: volume.size }))
    const snapshotId = randomUUID()
    const now = this.now()
    await tx
      .insertInto('volume_snapshots')
      .values({
        id: snapshotId,
        project_id: volume.projectId,
        user_id: caller.userId,
        volume_id: volume.id,
        name: input.name ?? null,
        description: input.description ?? null,
        status: 'creating',
        size: volume.size,
        metadata: JSON.stringify(input.metadata ?? {}),
        created_at: now,
        updated_at: now,
        group_snapshot_id: groupSnapshotId,
      })
      .execute()
    await this.queue.enqueue({ kind: VOLUME_TASKS.snapshotCreate, subjectId: snapshotId, payload: { id: snapshotId }, runAfter: now + this.volumes.workDelayMs }, tx)
    return snapshotId
  }

  async update(principal: Principal, id: string, changes: { name?: string | null; description?: string | null }): Promise<SnapshotRecord> {
    const caller = callerOf(principal)
    return this.store.db.transaction().execute(async (tx) => {
      const snapshot = await this.find(caller, id, tx)
      authorize(volumePolicy, 'snapshot:update', principal, { projectId: snapshot.projectId })
      await tx
        .updateTable('volume_snapshots')
        .set({
          ...(changes.name !== undefined ? { name: changes.name } : {}),
          ...(changes.description !== undefined ? { description: changes.description } : {}),
          updated_at: this.now(),
        })
        .where('id', '=', id)
        .execute()
      return this.find(caller, id, tx)
    })
  }

  async setMetadata(principal: Principal, id: string, metadata: Record<string, string>, replace: boolean): Promise<Record<string, string>> {
    const caller = callerOf(principal)
    return this.store.db.transaction().execute(async (tx) => {
      const snapshot = await this.find(caller, id, tx)
      authorize(volumePolicy, 'snapshot:update', principal, { projectId: snapshot.projectId })
      const next = replace ? { ...metadata } : { ...snapshot.metadata, ...metadata }
      await tx.updateTable('volume_snapshots').set({ metadata: JSON.stringify(next), updated_at: this.now() }).where('id', '=', id).execute()
      return next
    })
  }

  async deleteMetadataKey(principal: Principal, id: string, key: string): Promise<void> {
    const caller = callerOf(principal)
    await this.store.db.transaction().execute(async (tx) => {
      const snapshot = await this.find(caller, id, tx)
      authorize(volumePolicy, 'snapshot:update', principal, { projectId: snapshot.projectId })
      if (!(key in snapshot.metadata)) throw notFound(`Metadata item was not found: ${key}`)
      const next = { ...snapshot.metadata }
      delete next[key]
      await tx.updateTable('volume_snapshots').set({ metadata: JSON.stringify(next), updated_at: this.now() }).where('id', '=', id).execute()
    })
  }

  /** Deletes an available or errored snapshot; `force` (admins, os-force_delete) whatever its status. */
  async delete(principal: Principal, id: string, force = false): Promise<void> {
    const caller = callerOf(principal)
    await this.store.db.transaction().execute(async (tx) => {
      const snapshot = await this.find(caller, id, tx)
      authorize(volumePolicy, force ? 'volume:reset_status' : 'snapshot:delete', principal, { projectId: snapshot.projectId })
      if (snapshot.status === 'deleting' && !force) return
      if (!force && !['available', 'error'].includes(snapshot.status)) throw badRequest(`Invalid snapshot: Snapshot status must be available or error, but it is ${snapshot.status}.`)
      // Cinder: a group snapshot's members go with it (DELETE /group_snapshots/{id}), not one by one.
      if (!force && snapshot.groupSnapshotId !== null) throw badRequest(`Invalid snapshot: Snapshot ${id} is part of group snapshot ${snapshot.groupSnapshotId}; delete the group snapshot.`)
      await tx.updateTable('volume_snapshots').set({ status: 'deleting', updated_at: this.now() }).where('id', '=', id).execute()
      await this.queue.enqueue({ kind: VOLUME_TASKS.snapshotDelete, subjectId: id, payload: { id }, runAfter: this.now() + this.volumes.workDelayMs }, tx)
    })
    this.options.wake?.()
  }

  /** os-reset_status for admins: sets the status the record shows, nothing else (Cinder's rule). */
  /**
   * os-update_snapshot_status: whoever makes a snapshot outside the backend (Nova-assisted snapshots) reports its
   * status and progress. Only Cinder's transitions; `available` only once no backend work for it is pending, so a
   * snapshot never claims bytes the backend has not made.
   */
  async updateStatus(principal: Principal, id: string, status: string, progress: string | undefined): Promise<void> {
    await this.store.db.transaction().execute(async (tx) => {
      const snapshot = await this.find(callerOf(principal), id, tx)
      authorize(volumePolicy, 'snapshot:update_status', principal, { projectId: snapshot.projectId })
      const allowed = UPDATE_STATUS_TRANSITIONS[snapshot.status]
      if (!allowed) throw badRequest(`Invalid snapshot: Snapshot status ${snapshot.status} not allowed for update_snapshot_status.`)
      if (!allowed.includes(status)) throw badRequest(`Invalid snapshot: Provided snapshot status ${status} not allowed for snapshot with status ${snapshot.status}.`)
      if (status === 'available') {
        const pending = await tx.selectFrom('tasks').select('id').where('subject_id', '=', id).where('kind', '=', VOLUME_TASKS.snapshotCreate).where('status', 'in', ['queued', 'running']).executeTakeFirst()
        if (pending) throw badRequest(`Invalid snapshot: Snapshot ${id} is still being made by its backend.`)
      }
      await tx
        .updateTable('volume_snapshots')
        .set({ status, ...(progress !== undefined ? { progress } : {}), updated_at: this.now() })
        .where('id', '=', id)
        .where('status', '=', snapshot.status)
        .execute()
    })
  }

  async resetStatus(principal: Principal, id: string, status: string): Promise<void> {
    authorize(volumePolicy, 'volume:reset_status', principal)
    if (!SNAPSHOT_STATUSES.includes(status)) throw badRequest(`Invalid status '${status}': expected one of ${SNAPSHOT_STATUSES.join(', ')}.`)
    await this.store.db.transaction().execute(async (tx) => {
      await this.find(callerOf(principal), id, tx)
      await tx.updateTable('volume_snapshots').set({ status, updated_at: this.now() }).where('id', '=', id).execute()
    })
  }
}

const SNAPSHOT_STATUSES = ['available', 'error', 'creating', 'deleting', 'error_deleting']

/** os-update_snapshot_status: the statuses a snapshot's creator may move it to, by its current status (Cinder's). */
const UPDATE_STATUS_TRANSITIONS: Record<string, string[]> = {
  creating: ['creating', 'available', 'error'],
  deleting: ['deleting', 'error_deleting'],
}
