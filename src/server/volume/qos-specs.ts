/**
 * Cinder's QoS specs (docs/block-storage.md, "QoS specs"): named sets of limits an admin associates with volume
 * types, at most one set per type. `consumer` says who applies them: `front-end` (the hypervisor throttles the
 * attached disk: `frontEndThrottle` hands the limits to the attach, and the QEMU driver sets them on the guest's
 * disk), `back-end` (the storage backend; pcc's backends have no such limits, so these are kept, not applied) or
 * `both`. Limits change nothing on a disk already attached: they are read when a volume is connected to a guest.
 */
import { randomUUID } from 'node:crypto'
import { VOLUME_THROTTLE_KEYS, type VolumeThrottle, type VolumeThrottleKey } from '../../contracts/host/compute-driver.js'
import { badRequest, conflict, notFound } from '../../contracts/errors.js'
import type { Principal } from '../auth/principal.js'
import { authorize } from '../policy/rules.js'
import { volumePolicy } from '../policy/volume.policy.js'
import { isUniqueViolation } from '../storage/errors.js'
import type { Db, Store } from '../storage/store.js'
import type { VolumeQosSpecsTable } from '../storage/tables/volume.js'
import { resolveType } from './repo.js'

export const QOS_CONSUMERS = ['front-end', 'back-end', 'both'] as const
export type QosConsumer = (typeof QOS_CONSUMERS)[number]
/** Cinder's default when a create names no consumer. */
const DEFAULT_CONSUMER: QosConsumer = 'back-end'
/** The consumers whose limits the hypervisor applies. */
const FRONT_END: readonly string[] = ['front-end', 'both']
/** QEMU's largest throttling value (THROTTLE_VALUE_MAX); a larger one would fail the attach, so it fails here. */
const THROTTLE_VALUE_MAX = 1e15

export interface QosSpecs {
  id: string
  name: string
  consumer: QosConsumer
  specs: Record<string, string>
}

export interface QosAssociation {
  association_type: 'volume_type'
  id: string
  name: string
}

function rowToQos(row: VolumeQosSpecsTable): QosSpecs {
  return { id: row.id, name: row.name, consumer: row.consumer as QosConsumer, specs: JSON.parse(row.specs) as Record<string, string> }
}

function isThrottleKey(key: string): key is VolumeThrottleKey {
  return (VOLUME_THROTTLE_KEYS as readonly string[]).includes(key)
}

function consumerOf(value: string): QosConsumer {
  if (!(QOS_CONSUMERS as readonly string[]).includes(value)) throw badRequest(`Invalid input received: Valid consumer of QoS specs are: ${QOS_CONSUMERS.join(', ')}`)
  return value as QosConsumer
}

/**
 * The limits of specs as the hypervisor takes them (zero is no limit), or a 400 naming what QEMU would refuse:
 * a limit that is not a whole number, a total with its read or write limit, a burst without its rate or below it.
 */
export function throttleOf(specs: Record<string, string>): VolumeThrottle {
  const throttle: VolumeThrottle = {}
  for (const [key, raw] of Object.entries(specs)) {
    if (!isThrottleKey(key)) continue
    if (!/^\d+$/.test(raw) || Number(raw) > THROTTLE_VALUE_MAX) throw badRequest(`Invalid input received: QoS spec ${key} must be a whole number from 0 to ${THROTTLE_VALUE_MAX}, not '${raw}'.`)
    if (Number(raw) > 0) throttle[key] = Number(raw)
  }
  for (const unit of ['bytes', 'iops'] as const) {
    if (throttle[`total_${unit}_sec`] !== undefined && (throttle[`read_${unit}_sec`] !== undefined || throttle[`write_${unit}_sec`] !== undefined)) {
      throw badRequest(`Invalid input received: QoS spec total_${unit}_sec cannot be combined with read_${unit}_sec or write_${unit}_sec.`)
    }
    for (const way of ['total', 'read', 'write'] as const) {
      const rate = throttle[`${way}_${unit}_sec`]
      const burst = throttle[`${way}_${unit}_sec_max`]
      if (burst !== undefined && (rate === undefined || burst < rate)) throw badRequest(`Invalid input received: QoS spec ${way}_${unit}_sec_max needs ${way}_${unit}_sec, and may not be below it.`)
    }
  }
  return throttle
}

