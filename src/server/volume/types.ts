/**
 * Volume types: `__DEFAULT__` made at start (and `ceph`, the default type when Ceph is configured), more created by
 * admins. A type in use (by volumes or groups), the default, or a project's default (default-types.ts) cannot be deleted.
 */
import { randomUUID } from 'node:crypto'
import { badRequest, conflict, notFound } from '../../contracts/errors.js'
import { projectOf, type Principal } from '../auth/principal.js'
import { allows, authorize } from '../policy/rules.js'
import { volumePolicy } from '../policy/volume.policy.js'
import type { Store } from '../storage/store.js'
import { CEPH_VOLUME_TYPE, DEFAULT_VOLUME_TYPE, rowToType, type VolumeTypeRecord } from './model.js'
import { layoutOf } from './placement.js'
import { resolveType, typeUsable, type TypeAccess } from './repo.js'
import { projectDefaultTypeId, projectsDefaultingTo } from './default-types.js'

export class VolumeTypeService {
  constructor(
    private readonly store: Store,
    /** The type of volumes created without one. */
    private readonly defaultName: string = DEFAULT_VOLUME_TYPE,
  ) {}

  /** Creates the built-in types when missing; safe on every start. */
  async ensureDefault(): Promise<void> {
    const builtIn = [{ name: DEFAULT_VOLUME_TYPE, description: 'Default Volume Type', extraSpecs: {} }]
    if (this.defaultName === CEPH_VOLUME_TYPE) builtIn.push({ name: CEPH_VOLUME_TYPE, description: 'Volumes in Ceph RBD', extraSpecs: { volume_backend_name: 'ceph' } })
    for (const type of builtIn) {
      await this.store.db
        .insertInto('volume_types')
        .values({ id: randomUUID(), name: type.name, description: type.description, is_public: 1, extra_specs: JSON.stringify(type.extraSpecs), created_at: Date.now() })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute()
    }
  }

  async list(principal: Principal): Promise<VolumeTypeRecord[]> {
    authorize(volumePolicy, 'type:get', principal)
    const rows = await this.store.db.selectFrom('volume_types').selectAll().orderBy('name').execute()
    const access = accessOf(principal)
    const grants = await this.store.db.selectFrom('volume_type_access').select('volume_type_id').where('project_id', '=', access.projectId).execute()
    const granted = new Set(grants.map((g) => g.volume_type_id))
    return rows.map(rowToType).filter((t) => t.isPublic || access.seesPrivate || granted.has(t.id))
  }

  async get(principal: Principal, idOrName: string): Promise<VolumeTypeRecord> {
    authorize(volumePolicy, 'type:get', principal)
    const missing = () => notFound(`Volume type ${idOrName} could not be found.`)
    const type = await resolveType(this.store.db, idOrName).catch(() => {
      throw missing()
    })
    if (!(await typeUsable(this.store.db, type, accessOf(principal)))) throw missing()
    return type
  }

  /** The projects a private type is granted to (os-volume-type-access); a public type has no such list (404, as Cinder). */
  async listAccess(principal: Principal, id: string): Promise<{ volumeTypeId: string; projectId: string }[]> {
    authorize(volumePolicy, 'type:access:manage', principal)
    const type = await this.get(principal, id)
    if (type.isPublic) throw notFound('Access list not available for public volume types.')
    const rows = await this.store.db.selectFrom('volume_type_access').select(['volume_type_id', 'project_id']).where('volume_type_id', '=', type.id).orderBy('created_at').execute()
    return rows.map((r) => ({ volumeTypeId: r.volume_type_id, projectId: r.project_id }))
  }

  /** Grants a project a private type: its members list, show and create volumes of it from now on. */
  async addAccess(principal: Principal, id: string, projectId: string): Promise<void> {
    authorize(volumePolicy, 'type:access:manage', principal)
    const type = await this.privateType(principal, id)
    await this.store.db.transaction().execute(async (tx) => {
      const existing = await tx.selectFrom('volume_type_access').select('project_id').where('volume_type_id', '=', type.id).where('project_id', '=', projectId).executeTakeFirst()
      if (existing) throw conflict(`Volume type access for ${type.id}/${projectId} combination already exists.`)
      await tx.insertInto('volume_type_access').values({ volume_type_id: type.id, project_id: projectId, created_at: Date.now() }).execute()
    })
  }

  /** Takes a private type from a project: its existing volumes keep the type, new ones cannot use it. */
  async removeAccess(principal: Principal, id: string, projectId: string): Promise<void> {
    authorize(volumePolicy, 'type:access:manage', principal)
    const type = await this.privateType(principal, id)
    const removed = await this.store.db.deleteFrom('volume_type_access').where('volume_type_id', '=', type.id).where('project_id', '=', projectId).executeTakeFirst()
    if (Number(removed.numDeletedRows) === 0) throw notFound(`Volume type access not found for ${type.id}/${projectId} combination.`)
  }

  private async privateType(principal: Principal, id: string): Promise<VolumeTypeRecord> {
    const type = await this.get(principal, id)
    if (type.isPublic) throw badRequest('Invalid volume type: Type access modification is not applicable to public volume type.')
    return type
  }

