/**
 * Glance's metadata definitions (metadefs): catalogs of the properties images, volumes, flavors… may carry.
 * A namespace is public (everyone reads it) or private (only its owner project; another project's is 404); what
 * it holds (objects, properties, tags, resource type associations) is read and written through it. Writes are
 * admin-only by the image policy (checked by the routes); a protected namespace cannot be deleted (403).
 * Definitions are stored and served; nothing validates image properties against them, as in Glance.
 */
import { randomUUID } from 'node:crypto'
import { badRequest, conflict, forbidden, notFound } from '../../contracts/errors.js'
import type { Visibility } from '../policy/rules.js'
import type { Db } from '../storage/store.js'
import type { MetadefNamespaceTable } from '../storage/tables/image.js'

/** Who reads: their project, and whether they see every project's private namespaces (admin). */
export interface MetadefViewer {
  projectId: string | undefined
  visibility: Visibility
}

export type NamespaceRow = MetadefNamespaceTable
/** The tables holding what a namespace defines, one row per name with its definition as JSON. */
export type MemberKind = 'metadef_objects' | 'metadef_properties' | 'metadef_tags'

export interface NamespaceInput {
  namespace: string
  display_name?: string | null
  description?: string | null
  visibility?: string
  protected?: boolean
  owner?: string | null
  resource_type_associations?: AssociationInput[]
  properties?: Record<string, Record<string, unknown>>
  objects?: ({ name: string } & Record<string, unknown>)[]
  tags?: { name: string }[]
}

export interface AssociationInput {
  name: string
  prefix?: string | null
  properties_target?: string | null
}

const VISIBILITIES = ['public', 'private']

const canSee = (viewer: MetadefViewer, row: NamespaceRow) =>
  row.visibility === 'public' || viewer.visibility === 'all_projects' || (viewer.projectId !== undefined && row.owner === viewer.projectId)

function checkVisibility(visibility: string | undefined): void {
  if (visibility !== undefined && !VISIBILITIES.includes(visibility)) throw badRequest(`Invalid visibility ${visibility}: public or private.`)
}

/** A namespace the viewer may see, else 404 (another project's private one does not exist for it). */
export async function getNamespace(db: Db, viewer: MetadefViewer, name: string): Promise<NamespaceRow> {
  const row = await db.selectFrom('metadef_namespaces').selectAll().where('namespace', '=', name).executeTakeFirst()
  if (!row || !canSee(viewer, row)) throw notFound(`Metadata definition namespace=${name} was not found.`)
  return row
}

export async function listNamespaces(db: Db, viewer: MetadefViewer, filter: { visibility?: string; resourceTypes?: string[] }): Promise<NamespaceRow[]> {
  let q = db.selectFrom('metadef_namespaces').selectAll().orderBy('namespace')
  if (filter.visibility !== undefined) q = q.where('visibility', '=', filter.visibility)
  let rows = (await q.execute()).filter((r) => canSee(viewer, r))
  if (filter.resourceTypes && filter.resourceTypes.length > 0) {
    const associated = await db.selectFrom('metadef_namespace_resource_types').select('namespace_id').where('resource_type', 'in', filter.resourceTypes).execute()
    const ids = new Set(associated.map((a) => a.namespace_id))
    rows = rows.filter((r) => ids.has(r.id))
  }
  return rows
}

/** Creates a namespace with what it holds, in one transaction; a name in use is 409. */
export async function createNamespace(db: Db, input: NamespaceInput, now: number): Promise<NamespaceRow> {
  checkVisibility(input.visibility)
  return db.transaction().execute(async (tx) => {
    if (await tx.selectFrom('metadef_namespaces').select('id').where('namespace', '=', input.namespace).executeTakeFirst()) {
      throw conflict(`Metadata definition namespace=${input.namespace} already exists.`)
    }
    const row: NamespaceRow = {
      id: randomUUID(),
      namespace: input.namespace,
      display_name: input.display_name ?? null,
      description: input.description ?? null,
      visibility: input.visibility ?? 'private',
      protected: input.protected ? 1 : 0,
      owner: input.owner ?? null,
      created_at: now,
      updated_at: now,
    }
    await tx.insertInto('metadef_namespaces').values(row).execute()
    for (const a of input.resource_type_associations ?? []) await associate(tx, row, a, now)
    for (const [name, body] of Object.entries(input.properties ?? {})) await putMember(tx, 'metadef_properties', row, name, body, now)
    for (const { name, ...body } of input.objects ?? []) await putMember(tx, 'metadef_objects', row, name, body, now)
    for (const { name } of input.tags ?? []) await putMember(tx, 'metadef_tags', row, name, {}, now)
    return row
  })
}

/** Glance's update: the namespace's own fields, all given again (a rename must not clash). */
export async function updateNamespace(db: Db, row: NamespaceRow, input: NamespaceInput, now: number): Promise<NamespaceRow> {
  checkVisibility(input.visibility)
  if (input.namespace !== row.namespace && (await db.selectFrom('metadef_namespaces').select('id').where('namespace', '=', input.namespace).executeTakeFirst())) {
    throw conflict(`Metadata definition namespace=${input.namespace} already exists.`)
  }
  const next: NamespaceRow = {
    ...row,
    namespace: input.namespace,
    display_name: input.display_name === undefined ? row.display_name : input.display_name,
    description: input.description === undefined ? row.description : input.description,
    visibility: input.visibility ?? row.visibility,
    protected: input.protected === undefined ? row.protected : input.protected ? 1 : 0,
    owner: input.owner === undefined ? row.owner : input.owner,
    updated_at: now,
  }
  await db.updateTable('metadef_namespaces').set(next).where('id', '=', row.id).execute()
  return next
}