/** The limits a hypervisor holds an attached volume to: its type's specs when they are front-end (or both). */
export async function frontEndThrottle(db: Db, volumeId: string): Promise<VolumeThrottle | undefined> {
  const row = await db
    .selectFrom('volumes')
    .innerJoin('volume_types', 'volume_types.id', 'volumes.volume_type_id')
    .innerJoin('volume_qos_specs', 'volume_qos_specs.id', 'volume_types.qos_specs_id')
    .select(['volume_qos_specs.consumer', 'volume_qos_specs.specs'])
    .where('volumes.id', '=', volumeId)
    .executeTakeFirst()
  if (!row || !FRONT_END.includes(row.consumer)) return undefined
  const throttle = throttleOf(JSON.parse(row.specs) as Record<string, string>)
  return Object.keys(throttle).length > 0 ? throttle : undefined
}

export class QosSpecsService {
  constructor(private readonly store: Store) {}

  async list(principal: Principal): Promise<QosSpecs[]> {
    authorize(volumePolicy, 'qos:get', principal)
    const rows = await this.store.db.selectFrom('volume_qos_specs').selectAll().orderBy('created_at').orderBy('id').execute()
    return rows.map(rowToQos)
  }

  async get(principal: Principal, id: string): Promise<QosSpecs> {
    authorize(volumePolicy, 'qos:get', principal)
    return this.find(this.store.db, id)
  }

  /** A new set; `consumer` is taken out of the specs (as Cinder does), every other key is a spec. */
  async create(principal: Principal, name: string, body: Record<string, string | undefined>): Promise<QosSpecs> {
    authorize(volumePolicy, 'qos:manage', principal)
    const trimmed = name.trim()
    if (trimmed === '' || trimmed.length > 255) throw badRequest('Invalid input received: QoS specs name must be 1 to 255 characters.')
    const { consumer = DEFAULT_CONSUMER, ...given } = body
    const specs = Object.fromEntries(Object.entries(given).filter((e): e is [string, string] => e[1] !== undefined))
    const qos: QosSpecs = { id: randomUUID(), name: trimmed, consumer: consumerOf(consumer), specs }
    throttleOf(specs)
    const exists = () => conflict(`QoS Specs ${trimmed} already exists.`)
    try {
      await this.store.db.transaction().execute(async (tx) => {
        if (await tx.selectFrom('volume_qos_specs').select('id').where('name', '=', trimmed).executeTakeFirst()) throw exists()
        await tx.insertInto('volume_qos_specs').values({ id: qos.id, name: qos.name, consumer: qos.consumer, specs: JSON.stringify(specs), created_at: Date.now() }).execute()
      })
    } catch (err) {
      // Two creates of one name at once: the second meets the unique index.
      if (isUniqueViolation(err)) throw exists()
      throw err
    }
    return qos
  }

  /** Sets keys (a `consumer` key changes the consumer); the others stay. */
  async setKeys(principal: Principal, id: string, body: Record<string, string>): Promise<void> {
    authorize(volumePolicy, 'qos:manage', principal)
    await this.store.db.transaction().execute(async (tx) => {
      const qos = await this.find(tx, id)
      const { consumer, ...specs } = body
      const next = { ...qos.specs, ...specs }
      throttleOf(next)
      await tx
        .updateTable('volume_qos_specs')
        .set({ specs: JSON.stringify(next), ...(consumer !== undefined ? { consumer: consumerOf(consumer) } : {}) })
        .where('id', '=', qos.id)
        .execute()
    })
  }