  async create(principal: Principal, input: { name: string; description?: string | null; is_public?: boolean; extra_specs?: Record<string, string> }): Promise<VolumeTypeRecord> {
    authorize(volumePolicy, 'type:manage', principal)
    // A backend or placement that does not exist is refused here, not when a volume of the type is made.
    layoutOf(input.extra_specs ?? {})
    const name = input.name.trim()
    if (name === '' || name.length > 255) throw badRequest('Invalid input received: Volume type name must be 1 to 255 characters.')
    const id = randomUUID()
    await this.store.db.transaction().execute(async (tx) => {
      if (await tx.selectFrom('volume_types').select('id').where('name', '=', name).executeTakeFirst()) throw conflict(`Volume Type ${name} already exists.`)
      await tx
        .insertInto('volume_types')
        .values({ id, name, description: input.description ?? null, is_public: input.is_public === false ? 0 : 1, extra_specs: JSON.stringify(input.extra_specs ?? {}), created_at: Date.now() })
        .execute()
    })
    return resolveType(this.store.db, id)
  }

  async update(principal: Principal, id: string, input: { name?: string; description?: string | null; is_public?: boolean }): Promise<VolumeTypeRecord> {
    authorize(volumePolicy, 'type:manage', principal)
    const type = await this.get(principal, id)
    const changes = {
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(input.is_public !== undefined ? { is_public: input.is_public ? 1 : 0 } : {}),
    }
    // A body that changes nothing is no UPDATE: one without columns is not SQL (a 500, found by the fuzz suite).
    if (Object.keys(changes).length > 0) await this.store.db.updateTable('volume_types').set(changes).where('id', '=', type.id).execute()
    return resolveType(this.store.db, type.id)
  }

  async setExtraSpecs(principal: Principal, id: string, specs: Record<string, string>): Promise<Record<string, string>> {
    authorize(volumePolicy, 'type:manage', principal)
    const type = await this.get(principal, id)
    const next = { ...type.extraSpecs, ...specs }
    layoutOf(next)
    await this.store.db.updateTable('volume_types').set({ extra_specs: JSON.stringify(next) }).where('id', '=', type.id).execute()
    return next
  }

  async deleteExtraSpec(principal: Principal, id: string, key: string): Promise<void> {
    authorize(volumePolicy, 'type:manage', principal)
    const type = await this.get(principal, id)
    if (!(key in type.extraSpecs)) throw notFound(`Volume Type ${id} has no extra specs with key ${key}.`)
    const { [key]: _removed, ...rest } = type.extraSpecs
    await this.store.db.updateTable('volume_types').set({ extra_specs: JSON.stringify(rest) }).where('id', '=', type.id).execute()
  }

  async delete(principal: Principal, id: string): Promise<void> {
    authorize(volumePolicy, 'type:manage', principal)
    const type = await this.get(principal, id)
    if (type.name === DEFAULT_VOLUME_TYPE || type.name === this.defaultName) throw badRequest('The default volume type cannot be deleted.')
    await this.store.db.transaction().execute(async (tx) => {
      // A project's default (3.62) must stay while it is one, as in Cinder: its volumes would have no type to get.
      if ((await projectsDefaultingTo(tx, type.id)).length > 0) throw badRequest(`The volume type ${type.id} is a default volume type and cannot be deleted.`)
      if (await tx.selectFrom('volumes').select('id').where('volume_type_id', '=', type.id).executeTakeFirst()) {
        throw badRequest(`Target volume type is still in use: volumes of type ${type.name} exist.`)
      }
      // A group names its volume types (a JSON list of ids): a type a group lists must stay, as in Cinder.
      if (await tx.selectFrom('volume_groups').select('id').where('volume_type_ids', 'like', `%"${type.id}"%`).executeTakeFirst()) {
        throw badRequest(`Target volume type is still in use: groups with volume type ${type.name} exist; delete them first.`)
      }
      await tx.deleteFrom('volume_type_access').where('volume_type_id', '=', type.id).execute()
      await tx.deleteFrom('volume_type_encryption').where('volume_type_id', '=', type.id).execute()
      await tx.deleteFrom('volume_types').where('id', '=', type.id).execute()
    })
  }

  /** The type a caller's volumes get without one: their project's default (3.62), else the configured default. */
  async getDefault(principal: Principal): Promise<VolumeTypeRecord> {
    const own = await projectDefaultTypeId(this.store.db, accessOf(principal).projectId)
    if (own !== undefined) return resolveType(this.store.db, own)
    const row = await this.store.db.selectFrom('volume_types').selectAll().where('name', '=', this.defaultName).executeTakeFirstOrThrow()
    return rowToType(row)
  }
}

/** The principal's project (a token of another scope is granted nothing) and whether every private type exists for them. */
function accessOf(principal: Principal): TypeAccess {
  return { projectId: projectOf(principal) ?? '', seesPrivate: allows(volumePolicy, 'type:private:see', principal) }
}
