/**
 * Group types (Cinder 3.11+): what kind of group a generic volume group is, with `group_specs` as volume types
 * have extra specs. Admins manage them; everyone lists and shows the public ones (a private one exists for
 * admins only: pcc has no group type access grants). A type some group has cannot be deleted.
 */
import { randomUUID } from 'node:crypto'
import { badRequest, conflict, notFound } from '../../contracts/errors.js'
import type { Principal } from '../auth/principal.js'
import { allows, authorize } from '../policy/rules.js'
import { volumePolicy } from '../policy/volume.policy.js'
import { isUniqueViolation } from '../storage/errors.js'
import type { Db, Store } from '../storage/store.js'
import type { VolumeGroupTypeTable } from '../storage/tables/volume-groups.js'
import { page, type PageQuery, type SortKeys } from './listing.js'

export interface GroupTypeRecord {
  id: string
  name: string
  description: string | null
  isPublic: boolean
  groupSpecs: Record<string, string>
  createdAt: number
}

function rowToGroupType(row: VolumeGroupTypeTable): GroupTypeRecord {
  return { id: row.id, name: row.name, description: row.description, isPublic: row.is_public === 1, groupSpecs: JSON.parse(row.group_specs) as Record<string, string>, createdAt: Number(row.created_at) }
}

const GROUP_TYPE_SORT_KEYS: SortKeys<GroupTypeRecord> = {
  id: (t) => t.id,
  name: (t) => t.name,
  description: (t) => t.description,
  is_public: (t) => Number(t.isPublic),
  created_at: (t) => t.createdAt,
}

/** Which group types a list shows: the public ones, the private ones, or all (`is_public=None`, admins only). */
export type PublicFilter = 'public' | 'private' | 'all'

/** A group type by id, as the caller may see it: a private one exists only for who sees private group types. */
export async function findGroupType(db: Db, id: string, seesPrivate: boolean): Promise<GroupTypeRecord> {
  const row = await db.selectFrom('volume_group_types').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row || (row.is_public === 0 && !seesPrivate)) throw notFound(`Group type with id ${id} could not be found.`)
  return rowToGroupType(row)
}

export class GroupTypeService {
  constructor(private readonly store: Store) {}

  /** Cinder: only admins choose what `is_public` shows; everyone else (and an admin who does not say) sees the public ones. */
  async list(principal: Principal, filter: PublicFilter, query: PageQuery): Promise<GroupTypeRecord[]> {
    authorize(volumePolicy, 'group_type:get', principal)
    const shown = allows(volumePolicy, 'group_type:private:see', principal) ? filter : 'public'
    let q = this.store.db.selectFrom('volume_group_types').selectAll()
    if (shown !== 'all') q = q.where('is_public', '=', shown === 'public' ? 1 : 0)
    return page((await q.execute()).map(rowToGroupType), query, GROUP_TYPE_SORT_KEYS, 'group type')
  }

  async get(principal: Principal, id: string): Promise<GroupTypeRecord> {
    authorize(volumePolicy, 'group_type:get', principal)
    return findGroupType(this.store.db, id, allows(volumePolicy, 'group_type:private:see', principal))
  }

  async create(principal: Principal, input: { name: string; description?: string | null; isPublic?: boolean; groupSpecs?: Record<string, string> }): Promise<GroupTypeRecord> {
    authorize(volumePolicy, 'group_type:manage', principal)
    const name = input.name.trim()
    if (name === '') throw badRequest('Invalid input received: Group type name can not be empty.')
    const row: VolumeGroupTypeTable = {
      id: randomUUID(),
      name,
      description: input.description ?? null,
      is_public: input.isPublic === false ? 0 : 1,
      group_specs: JSON.stringify(input.groupSpecs ?? {}),
      created_at: Date.now(),
    }
    const exists = () => conflict(`Group Type ${name} already exists.`)
    try {
      await this.store.db.transaction().execute(async (tx) => {
        if (await tx.selectFrom('volume_group_types').select('id').where('name', '=', name).executeTakeFirst()) throw exists()
        await tx.insertInto('volume_group_types').values(row).execute()
      })
    } catch (err) {
      // Two creates of one name at once: the second meets the unique index.
      if (isUniqueViolation(err)) throw exists()
      throw err
    }
    return rowToGroupType(row)
  }

