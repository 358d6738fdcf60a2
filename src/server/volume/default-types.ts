/**
 * Projects' default volume types (Cinder's default-types API, microversion 3.62; docs/block-storage.md, "Default
 * volume types"). An admin sets one type a project; a volume the project creates without a type (and not inheriting
 * one from its source) is of it, and `/types/default` answers it to the project's members, before the configured
 * default. A type that is some project's default cannot be deleted (types.ts asks `projectsDefaultingTo`).
 */
import { badRequest, notFound } from '../../contracts/errors.js'
import type { Principal } from '../auth/principal.js'
import { projectExists } from '../compute/quotas.js'
import { authorize } from '../policy/rules.js'
import { volumePolicy } from '../policy/volume.policy.js'
import type { Db, Store } from '../storage/store.js'
import { resolveType } from './repo.js'

export interface DefaultTypeRecord {
  projectId: string
  volumeTypeId: string
}

/** The type a project's volumes get when they name none, or undefined when the project has no default of its own. */
export async function projectDefaultTypeId(db: Db, projectId: string): Promise<string | undefined> {
  const row = await db.selectFrom('volume_default_types').select('volume_type_id').where('project_id', '=', projectId).executeTakeFirst()
  return row?.volume_type_id
}

/** The projects whose default a type is (a type in this list cannot be deleted). */
export async function projectsDefaultingTo(db: Db, volumeTypeId: string): Promise<string[]> {
  const rows = await db.selectFrom('volume_default_types').select('project_id').where('volume_type_id', '=', volumeTypeId).orderBy('project_id').execute()
  return rows.map((r) => r.project_id)
}

export class DefaultTypeService {
  constructor(private readonly store: Store) {}

  /** Sets (or replaces) a project's default; the type is named by id or name, and one that does not exist is 400, as Cinder. */
  async set(principal: Principal, projectId: string, typeRef: string): Promise<DefaultTypeRecord> {
    authorize(volumePolicy, 'default_type:set', principal)
    await this.knownProject(projectId)
    const type = await resolveType(this.store.db, typeRef).catch((err: unknown) => {
      throw badRequest(err instanceof Error ? err.message : `Volume type ${typeRef} could not be found.`)
    })
    const now = Date.now()
    await this.store.db
      .insertInto('volume_default_types')
      .values({ project_id: projectId, volume_type_id: type.id, created_at: now, updated_at: now })
      .onConflict((oc) => oc.column('project_id').doUpdateSet({ volume_type_id: type.id, updated_at: now }))
      .execute()
    return { projectId, volumeTypeId: type.id }
  }

  async get(principal: Principal, projectId: string): Promise<DefaultTypeRecord> {
    authorize(volumePolicy, 'default_type:get', principal)
    await this.knownProject(projectId)
    const volumeTypeId = await projectDefaultTypeId(this.store.db, projectId)
    if (volumeTypeId === undefined) throw notFound(`Default type for project ${projectId} not found.`)
    return { projectId, volumeTypeId }
  }

  async list(principal: Principal): Promise<DefaultTypeRecord[]> {
    authorize(volumePolicy, 'default_type:get_all', principal)
    const rows = await this.store.db.selectFrom('volume_default_types').select(['project_id', 'volume_type_id']).orderBy('project_id').execute()
    return rows.map((r) => ({ projectId: r.project_id, volumeTypeId: r.volume_type_id }))
  }

  /** Unsets a project's default: its volumes get the configured default again. Unsetting none is no error (Cinder's 204). */
  async unset(principal: Principal, projectId: string): Promise<void> {
    authorize(volumePolicy, 'default_type:unset', principal)
    await this.knownProject(projectId)
    await this.store.db.deleteFrom('volume_default_types').where('project_id', '=', projectId).execute()
  }

  /** Cinder asks Keystone for the project first: an unknown one is 404 (and gets no row). */
  private async knownProject(projectId: string): Promise<void> {
    if (!(await projectExists(this.store.db, projectId))) throw notFound(`Project with id ${projectId} not found.`)
  }
}
