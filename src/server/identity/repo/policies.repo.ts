/** Policy blobs (Keystone's /v3/policies): an opaque blob of a type, with extra attributes. */
import { notFound } from '../../../contracts/errors.js'
import type { PolicyBlobTable } from '../../storage/tables/identity.js'
import type { Db } from '../../storage/store.js'
import { type Extra, newIdentityId } from './write.js'

export type PolicyBlobRow = PolicyBlobTable

export async function listPolicyBlobs(db: Db, filter: { type?: string }): Promise<PolicyBlobRow[]> {
  let q = db.selectFrom('policies').selectAll()
  if (filter.type !== undefined) q = q.where('type', '=', filter.type)
  return q.orderBy('created_at', 'asc').orderBy('id', 'asc').execute()
}

export async function getPolicyBlob(db: Db, id: string): Promise<PolicyBlobRow> {
  const row = await db.selectFrom('policies').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw notFound(`Could not find policy: ${id}.`)
  return row
}

export async function createPolicyBlob(db: Db, input: { type: string; blob: string; extra: Extra }, now: number): Promise<PolicyBlobRow> {
  const row: PolicyBlobRow = { id: newIdentityId(), type: input.type, blob: input.blob, extra: JSON.stringify(input.extra), created_at: now }
  await db.insertInto('policies').values(row).execute()
  return row
}

/** Sets the fields given; extra attributes given replace those of the same name. */
export async function updatePolicyBlob(db: Db, id: string, input: { type?: string; blob?: string; extra: Extra }): Promise<PolicyBlobRow> {
  const row = await getPolicyBlob(db, id)
  const next: PolicyBlobRow = { ...row, type: input.type ?? row.type, blob: input.blob ?? row.blob, extra: JSON.stringify({ ...(JSON.parse(row.extra) as Extra), ...input.extra }) }
  await db.updateTable('policies').set(next).where('id', '=', id).execute()
  return next
}

export async function deletePolicyBlob(db: Db, id: string): Promise<void> {
  await getPolicyBlob(db, id)
  await db.deleteFrom('policies').where('id', '=', id).execute()
}
