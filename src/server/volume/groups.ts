/**
 * Generic volume groups (Cinder 3.13+; docs/block-storage.md, "Groups"): a project's volumes of the group's volume
 * types, kept together. A volume joins when created with `group_id` or added by an update; the group is deleted
 * with its volumes (`delete-volumes`); create-from-src makes a new group whose volumes are made from another
 * group's volumes (clones) or from a group snapshot's member snapshots, through the volume create path, so the
 * bytes are the sources'. Statuses and what each operation needs: group-status.ts.
 */
import { randomUUID } from 'node:crypto'
import { badRequest } from '../../contracts/errors.js'
import type { Principal } from '../auth/principal.js'
import { allows, authorize } from '../policy/rules.js'
import { volumePolicy } from '../policy/volume.policy.js'
import type { Db, Store } from '../storage/store.js'
import type { VolumeGroupTable } from '../storage/tables/volume-groups.js'
import type { TaskQueue } from '../tasks/queue.js'
import { findGroupType } from './group-types.js'
import { findGroupRow, GROUP_MAY, GROUP_SNAPSHOT_MAY, GROUP_STATUSES, MEMBER_MAY, requireStatus } from './group-status.js'
import { page, type PageQuery, type SortKeys } from './listing.js'
import { AVAILABILITY_ZONES } from './model.js'
import { checkQuota } from './quotas.js'
import { resolveUsableType } from './repo.js'
import { callerOf, VOLUME_TASKS, type Caller, type VolumeService } from './service.js'
import { findGroupSnapshotRow } from './group-snapshots.js'

export interface GroupRecord {
  id: string
  projectId: string
  userId: string
  name: string | null
  description: string | null
  status: string
  groupTypeId: string
  volumeTypeIds: string[]
  availabilityZone: string
  groupSnapshotId: string | null
  sourceGroupId: string | null
  createdAt: number
  updatedAt: number
  /** The member volumes' ids (shown from 3.25 with `list_volume`). */
  volumeIds: string[]
}

export interface CreateGroupInput {
  name: string | null
  description: string | null
  groupType: string
  volumeTypes: string[]
  availabilityZone: string | null
}

export interface CreateGroupFromSourceInput {
  name: string | null
  description: string | null
  groupSnapshotId: string | null
  sourceGroupId: string | null
}

const GROUP_SORT_KEYS: SortKeys<GroupRecord> = {
  id: (g) => g.id,
  name: (g) => g.name,
  status: (g) => g.status,
  created_at: (g) => g.createdAt,
  updated_at: (g) => g.updatedAt,
  availability_zone: (g) => g.availabilityZone,
}

/** Volume ids in an update: Cinder takes them comma-separated in one string. */
export function volumeIdList(value: string | null | undefined): string[] {
  return [...new Set((value ?? '').split(',').map((s) => s.trim()).filter((s) => s !== ''))]
}

async function hydrateGroups(db: Db, rows: VolumeGroupTable[]): Promise<GroupRecord[]> {
  if (rows.length === 0) return []
  const members = await db.selectFrom('volumes').select(['id', 'group_id', 'created_at']).where('group_id', 'in', rows.map((r) => r.id)).orderBy('created_at').execute()
  return rows.map((r) => ({
    id: r.id,
    projectId: r.project_id,
    userId: r.user_id,
    name: r.name,
    description: r.description,
    status: r.status,
    groupTypeId: r.group_type_id,
    volumeTypeIds: JSON.parse(r.volume_type_ids) as string[],
    availabilityZone: r.availability_zone,
    groupSnapshotId: r.group_snapshot_id,
    sourceGroupId: r.source_group_id,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    volumeIds: members.filter((m) => m.group_id === r.id).map((m) => m.id),
  }))
}

export class GroupService {
  private readonly now: () => number

  constructor(
    private readonly store: Store,
    private readonly queue: TaskQueue,
    private readonly volumes: VolumeService,
    private readonly options: { now?: () => number; wake?: () => void } = {},
  ) {
    this.now = options.now ?? Date.now
  }

  private async load(db: Db, caller: Caller, id: string): Promise<GroupRecord> {
    return (await hydrateGroups(db, [await findGroupRow(db, caller, id)]))[0]
  }

  async get(principal: Principal, id: string): Promise<GroupRecord> {
    const group = await this.load(this.store.db, callerOf(principal), id)
    authorize(volumePolicy, 'group:get', principal, { projectId: group.projectId })
    return group
  }

