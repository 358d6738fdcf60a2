/**
 * Cinder's wire shapes of group types, groups and group snapshots. Fields that depend on the microversion are in
 * one table per resource, as view.ts has them for volumes.
 */
import type { GroupTypeRecord } from './group-types.js'
import type { GroupRecord } from './groups.js'
import type { GroupSnapshotRecord } from './group-snapshots.js'
import { cinderTime } from './model.js'
import { atLeast } from './microversion.js'
import { gated, type Gate, type ViewContext } from './view.js'

const NSTRING = { type: ['string', 'null'] }

export const GROUP_GATES: Record<string, Gate<GroupRecord>> = {
  group_snapshot_id: { since: '3.14', type: NSTRING, read: (g) => g.groupSnapshotId },
  source_group_id: { since: '3.14', type: NSTRING, read: (g) => g.sourceGroupId },
  // Group replication is not offered: every group's is disabled.
  replication_status: { since: '3.38', type: NSTRING, read: () => 'disabled' },
  project_id: { since: '3.58', type: { type: 'string' }, read: (g) => g.projectId },
}

export const GROUP_SNAPSHOT_GATES: Record<string, Gate<GroupSnapshotRecord>> = {
  project_id: { since: '3.58', type: { type: 'string' }, read: (g) => g.projectId },
}

/** A group type; its group specs are an operator's business (Cinder's group:access_group_types_specs). */
export function groupTypeView(t: GroupTypeRecord, isAdmin: boolean): Record<string, unknown> {
  return { id: t.id, name: t.name, description: t.description, is_public: t.isPublic, ...(isAdmin ? { group_specs: t.groupSpecs } : {}) }
}

export function groupSummary(g: GroupRecord): Record<string, unknown> {
  return { id: g.id, name: g.name }
}

/** A group as show and the detail list answer it; its volumes' ids from 3.25 when asked (`list_volume`). */
export function groupDetail(g: GroupRecord, ctx: ViewContext, listVolumes: boolean): Record<string, unknown> {
  return {
    id: g.id,
    status: g.status,
    availability_zone: g.availabilityZone,
    created_at: cinderTime(g.createdAt),
    name: g.name,
    description: g.description,
    group_type: g.groupTypeId,
    volume_types: g.volumeTypeIds,
    ...gated(GROUP_GATES, g, ctx),
    ...(listVolumes && atLeast(ctx.version, '3.25') ? { volumes: g.volumeIds } : {}),
  }
}

export function groupSnapshotSummary(g: GroupSnapshotRecord): Record<string, unknown> {
  return { id: g.id, name: g.name }
}

/** Create's answer: the summary with the group type, as Tempest's schema has it. */
export function groupSnapshotCreated(g: GroupSnapshotRecord): Record<string, unknown> {
  return { ...groupSnapshotSummary(g), group_type_id: g.groupTypeId }
}

export function groupSnapshotDetail(g: GroupSnapshotRecord, ctx: ViewContext): Record<string, unknown> {
  return {
    id: g.id,
    group_id: g.groupId,
    group_type_id: g.groupTypeId,
    status: g.status,
    created_at: cinderTime(g.createdAt),
    name: g.name,
    description: g.description,
    ...gated(GROUP_SNAPSHOT_GATES, g, ctx),
  }
}
