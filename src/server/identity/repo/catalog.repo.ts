/** The service catalog records: regions (a tree), services and their endpoints. */
import { badRequest, conflict, notFound } from '../../../contracts/errors.js'
import type { EndpointTable, RegionTable, ServiceTable } from '../../storage/tables/identity.js'
import type { Db } from '../../storage/store.js'
import { newIdentityId } from './write.js'

export type RegionRow = RegionTable
export type ServiceRow = ServiceTable
export type EndpointRow = EndpointTable

export async function listRegions(db: Db, filter: { parentRegionId?: string }): Promise<RegionRow[]> {
  let q = db.selectFrom('regions').selectAll()
  if (filter.parentRegionId !== undefined) q = q.where('parent_region_id', '=', filter.parentRegionId)
  return q.orderBy('id').execute()
}

export async function getRegion(db: Db, id: string): Promise<RegionRow> {
  const row = await db.selectFrom('regions').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw notFound(`Could not find region: ${id}.`)
  return row
}

async function assertRegionRef(db: Db, id: string | null | undefined, field: string): Promise<void> {
  if (!id) return
  if (!(await db.selectFrom('regions').select('id').where('id', '=', id).executeTakeFirst())) throw badRequest(`Invalid input for field '${field}': could not find region ${id}.`)
}

export async function createRegion(db: Db, input: { id?: string; description?: string | null; parent_region_id?: string | null }): Promise<RegionRow> {
  const id = input.id ?? newIdentityId()
  if (await db.selectFrom('regions').select('id').where('id', '=', id).executeTakeFirst()) throw conflict(`Conflict occurred attempting to store region - Duplicate ID, ${id}.`)
  await assertRegionRef(db, input.parent_region_id, 'parent_region_id')
  const row: RegionRow = { id, description: input.description ?? '', parent_region_id: input.parent_region_id ?? null }
  await db.insertInto('regions').values(row).execute()
  return row
}

export async function updateRegion(db: Db, id: string, input: { description?: string | null; parent_region_id?: string | null }): Promise<RegionRow> {
  const row = await getRegion(db, id)
  if (input.parent_region_id) {
    await assertRegionRef(db, input.parent_region_id, 'parent_region_id')
    // Walk up from the new parent: meeting this region means the change would make a cycle.
    const all = await listRegions(db, {})
    for (let at: string | null = input.parent_region_id; at; at = all.find((r) => r.id === at)?.parent_region_id ?? null) {
      if (at === id) throw badRequest(`Invalid input for field 'parent_region_id': region ${id} cannot be its own ancestor.`)
    }
  }
  const next: RegionRow = {
    ...row,
    description: input.description === undefined ? row.description : (input.description ?? ''),
    parent_region_id: input.parent_region_id === undefined ? row.parent_region_id : input.parent_region_id,
  }
  await db.updateTable('regions').set(next).where('id', '=', id).execute()
  return next
}

/** A region still used by child regions or endpoints stays: 409, so no endpoint is left pointing nowhere. */
export async function deleteRegion(db: Db, id: string): Promise<void> {
  await getRegion(db, id)
  if (await db.selectFrom('regions').select('id').where('parent_region_id', '=', id).executeTakeFirst()) throw conflict(`Region ${id} has child regions; delete them first.`)
  if (await db.selectFrom('endpoints').select('id').where('region_id', '=', id).executeTakeFirst()) throw conflict(`Region ${id} has endpoints; delete or move them first.`)
  await db.deleteFrom('regions').where('id', '=', id).execute()
}

export async function listServices(db: Db, filter: { type?: string; name?: string }): Promise<ServiceRow[]> {
  let q = db.selectFrom('services').selectAll()
  if (filter.type !== undefined) q = q.where('type', '=', filter.type)
  if (filter.name !== undefined) q = q.where('name', '=', filter.name)
  return q.orderBy('type').orderBy('name').execute()
}

export async function servicesById(db: Db): Promise<Map<string, ServiceRow>> {
  return new Map((await listServices(db, {})).map((s) => [s.id, s]))
}

export async function getService(db: Db, id: string): Promise<ServiceRow> {
  const row = await db.selectFrom('services').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw notFound(`Could not find service: ${id}.`)
  return row
}