  async list(principal: Principal, query: { allTenants: boolean } & PageQuery): Promise<GroupRecord[]> {
    const caller = callerOf(principal)
    authorize(volumePolicy, 'group:get_all', principal)
    if (query.allTenants) authorize(volumePolicy, 'volume:all_tenants', principal)
    let q = this.store.db.selectFrom('volume_groups').selectAll()
    if (!query.allTenants) q = q.where('project_id', '=', caller.projectId)
    return page(await hydrateGroups(this.store.db, await q.execute()), query, GROUP_SORT_KEYS, 'group')
  }

  /** A new, empty group of a group type and its volume types; it counts in the project's `groups` quota. */
  async create(principal: Principal, input: CreateGroupInput): Promise<GroupRecord> {
    const caller = callerOf(principal)
    authorize(volumePolicy, 'group:create', principal, { projectId: caller.projectId })
    if (input.volumeTypes.length === 0) throw badRequest(`Invalid input received: volume_types must be provided to create group ${input.name ?? ''}.`)
    const az = input.availabilityZone ?? AVAILABILITY_ZONES[0]
    if (!(AVAILABILITY_ZONES as readonly string[]).includes(az)) throw badRequest(`Invalid input received: Availability zone '${az}' is invalid.`)
    const id = await this.store.db.transaction().execute(async (tx) => {
      const groupType = await findGroupType(tx, input.groupType, allows(volumePolicy, 'group_type:private:see', principal))
      const access = { projectId: caller.projectId, seesPrivate: caller.seesPrivateTypes === true }
      const typeIds: string[] = []
      for (const ref of input.volumeTypes) {
        const type = await resolveUsableType(tx, ref, access)
        if (!typeIds.includes(type.id)) typeIds.push(type.id)
      }
      // Nothing to make on a backend: pcc's backends have no consistency groups, so a group is available at once.
      return this.insertGroup(tx, caller, { name: input.name, description: input.description, groupTypeId: groupType.id, volumeTypeIds: typeIds, availabilityZone: az, status: 'available' })
    })
    return this.load(this.store.db, caller, id)
  }

  private async insertGroup(
    tx: Db,
    caller: Caller,
    g: { name: string | null; description: string | null; groupTypeId: string; volumeTypeIds: string[]; availabilityZone: string; status: string; groupSnapshotId?: string; sourceGroupId?: string },
  ): Promise<string> {
    await checkQuota(tx, this.store.capabilities, caller.projectId, { groups: 1 })
    const id = randomUUID()
    const now = this.now()
    await tx
      .insertInto('volume_groups')
      .values({
        id,
        project_id: caller.projectId,
        user_id: caller.userId,
        name: g.name,
        description: g.description,
        status: g.status,
        group_type_id: g.groupTypeId,
        volume_type_ids: JSON.stringify(g.volumeTypeIds),
        availability_zone: g.availabilityZone,
        group_snapshot_id: g.groupSnapshotId ?? null,
        source_group_id: g.sourceGroupId ?? null,
        created_at: now,
        updated_at: now,
      })
      .execute()
    return id
  }

  /**
   * create-from-src (3.14+): a new group like the source (its group type and volume types) whose volumes are made
   * from the source group's volumes or the group snapshot's member snapshots. The group is `creating` until the
   * last of them is made (group-status.ts). An empty source is refused, as Cinder does.
   */
  async createFromSource(principal: Principal, input: CreateGroupFromSourceInput): Promise<GroupRecord> {
    const caller = callerOf(principal)
    authorize(volumePolicy, 'group:create', principal, { projectId: caller.projectId })
    if ((input.groupSnapshotId === null) === (input.sourceGroupId === null)) {
      throw badRequest(`Invalid input received: Either 'group_snapshot_id' or 'source_group_id' must be provided to create group ${input.name ?? ''} from source, not both.`)
    }
    const id = await this.store.db.transaction().execute(async (tx) => {
      const { like, sources } = input.groupSnapshotId !== null ? await this.snapshotSources(tx, caller, input.groupSnapshotId) : await this.groupSources(tx, caller, input.sourceGroupId!)
      const groupId = await this.insertGroup(tx, caller, {
        name: input.name,
        description: input.description,
        groupTypeId: like.group_type_id,
        volumeTypeIds: JSON.parse(like.volume_type_ids) as string[],
        availabilityZone: like.availability_zone,
        status: 'creating',
        groupSnapshotId: input.groupSnapshotId ?? undefined,
        sourceGroupId: input.sourceGroupId ?? undefined,
      })
      const joined = { id: groupId, volumeTypeIds: JSON.parse(like.volume_type_ids) as string[] }
      for (const source of sources) await this.volumes.createInGroup(tx, caller, { ...source, availability_zone: like.availability_zone }, joined)
      return groupId
    })
    this.options.wake?.()
    return this.load(this.store.db, caller, id)
  }

