/**
 * How the IdP checks a user, for the password grant (one call) and the login page (password, then the TOTP
 * code on a second page): the identity users of the Default domain, found by name or e-mail, checked the way
 * identity checks a password login (the same columns: lockout counters, enabled, password expiry), and a TOTP
 * code for users under multi-factor authentication.
 */
import { AppError } from '../../contracts/errors.js'
import type { Authenticator } from '../auth/principal.js'
import type { SecretBox } from '../crypto/secret-box.js'
import { verifyPassword } from '../crypto/passwords.js'
import type { Db } from '../storage/store.js'
import { verifyUserTotp } from './totp-credentials.js'

export const DEFAULT_DOMAIN_ID = 'default'
/** Platform9's convention: this username (or an empty one) means the password field carries an identity token. */
export const TOKEN_USERNAME = '_TOKEN_'

export interface LockoutPolicy {
  /** Failed password logins before the account locks; undefined = never (Keystone's default). */
  attempts?: number
  /** How long a lock lasts; undefined = until an admin resets it. */
  durationMs?: number
}

export interface LoginRequest {
  username: string
  password: string
  /** A separate TOTP code; without it an MFA user appends the 6 digits to the password. */
  totp?: string
}

export interface LoginDeps {
  db: Db
  box: SecretBox
  tokens: Authenticator
  lockout: LockoutPolicy
  now: () => number
}

export const invalidCredentials = () => new AppError('bad_request', 'Invalid username or password.', { type: 'invalid_grant' })

interface UserOptions {
  multi_factor_auth_enabled?: boolean
  multi_factor_auth_rules?: string[][]
  ignore_lockout_failure_attempts?: boolean
  ignore_password_expiry?: boolean
}

function parseOptions(text: string): UserOptions {
  try {
    return JSON.parse(text) as UserOptions
  } catch {
    return {}
  }
}

/**
 * Whether a login with these methods satisfies the user's MFA settings. Like Keystone: with rules, some rule
 * must be covered by the methods; an explicit `multi_factor_auth_enabled: false` exempts the user. Without
 * rules, `multi_factor_auth_enabled: true` means password and TOTP.
 */
export function mfaSatisfied(options: UserOptions, methods: string[]): boolean {
  if (options.multi_factor_auth_enabled === false) return true
  const known = new Set(['password', 'totp', 'token'])
  const rules = (options.multi_factor_auth_rules ?? []).map((r) => r.filter((m) => known.has(m))).filter((r) => r.length > 0)
  if (rules.length > 0) return rules.some((rule) => rule.every((m) => methods.includes(m)))
  if (options.multi_factor_auth_enabled === true) return methods.includes('totp')
  return true
}

/** The password grant's check: password and, for a user under MFA, the TOTP code. Returns the user id, or throws 400 invalid_grant. */
export async function checkLogin(deps: LoginDeps, request: LoginRequest): Promise<string> {
  if (request.username === '' || request.username === TOKEN_USERNAME) {
    // The identity token already passed identity's checks, MFA included.
    try {
      return (await deps.tokens.authenticate(request.password)).userId
    } catch {
      throw invalidCredentials()
    }
  }
  const user = await findUser(deps.db, request.username)
  if (!user || !user.password_hash) throw invalidCredentials()
  const options = parseOptions(user.options)
  let password = request.password
  let code = request.totp
  // The second way to send the code: appended to the password, for clients that only know a password.
  if (!mfaSatisfied(options, ['password']) && code === undefined && /\d{6}$/.test(password) && password.length > 6) {
    code = password.slice(-6)
    password = password.slice(0, -6)
  }
  await passwordStep(deps, user, options, password)
  if (!(await secondFactorStep(deps, user.id, options, code))) {
    throw new AppError('bad_request', code ? 'Invalid username, password or TOTP code.' : 'Invalid Credentials: a TOTP code is required (totp field, or appended to the password).', { type: 'invalid_grant' })
  }
  return user.id
}