export async function createService(db: Db, input: { type: string; name?: string; description?: string | null; enabled?: boolean }): Promise<ServiceRow> {
  const row: ServiceRow = { id: newIdentityId(), type: input.type, name: input.name ?? '', description: input.description ?? '', enabled: input.enabled === false ? 0 : 1 }
  await db.insertInto('services').values(row).execute()
  return row
}

export async function updateService(db: Db, id: string, input: { type?: string; name?: string; description?: string | null; enabled?: boolean }): Promise<ServiceRow> {
  const row = await getService(db, id)
  const next: ServiceRow = {
    ...row,
    type: input.type ?? row.type,
    name: input.name ?? row.name,
    description: input.description === undefined ? row.description : (input.description ?? ''),
    enabled: input.enabled === undefined ? row.enabled : input.enabled ? 1 : 0,
  }
  await db.updateTable('services').set(next).where('id', '=', id).execute()
  return next
}

/** Deleting a service deletes its endpoints, as Keystone does. */
export async function deleteService(db: Db, id: string): Promise<void> {
  await getService(db, id)
  await db.deleteFrom('endpoints').where('service_id', '=', id).execute()
  await db.deleteFrom('services').where('id', '=', id).execute()
}

export async function listEndpoints(db: Db, filter: { serviceId?: string; interface?: string; regionId?: string }): Promise<EndpointRow[]> {
  let q = db.selectFrom('endpoints').selectAll()
  if (filter.serviceId !== undefined) q = q.where('service_id', '=', filter.serviceId)
  if (filter.interface !== undefined) q = q.where('interface', '=', filter.interface as EndpointRow['interface'])
  if (filter.regionId !== undefined) q = q.where('region_id', '=', filter.regionId)
  return q.orderBy('service_id').orderBy('interface').orderBy('id').execute()
}

export async function getEndpoint(db: Db, id: string): Promise<EndpointRow> {
  const row = await db.selectFrom('endpoints').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw notFound(`Could not find endpoint: ${id}.`)
  return row
}

export interface EndpointInput {
  service_id?: string
  interface?: EndpointRow['interface']
  region_id?: string | null
  /** The v2-era name of region_id, still sent by Tempest and old clients; region_id wins when both are given. */
  region?: string | null
  url?: string
  enabled?: boolean
}

async function assertServiceRef(db: Db, id: string): Promise<void> {
  if (!(await db.selectFrom('services').select('id').where('id', '=', id).executeTakeFirst())) throw badRequest(`Invalid input for field 'service_id': could not find service ${id}.`)
}

/**
 * The region an endpoint names (region_id, or the legacy region), created when it does not exist yet: Keystone
 * does the same, so an operator can register endpoints of a new region in one step. Undefined: not named.
 */
async function endpointRegion(db: Db, input: EndpointInput): Promise<string | null | undefined> {
  const id = input.region_id !== undefined ? input.region_id : input.region
  if (id && !(await db.selectFrom('regions').select('id').where('id', '=', id).executeTakeFirst())) {
    await db.insertInto('regions').values({ id, description: '', parent_region_id: null }).execute()
  }
  return id
}

export async function createEndpoint(db: Db, input: Required<Pick<EndpointInput, 'service_id' | 'interface' | 'url'>> & EndpointInput): Promise<EndpointRow> {
  await assertServiceRef(db, input.service_id)
  const regionId = await endpointRegion(db, input)
  const row: EndpointRow = { id: newIdentityId(), service_id: input.service_id, interface: input.interface, region_id: regionId ?? null, url: input.url, enabled: input.enabled === false ? 0 : 1 }
  await db.insertInto('endpoints').values(row).execute()
  return row
}

export async function updateEndpoint(db: Db, id: string, input: EndpointInput): Promise<EndpointRow> {
  const row = await getEndpoint(db, id)
  if (input.service_id !== undefined) await assertServiceRef(db, input.service_id)
  const regionId = await endpointRegion(db, input)
  const next: EndpointRow = {
    ...row,
    service_id: input.service_id ?? row.service_id,
    interface: input.interface ?? row.interface,
    region_id: regionId === undefined ? row.region_id : regionId,
    url: input.url ?? row.url,
    enabled: input.enabled === undefined ? row.enabled : input.enabled ? 1 : 0,
  }
  await db.updateTable('endpoints').set(next).where('id', '=', id).execute()
  return next
}

export async function deleteEndpoint(db: Db, id: string): Promise<void> {
  await getEndpoint(db, id)
  await db.deleteFrom('endpoints').where('id', '=', id).execute()
}