  /** A group snapshot's group (what the new group is like) and a volume from each of its member snapshots. */
  private async snapshotSources(tx: Db, caller: Caller, groupSnapshotId: string) {
    const gs = await findGroupSnapshotRow(tx, caller, groupSnapshotId)
    requireStatus('Group snapshot', gs.id, gs.status, GROUP_SNAPSHOT_MAY['be cloned'], 'create a group from it')
    const like = await tx.selectFrom('volume_groups').selectAll().where('id', '=', gs.group_id).executeTakeFirst()
    if (!like) throw badRequest(`Invalid group snapshot: the group of group snapshot ${gs.id} is gone.`)
    const snaps = await tx.selectFrom('volume_snapshots').select(['id', 'size']).where('group_snapshot_id', '=', gs.id).orderBy('created_at').execute()
    if (snaps.length === 0) throw badRequest(`Invalid group snapshot: Group snapshot ${gs.id} is empty. No group will be created.`)
    return { like, sources: snaps.map((s) => ({ snapshot_id: s.id, size: s.size })) }
  }

  /** The source group and a clone of each of its volumes. */
  private async groupSources(tx: Db, caller: Caller, sourceGroupId: string) {
    const like = await findGroupRow(tx, caller, sourceGroupId)
    requireStatus('Group', like.id, like.status, GROUP_MAY['be cloned'], 'create a group from it')
    const vols = await tx.selectFrom('volumes').select(['id', 'size']).where('group_id', '=', like.id).orderBy('created_at').execute()
    if (vols.length === 0) throw badRequest(`Invalid group: Source group ${like.id} is empty. No group will be created.`)
    return { like, sources: vols.map((v) => ({ source_volid: v.id, size: v.size })) }
  }

  /**
   * Renames the group and adds or removes volumes (comma-separated ids, Cinder's form). A volume joins if it is
   * the project's, in no group, available or in-use and of one of the group's volume types; every change is
   * checked before any is made.
   */
  async update(principal: Principal, id: string, input: { name?: string | null; description?: string | null; addVolumes: string[]; removeVolumes: string[] }): Promise<void> {
    const caller = callerOf(principal)
    if (input.name === undefined && input.description === undefined && input.addVolumes.length === 0 && input.removeVolumes.length === 0) {
      throw badRequest('Name, description, add_volumes, and remove_volumes can not be all empty in the request body.')
    }
    const both = input.addVolumes.find((v) => input.removeVolumes.includes(v))
    if (both) throw badRequest(`Invalid volume: Volume ${both} cannot be both added to and removed from group ${id}.`)
    await this.store.db.transaction().execute(async (tx) => {
      const group = await this.load(tx, caller, id)
      authorize(volumePolicy, 'group:update', principal, { projectId: group.projectId })
      if (input.addVolumes.length > 0 || input.removeVolumes.length > 0) requireStatus('Group', id, group.status, GROUP_MAY['change its volumes'], 'change its volumes')
      for (const volumeId of input.addVolumes) await this.checkJoin(tx, group, volumeId)
      for (const volumeId of input.removeVolumes) await this.checkLeave(tx, group, volumeId)
      const now = this.now()
      if (input.addVolumes.length > 0) await tx.updateTable('volumes').set({ group_id: id, updated_at: now }).where('id', 'in', input.addVolumes).where('group_id', 'is', null).execute()
      if (input.removeVolumes.length > 0) await tx.updateTable('volumes').set({ group_id: null, updated_at: now }).where('id', 'in', input.removeVolumes).where('group_id', '=', id).execute()
      await tx
        .updateTable('volume_groups')
        .set({ ...(input.name !== undefined ? { name: input.name } : {}), ...(input.description !== undefined ? { description: input.description } : {}), updated_at: now })
        .where('id', '=', id)
        .execute()
    })
  }

  private async checkJoin(tx: Db, group: GroupRecord, volumeId: string): Promise<void> {
    const why = (reason: string) => badRequest(`Invalid volume: Cannot add volume ${volumeId} to group ${group.id} because ${reason}.`)
    const v = await tx.selectFrom('volumes').select(['project_id', 'status', 'group_id', 'volume_type_id']).where('id', '=', volumeId).executeTakeFirst()
    if (!v || v.project_id !== group.projectId) throw why('volume cannot be found')
    if (v.group_id === group.id) throw why('it is already in the group')
    if (v.group_id !== null) throw why(`it is already in group ${v.group_id}`)
    if (!(MEMBER_MAY.join as readonly string[]).includes(v.status)) throw why(`volume is in an invalid state: ${v.status}. Valid states are: ${MEMBER_MAY.join.join(', ')}`)
    if (!group.volumeTypeIds.includes(v.volume_type_id)) throw why(`volume type ${v.volume_type_id} is not supported by the group`)
  }

