/**
 * Flavors: lookup by id (or a flavorRef URL), visibility (public, or private with access for the project),
 * the snapshot embedded in a server, and the default set created at bootstrap.
 */
import { badRequest } from '../../contracts/errors.js'
import type { FlavorTable } from '../storage/schema.js'
import type { FlavorSnapshot } from '../../contracts/host/compute-driver.js'
import type { Db } from '../storage/store.js'
import { prepared } from '../storage/prepared.js'
import type { Visibility } from '../policy/rules.js'

/** m1.* as DevStack defines them, plus a small one for tests and demos. */
export const DEFAULT_FLAVORS: Pick<FlavorTable, 'id' | 'name' | 'vcpus' | 'ram' | 'disk'>[] = [
  { id: '1', name: 'm1.tiny', vcpus: 1, ram: 512, disk: 1 },
  { id: '2', name: 'm1.small', vcpus: 1, ram: 2048, disk: 20 },
  { id: '3', name: 'm1.medium', vcpus: 2, ram: 4096, disk: 40 },
  { id: '4', name: 'm1.large', vcpus: 4, ram: 8192, disk: 80 },
  { id: '5', name: 'm1.xlarge', vcpus: 8, ram: 16384, disk: 160 },
  { id: '42', name: 'm1.nano', vcpus: 1, ram: 128, disk: 1 },
]

/** Idempotent: creates the default flavors that do not exist (by id) yet. Called from runtime.ts at start. */
export async function ensureDefaultFlavors(db: Db): Promise<void> {
  const now = Date.now()
  for (const f of DEFAULT_FLAVORS) {
    await db
      .insertInto('flavors')
      .values({ ...f, rev: 0, ephemeral: 0, swap: 0, rxtx_factor: 1, is_public: 1, disabled: 0, description: null, extra_specs: '{}', created_at: now, deleted: 0 })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute()
  }
}

/** The flavor id a flavorRef names: the id itself or the last path segment of a URL. */
export function flavorIdOf(ref: string | number): string {
  const s = String(ref)
  return s.includes('/') ? s.replace(/\/+$/, '').split('/').pop()! : s
}

/** A live flavor the project may use (every private one with visibility all_projects: flavors:all_projects), or undefined. */
export async function findUsableFlavor(db: Db, id: string, projectId: string, visibility: Visibility): Promise<FlavorTable | undefined> {
  const f = await db.selectFrom('flavors').selectAll().where('id', '=', id).where('deleted', '=', 0).executeTakeFirst()
  if (!f) return undefined
  if (f.is_public || visibility === 'all_projects') return f
  const access = await db.selectFrom('flavor_access').select('project_id').where('flavor_id', '=', id).where('project_id', '=', projectId).executeTakeFirst()
  return access ? f : undefined
}

export async function requireFlavorForServer(db: Db, ref: string | number, projectId: string, visibility: Visibility): Promise<FlavorTable> {
  const id = flavorIdOf(ref)
  const f = await findUsableFlavor(db, id, projectId, visibility)
  if (!f || f.disabled) throw badRequest(`Flavor ${id} could not be found.`)
  return f
}

export function flavorSnapshot(f: FlavorTable): FlavorSnapshot {
  return {
    id: f.id,
    name: f.name,
    vcpus: f.vcpus,
    ram: f.ram,
    disk: f.disk,
    ephemeral: f.ephemeral,
    swap: f.swap,
    rxtx_factor: f.rxtx_factor,
    extra_specs: JSON.parse(f.extra_specs) as Record<string, string>,
  }
}

/** Every flavor that is not deleted, and the ids of the private ones `projectId` was given access to (none asked: none read). */
export async function flavorsWithAccess(db: Db, projectId: string | undefined): Promise<{ rows: FlavorTable[]; accessible: Set<string> }> {
  const rows = await liveFlavors(db)
  const accessible = new Set(projectId === undefined ? [] : (await flavorsOfProject(db, projectId)).map((a) => a.flavor_id))
  return { rows, accessible }
}

// Compiled once: flavors/detail is polled by every client that picks a flavor by name (storage/prepared.ts).
const liveFlavors = prepared((db: Db) => db.selectFrom('flavors').selectAll().where('deleted', '=', 0), { keepWhileUnchanged: true })
const flavorsOfProject = prepared((db: Db, projectId: string) => db.selectFrom('flavor_access').select('flavor_id').where('project_id', '=', projectId), { keepWhileUnchanged: true })

/** A live flavor with this id or this name (either makes a new flavor a duplicate). */
export async function findFlavorClash(db: Db, id: string, name: string): Promise<Pick<FlavorTable, 'id' | 'name'> | undefined> {
  return db.selectFrom('flavors').select(['id', 'name']).where((eb) => eb.or([eb('id', '=', id), eb('name', '=', name)])).where('deleted', '=', 0).executeTakeFirst()
}

export async function insertFlavor(db: Db, row: FlavorTable): Promise<void> {
  await db.insertInto('flavors').values(row).execute()
}

export async function setFlavorDescription(db: Db, id: string, description: string | null): Promise<void> {
  await db.updateTable('flavors').set({ description }).where('id', '=', id).execute()
}

/** Answers false when there was no such flavor. */
export async function deleteFlavor(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('flavors').where('id', '=', id).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export async function saveExtraSpecs(db: Db, id: string, specs: Record<string, string>): Promise<void> {
  await db.updateTable('flavors').set({ extra_specs: JSON.stringify(specs) }).where('id', '=', id).execute()
}

/** The projects given access to a flavor, by project id. */
export async function flavorAccess(db: Db, flavorId: string): Promise<{ flavor_id: string; project_id: string }[]> {
  return db.selectFrom('flavor_access').select(['flavor_id', 'project_id']).where('flavor_id', '=', flavorId).orderBy('project_id').execute()
}

/** Answers false when the project had access already. */
export async function addFlavorAccess(db: Db, flavorId: string, projectId: string): Promise<boolean> {
  const done = await db.insertInto('flavor_access').values({ flavor_id: flavorId, project_id: projectId }).onConflict((oc) => oc.doNothing()).executeTakeFirst()
  return Number(done.numInsertedOrUpdatedRows ?? 0) > 0
}

/** Answers false when the project had no access. */
export async function removeFlavorAccess(db: Db, flavorId: string, projectId: string): Promise<boolean> {
  const done = await db.deleteFrom('flavor_access').where('flavor_id', '=', flavorId).where('project_id', '=', projectId).executeTakeFirst()
  return Number(done.numDeletedRows) > 0
}
