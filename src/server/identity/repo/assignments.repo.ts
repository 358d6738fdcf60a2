/**
 * Role assignments (grants) of a user or group on a project, a domain or the system, and their listing with
 * Keystone's filters. `effective` lists what tokens carry: group grants expanded to each member and implied
 * roles added (each entry says through which membership or prior role it came).
 */
import { notFound } from '../../../contracts/errors.js'
import type { ActorType, TargetType } from '../../storage/tables/identity.js'
import type { Db } from '../../storage/store.js'
import { closure, listImplications } from './roles.repo.js'

export interface Grant {
  actorType: ActorType
  actorId: string
  targetType: TargetType
  /** Project or domain id; 'all' for the system. */
  targetId: string
  roleId: string
}

export async function hasGrant(db: Db, g: Grant): Promise<boolean> {
  const row = await db
    .selectFrom('role_assignments')
    .select('role_id')
    .where('actor_type', '=', g.actorType)
    .where('actor_id', '=', g.actorId)
    .where('target_type', '=', g.targetType)
    .where('target_id', '=', g.targetId)
    .where('role_id', '=', g.roleId)
    .where('inherited', '=', 0)
    .executeTakeFirst()
  return !!row
}

export async function addGrant(db: Db, g: Grant): Promise<void> {
  await db
    .insertInto('role_assignments')
    .values({ actor_type: g.actorType, actor_id: g.actorId, target_type: g.targetType, target_id: g.targetId, role_id: g.roleId, inherited: 0 })
    .onConflict((oc) => oc.doNothing())
    .execute()
}

export async function removeGrant(db: Db, g: Grant): Promise<void> {
  if (!(await hasGrant(db, g))) throw notFound(`Could not find role assignment with role: ${g.roleId}, ${g.actorType}: ${g.actorId}, ${g.targetType}: ${g.targetId}.`)
  await db
    .deleteFrom('role_assignments')
    .where('actor_type', '=', g.actorType)
    .where('actor_id', '=', g.actorId)
    .where('target_type', '=', g.targetType)
    .where('target_id', '=', g.targetId)
    .where('role_id', '=', g.roleId)
    .where('inherited', '=', 0)
    .execute()
}

/** Role ids granted directly to one actor on one target (GET /projects/{p}/users/{u}/roles). */
export async function grantedRoleIds(db: Db, actorType: ActorType, actorId: string, targetType: TargetType, targetId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('role_assignments')
    .select('role_id')
    .where('actor_type', '=', actorType)
    .where('actor_id', '=', actorId)
    .where('target_type', '=', targetType)
    .where('target_id', '=', targetId)
    .execute()
  return [...new Set(rows.map((r) => r.role_id))]
}

export interface AssignmentQuery {
  userId?: string
  groupId?: string
  roleId?: string
  /** Targets to keep: project ids (with their subtree when asked), a domain id, or the system. */
  projectIds?: string[]
  domainId?: string
  system?: boolean
  effective: boolean
}

export interface AssignmentEntry extends Grant {
  /** Set on effective entries that came through a group. */
  viaGroupId?: string
  /** Set on effective entries that came from an implied role. */
  priorRoleId?: string
}

export async function listAssignments(db: Db, q: AssignmentQuery): Promise<AssignmentEntry[]> {
  let query = db.selectFrom('role_assignments').selectAll().where('inherited', '=', 0)
  if (q.projectIds) query = query.where('target_type', '=', 'project').where('target_id', 'in', q.projectIds.length ? q.projectIds : [''])
  if (q.domainId !== undefined) query = query.where('target_type', '=', 'domain').where('target_id', '=', q.domainId)
  if (q.system) query = query.where('target_type', '=', 'system')
  const rows = await query.orderBy('target_type').orderBy('target_id').orderBy('actor_type').orderBy('actor_id').orderBy('role_id').execute()
  let entries: AssignmentEntry[] = rows.map((r) => ({ actorType: r.actor_type, actorId: r.actor_id, targetType: r.target_type, targetId: r.target_id, roleId: r.role_id }))

  if (q.effective) {
    const groupIds = [...new Set(entries.filter((e) => e.actorType === 'group').map((e) => e.actorId))]
    const members = groupIds.length ? await db.selectFrom('group_members').selectAll().where('group_id', 'in', groupIds).orderBy('user_id').execute() : []
    const expanded: AssignmentEntry[] = []
    for (const e of entries) {
      if (e.actorType === 'user') expanded.push(e)
      else for (const m of members) if (m.group_id === e.actorId) expanded.push({ ...e, actorType: 'user', actorId: m.user_id, viaGroupId: e.actorId })
    }
    const implications = await listImplications(db)
    entries = []
    for (const e of expanded) {
      entries.push(e)
      for (const implied of closure(implications, [e.roleId])) if (implied !== e.roleId) entries.push({ ...e, roleId: implied, priorRoleId: e.roleId })
    }
    // Domain-specific roles are never effective themselves (nor in tokens): only the global roles they imply are.
    const domainRoles = new Set((await db.selectFrom('roles').select('id').where('domain_id', '!=', '').execute()).map((r) => r.id))
    entries = entries.filter((e) => !domainRoles.has(e.roleId))
  }
  return entries.filter(
    (e) =>
      (q.userId === undefined || (e.actorType === 'user' && e.actorId === q.userId)) &&
      (q.groupId === undefined || (e.actorType === 'group' && e.actorId === q.groupId)) &&
      (q.roleId === undefined || e.roleId === q.roleId),
  )
}

/** Projects where the user holds any role, directly or through a group (GET /users/{id}/projects). */
export async function projectIdsOfUser(db: Db, userId: string): Promise<string[]> {
  const groupIds = (await db.selectFrom('group_members').select('group_id').where('user_id', '=', userId).execute()).map((r) => r.group_id)
  const rows = await db
    .selectFrom('role_assignments')
    .select('target_id')
    .where('target_type', '=', 'project')
    .where((eb) =>
      eb.or([
        eb.and([eb('actor_type', '=', 'user'), eb('actor_id', '=', userId)]),
        ...(groupIds.length ? [eb.and([eb('actor_type', '=', 'group'), eb('actor_id', 'in', groupIds)])] : []),
      ]),
    )
    .execute()
  return [...new Set(rows.map((r) => r.target_id))]
}
