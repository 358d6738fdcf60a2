/** Groups of users, owned by a domain; membership rows go when either side goes. */
import { conflict, notFound } from '../../../contracts/errors.js'
import type { GroupTable } from '../../storage/tables/identity.js'
import type { Db } from '../../storage/store.js'
import { requireDomainRef } from './domains.repo.js'
import { newIdentityId } from './write.js'
import type { UserRow } from './users.repo.js'

export type GroupRow = GroupTable

export interface GroupInput {
  name?: string
  domain_id?: string
  description?: string | null
}

export async function listGroups(db: Db, filter: { name?: string; domainId?: string; ids?: string[] }): Promise<GroupRow[]> {
  if (filter.ids && filter.ids.length === 0) return []
  let q = db.selectFrom('groups').selectAll()
  if (filter.name !== undefined) q = q.where('name', '=', filter.name)
  if (filter.domainId !== undefined) q = q.where('domain_id', '=', filter.domainId)
  if (filter.ids) q = q.where('id', 'in', filter.ids)
  return q.orderBy('name').orderBy('id').execute()
}

export async function getGroup(db: Db, id: string): Promise<GroupRow> {
  const row = await db.selectFrom('groups').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw notFound(`Could not find group: ${id}.`)
  return row
}

async function assertNameFree(db: Db, domainId: string, name: string, exceptId?: string): Promise<void> {
  const other = await db.selectFrom('groups').select('id').where('domain_id', '=', domainId).where('name', '=', name).executeTakeFirst()
  if (other && other.id !== exceptId) throw conflict(`Conflict occurred attempting to store group - Duplicate entry found with name ${name} at domain ID ${domainId}.`)
}

export async function createGroup(db: Db, input: GroupInput & { name: string }, domainId: string, now: number): Promise<GroupRow> {
  await requireDomainRef(db, domainId, 'domain_id')
  await assertNameFree(db, domainId, input.name)
  const row: GroupRow = { id: newIdentityId(), domain_id: domainId, name: input.name, description: input.description ?? '', created_at: now }
  await db.insertInto('groups').values(row).execute()
  return row
}

export async function updateGroup(db: Db, id: string, input: GroupInput): Promise<GroupRow> {
  const row = await getGroup(db, id)
  if (input.name !== undefined && input.name !== row.name) await assertNameFree(db, row.domain_id, input.name, id)
  const next: GroupRow = { ...row, name: input.name ?? row.name, description: input.description === undefined ? row.description : (input.description ?? '') }
  await db.updateTable('groups').set(next).where('id', '=', id).execute()
  return next
}

export async function deleteGroup(db: Db, id: string): Promise<void> {
  await getGroup(db, id)
  await db.deleteFrom('role_assignments').where('actor_type', '=', 'group').where('actor_id', '=', id).execute()
  await db.deleteFrom('group_members').where('group_id', '=', id).execute()
  await db.deleteFrom('groups').where('id', '=', id).execute()
}

export async function isMember(db: Db, groupId: string, userId: string): Promise<boolean> {
  return !!(await db.selectFrom('group_members').select('user_id').where('group_id', '=', groupId).where('user_id', '=', userId).executeTakeFirst())
}

export async function addMember(db: Db, groupId: string, userId: string): Promise<void> {
  await db.insertInto('group_members').values({ group_id: groupId, user_id: userId }).onConflict((oc) => oc.doNothing()).execute()
}

export async function removeMember(db: Db, groupId: string, userId: string): Promise<void> {
  if (!(await isMember(db, groupId, userId))) throw notFound(`User ${userId} is not a member of group ${groupId}.`)
  await db.deleteFrom('group_members').where('group_id', '=', groupId).where('user_id', '=', userId).execute()
}

export async function groupUsers(db: Db, groupId: string): Promise<UserRow[]> {
  return db.selectFrom('users').innerJoin('group_members', 'group_members.user_id', 'users.id').selectAll('users').where('group_members.group_id', '=', groupId).orderBy('users.name').execute()
}

export async function userGroups(db: Db, userId: string): Promise<GroupRow[]> {
  return db.selectFrom('groups').innerJoin('group_members', 'group_members.group_id', 'groups.id').selectAll('groups').where('group_members.user_id', '=', userId).orderBy('groups.name').execute()
}