  async update(principal: Principal, id: string, input: { name?: string; description?: string | null; isPublic?: boolean }): Promise<GroupTypeRecord> {
    authorize(volumePolicy, 'group_type:manage', principal)
    if (input.name === undefined && input.description === undefined && input.isPublic === undefined) {
      throw badRequest('Specify group type name, description or a combination thereof.')
    }
    const name = input.name?.trim()
    if (name === '') throw badRequest('Invalid input received: Group type name can not be empty.')
    try {
      return await this.store.db.transaction().execute(async (tx) => {
        await findGroupType(tx, id, true)
        if (name !== undefined && (await tx.selectFrom('volume_group_types').select('id').where('name', '=', name).where('id', '!=', id).executeTakeFirst())) {
          throw conflict(`Group Type ${name} already exists.`)
        }
        await tx
          .updateTable('volume_group_types')
          .set({
            ...(name !== undefined ? { name } : {}),
            ...(input.description !== undefined ? { description: input.description } : {}),
            ...(input.isPublic !== undefined ? { is_public: input.isPublic ? 1 : 0 } : {}),
          })
          .where('id', '=', id)
          .execute()
        return findGroupType(tx, id, true)
      })
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`Group Type ${name} already exists.`)
      throw err
    }
  }

  /** A group type some group (of any project) has stays: Cinder's GroupTypeInUse. */
  async delete(principal: Principal, id: string): Promise<void> {
    authorize(volumePolicy, 'group_type:manage', principal)
    await this.store.db.transaction().execute(async (tx) => {
      await findGroupType(tx, id, true)
      const used = await tx.selectFrom('volume_groups').select('id').where('group_type_id', '=', id).executeTakeFirst()
      if (used) throw badRequest(`Group Type ${id} deletion is not allowed with groups present with the type.`)
      await tx.deleteFrom('volume_group_types').where('id', '=', id).execute()
    })
  }

  /** The group specs (admins only, as Cinder's group:group_types_specs). */
  async specs(principal: Principal, id: string): Promise<Record<string, string>> {
    authorize(volumePolicy, 'group_type:manage', principal)
    return (await findGroupType(this.store.db, id, true)).groupSpecs
  }

  /** One spec; a key the type lacks is 404. */
  async spec(principal: Principal, id: string, key: string): Promise<string> {
    const specs = await this.specs(principal, id)
    if (!(key in specs)) throw notFound(`Group Type ${id} has no specs with key ${key}.`)
    return specs[key]
  }

  /** Sets specs (merged into the type's). */
  async setSpecs(principal: Principal, id: string, specs: Record<string, string>): Promise<void> {
    authorize(volumePolicy, 'group_type:manage', principal)
    await this.changeSpecs(id, (current) => ({ ...current, ...specs }))
  }

  async deleteSpec(principal: Principal, id: string, key: string): Promise<void> {
    authorize(volumePolicy, 'group_type:manage', principal)
    await this.changeSpecs(id, (current) => {
      if (!(key in current)) throw notFound(`Group Type ${id} has no specs with key ${key}.`)
      const next = { ...current }
      delete next[key]
      return next
    })
  }

  private async changeSpecs(id: string, change: (current: Record<string, string>) => Record<string, string>): Promise<void> {
    await this.store.db.transaction().execute(async (tx) => {
      const type = await findGroupType(tx, id, true)
      await tx.updateTable('volume_group_types').set({ group_specs: JSON.stringify(change(type.groupSpecs)) }).where('id', '=', id).execute()
    })
  }
}
