/**
 * How the IdP checks a user, for the password grant (one call) and the login page (password, then the TOTP
 * code on a second page): the identity users of the Default domain, found by name or e-mail, checked the way
 * identity checks a password login (enabled, password expiry), and a TOTP code for users under multi-factor
 * authentication. Both factors go through identity's lockout (identity/lockout.ts): a wrong password or code is a
 * failed login, a locked account is refused, and the count starts again only when the whole login succeeded.
 */
import { AppError } from '../../contracts/errors.js'
import type { Authenticator } from '../auth/principal.js'
import type { SecretBox } from '../crypto/secret-box.js'
import { verifyPassword } from '../crypto/passwords.js'
import { Lockout, type LockoutPolicy } from '../identity/lockout.js'
import { verifyPasscode } from '../identity/totp-factor.js'
import type { Db } from '../storage/store.js'

export const DEFAULT_DOMAIN_ID = 'default'
/** Platform9's convention: this username (or an empty one) means the password field carries an identity token. */
export const TOKEN_USERNAME = '_TOKEN_'

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
const accountLocked = () => new AppError('bad_request', 'The account is locked after too many failed logins.', { type: 'invalid_grant' })
const lockoutOf = (deps: LoginDeps) => new Lockout(deps.db, deps.lockout, deps.now)

interface UserOptions {
  multi_factor_auth_enabled?: boolean
  multi_factor_auth_rules?: string[][]
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
  if (!mfaSatisfied(options, ['password'])) {
    if (!code) throw new AppError('bad_request', 'Invalid Credentials: a TOTP code is required (totp field, or appended to the password).', { type: 'invalid_grant' })
    if (!(await secondFactorStep(deps, user.id, options, code))) throw new AppError('bad_request', 'Invalid username, password or TOTP code.', { type: 'invalid_grant' })
  }
  await loginSucceeded(deps, user.id)
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
  const needsTotp = !mfaSatisfied(options, ['password'])
  if (!needsTotp) await loginSucceeded(deps, user.id)
  return { userId: user.id, needsTotp }
}

/**
 * The login page's second step: true when the code satisfies the user's MFA settings, false for a wrong code
 * (counted as a failed login); throws 400 invalid_grant when the account is locked.
 */
export async function checkSecondFactor(deps: LoginDeps, userId: string, code: string): Promise<boolean> {
  const user = await deps.db.selectFrom('users').select(['options']).where('id', '=', userId).executeTakeFirst()
  if (!user || !(await secondFactorStep(deps, userId, parseOptions(user.options), code))) return false
  await loginSucceeded(deps, userId)
  return true
}

type FoundUser = NonNullable<Awaited<ReturnType<typeof findUser>>>

/**
 * The password as identity checks it: lockout, the password (a wrong one counted), then enabled and expiry. A
 * right password leaves the failure count alone: loginSucceeded resets it once every factor was right.
 */
async function passwordStep(deps: LoginDeps, user: FoundUser, options: UserOptions, password: string): Promise<void> {
  const hash = user.password_hash!
  const outcome = await lockoutOf(deps).tryFactor(user.id, () => verifyPassword(password, hash))
  if (outcome === 'locked') throw accountLocked()
  if (outcome === 'wrong') throw invalidCredentials()
  if (!user.enabled || !user.domain_enabled) throw new AppError('bad_request', 'The account is disabled.', { type: 'invalid_grant' })
  if (user.password_expires_at !== null && user.password_expires_at <= deps.now() && !options.ignore_password_expiry) {
    throw new AppError('bad_request', 'The password is expired and must be changed.', { type: 'invalid_grant' })
  }
}

/** Whether password plus this code satisfies the user's MFA settings; a wrong code counts as a failed login. */
async function secondFactorStep(deps: LoginDeps, userId: string, options: UserOptions, code: string): Promise<boolean> {
  const outcome = await lockoutOf(deps).tryFactor(userId, () => verifyPasscode(deps.db, deps.box, userId, code, deps.now()))
  if (outcome === 'locked') throw accountLocked()
  return mfaSatisfied(options, outcome === 'right' ? ['password', 'totp'] : ['password'])
}

/** The whole login succeeded: the failure count starts again (or the account was locked by concurrent failures). */
async function loginSucceeded(deps: LoginDeps, userId: string): Promise<void> {
  if ((await lockoutOf(deps).loginSucceeded(userId)) === 'locked') throw accountLocked()
}

/** A user of the Default domain by exact name, else by e-mail (case-insensitive) when exactly one has it. */
async function findUser(db: Db, username: string) {
  const base = db
    .selectFrom('users')
    .innerJoin('domains', 'domains.id', 'users.domain_id')
    .select(['users.id', 'users.enabled', 'users.options', 'users.password_hash', 'users.password_expires_at', 'domains.enabled as domain_enabled'])
    .where('users.domain_id', '=', DEFAULT_DOMAIN_ID)
  const byName = await base.where('users.name', '=', username).executeTakeFirst()
  if (byName) return byName
  if (!username.includes('@')) return undefined
  const byEmail = await base.where((eb) => eb(eb.fn('lower', ['users.email']), '=', username.toLowerCase())).limit(2).execute()
  return byEmail.length === 1 ? byEmail[0] : undefined
}
