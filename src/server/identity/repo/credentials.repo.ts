/** Credentials a user owns (e.g. TOTP seeds); the blob column holds the sealed value, never the plain one. */
import type { CredentialTable } from '../../storage/tables/identity-auth.js'
import type { Db } from '../../storage/store.js'

export type CredentialRow = CredentialTable

/** The columns a credential update may change. */
export type CredentialChange = Pick<CredentialRow, 'type' | 'user_id' | 'project_id' | 'blob'>

export interface CredentialFilter {
  userId?: string
  type?: string
  /** Only this user's credentials: set when the caller may list just its own. */
  ownerId?: string
}

/** Credentials matching every filter given, oldest first. */
export async function listCredentials(db: Db, filter: CredentialFilter): Promise<CredentialRow[]> {
  let q = db.selectFrom('credentials').selectAll().orderBy('created_at', 'asc')
  if (filter.userId) q = q.where('user_id', '=', filter.userId)
  if (filter.type) q = q.where('type', '=', filter.type)
  if (filter.ownerId !== undefined) q = q.where('user_id', '=', filter.ownerId)
  return q.execute()
}

export async function findCredential(db: Db, id: string): Promise<CredentialRow | undefined> {
  return db.selectFrom('credentials').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function insertCredential(db: Db, row: CredentialRow): Promise<void> {
  await db.insertInto('credentials').values(row).execute()
}

export async function updateCredential(db: Db, id: string, change: CredentialChange): Promise<void> {
  await db.updateTable('credentials').set({ type: change.type, user_id: change.user_id, project_id: change.project_id, blob: change.blob }).where('id', '=', id).execute()
}

export async function deleteCredential(db: Db, id: string): Promise<void> {
  await db.deleteFrom('credentials').where('id', '=', id).execute()
}

/** The user's TOTP credentials: their ids and sealed seeds (totp-factor.ts opens them). */
export async function listUserTotpSeeds(db: Db, userId: string): Promise<Pick<CredentialRow, 'id' | 'blob'>[]> {
  return db.selectFrom('credentials').select(['id', 'blob']).where('user_id', '=', userId).where('type', '=', 'totp').execute()
}

/**
 * Records `step` as the credential's last accepted TOTP step unless it, or a newer one, already is: true when this
 * call recorded it. One conditional UPDATE, so of two callers claiming the same step exactly one wins.
 */
export async function claimTotpStep(db: Db, credentialId: string, step: number): Promise<boolean> {
  const result = await db
    .updateTable('credentials')
    .set({ totp_last_step: step })
    .where('id', '=', credentialId)
    .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
    .executeTakeFirst()
  return Number(result.numUpdatedRows) === 1
}
