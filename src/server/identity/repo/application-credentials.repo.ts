/** Application credentials: a user's delegated, hashed secrets bound to one project and a subset of its roles. */
import { conflict, notFound } from '../../../contracts/errors.js'
import type { ApplicationCredentialTable } from '../../storage/tables/identity-auth.js'
import type { Db } from '../../storage/store.js'
import { touchIdentity } from '../generation.js'
import { type AccessRuleRequest, resolveAccessRules } from './access-rules.repo.js'

export type ApplicationCredentialRow = ApplicationCredentialTable

/** The user's application credentials by name, optionally just the one with `name`. */
export async function listUserApplicationCredentials(db: Db, userId: string, name?: string): Promise<ApplicationCredentialRow[]> {
  let q = db.selectFrom('application_credentials').selectAll().where('user_id', '=', userId).orderBy('name', 'asc')
  if (name !== undefined) q = q.where('name', '=', name)
  return q.execute()
}

/** One of the user's application credentials, else 404 (another user's does not exist for this one). */
export async function getUserApplicationCredential(db: Db, userId: string, id: string): Promise<ApplicationCredentialRow> {
  const row = await db.selectFrom('application_credentials').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
  if (!row) throw notFound(`Could not find application credential: ${id}.`)
  return row
}

/** An application credential by id, whoever owns it (authentication names it by id alone). */
export async function findApplicationCredential(db: Db, id: string): Promise<ApplicationCredentialRow | undefined> {
  return db.selectFrom('application_credentials').selectAll().where('id', '=', id).executeTakeFirst()
}

/** The user's application credential called `name`, if any. */
export async function findUserApplicationCredentialByName(db: Db, userId: string, name: string): Promise<ApplicationCredentialRow | undefined> {
  return db.selectFrom('application_credentials').selectAll().where('user_id', '=', userId).where('name', '=', name).executeTakeFirst()
}

/** What the identity snapshot keeps of every application credential: no secret hash, no description. */
export type ApplicationCredentialGrant = Pick<ApplicationCredentialRow, 'id' | 'name' | 'user_id' | 'project_id' | 'roles' | 'unrestricted' | 'expires_at' | 'access_rule_ids'>

export async function listApplicationCredentialGrants(db: Db): Promise<ApplicationCredentialGrant[]> {
  return db.selectFrom('application_credentials').select(['id', 'name', 'user_id', 'project_id', 'roles', 'unrestricted', 'expires_at', 'access_rule_ids']).execute()
}

async function nameTaken(db: Db, userId: string, name: string): Promise<boolean> {
  return (await db.selectFrom('application_credentials').select('id').where('user_id', '=', userId).where('name', '=', name).executeTakeFirst()) !== undefined
}

/**
 * Stores a new application credential with its access rules (the user's existing ones reused, new ones made) and
 * bumps the identity generation; answers the row as stored. A name already used by the user is a conflict,
 * whether seen first or raised by a concurrent writer that won the race.
 */
export async function createApplicationCredential(
  db: Db,
  row: Omit<ApplicationCredentialRow, 'access_rule_ids'>,
  accessRules: readonly AccessRuleRequest[],
): Promise<ApplicationCredentialRow> {
  const duplicate = () => conflict(`An application credential named ${row.name} already exists for this user.`)
  if (await nameTaken(db, row.user_id, row.name)) throw duplicate()
  try {
    return await db.transaction().execute(async (tx) => {
      const ruleIds = await resolveAccessRules(tx, row.user_id, accessRules, row.created_at)
      const stored = { ...row, access_rule_ids: ruleIds.length > 0 ? JSON.stringify(ruleIds) : null }
      await tx.insertInto('application_credentials').values(stored).execute()
      await touchIdentity(tx)
      return stored
    })
  } catch (err) {
    if (await nameTaken(db, row.user_id, row.name)) throw duplicate()
    throw err
  }
}

/** Removes an application credential and bumps the identity generation, so its tokens stop validating. */
export async function deleteApplicationCredential(db: Db, id: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('application_credentials').where('id', '=', id).execute()
    await touchIdentity(tx)
  })
}
