/**
 * The status rules of generic volume groups and group snapshots (Cinder's group API), in tables:
 *
 *   group:  available (made at once: a group is a record; pcc's backends have no consistency groups)
 *           creating → available | error          (create-from-src: its new volumes are being made)
 *           available | error → deleting → gone   (its volumes go first; error_deleting when one cannot)
 *   group snapshot:
 *           creating → available | error          (a snapshot of each member volume, by the snapshot machinery)
 *           available | error → deleting → gone   (its member snapshots go first)
 *
 * The transitional statuses end when the members' own work ends: the worker calls `settleGroup` /
 * `settleGroupSnapshot` after each member volume's or snapshot's task, and the last one to finish moves the
 * group on. An operation asked in a status its row does not allow is 400 (Cinder's InvalidGroup).
 */
import { badRequest, notFound } from '../../contracts/errors.js'
import type { Db } from '../storage/store.js'
import type { VolumeGroupTable } from '../storage/tables/volume-groups.js'

/** The group statuses each operation starts from. */
export const GROUP_MAY = {
  /** Renaming is always allowed; adding or removing volumes is not while the group changes. */
  'change its volumes': ['available'],
  /** A new volume created with `group_id`. */
  'take a new volume': ['available'],
  snapshot: ['available'],
  'be cloned': ['available'],
  delete: ['available', 'error'],
  /** Cinder: with delete-volumes a group goes whatever its status, unless work on it is under way. */
  'delete with its volumes': ['available', 'error', 'error_deleting', 'updating', 'in-use'],
} as const satisfies Record<string, readonly string[]>

export const GROUP_SNAPSHOT_MAY = {
  delete: ['available', 'error'],
  'be cloned': ['available'],
} as const satisfies Record<string, readonly string[]>

/** What an admin's reset_status may set (Cinder's GroupStatus and GroupSnapshotStatus, without `deleted`). */
export const GROUP_STATUSES = ['available', 'creating', 'deleting', 'error', 'error_deleting', 'updating', 'in-use'] as const
export const GROUP_SNAPSHOT_STATUSES = ['available', 'creating', 'deleting', 'error', 'error_deleting', 'updating'] as const

/** The statuses a volume may have to be added to a group, and to be removed from one (Cinder's). */
export const MEMBER_MAY = {
  join: ['available', 'in-use'],
  leave: ['available', 'in-use', 'error', 'error_deleting'],
  /** Deleted with the group: no work of its own under way. */
  'go with the group': ['available', 'error', 'error_deleting', 'error_extending', 'error_restoring', 'error_managing'],
} as const

/** 400 unless `status` is one the operation starts from. */
export function requireStatus(kind: 'Group' | 'Group snapshot', id: string, status: string, allowed: readonly string[], what: string): void {
  if (!allowed.includes(status)) throw badRequest(`Invalid ${kind.toLowerCase()}: ${kind} ${id} status must be ${allowed.join(' or ')} to ${what}, but current status is: ${status}.`)
}

const GONE = 'gone'

/**
 * How a transitional status moves on, from its members' statuses: undefined while members are still at work.
 * The same for groups (members: volumes) and group snapshots (members: snapshots).
 */
const SETTLE: Record<string, (members: string[]) => string | undefined> = {
  creating: (m) => (m.includes('error') ? 'error' : m.every((s) => s === 'available') ? 'available' : undefined),
  deleting: (m) => (m.length === 0 ? GONE : m.includes('error_deleting') ? 'error_deleting' : undefined),
}

/** A group visible to a caller (its project's, or any when it sees all projects); 404 otherwise. */
export async function findGroupRow(db: Db, caller: { projectId: string; visibility: string }, id: string): Promise<VolumeGroupTable> {
  const row = await db.selectFrom('volume_groups').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row || (caller.visibility !== 'all_projects' && row.project_id !== caller.projectId)) throw notFound(`Group ${id} could not be found.`)
  return row
}

/** Moves a creating or deleting group on once its volumes' work is over. */
export async function settleGroup(db: Db, groupId: string, now = Date.now()): Promise<void> {
  const group = await db.selectFrom('volume_groups').select('status').where('id', '=', groupId).executeTakeFirst()
  const rule = group && SETTLE[group.status]
  if (!rule) return
  const members = await db.selectFrom('volumes').select('status').where('group_id', '=', groupId).execute()
  const next = rule(members.map((m) => m.status))
  if (next === GONE) await db.deleteFrom('volume_groups').where('id', '=', groupId).where('status', '=', group.status).execute()
  else if (next) await db.updateTable('volume_groups').set({ status: next, updated_at: now }).where('id', '=', groupId).where('status', '=', group.status).execute()
}

/** Moves a creating or deleting group snapshot on once its member snapshots' work is over. */
export async function settleGroupSnapshot(db: Db, groupSnapshotId: string, now = Date.now()): Promise<void> {
  const gs = await db.selectFrom('volume_group_snapshots').select('status').where('id', '=', groupSnapshotId).executeTakeFirst()
  const rule = gs && SETTLE[gs.status]
  if (!rule) return
  const members = await db.selectFrom('volume_snapshots').select('status').where('group_snapshot_id', '=', groupSnapshotId).execute()
  const next = rule(members.map((m) => m.status))
  if (next === GONE) await db.deleteFrom('volume_group_snapshots').where('id', '=', groupSnapshotId).where('status', '=', gs.status).execute()
  else if (next) await db.updateTable('volume_group_snapshots').set({ status: next, updated_at: now }).where('id', '=', groupSnapshotId).where('status', '=', gs.status).execute()
}
