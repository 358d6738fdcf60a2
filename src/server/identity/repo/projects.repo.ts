/**
 * Projects: owned by a domain, optionally under a parent project of the same domain (top-level projects have
 * the domain as parent, as in Keystone), with tags. A project with children cannot be deleted.
 */
import { badRequest, conflict, forbidden, notFound } from '../../../contracts/errors.js'
import type { ProjectTable } from '../../storage/tables/identity.js'
import type { Db } from '../../storage/store.js'
import { mergeOptions, requireDomainRef } from './domains.repo.js'
import { extraOf, newIdentityId } from './write.js'

export interface ProjectRecord extends ProjectTable {
  tags: string[]
}

export const PROJECT_COLUMNS = ['name', 'description', 'enabled', 'options', 'domain_id', 'parent_id', 'is_domain', 'tags'] as const

export interface ProjectInput {
  name?: string
  description?: string | null
  enabled?: boolean
  domain_id?: string | null
  parent_id?: string | null
  is_domain?: boolean
  tags?: string[]
  options?: Record<string, unknown>
  [extra: string]: unknown
}

export interface ProjectFilter {
  name?: string
  domainId?: string
  parentId?: string
  enabled?: boolean
  isDomain?: boolean
  ids?: string[]
  /** All of these tags / any of these / not all of these / none of these (Keystone's tag filters). */
  tags?: string[]
  tagsAny?: string[]
  notTags?: string[]
  notTagsAny?: string[]
}

async function withTags(db: Db, rows: ProjectTable[]): Promise<ProjectRecord[]> {
  if (rows.length === 0) return []
  const tags = await db.selectFrom('project_tags').selectAll().where('project_id', 'in', rows.map((r) => r.id)).orderBy('tag').execute()
  const byProject = new Map<string, string[]>()
  for (const t of tags) byProject.set(t.project_id, [...(byProject.get(t.project_id) ?? []), t.tag])
  return rows.map((r) => ({ ...r, tags: byProject.get(r.id) ?? [] }))
}

export async function listProjects(db: Db, filter: ProjectFilter): Promise<ProjectRecord[]> {
  if (filter.isDomain === true) return [] // projects acting as domains are not supported: none exist
  if (filter.ids && filter.ids.length === 0) return []
  let q = db.selectFrom('projects').selectAll()
  if (filter.name !== undefined) q = q.where('name', '=', filter.name)
  if (filter.domainId !== undefined) q = q.where('domain_id', '=', filter.domainId)
  if (filter.parentId !== undefined) q = q.where('parent_id', '=', filter.parentId)
  if (filter.enabled !== undefined) q = q.where('enabled', '=', filter.enabled ? 1 : 0)
  if (filter.ids) q = q.where('id', 'in', filter.ids)
  const rows = await withTags(db, await q.orderBy('name').orderBy('id').execute())
  return rows.filter((p) => {
    const has = new Set(p.tags)
    if (filter.tags && !filter.tags.every((t) => has.has(t))) return false
    if (filter.tagsAny && !filter.tagsAny.some((t) => has.has(t))) return false
    if (filter.notTags && filter.notTags.length && filter.notTags.every((t) => has.has(t))) return false
    if (filter.notTagsAny && filter.notTagsAny.some((t) => has.has(t))) return false
    return true
  })
}

export async function findProject(db: Db, id: string): Promise<ProjectRecord | undefined> {
  const row = await db.selectFrom('projects').selectAll().where('id', '=', id).executeTakeFirst()
  return row ? (await withTags(db, [row]))[0] : undefined
}

export async function getProject(db: Db, id: string): Promise<ProjectRecord> {
  const row = await findProject(db, id)
  if (!row) throw notFound(`Could not find project: ${id}.`)
  return row
}

async function assertNameFree(db: Db, domainId: string, name: string, exceptId?: string): Promise<void> {
  const other = await db.selectFrom('projects').select('id').where('domain_id', '=', domainId).where('name', '=', name).executeTakeFirst()
  if (other && other.id !== exceptId) throw conflict(`Conflict occurred attempting to store project - it is not permitted to have two projects with the same name in the same domain : ${name}.`)
}

