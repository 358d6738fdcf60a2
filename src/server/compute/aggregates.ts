/**
 * Host aggregates (docs/compute.md, "Host aggregates and availability zones"): named groups of hosts with
 * metadata. The `availability_zone` key of an aggregate is the zone of its hosts; a host in no such aggregate is
 * in its own default zone (the zone it registered with, `nova` unless told otherwise). Nova's rules on zones are
 * kept: a host is in one zone at most, and a zone whose hosts run servers does not change under them.
 */
import { randomUUID } from 'node:crypto'
import { badRequest, conflict, notFound } from '../../contracts/errors.js'
import type { Db } from '../storage/store.js'
import type { AggregateTable } from '../storage/tables/compute.js'
import { isUniqueViolation } from '../storage/errors.js'
import { nextId } from '../storage/sequences.js'

/** The metadata key that makes an aggregate an availability zone. */
export const AZ_KEY = 'availability_zone'
/** Nova's zone of the services that are not compute: no aggregate may take its name. */
const INTERNAL_ZONE = 'internal'

export interface Aggregate extends AggregateTable {
  hosts: string[]
  metadata: Record<string, string>
}

export const zoneOf = (a: Aggregate): string | null => a.metadata[AZ_KEY] ?? null

/** Every aggregate with its hosts and metadata, by id. */
export async function listAggregates(db: Db): Promise<Aggregate[]> {
  const [rows, hosts, meta] = await Promise.all([
    db.selectFrom('aggregates').selectAll().orderBy('id').execute(),
    db.selectFrom('aggregate_hosts').selectAll().orderBy('host').execute(),
    db.selectFrom('aggregate_metadata').selectAll().orderBy('key').execute(),
  ])
  return rows.map((r) => ({
    ...r,
    id: Number(r.id),
    hosts: hosts.filter((h) => Number(h.aggregate_id) === Number(r.id)).map((h) => h.host),
    metadata: Object.fromEntries(meta.filter((m) => Number(m.aggregate_id) === Number(r.id)).map((m) => [m.key, m.value])),
  }))
}

export async function findAggregate(db: Db, raw: string): Promise<Aggregate> {
  const id = /^\d{1,9}$/.test(raw) ? Number(raw) : NaN
  const found = (await listAggregates(db)).find((a) => a.id === id)
  if (!found) throw notFound(`Aggregate ${raw} could not be found.`)
  return found
}

/** The zone of each host by hostname: its aggregate's zone, or the zone it registered with. */
export async function hostZones(db: Db): Promise<Map<string, string>> {
  const [hosts, aggregates] = await Promise.all([db.selectFrom('hosts').select(['hostname', 'availability_zone']).execute(), listAggregates(db)])
  return zonesOf(hosts, aggregates)
}

/** hostZones over rows already read (the scheduler reads hosts and aggregates once per view). */
export function zonesOf(hosts: { hostname: string; availability_zone: string }[], aggregates: Aggregate[]): Map<string, string> {
  const zones = new Map(hosts.map((h) => [h.hostname, h.availability_zone]))
  for (const a of aggregates) {
    const zone = zoneOf(a)
    if (zone) for (const h of a.hosts) if (zones.has(h)) zones.set(h, zone)
  }
  return zones
}

/** The metadata of the aggregates each host is in, merged (for AggregateInstanceExtraSpecsFilter). */
export function hostAggregateMetadata(aggregates: Aggregate[]): Map<string, Record<string, string[]>> {
  const out = new Map<string, Record<string, string[]>>()
  for (const a of aggregates) {
    for (const h of a.hosts) {
      const merged = out.get(h) ?? {}
      for (const [k, v] of Object.entries(a.metadata)) merged[k] = [...(merged[k] ?? []), v]
      out.set(h, merged)
    }
  }
  return out
}

function checkZoneName(zone: string | null | undefined): void {
  if (zone === INTERNAL_ZONE) throw badRequest(`Aggregate's availability zone cannot be the internal zone ${INTERNAL_ZONE}.`)
}

export async function createAggregate(db: Db, name: string, zone: string | null): Promise<Aggregate> {
  checkZoneName(zone)
  try {
    const id = await db.transaction().execute(async (tx) => {
      if (await tx.selectFrom('aggregates').select('id').where('name', '=', name).executeTakeFirst()) throw conflict(`Aggregate ${name} already exists.`)
      const id = await nextId(tx, 'aggregates')
      await tx.insertInto('aggregates').values({ id, uuid: randomUUID(), name, created_at: Date.now(), updated_at: null }).execute()
      if (zone) await tx.insertInto('aggregate_metadata').values({ aggregate_id: id, key: AZ_KEY, value: zone }).execute()
      return id
    })
    return await findAggregate(db, String(id))
  } catch (err) {
    // Two creates of one name at once: the unique name decides.
    if (isUniqueViolation(err)) throw conflict(`Aggregate ${name} already exists.`)
    throw err
  }
}

