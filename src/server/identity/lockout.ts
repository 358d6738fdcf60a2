/**
 * Account lockout, the one copy every login surface uses: identity's POST /v3/auth/tokens (password and totp
 * methods), the self-service password change, and the IdP's password grant and login pages. It is Keystone's
 * security_compliance lockout (`lockout_failure_attempts`, `lockout_duration`: PCI-DSS 8.1.6/8.1.7) kept in the
 * columns `users.failed_auth_count` / `failed_auth_at`, with one deliberate extension: a wrong TOTP code is a
 * failed login too (Keystone counts passwords only, which leaves the second factor open to guessing by whoever
 * has the password). The rules (docs/identity.md, "Passwords and lockout"):
 *
 * | event                                                      | effect                                           |
 * |------------------------------------------------------------|--------------------------------------------------|
 * | a factor (password, TOTP code) is tried on a locked account | refused unchecked: `locked`                      |
 * | a wrong factor                                             | count + 1 (1 when a lock had run out), at = now  |
 * | a right factor that is not yet a whole login               | nothing (a right password does not undo guesses) |
 * | a whole login (every factor the user's MFA rules need)     | count = 0, at = null; `locked` instead when      |
 * |                                                            | concurrent failures locked the account meanwhile |
 *
 * Locked: count ≥ attempts, unless lockout is off (no attempts), the user has `ignore_lockout_failure_attempts`,
 * or the lock ran out (at + duration ≤ now; no duration: locked until an admin resets it).
 */
import type { Db } from '../storage/store.js'
import { parseJson } from './repo/write.js'

export interface LockoutPolicy {
  /** Failed logins in a row that lock the account; undefined or 0 = never (Keystone's default). */
  attempts?: number
  /** How long a lock lasts; undefined = until an admin resets it (Keystone's unset lockout_duration). */
  durationMs?: number
}

/** The policy of pcc-server's settings (PCC_LOCKOUT_FAILURE_ATTEMPTS, PCC_LOCKOUT_DURATION_SECONDS). */
export function lockoutPolicy(settings: { lockoutFailureAttempts: number; lockoutDurationSeconds: number }): LockoutPolicy {
  return {
    attempts: settings.lockoutFailureAttempts || undefined,
    durationMs: settings.lockoutDurationSeconds ? settings.lockoutDurationSeconds * 1000 : undefined,
  }
}

export type FactorOutcome = 'right' | 'wrong' | 'locked'

interface LockoutColumns {
  options: string
  failed_auth_count: number
  failed_auth_at: number | null
}

/** Whether a user with these columns is locked at `now`. */
export function isLocked(policy: LockoutPolicy, user: LockoutColumns, now: number): boolean {
  const { attempts, durationMs } = policy
  if (!attempts || user.failed_auth_count < attempts) return false
  if (parseJson<Record<string, unknown>>(user.options, {}).ignore_lockout_failure_attempts === true) return false
  return durationMs === undefined || (user.failed_auth_at !== null && Number(user.failed_auth_at) + durationMs > now)
}

/**
 * When a lock of a user with these columns ends: null for a lock that lasts until an admin resets it (no duration),
 * undefined when the user is not locked at `now`.
 */
export function lockEnd(policy: LockoutPolicy, user: LockoutColumns, now: number): number | null | undefined {
  if (!isLocked(policy, user, now)) return undefined
  return policy.durationMs === undefined || user.failed_auth_at === null ? null : Number(user.failed_auth_at) + policy.durationMs
}

/**
 * "until 14:05 UTC" (with the date when the lock ends more than 12 hours from now), or "until an administrator
 * unlocks it": every surface says how long a lock lasts (docs/identity.md, "Passwords and lockout").
 */
export function untilText(end: number | null, now: number): string {
  if (end === null) return 'until an administrator unlocks it'
  const iso = new Date(end).toISOString()
  return `until ${end - now > 12 * 3600_000 ? `${iso.slice(0, 10)} ` : ''}${iso.slice(11, 16)} UTC`
}

export class Lockout {
  constructor(
    private readonly db: Db,
    readonly policy: LockoutPolicy,
    private readonly now: () => number,
  ) {}

  /**
   * Tries one factor of a login for an existing user: `locked` without running `check` when the account is
   * locked; otherwise check's answer, a wrong one counted as a failed login.
   */
  async tryFactor(userId: string, check: () => Promise<boolean>): Promise<FactorOutcome> {
    if (await this.locked(userId)) return 'locked'
    if (await check()) return 'right'
    await this.countFailure(userId)
    return 'wrong'
  }

  /**
   * A whole login succeeded (every factor its MFA rules need was right): the count starts again. Answers
   * `locked` instead when the account was locked since its factors were tried, by the failures of attempts
   * running at the same time: so a burst of parallel guesses gets no more than the first `attempts` of them
   * to count, rather than every guess that started before the lock.
   */
  async loginSucceeded(userId: string): Promise<'ok' | 'locked'> {
    const user = await this.read(userId)
    if (!user) return 'ok'
    if (isLocked(this.policy, user, this.now())) return 'locked'
    if (user.failed_auth_count > 0) await this.db.updateTable('users').set({ failed_auth_count: 0, failed_auth_at: null }).where('id', '=', userId).execute()
    return 'ok'
  }

  /** When the user's lock ends (lockEnd), undefined when the user is not locked now. */
  async lockedUntil(userId: string): Promise<number | null | undefined> {
    const user = await this.read(userId)
    return user === undefined ? undefined : lockEnd(this.policy, user, this.now())
  }

  /** Whether the user is locked now (an unknown user is not). */
  async locked(userId: string): Promise<boolean> {
    const user = await this.read(userId)
    return user !== undefined && isLocked(this.policy, user, this.now())
  }

  /** One failed login, counted in one statement so that concurrent failures all count. */
  private async countFailure(userId: string): Promise<void> {
    const now = this.now()
    const { attempts, durationMs } = this.policy
    await this.db
      .updateTable('users')
      .set((eb) => {
        const next = eb('failed_auth_count', '+', 1)
        if (!attempts || durationMs === undefined) return { failed_auth_count: next, failed_auth_at: now }
        // A lock that has run out starts a new count.
        const ranOut = eb.and([eb('failed_auth_count', '>=', attempts), eb.or([eb('failed_auth_at', 'is', null), eb('failed_auth_at', '<=', now - durationMs)])])
        return { failed_auth_count: eb.case().when(ranOut).then(1).else(next).end(), failed_auth_at: now }
      })
      .where('id', '=', userId)
      .execute()
  }

  private read(userId: string): Promise<LockoutColumns | undefined> {
    return this.db.selectFrom('users').select(['options', 'failed_auth_count', 'failed_auth_at']).where('id', '=', userId).executeTakeFirst()
  }
}
