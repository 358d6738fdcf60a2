/**
 * Roles, global (domain_id '' in the table, null on the wire) or domain-specific, and role implications
 * (prior ⇒ implied). Implications form a DAG: a rule that would close a cycle is refused.
 */
import { badRequest, conflict, forbidden, notFound } from '../../../contracts/errors.js'
import type { RoleTable } from '../../storage/tables/identity.js'
import type { Db } from '../../storage/store.js'
import { mergeOptions, requireDomainRef } from './domains.repo.js'
import { newIdentityId } from './write.js'

export type RoleRow = RoleTable

export interface RoleInput {
  name?: string
  domain_id?: string | null
  description?: string | null
  options?: Record<string, unknown>
}

/** Keystone lists global roles unless a domain_id filter asks for that domain's roles. */
export async function listRoles(db: Db, filter: { name?: string; domainId?: string; ids?: string[] }): Promise<RoleRow[]> {
  if (filter.ids && filter.ids.length === 0) return []
  let q = db.selectFrom('roles').selectAll().where('domain_id', '=', filter.domainId ?? '')
  if (filter.name !== undefined) q = q.where('name', '=', filter.name)
  if (filter.ids) q = q.where('id', 'in', filter.ids)
  return q.orderBy('name').execute()
}

export async function rolesById(db: Db, ids: string[]): Promise<Map<string, RoleRow>> {
  if (ids.length === 0) return new Map()
  const rows = await db.selectFrom('roles').selectAll().where('id', 'in', [...new Set(ids)]).execute()
  return new Map(rows.map((r) => [r.id, r]))
}

export async function getRole(db: Db, id: string): Promise<RoleRow> {
  const row = await db.selectFrom('roles').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw notFound(`Could not find role: ${id}.`)
  return row
}

async function assertNameFree(db: Db, domainId: string, name: string, exceptId?: string): Promise<void> {
  const other = await db.selectFrom('roles').select('id').where('domain_id', '=', domainId).where('name', '=', name).executeTakeFirst()
  if (other && other.id !== exceptId) throw conflict(`Conflict occurred attempting to store role - Duplicate entry found with name ${name}.`)
}

export async function createRole(db: Db, input: RoleInput & { name: string }, now: number): Promise<RoleRow> {
  const domainId = input.domain_id ?? ''
  if (domainId) await requireDomainRef(db, domainId, 'domain_id')
  await assertNameFree(db, domainId, input.name)
  const row: RoleRow = { id: newIdentityId(), name: input.name, domain_id: domainId, description: input.description ?? '', options: JSON.stringify(input.options ?? {}), created_at: now }
  await db.insertInto('roles').values(row).execute()
  return row
}

export async function updateRole(db: Db, id: string, input: RoleInput): Promise<RoleRow> {
  const row = await getRole(db, id)
  if (input.domain_id !== undefined && (input.domain_id ?? '') !== row.domain_id) throw badRequest(`Invalid input for field 'domain_id': the domain of a role cannot change.`)
  if (input.name !== undefined && input.name !== row.name) await assertNameFree(db, row.domain_id, input.name, id)
  const next: RoleRow = {
    ...row,
    name: input.name ?? row.name,
    description: input.description === undefined ? row.description : (input.description ?? ''),
    options: input.options === undefined ? row.options : JSON.stringify(mergeOptions(JSON.parse(row.options), input.options)),
  }
  await db.updateTable('roles').set(next).where('id', '=', id).execute()
  return next
}

export async function deleteRole(db: Db, id: string): Promise<void> {
  await getRole(db, id)
  await db.deleteFrom('role_assignments').where('role_id', '=', id).execute()
  await db.deleteFrom('implied_roles').where((eb) => eb.or([eb('prior_role_id', '=', id), eb('implied_role_id', '=', id)])).execute()
  await db.deleteFrom('roles').where('id', '=', id).execute()
}

export interface Implication {
  prior_role_id: string
  implied_role_id: string
}

export async function listImplications(db: Db, priorId?: string): Promise<Implication[]> {
  let q = db.selectFrom('implied_roles').selectAll()
  if (priorId !== undefined) q = q.where('prior_role_id', '=', priorId)
  return q.orderBy('prior_role_id').orderBy('implied_role_id').execute()
}

export async function hasImplication(db: Db, priorId: string, impliedId: string): Promise<boolean> {
  return !!(await db.selectFrom('implied_roles').select('prior_role_id').where('prior_role_id', '=', priorId).where('implied_role_id', '=', impliedId).executeTakeFirst())
}

/**
 * Keystone's rule: a domain-specific role may imply any role (that is what it is for: an alias of global roles);
 * a global role may not imply a domain-specific one (403).
 */
export async function createImplication(db: Db, prior: RoleRow, implied: RoleRow): Promise<void> {
  if (implied.domain_id && !prior.domain_id) throw forbidden(`Implied role ${implied.id} is domain-specific; only a domain-specific role may imply it, ${prior.id} is global.`)
  if (prior.id === implied.id) throw badRequest(`Invalid input: role ${prior.id} cannot imply itself.`)
  const all = await listImplications(db)
  if (closure(all, [implied.id]).has(prior.id)) throw badRequest(`Invalid input: role ${implied.id} already implies ${prior.id}; the rule would form a cycle.`)
  await db.insertInto('implied_roles').values({ prior_role_id: prior.id, implied_role_id: implied.id }).onConflict((oc) => oc.doNothing()).execute()
}

export async function deleteImplication(db: Db, priorId: string, impliedId: string): Promise<void> {
  if (!(await hasImplication(db, priorId, impliedId))) throw notFound(`Could not find implied role: ${priorId} does not imply ${impliedId}.`)
  await db.deleteFrom('implied_roles').where('prior_role_id', '=', priorId).where('implied_role_id', '=', impliedId).execute()
}

/** Every role reachable from `start` through implications (start included). */
export function closure(implications: Implication[], start: string[]): Set<string> {
  const out = new Set(start)
  for (let grew = true; grew; ) {
    grew = false
    for (const { prior_role_id, implied_role_id } of implications) {
      if (out.has(prior_role_id) && !out.has(implied_role_id)) {
        out.add(implied_role_id)
        grew = true
      }
    }
  }
  return out
}
