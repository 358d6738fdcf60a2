/** Reads of volume rows with their type name and attachments, shared by the volume, snapshot and type code. */
import { notFound } from '../../contracts/errors.js'
import { CONTROLLER } from '../../contracts/host/storage-place.js'
import type { Db } from '../storage/store.js'
import { prepared } from '../storage/prepared.js'
import type { VolumeTable } from '../storage/schema.js'
import { DEFAULT_VOLUME_TYPE, rowToAttachment, rowToType, rowToVolume, type VolumeRecord, type VolumeTypeRecord } from './model.js'

export async function hydrate(db: Db, rows: VolumeTable[]): Promise<VolumeRecord[]> {
  if (rows.length === 0) return []
  const ids = rows.map((r) => r.id)
  // Storage hosts by id: a volume's host is named as `openstack volume service list` names it (<hostname>@<backend>).
  const places = [...new Set(rows.map((r) => r.location).filter((l): l is string => l !== null && l !== CONTROLLER))]
  const [types, attachments, hosts] = await Promise.all([
    volumeTypeNames(db),
    db.selectFrom('volume_attachments').selectAll().where('volume_id', 'in', ids).orderBy('created_at').execute(),
    places.length ? db.selectFrom('hosts').select(['id', 'hostname']).where('id', 'in', places).execute() : Promise.resolve([]),
  ])
  const typeNames = new Map(types.map((t) => [t.id, t.name]))
  const hostnames = new Map(hosts.map((h) => [h.id, h.hostname]))
  return rows.map((r) =>
    rowToVolume(
      r,
      typeNames.get(r.volume_type_id) ?? r.volume_type_id,
      attachments.filter((a) => a.volume_id === r.id).map(rowToAttachment),
      r.location === null ? null : (hostnames.get(r.location) ?? r.location),
    ),
  )
}

export async function loadVolume(db: Db, id: string): Promise<VolumeRecord | undefined> {
  const [row] = await volumeById(db, id)
  return row ? (await hydrate(db, [row]))[0] : undefined
}

// Compiled once, as the type names hydrate reads: every show of a volume reads both (storage/prepared.ts).
const volumeById = prepared((db: Db, id: string) => db.selectFrom('volumes').selectAll().where('id', '=', id))
/** A volume's project, revision and view revision (migration 0128), for show's kept view. */
export const volumeStamp = prepared((db: Db, id: string) =>
  db
    .selectFrom('volumes')
    .select(['id', 'project_id', 'rev'])
    .select((eb) =>
      eb.fn.coalesce(eb.selectFrom('view_revisions').select('rev').where('kind', '=', 'volume').whereRef('view_revisions.id', '=', 'volumes.id'), eb.lit(0)).as('view_rev'),
    )
    .where('volumes.id', '=', id),
  { keepWhileUnchanged: true },
)
/** Of these volume ids, the ones that exist (the view cache's sweep). */
export async function existingVolumeIds(db: Db, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  return new Set((await db.selectFrom('volumes').select('id').where('id', 'in', ids).execute()).map((r) => r.id))
}
const volumeTypeNames = prepared((db: Db) => db.selectFrom('volume_types').select(['id', 'name']))

/** A volume type by id or name; 404 in Cinder's words when there is none. */
export async function resolveType(db: Db, idOrName: string | undefined | null): Promise<VolumeTypeRecord> {
  const key = idOrName ?? DEFAULT_VOLUME_TYPE
  const row =
    (await db.selectFrom('volume_types').selectAll().where('id', '=', key).executeTakeFirst()) ??
    (await db.selectFrom('volume_types').selectAll().where('name', '=', key).executeTakeFirst())
  if (!row) throw notFound(`Volume type with name ${key} could not be found.`)
  return rowToType(row)
}

/** Who asks for a type: their project, and whether private types exist for them all (`type:private:see`). */
export interface TypeAccess {
  projectId: string
  seesPrivate: boolean
}

/** Whether a type may be seen and used: public, granted to the project (os-volume-type-access), or the caller sees every type. */
export async function typeUsable(db: Db, type: VolumeTypeRecord, access: TypeAccess): Promise<boolean> {
  if (type.isPublic || access.seesPrivate) return true
  const grant = await db.selectFrom('volume_type_access').select('project_id').where('volume_type_id', '=', type.id).where('project_id', '=', access.projectId).executeTakeFirst()
  return grant !== undefined
}

/** resolveType for a caller: a private type the caller may not use does not exist for them (404, as Cinder answers). */
export async function resolveUsableType(db: Db, idOrName: string | undefined | null, access: TypeAccess): Promise<VolumeTypeRecord> {
  const type = await resolveType(db, idOrName)
  if (!(await typeUsable(db, type, access))) throw notFound(`Volume type with name ${idOrName} could not be found.`)
  return type
}