  /** Removes keys; one that the set lacks is a 404 and removes nothing. */
  async deleteKeys(principal: Principal, id: string, keys: string[]): Promise<void> {
    authorize(volumePolicy, 'qos:manage', principal)
    await this.store.db.transaction().execute(async (tx) => {
      const qos = await this.find(tx, id)
      const missing = keys.find((k) => !(k in qos.specs))
      if (missing !== undefined) throw notFound(`QoS spec ${missing} is not found in QoS specs ${qos.id}.`)
      const next = Object.fromEntries(Object.entries(qos.specs).filter(([k]) => !keys.includes(k)))
      await tx.updateTable('volume_qos_specs').set({ specs: JSON.stringify(next) }).where('id', '=', qos.id).execute()
    })
  }

  /** Deletes a set; one still associated with a type is refused unless forced, which disassociates it first. */
  async delete(principal: Principal, id: string, force: boolean): Promise<void> {
    authorize(volumePolicy, 'qos:manage', principal)
    await this.store.db.transaction().execute(async (tx) => {
      const qos = await this.find(tx, id)
      const used = await tx.selectFrom('volume_types').select('id').where('qos_specs_id', '=', qos.id).executeTakeFirst()
      if (used && !force) throw badRequest('QoS specs still in use.')
      await tx.updateTable('volume_types').set({ qos_specs_id: null }).where('qos_specs_id', '=', qos.id).execute()
      await tx.deleteFrom('volume_qos_specs').where('id', '=', qos.id).execute()
    })
  }

  async associations(principal: Principal, id: string): Promise<QosAssociation[]> {
    authorize(volumePolicy, 'qos:get', principal)
    const qos = await this.find(this.store.db, id)
    const types = await this.store.db.selectFrom('volume_types').select(['id', 'name']).where('qos_specs_id', '=', qos.id).orderBy('name').execute()
    return types.map((t) => ({ association_type: 'volume_type', id: t.id, name: t.name }))
  }

  /** Associates a type with the set; a type associated with another set is refused (disassociate it first). */
  async associate(principal: Principal, id: string, typeId: string | undefined): Promise<void> {
    authorize(volumePolicy, 'qos:manage', principal)
    await this.store.db.transaction().execute(async (tx) => {
      const qos = await this.find(tx, id)
      const type = await this.typeOf(tx, typeId)
      if (type.qosSpecsId !== null && type.qosSpecsId !== qos.id) throw badRequest(`Invalid volume type: Type ${type.id} is already associated with another qos specs: ${type.qosSpecsId}`)
      await tx.updateTable('volume_types').set({ qos_specs_id: qos.id }).where('id', '=', type.id).execute()
    })
  }

  /** Takes the set from a type; a type it is not associated with stays as it is (Cinder answers 202 too). */
  async disassociate(principal: Principal, id: string, typeId: string | undefined): Promise<void> {
    authorize(volumePolicy, 'qos:manage', principal)
    await this.store.db.transaction().execute(async (tx) => {
      const qos = await this.find(tx, id)
      const type = await this.typeOf(tx, typeId)
      await tx.updateTable('volume_types').set({ qos_specs_id: null }).where('id', '=', type.id).where('qos_specs_id', '=', qos.id).execute()
    })
  }

  async disassociateAll(principal: Principal, id: string): Promise<void> {
    authorize(volumePolicy, 'qos:manage', principal)
    await this.store.db.transaction().execute(async (tx) => {
      const qos = await this.find(tx, id)
      await tx.updateTable('volume_types').set({ qos_specs_id: null }).where('qos_specs_id', '=', qos.id).execute()
    })
  }

  private async find(db: Db, id: string): Promise<QosSpecs> {
    const row = await db.selectFrom('volume_qos_specs').selectAll().where('id', '=', id).executeTakeFirst()
    if (!row) throw notFound(`QoS specs ${id} could not be found.`)
    return rowToQos(row)
  }

  /** The type of `vol_type_id` (by id only, as Cinder looks it up). */
  private async typeOf(db: Db, typeId: string | undefined) {
    if (!typeId) throw badRequest('Volume Type id must not be None.')
    const type = await resolveType(db, typeId).catch(() => undefined)
    if (!type || type.id !== typeId) throw notFound(`Volume type ${typeId} could not be found.`)
    return type
  }
}
