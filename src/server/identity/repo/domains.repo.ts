/** Domains: the top of the identity tree; deleting one removes everything in it. */
import { conflict, forbidden, notFound } from '../../../contracts/errors.js'
import type { DomainTable } from '../../storage/tables/identity.js'
import type { Db } from '../../storage/store.js'
import { extraOf, newIdentityId } from './write.js'

export type DomainRow = DomainTable

export const DOMAIN_COLUMNS = ['name', 'description', 'enabled', 'options'] as const

export interface DomainInput {
  name?: string
  description?: string | null
  enabled?: boolean
  options?: Record<string, unknown>
  [extra: string]: unknown
}

export interface DomainFilter {
  name?: string
  enabled?: boolean
}

export async function listDomains(db: Db, filter: DomainFilter): Promise<DomainRow[]> {
  let q = db.selectFrom('domains').selectAll()
  if (filter.name !== undefined) q = q.where('name', '=', filter.name)
  if (filter.enabled !== undefined) q = q.where('enabled', '=', filter.enabled ? 1 : 0)
  return q.orderBy('name').execute()
}

export async function findDomain(db: Db, id: string): Promise<DomainRow | undefined> {
  return db.selectFrom('domains').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function getDomain(db: Db, id: string): Promise<DomainRow> {
  const row = await findDomain(db, id)
  if (!row) throw notFound(`Could not find domain: ${id}.`)
  return row
}

/** A domain named in a request body (domain_id of a user, group, project or role): unknown is 404, as Keystone's DomainNotFound. */
export async function requireDomainRef(db: Db, id: string, field: string): Promise<DomainRow> {
  const row = await findDomain(db, id)
  if (!row) throw notFound(`Could not find domain: ${id} (${field}).`)
  return row
}

async function assertNameFree(db: Db, name: string, exceptId?: string): Promise<void> {
  const other = await db.selectFrom('domains').select('id').where('name', '=', name).executeTakeFirst()
  if (other && other.id !== exceptId) throw conflict(`Conflict occurred attempting to store domain - Duplicate entry found with name ${name}.`)
}

export async function createDomain(db: Db, input: DomainInput & { name: string }, now: number): Promise<DomainRow> {
  await assertNameFree(db, input.name)
  const row: DomainRow = {
    id: newIdentityId(),
    name: input.name,
    description: input.description ?? '',
    enabled: input.enabled === false ? 0 : 1,
    options: JSON.stringify(input.options ?? {}),
    extra: JSON.stringify(extraOf(input, DOMAIN_COLUMNS)),
    created_at: now,
  }
  await db.insertInto('domains').values(row).execute()
  return row
}

export async function updateDomain(db: Db, id: string, input: DomainInput): Promise<DomainRow> {
  const row = await getDomain(db, id)
  if (input.name !== undefined && input.name !== row.name) await assertNameFree(db, input.name, id)
  const next: DomainRow = {
    ...row,
    name: input.name ?? row.name,
    description: input.description === undefined ? row.description : (input.description ?? ''),
    enabled: input.enabled === undefined ? row.enabled : input.enabled ? 1 : 0,
    options: input.options === undefined ? row.options : JSON.stringify(mergeOptions(JSON.parse(row.options), input.options)),
    extra: JSON.stringify({ ...JSON.parse(row.extra), ...extraOf(input, DOMAIN_COLUMNS) }),
  }
  await db.updateTable('domains').set(next).where('id', '=', id).execute()
  return next
}

/** Keystone merges options on update; an option set to null is removed. */
export function mergeOptions(current: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out = { ...current }
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key]
    else out[key] = value
  }
  return out
}

/** Keystone refuses to delete an enabled domain; deleting a disabled one removes what it holds. */
export async function deleteDomain(db: Db, id: string): Promise<void> {
  const row = await getDomain(db, id)
  if (row.enabled) throw forbidden(`Cannot delete a domain that is enabled, please disable it first.`)
  const projects = (await db.selectFrom('projects').select('id').where('domain_id', '=', id).execute()).map((r) => r.id)
  const users = (await db.selectFrom('users').select('id').where('domain_id', '=', id).execute()).map((r) => r.id)
  const groups = (await db.selectFrom('groups').select('id').where('domain_id', '=', id).execute()).map((r) => r.id)
  if (projects.length) {
    await db.deleteFrom('role_assignments').where('target_type', '=', 'project').where('target_id', 'in', projects).execute()
    await db.deleteFrom('project_tags').where('project_id', 'in', projects).execute()
  }
  if (users.length) await db.deleteFrom('role_assignments').where('actor_type', '=', 'user').where('actor_id', 'in', users).execute()
  if (groups.length) await db.deleteFrom('role_assignments').where('actor_type', '=', 'group').where('actor_id', 'in', groups).execute()
  await db.deleteFrom('role_assignments').where('target_type', '=', 'domain').where('target_id', '=', id).execute()
  await db.updateTable('users').set({ default_project_id: null }).where('default_project_id', 'in', projects.length ? projects : ['']).execute()
  await db.deleteFrom('groups').where('domain_id', '=', id).execute()
  await db.deleteFrom('users').where('domain_id', '=', id).execute()
  // Children before parents: clear the tree's parent links first so the order does not matter.
  await db.updateTable('projects').set({ parent_id: null }).where('domain_id', '=', id).execute()
  await db.deleteFrom('projects').where('domain_id', '=', id).execute()
  await db.deleteFrom('roles').where('domain_id', '=', id).execute()
  await db.deleteFrom('domain_configs').where('domain_id', '=', id).execute()
  await db.deleteFrom('domains').where('id', '=', id).execute()
}
