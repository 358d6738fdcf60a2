/**
 * Users: owned by a domain, with options (MFA rules, lockout and expiry exemptions) and a password hash.
 * Setting a password stamps password_created_at: token validation treats tokens issued before it as revoked.
 */
import { badRequest, conflict, forbidden, notFound } from '../../../contracts/errors.js'
import { hashPassword, verifyPassword } from '../../crypto/passwords.js'
import type { UserTable } from '../../storage/tables/identity.js'
import type { Db } from '../../storage/store.js'
import { Lockout, type LockoutPolicy } from '../lockout.js'
import { mfaRules, rulesSatisfied } from '../mfa-rules.js'
import { mergeOptions, requireDomainRef } from './domains.repo.js'
import { extraOf, newIdentityId, parseJson } from './write.js'

export type UserRow = UserTable

export const USER_COLUMNS = ['name', 'domain_id', 'enabled', 'default_project_id', 'description', 'email', 'options', 'password', 'federated'] as const

export interface UserInput {
  name?: string
  domain_id?: string
  enabled?: boolean
  default_project_id?: string | null
  description?: string | null
  email?: string | null
  password?: string | null
  options?: Record<string, unknown>
  [extra: string]: unknown
}

export interface UserFilter {
  name?: string
  domainId?: string
  enabled?: boolean
  ids?: string[]
}

export async function listUsers(db: Db, filter: UserFilter): Promise<UserRow[]> {
  if (filter.ids && filter.ids.length === 0) return []
  let q = db.selectFrom('users').selectAll()
  if (filter.name !== undefined) q = q.where('name', '=', filter.name)
  if (filter.domainId !== undefined) q = q.where('domain_id', '=', filter.domainId)
  if (filter.enabled !== undefined) q = q.where('enabled', '=', filter.enabled ? 1 : 0)
  if (filter.ids) q = q.where('id', 'in', filter.ids)
  return q.orderBy('name').orderBy('id').execute()
}