export async function setTags(db: Db, projectId: string, tags: string[]): Promise<void> {
  await db.deleteFrom('project_tags').where('project_id', '=', projectId).execute()
  const unique = [...new Set(tags)]
  if (unique.length) await db.insertInto('project_tags').values(unique.map((tag) => ({ project_id: projectId, tag }))).execute()
}

/** Creates a project in `domainId` (already resolved by the caller: body, parent or the token's domain). */
export async function createProject(db: Db, input: ProjectInput & { name: string }, domainId: string, now: number): Promise<ProjectRecord> {
  await requireDomainRef(db, domainId, 'domain_id')
  let parentId: string = domainId
  if (input.parent_id) {
    const parent = await findProject(db, input.parent_id)
    if (!parent) throw badRequest(`Invalid input for field 'parent_id': could not find project ${input.parent_id}.`)
    if (parent.domain_id !== domainId) throw badRequest(`Invalid input for field 'parent_id': the parent project must be in domain ${domainId}.`)
    parentId = parent.id
  }
  await assertNameFree(db, domainId, input.name)
  const row: ProjectTable = {
    id: newIdentityId(),
    domain_id: domainId,
    parent_id: parentId,
    name: input.name,
    description: input.description ?? '',
    enabled: input.enabled === false ? 0 : 1,
    options: JSON.stringify(input.options ?? {}),
    extra: JSON.stringify(extraOf(input, PROJECT_COLUMNS)),
    created_at: now,
  }
  await db.insertInto('projects').values(row).execute()
  await setTags(db, row.id, input.tags ?? [])
  return getProject(db, row.id)
}

export async function updateProject(db: Db, id: string, input: ProjectInput): Promise<ProjectRecord> {
  const row = await getProject(db, id)
  if (input.domain_id != null && input.domain_id !== row.domain_id) throw badRequest(`Invalid input for field 'domain_id': the domain of a project cannot change.`)
  if (input.parent_id !== undefined && input.parent_id !== row.parent_id) throw badRequest(`Invalid input for field 'parent_id': the parent of a project cannot change.`)
  if (input.is_domain === true) throw badRequest(`Invalid input for field 'is_domain': a project cannot become a domain.`)
  if (input.name !== undefined && input.name !== row.name) await assertNameFree(db, row.domain_id, input.name, id)
  const next: ProjectTable = {
    id: row.id,
    domain_id: row.domain_id,
    parent_id: row.parent_id,
    created_at: row.created_at,
    name: input.name ?? row.name,
    description: input.description === undefined ? row.description : (input.description ?? ''),
    enabled: input.enabled === undefined ? row.enabled : input.enabled ? 1 : 0,
    options: input.options === undefined ? row.options : JSON.stringify(mergeOptions(JSON.parse(row.options), input.options)),
    extra: JSON.stringify({ ...JSON.parse(row.extra), ...extraOf(input, PROJECT_COLUMNS) }),
  }
  await db.updateTable('projects').set(next).where('id', '=', id).execute()
  if (input.tags !== undefined) await setTags(db, id, input.tags)
  return getProject(db, id)
}

export async function deleteProject(db: Db, id: string): Promise<void> {
  await getProject(db, id)
  const child = await db.selectFrom('projects').select('id').where('parent_id', '=', id).executeTakeFirst()
  if (child) throw forbidden(`Cannot delete project ${id}: it has child projects; delete them first.`)
  await db.deleteFrom('role_assignments').where('target_type', '=', 'project').where('target_id', '=', id).execute()
  await db.updateTable('users').set({ default_project_id: null }).where('default_project_id', '=', id).execute()
  await db.deleteFrom('project_tags').where('project_id', '=', id).execute()
  await db.deleteFrom('projects').where('id', '=', id).execute()
}

/** The project and every project below it (include_subtree). */
export async function subtreeIds(db: Db, rootId: string): Promise<string[]> {
  const all = await db.selectFrom('projects').select(['id', 'parent_id']).execute()
  const out = [rootId]
  for (let i = 0; i < out.length; i++) for (const p of all) if (p.parent_id === out[i] && !out.includes(p.id)) out.push(p.id)
  return out
}