  private async checkLeave(tx: Db, group: GroupRecord, volumeId: string): Promise<void> {
    const why = (reason: string) => badRequest(`Invalid volume: Cannot remove volume ${volumeId} from group ${group.id} because ${reason}.`)
    if (!group.volumeIds.includes(volumeId)) throw why('it is not in the group')
    const v = await tx.selectFrom('volumes').select('status').where('id', '=', volumeId).executeTakeFirstOrThrow()
    if (!(MEMBER_MAY.leave as readonly string[]).includes(v.status)) throw why(`volume is in an invalid state: ${v.status}. Valid states are: ${MEMBER_MAY.leave.join(', ')}`)
  }

  /**
   * Deletes the group; a group with volumes only with `deleteVolumes`, which deletes them (the volume delete
   * task each), none of them attached or with snapshots of its own. A group with group snapshots stays.
   */
  async delete(principal: Principal, id: string, deleteVolumes: boolean): Promise<void> {
    const caller = callerOf(principal)
    await this.store.db.transaction().execute(async (tx) => {
      const group = await this.load(tx, caller, id)
      authorize(volumePolicy, 'group:delete', principal, { projectId: group.projectId })
      if (group.status === 'deleting') return
      requireStatus('Group', id, group.status, deleteVolumes ? GROUP_MAY['delete with its volumes'] : GROUP_MAY.delete, 'be deleted')
      if (await tx.selectFrom('volume_group_snapshots').select('id').where('group_id', '=', id).executeTakeFirst()) throw badRequest(`Invalid group: Group ${id} has existing group snapshots.`)
      if (group.volumeIds.length > 0 && !deleteVolumes) throw badRequest(`Invalid group: Group ${id} still contains volumes. The delete-volumes flag is required to delete it.`)
      if (group.volumeIds.length === 0) {
        await tx.deleteFrom('volume_groups').where('id', '=', id).execute()
        return
      }
      if (await tx.selectFrom('volume_attachments').select('id').where('volume_id', 'in', group.volumeIds).executeTakeFirst()) throw badRequest(`Invalid group: Volume in group ${id} is attached. Need to detach first.`)
      const busy = await tx.selectFrom('volumes').select(['id', 'status']).where('group_id', '=', id).where('status', 'not in', MEMBER_MAY['go with the group']).executeTakeFirst()
      if (busy) throw badRequest(`Invalid group: Volume ${busy.id} of group ${id} is ${busy.status}; it can go with the group when it is ${MEMBER_MAY['go with the group'].join(' or ')}.`)
      if (await tx.selectFrom('volume_snapshots').select('id').where('volume_id', 'in', group.volumeIds).executeTakeFirst()) throw badRequest(`Invalid group: Volume in group ${id} still has dependent snapshots.`)
      const now = this.now()
      await tx.updateTable('volume_groups').set({ status: 'deleting', updated_at: now }).where('id', '=', id).execute()
      await tx.updateTable('volumes').set({ status: 'deleting', updated_at: now }).where('group_id', '=', id).execute()
      await tx.deleteFrom('volume_transfers').where('volume_id', 'in', group.volumeIds).execute()
      for (const volumeId of group.volumeIds) await this.queue.enqueue({ kind: VOLUME_TASKS.delete, subjectId: volumeId, payload: { id: volumeId }, runAfter: now + this.volumes.workDelayMs }, tx)
    })
    this.options.wake?.()
  }

  /** reset_status (3.20, admins): sets the status the record shows, nothing else (Cinder's rule). */
  async resetStatus(principal: Principal, id: string, status: string): Promise<void> {
    authorize(volumePolicy, 'group:reset_status', principal)
    if (!(GROUP_STATUSES as readonly string[]).includes(status)) throw badRequest(`Invalid input received: Invalid group status '${status}': expected one of ${GROUP_STATUSES.join(', ')}.`)
    await this.store.db.transaction().execute(async (tx) => {
      await findGroupRow(tx, callerOf(principal), id)
      await tx.updateTable('volume_groups').set({ status, updated_at: this.now() }).where('id', '=', id).execute()
    })
  }
}