/** Changes the name and/or the zone (null removes the zone). */
export async function updateAggregate(db: Db, aggregate: Aggregate, patch: { name?: string; zone?: string | null }): Promise<Aggregate> {
  if (patch.name !== undefined && patch.name !== aggregate.name) {
    const taken = await db.selectFrom('aggregates').select('id').where('name', '=', patch.name).executeTakeFirst()
    if (taken) throw conflict(`Aggregate ${patch.name} already exists.`)
  }
  const metadata: Record<string, string | null> = patch.zone === undefined ? {} : { [AZ_KEY]: patch.zone }
  await checkMetadata(db, aggregate, metadata)
  try {
    await db.transaction().execute(async (tx) => {
      if (patch.name !== undefined) await tx.updateTable('aggregates').set({ name: patch.name }).where('id', '=', aggregate.id).execute()
      await writeMetadata(tx, aggregate.id, metadata)
    })
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`Aggregate ${patch.name} already exists.`)
    throw err
  }
  return findAggregate(db, String(aggregate.id))
}

/** Nova refuses to delete an aggregate that still has hosts. */
export async function deleteAggregate(db: Db, aggregate: Aggregate): Promise<void> {
  if (aggregate.hosts.length > 0) throw badRequest(`Cannot delete aggregate ${aggregate.id}. Reason: Host aggregate is not empty.`)
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('aggregate_metadata').where('aggregate_id', '=', aggregate.id).execute()
    await tx.deleteFrom('aggregates').where('id', '=', aggregate.id).execute()
  })
}

async function knownHost(db: Db, host: string): Promise<void> {
  if (!(await db.selectFrom('hosts').select('id').where('hostname', '=', host).executeTakeFirst())) throw notFound(`Compute host ${host} could not be found.`)
}

export async function addHost(db: Db, aggregate: Aggregate, host: string): Promise<Aggregate> {
  await knownHost(db, host)
  if (aggregate.hosts.includes(host)) throw conflict(`Aggregate ${aggregate.id} already has host ${host}.`)
  const zone = zoneOf(aggregate)
  if (zone) {
    // A host is in one zone: another aggregate may not already put it in a different one.
    const others = (await listAggregates(db)).filter((a) => a.id !== aggregate.id && a.hosts.includes(host) && zoneOf(a) && zoneOf(a) !== zone)
    if (others.length > 0) throw badRequest(`Cannot add host to aggregate ${aggregate.id}. Reason: One or more hosts already in availability zone(s) ${JSON.stringify(others.map(zoneOf))}.`)
  }
  await db.transaction().execute(async (tx) => {
    await tx.insertInto('aggregate_hosts').values({ aggregate_id: aggregate.id, host }).execute()
    await tx.updateTable('aggregates').set({ updated_at: Date.now() }).where('id', '=', aggregate.id).execute()
  })
  return findAggregate(db, String(aggregate.id))
}

export async function removeHost(db: Db, aggregate: Aggregate, host: string): Promise<Aggregate> {
  await knownHost(db, host)
  if (!aggregate.hosts.includes(host)) throw notFound(`Cannot remove host ${host} in aggregate ${aggregate.id}: not found`)
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('aggregate_hosts').where('aggregate_id', '=', aggregate.id).where('host', '=', host).execute()
    await tx.updateTable('aggregates').set({ updated_at: Date.now() }).where('id', '=', aggregate.id).execute()
  })
  return findAggregate(db, String(aggregate.id))
}

/** Sets keys (null removes one); a changed zone follows the zone rules. */
export async function setMetadata(db: Db, aggregate: Aggregate, metadata: Record<string, string | null>): Promise<Aggregate> {
  await checkMetadata(db, aggregate, metadata)
  await db.transaction().execute((tx) => writeMetadata(tx, aggregate.id, metadata))
  return findAggregate(db, String(aggregate.id))
}

async function checkMetadata(db: Db, aggregate: Aggregate, metadata: Record<string, string | null>): Promise<void> {
  if (!(AZ_KEY in metadata)) return
  const zone = metadata[AZ_KEY]
  checkZoneName(zone)
  if (zone === '') throw badRequest(`Aggregate ${aggregate.id}'s availability zone cannot be empty.`)
  if ((zone ?? null) === zoneOf(aggregate) || aggregate.hosts.length === 0) return
  if (zone) {
    const clash = (await listAggregates(db)).filter((a) => a.id !== aggregate.id && zoneOf(a) && zoneOf(a) !== zone && a.hosts.some((h) => aggregate.hosts.includes(h)))
    if (clash.length > 0) throw badRequest(`Cannot update aggregate ${aggregate.id}. Reason: One or more hosts already in availability zone(s) ${JSON.stringify(clash.map(zoneOf))}.`)
  }
  if ((await hostsWithServers(db, aggregate.hosts)).length > 0) {
    throw badRequest(`Cannot update aggregate ${aggregate.id}. Reason: One or more hosts contain servers in this zone.`)
  }
}

async function writeMetadata(tx: Db, aggregateId: number, metadata: Record<string, string | null>): Promise<void> {
  for (const [key, value] of Object.entries(metadata)) {
    await tx.deleteFrom('aggregate_metadata').where('aggregate_id', '=', aggregateId).where('key', '=', key).execute()
    if (value !== null) await tx.insertInto('aggregate_metadata').values({ aggregate_id: aggregateId, key, value }).execute()
  }
  await tx.updateTable('aggregates').set({ updated_at: Date.now() }).where('id', '=', aggregateId).execute()
}

async function hostsWithServers(db: Db, hostnames: string[]): Promise<string[]> {
  if (hostnames.length === 0) return []
  const rows = await db.selectFrom('servers').select('host').distinct().where('host', 'in', hostnames).where('deleted', '=', 0).execute()
  return rows.map((r) => r.host!)
}