export async function findUser(db: Db, id: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function getUser(db: Db, id: string): Promise<UserRow> {
  const row = await findUser(db, id)
  if (!row) throw notFound(`Could not find user: ${id}.`)
  return row
}

async function assertNameFree(db: Db, domainId: string, name: string, exceptId?: string): Promise<void> {
  const other = await db.selectFrom('users').select('id').where('domain_id', '=', domainId).where('name', '=', name).executeTakeFirst()
  if (other && other.id !== exceptId) throw conflict(`Conflict occurred attempting to store user - Duplicate entry found with name ${name} at domain ID ${domainId}.`)
}

async function assertProjectRef(db: Db, projectId: string | null | undefined): Promise<void> {
  if (!projectId) return
  const project = await db.selectFrom('projects').select('id').where('id', '=', projectId).executeTakeFirst()
  if (!project) throw badRequest(`Invalid input for field 'default_project_id': could not find project ${projectId}.`)
}

export async function createUser(db: Db, input: UserInput & { name: string }, domainId: string, now: number): Promise<UserRow> {
  await requireDomainRef(db, domainId, 'domain_id')
  await assertNameFree(db, domainId, input.name)
  await assertProjectRef(db, input.default_project_id)
  const row: UserRow = {
    id: newIdentityId(),
    domain_id: domainId,
    name: input.name,
    enabled: input.enabled === false ? 0 : 1,
    default_project_id: input.default_project_id ?? null,
    description: input.description ?? '',
    email: input.email ?? null,
    options: JSON.stringify(input.options ?? {}),
    extra: JSON.stringify(extraOf(input, USER_COLUMNS)),
    password_hash: typeof input.password === 'string' ? await hashPassword(input.password) : null,
    password_created_at: typeof input.password === 'string' ? now : null,
    password_expires_at: null,
    failed_auth_count: 0,
    failed_auth_at: null,
    last_active_at: null,
    created_at: now,
  }
  await db.insertInto('users').values(row).execute()
  return row
}

export async function updateUser(db: Db, id: string, input: UserInput, now: number): Promise<UserRow> {
  const row = await getUser(db, id)
  if (input.domain_id !== undefined && input.domain_id !== row.domain_id) throw badRequest(`Invalid input for field 'domain_id': the domain of a user cannot change.`)
  if (input.name !== undefined && input.name !== row.name) await assertNameFree(db, row.domain_id, input.name, id)
  if (input.default_project_id !== undefined) await assertProjectRef(db, input.default_project_id)
  const next: UserRow = {
    ...row,
    name: input.name ?? row.name,
    enabled: input.enabled === undefined ? row.enabled : input.enabled ? 1 : 0,
    default_project_id: input.default_project_id === undefined ? row.default_project_id : input.default_project_id,
    description: input.description === undefined ? row.description : (input.description ?? ''),
    email: input.email === undefined ? row.email : input.email,
    options: input.options === undefined ? row.options : JSON.stringify(mergeOptions(JSON.parse(row.options), input.options)),
    extra: JSON.stringify({ ...JSON.parse(row.extra), ...extraOf(input, USER_COLUMNS) }),
  }
  // A password set by an admin clears a lockout; so does re-enabling a user, as Keystone does.
  if (input.password !== undefined) Object.assign(next, await passwordColumns(input.password, now), NO_FAILURES)
  if (input.enabled === true && !row.enabled) Object.assign(next, NO_FAILURES)
  await db.updateTable('users').set(next).where('id', '=', id).execute()
  return next
}

const NO_FAILURES = { failed_auth_count: 0, failed_auth_at: null }

async function passwordColumns(password: string | null, now: number): Promise<Pick<UserRow, 'password_hash' | 'password_created_at' | 'password_expires_at'>> {
  return {
    password_hash: password === null ? null : await hashPassword(password),
    password_created_at: now,
    password_expires_at: null,
  }
}

/**
 * Self-service change, first step: the original password is the proof, tried under the lockout as a password login
 * is (identity/lockout.ts): a locked account is refused, a wrong original password (or a disabled user) counts as a
 * failed login, so this is no way around the lockout. The count starts again only when the password alone is a
 * whole login for this user: for a user whose MFA rules also need a TOTP code, changing the password must not wipe
 * out the count of wrongly guessed codes. The count is written here, not in an identity write: it is no part of
 * what tokens are checked against, so a failed attempt must not make every process reload its identity snapshot
 * (which anyone could otherwise force, without a token).
 */
export async function checkOriginalPassword(db: Db, id: string, original: string, now: number, policy: LockoutPolicy): Promise<'ok' | 'denied' | 'locked'> {
  const row = await findUser(db, id)
  if (!row) return 'denied'
  const options = parseJson<Record<string, unknown>>(row.options, {})
  if (options.lock_password === true) throw forbidden(`You are not allowed to change the password of user ${id}: the password is locked.`)
  const hash = row.password_hash
  const lockout = new Lockout(db, policy, () => now)
  const outcome = await lockout.tryFactor(id, async () => hash !== null && (await verifyPassword(original, hash)) && Boolean(row.enabled))
  if (outcome !== 'right') return outcome === 'locked' ? 'locked' : 'denied'
  const wholeLogin = rulesSatisfied(mfaRules(options), ['password'])
  return wholeLogin && (await lockout.loginSucceeded(id)) === 'locked' ? 'locked' : 'ok'
}

/** Self-service change, second step (in an identity write): the new password; the failure count is the first step's. */
export async function setPassword(db: Db, id: string, password: string, now: number): Promise<void> {
  await db.updateTable('users').set(await passwordColumns(password, now)).where('id', '=', id).execute()
}

export async function deleteUser(db: Db, id: string): Promise<void> {
  await getUser(db, id)
  await db.deleteFrom('role_assignments').where('actor_type', '=', 'user').where('actor_id', '=', id).execute()
  await db.deleteFrom('group_members').where('user_id', '=', id).execute()
  await db.deleteFrom('users').where('id', '=', id).execute()
}