export async function deleteNamespace(db: Db, row: NamespaceRow): Promise<void> {
  if (row.protected) throw forbidden(`Metadata definition namespace ${row.namespace} is protected and cannot be deleted.`)
  await db.deleteFrom('metadef_namespaces').where('id', '=', row.id).execute()
}

/** One object, property or tag of a namespace, else 404. */
export async function getMember(db: Db, kind: MemberKind, ns: NamespaceRow, name: string) {
  const row = await db.selectFrom(kind).selectAll().where('namespace_id', '=', ns.id).where('name', '=', name).executeTakeFirst()
  if (!row) throw notFound(`Metadata definition ${memberWord(kind)} ${name} was not found in namespace ${ns.namespace}.`)
  return { ...row, definition: JSON.parse(row.body) as Record<string, unknown> }
}

export async function listMembers(db: Db, kind: MemberKind, ns: NamespaceRow) {
  const rows = await db.selectFrom(kind).selectAll().where('namespace_id', '=', ns.id).orderBy('created_at').orderBy('name').execute()
  return rows.map((r) => ({ ...r, definition: JSON.parse(r.body) as Record<string, unknown> }))
}

const memberWord = (kind: MemberKind) => ({ metadef_objects: 'object', metadef_properties: 'property', metadef_tags: 'tag' })[kind]

/** Adds a member; a name the namespace already has is 409. */
export async function putMember(db: Db, kind: MemberKind, ns: NamespaceRow, name: string, definition: Record<string, unknown>, now: number): Promise<void> {
  if (await db.selectFrom(kind).select('name').where('namespace_id', '=', ns.id).where('name', '=', name).executeTakeFirst()) {
    throw conflict(`A metadata definition ${memberWord(kind)} with name=${name} already exists in namespace=${ns.namespace}.`)
  }
  await db.insertInto(kind).values({ namespace_id: ns.id, name, body: JSON.stringify(definition), created_at: now, updated_at: now }).execute()
}

/** Replaces a member's name and definition (a new name must be free). */
export async function replaceMember(db: Db, kind: MemberKind, ns: NamespaceRow, name: string, newName: string, definition: Record<string, unknown>, now: number): Promise<void> {
  await getMember(db, kind, ns, name)
  if (newName !== name && (await db.selectFrom(kind).select('name').where('namespace_id', '=', ns.id).where('name', '=', newName).executeTakeFirst())) {
    throw conflict(`A metadata definition ${memberWord(kind)} with name=${newName} already exists in namespace=${ns.namespace}.`)
  }
  await db.updateTable(kind).set({ name: newName, body: JSON.stringify(definition), updated_at: now }).where('namespace_id', '=', ns.id).where('name', '=', name).execute()
}

export async function deleteMember(db: Db, kind: MemberKind, ns: NamespaceRow, name: string): Promise<void> {
  await getMember(db, kind, ns, name)
  await db.deleteFrom(kind).where('namespace_id', '=', ns.id).where('name', '=', name).execute()
}

export async function deleteAllMembers(db: Db, kind: MemberKind, ns: NamespaceRow): Promise<void> {
  await db.deleteFrom(kind).where('namespace_id', '=', ns.id).execute()
}

/** Sets the namespace's tags to these (Glance's create-tags replaces them unless told to append). */
export async function setTags(db: Db, ns: NamespaceRow, names: string[], append: boolean, now: number): Promise<void> {
  if (new Set(names).size !== names.length) throw conflict('The tags given are not unique.')
  await db.transaction().execute(async (tx) => {
    if (!append) await deleteAllMembers(tx, 'metadef_tags', ns)
    for (const name of names) await putMember(tx, 'metadef_tags', ns, name, {}, now)
  })
}

export async function listResourceTypes(db: Db) {
  return db.selectFrom('metadef_resource_types').selectAll().orderBy('name').execute()
}

export async function listAssociations(db: Db, ns: NamespaceRow) {
  return db.selectFrom('metadef_namespace_resource_types').selectAll().where('namespace_id', '=', ns.id).orderBy('resource_type').execute()
}

/** Associates a resource type (made when new, as Glance does) with the namespace; an existing association is 409. */
export async function associate(db: Db, ns: NamespaceRow, input: AssociationInput, now: number): Promise<void> {
  if (!(await db.selectFrom('metadef_resource_types').select('name').where('name', '=', input.name).executeTakeFirst())) {
    await db.insertInto('metadef_resource_types').values({ name: input.name, protected: 0, created_at: now, updated_at: now }).execute()
  }
  if (await db.selectFrom('metadef_namespace_resource_types').select('namespace_id').where('namespace_id', '=', ns.id).where('resource_type', '=', input.name).executeTakeFirst()) {
    throw conflict(`The resource type ${input.name} is already associated with namespace=${ns.namespace}.`)
  }
  await db
    .insertInto('metadef_namespace_resource_types')
    .values({ namespace_id: ns.id, resource_type: input.name, prefix: input.prefix ?? null, properties_target: input.properties_target ?? null, created_at: now, updated_at: now })
    .execute()
}

export async function dissociate(db: Db, ns: NamespaceRow, resourceType: string): Promise<void> {
  const found = await db.selectFrom('metadef_namespace_resource_types').select('namespace_id').where('namespace_id', '=', ns.id).where('resource_type', '=', resourceType).executeTakeFirst()
  if (!found) throw notFound(`The resource type ${resourceType} is not associated with namespace=${ns.namespace}.`)
  await db.deleteFrom('metadef_namespace_resource_types').where('namespace_id', '=', ns.id).where('resource_type', '=', resourceType).execute()
}