/**
 * The login page's first step: the password alone. Returns the user and whether a TOTP code must follow
 * (the page then asks for it: checkSecondFactor). Throws 400 invalid_grant like checkLogin.
 */
export async function checkPassword(deps: LoginDeps, username: string, password: string): Promise<{ userId: string; needsTotp: boolean }> {
  const user = await findUser(deps.db, username)
  if (!user || !user.password_hash) throw invalidCredentials()
  const options = parseOptions(user.options)
  await passwordStep(deps, user, options, password)
  return { userId: user.id, needsTotp: !mfaSatisfied(options, ['password']) }
}

/** The login page's second step: true when the code satisfies the user's MFA settings. */
export async function checkSecondFactor(deps: LoginDeps, userId: string, code: string): Promise<boolean> {
  const user = await deps.db.selectFrom('users').select(['options']).where('id', '=', userId).executeTakeFirst()
  return user !== undefined && (await secondFactorStep(deps, userId, parseOptions(user.options), code))
}

type FoundUser = NonNullable<Awaited<ReturnType<typeof findUser>>>

/**
 * The password as identity checks it: lockout (identity's counters, shared), the password, then enabled and
 * expiry. A wrong password counts a failure; a right one resets the count, as Keystone's password check does.
 */
async function passwordStep(deps: LoginDeps, user: FoundUser, options: UserOptions, password: string): Promise<void> {
  const now = deps.now()
  const { attempts, durationMs } = deps.lockout
  const lockable = attempts !== undefined && !options.ignore_lockout_failure_attempts
  const lockExpired = durationMs !== undefined && (user.failed_auth_at ?? 0) + durationMs <= now
  if (lockable && user.failed_auth_count >= attempts && !lockExpired) {
    throw new AppError('bad_request', 'The account is locked after too many failed logins.', { type: 'invalid_grant' })
  }
  if (!(await verifyPassword(password, user.password_hash!))) {
    // A lock that expired starts counting again from this failure.
    const count = lockable && lockExpired && user.failed_auth_count >= attempts ? 1 : user.failed_auth_count + 1
    await deps.db.updateTable('users').set({ failed_auth_count: count, failed_auth_at: now }).where('id', '=', user.id).execute()
    throw invalidCredentials()
  }
  if (!user.enabled || !user.domain_enabled) throw new AppError('bad_request', 'The account is disabled.', { type: 'invalid_grant' })
  if (user.password_expires_at !== null && user.password_expires_at <= now && !options.ignore_password_expiry) {
    throw new AppError('bad_request', 'The password is expired and must be changed.', { type: 'invalid_grant' })
  }
  if (user.failed_auth_count > 0) await deps.db.updateTable('users').set({ failed_auth_count: 0, failed_auth_at: null }).where('id', '=', user.id).execute()
}

/** Whether password plus this code (if any) satisfies the user's MFA settings. */
async function secondFactorStep(deps: LoginDeps, userId: string, options: UserOptions, code: string | undefined): Promise<boolean> {
  const methods = ['password']
  if (code !== undefined && code !== '' && (await verifyUserTotp(deps.db, deps.box, userId, code, deps.now()))) methods.push('totp')
  return mfaSatisfied(options, methods)
}

/** A user of the Default domain by exact name, else by e-mail (case-insensitive) when exactly one has it. */
async function findUser(db: Db, username: string) {
  const base = db
    .selectFrom('users')
    .innerJoin('domains', 'domains.id', 'users.domain_id')
    .select(['users.id', 'users.enabled', 'users.options', 'users.password_hash', 'users.password_expires_at', 'users.failed_auth_count', 'users.failed_auth_at', 'domains.enabled as domain_enabled'])
    .where('users.domain_id', '=', DEFAULT_DOMAIN_ID)
  const byName = await base.where('users.name', '=', username).executeTakeFirst()
  if (byName) return byName
  if (!username.includes('@')) return undefined
  const byEmail = await base.where((eb) => eb(eb.fn('lower', ['users.email']), '=', username.toLowerCase())).limit(2).execute()
  return byEmail.length === 1 ? byEmail[0] : undefined
}
