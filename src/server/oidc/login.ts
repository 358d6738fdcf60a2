/**
 * How the IdP checks a user, for the password grant (one call) and the login page (password, then the TOTP code on
 * a second page): by identity's own checks (identity/auth-flow.ts), the ones POST /v3/auth/tokens runs, so that the
 * two surfaces cannot disagree. The user is one of the Default domain, by name or e-mail (`findLogin`); the password
 * is checked with identity's lockout, enabled and expiry rules; the user's MFA rules are identity's (mfa-rules.ts);
 * the code is identity's TOTP check (totp-factor.ts: Keystone's window, each code once). What the IdP adds: where the
 * code comes from (a field, appended to the password, or the second page), and its own words for a refusal (400
 * invalid_grant, not Keystone's 401).
 */
import { AppError } from '../../contracts/errors.js'
import type { Authenticator } from '../auth/principal.js'
import { LoginRefused, type AuthFlow, type Refusal } from '../identity/auth-flow.js'

export const DEFAULT_DOMAIN_ID = 'default'
const DEFAULT_DOMAIN = { id: DEFAULT_DOMAIN_ID }
/** Platform9's convention: this username (or an empty one) means the password field carries an identity token. */
export const TOKEN_USERNAME = '_TOKEN_'

export interface LoginRequest {
  username: string
  password: string
  /** A separate TOTP code; without it an MFA user appends the 6 digits to the password. */
  totp?: string
}

/** What the IdP uses of identity's login checks. */
export type IdentityLogin = Pick<AuthFlow, 'findLogin' | 'verifyLogin' | 'verifyUserPassword' | 'verifyPasscode' | 'mfaSatisfied' | 'wholeLogin'>

export interface LoginDeps {
  identity: IdentityLogin
  tokens: Authenticator
}

const invalidGrant = (message: string) => new AppError('bad_request', message, { type: 'invalid_grant' })

/** The IdP's words for identity's refusals. */
const REFUSALS: Record<Refusal, string> = {
  invalid: 'Invalid username or password.',
  locked: 'The account is locked after too many failed logins.',
  disabled: 'The account is disabled.',
  expired: 'The password is expired and must be changed.',
}
const CODE_REQUIRED = 'Invalid Credentials: a TOTP code is required (totp field, or appended to the password).'
const WRONG_CODE = 'Invalid username, password or TOTP code.'
const NO_WAY_IN = "This account's multi-factor rules need a sign-in method the IdP does not offer (it offers a password and a TOTP code)."

const invalidCredentials = () => invalidGrant(REFUSALS.invalid)
/** The IdP's words for a refusal; a lock says until when. */
const refusal = (err: LoginRefused) => (err.reason === 'locked' && err.until ? `${REFUSALS.locked.slice(0, -1)}, ${err.until}.` : REFUSALS[err.reason])

/** Runs one of identity's checks; a refusal becomes the IdP's 400 invalid_grant. */
async function idp<T>(check: () => Promise<T>): Promise<T> {
  try {
    return await check()
  } catch (err) {
    throw err instanceof LoginRefused ? invalidGrant(refusal(err)) : err
  }
}

/** The password grant's check: password and, for a user whose MFA rules need it, the TOTP code. Returns the user id, or throws 400 invalid_grant. */
export async function checkLogin(deps: LoginDeps, request: LoginRequest): Promise<string> {
  if (request.username === '' || request.username === TOKEN_USERNAME) {
    // The identity token already passed identity's checks, MFA rules included.
    try {
      return (await deps.tokens.authenticate(request.password)).userId
    } catch {
      throw invalidCredentials()
    }
  }
  const { identity } = deps
  const userId = await identity.findLogin(request.username, DEFAULT_DOMAIN)
  let password = request.password
  let code = request.totp
  // The second way to send the code: appended to the password, for clients that only know a password.
  if (code === undefined && userId !== undefined && /\d{6}$/.test(password) && password.length > 6 && !(await identity.mfaSatisfied(userId, ['password']))) {
    code = password.slice(-6)
    password = password.slice(0, -6)
  }
  // An unknown user is refused here too, after as long as a wrong password takes.
  await idp(() => identity.verifyUserPassword({ id: userId ?? '' }, password))
  if ((await afterPassword(identity, userId!)) === 'whole') return userId!
  if (!code) throw invalidGrant(CODE_REQUIRED)
  if (!(await codeRight(identity, userId!, code))) throw invalidGrant(WRONG_CODE)
  return userId!
}

/**
 * The login page's first step: the password alone. Returns the user and whether a TOTP code must follow (the page
 * then asks for it: checkSecondFactor). Throws 400 invalid_grant like checkLogin.
 */
export async function checkPassword(deps: LoginDeps, username: string, password: string): Promise<{ userId: string; needsTotp: boolean }> {
  const userId = await idp(() => deps.identity.verifyLogin(username, DEFAULT_DOMAIN, password))
  return { userId, needsTotp: (await afterPassword(deps.identity, userId)) === 'code' }
}

/**
 * The login page's second step: true when the code completes the login, false for a wrong or used code (counted as
 * a failed login); throws 400 invalid_grant when the account is locked or disabled.
 */
export async function checkSecondFactor(deps: LoginDeps, userId: string, code: string): Promise<boolean> {
  return codeRight(deps.identity, userId, code)
}

/**
 * After a right password, by the user's MFA rules: a whole login (the failure count starts again), or a TOTP code
 * to come. Refused when a code could not complete the login either (a rule names another method).
 */
async function afterPassword(identity: IdentityLogin, userId: string): Promise<'whole' | 'code'> {
  if (await identity.mfaSatisfied(userId, ['password'])) {
    await idp(() => identity.wholeLogin(userId))
    return 'whole'
  }
  if (await identity.mfaSatisfied(userId, ['password', 'totp'])) return 'code'
  throw invalidGrant(NO_WAY_IN)
}

/** The code of a login past its password: false when wrong (or used); true when the login is whole with it. */
async function codeRight(identity: IdentityLogin, userId: string, code: string): Promise<boolean> {
  try {
    await identity.verifyPasscode(userId, code)
  } catch (err) {
    if (err instanceof LoginRefused && err.reason === 'invalid') return false
    throw err instanceof LoginRefused ? invalidGrant(refusal(err)) : err
  }
  // The rules may have changed since the password step, which may have been minutes ago.
  if (!(await identity.mfaSatisfied(userId, ['password', 'totp']))) throw invalidGrant(NO_WAY_IN)
  await idp(() => identity.wholeLogin(userId))
  return true
}
