/**
 * POST /auth/tokens as Keystone runs it: every listed method must succeed and name the same user; the methods
 * of an auth receipt and of a rescoped token count as satisfied; the user's MFA rules decide between a token
 * and a receipt (401 + Openstack-Auth-Receipt); then the scope is resolved (explicit, application credential,
 * or the default project) and the token issued. Password checks apply Keystone's security_compliance order:
 * locked → wrong password (counted) → disabled → expired; a TOTP passcode is counted and locked the same way
 * (lockout.ts), and the failure count starts again only when the whole login succeeds.
 *
 * The same checks serve the IdP's logins (oidc/login.ts): findLogin/verifyLogin, verifyUserPassword, verifyPasscode,
 * mfaSatisfied and wholeLogin. A refused factor is a LoginRefused: Keystone's 401, with a reason the IdP answers in
 * its own words.
 */
import { AppError, badRequest } from '../../contracts/errors.js'
import { hashPassword, needsRehash, verifyPassword } from '../crypto/passwords.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { Store } from '../storage/store.js'
import { tokenRoles, type Delegation, type ResolvedToken } from './principal-resolver.js'
import type { AppCredRecord, IdentitySnapshot, ScopeRef } from './snapshot.js'
import { Lockout, untilText, type LockoutPolicy } from './lockout.js'
import { AUTH_METHODS, mfaRules, rulesSatisfied } from './mfa-rules.js'
import { keystoneTime } from './token-body.js'
import { verifyPasscode } from './totp-factor.js'
import { findApplicationCredential, findUserApplicationCredentialByName } from './repo/application-credentials.repo.js'
import type { TokenPayload } from './token-format.js'
import type { TokenService } from './token-service.js'
import { OAuth1, type SignedRequest } from './oauth1.js'

/** The one answer for a wrong password, an unknown user, an unknown project…: nothing to tell them apart. */
export const GENERIC_401 = 'The request you have made requires authentication.'
const fail = (message = GENERIC_401) => new AppError('unauthorized', message)

/** Why a factor of a login was refused. */
export type Refusal = 'invalid' | 'locked' | 'disabled' | 'expired'

/** Keystone's message for each refusal (disabled and expired only reach a caller that gave the right password). */
const REFUSAL_MESSAGES: Record<Refusal, (userId: string, until: string) => string> = {
  invalid: () => GENERIC_401,
  // Keystone's words, and how long the lock lasts.
  locked: (userId, until) => `The account is locked for user: ${userId} ${until}.`,
  disabled: (userId) => `The account is disabled for user: ${userId}.`,
  expired: (userId) => `The password is expired and needs to be changed for user: ${userId}.`,
}

/** A refused factor: Keystone's 401; other surfaces answer `reason` in their own words. */
export class LoginRefused extends AppError {
  constructor(
    readonly reason: Refusal,
    userId = '',
    /** A lock: "until 14:05 UTC" or "until an administrator unlocks it" (lockout.ts, untilText). */
    readonly until = '',
  ) {
    super('unauthorized', REFUSAL_MESSAGES[reason](userId, until))
  }
}

/** The methods whose secrets the lockout guards: a login using one of them resets the count when it succeeds. */
const GUARDED_METHODS = ['password', 'totp']

type UserRef = { id?: string; name?: string; domain?: { id?: string; name?: string } }

export interface AuthRequest {
  identity: { methods: string[]; [method: string]: unknown }
  scope?: unknown
}

export type AuthOutcome =
  | { kind: 'token'; token: string; payload: TokenPayload; resolved: ResolvedToken }
  | { kind: 'receipt'; receipt: string; body: unknown }

/** A dummy hash so that an unknown user costs as much time as a wrong password. */
let dummyHash: Promise<string> | undefined

export class AuthFlow {
  /** Failed password and TOTP logins (security_compliance lockout): the rules of identity/lockout.ts, which the IdP uses too. */
  readonly lockout: Lockout
  /** Keystone's OS-OAUTH1 flow (oauth1.ts): its routes use it, and the `oauth1` method below. */
  readonly oauth1: OAuth1

  constructor(
    private readonly store: Store,
    private readonly box: SecretBox,
    private readonly tokens: TokenService,
    lockout: LockoutPolicy,
    private readonly now: () => number = Date.now,
  ) {
    this.lockout = new Lockout(store.db, lockout, now)
    this.oauth1 = new OAuth1(store.db, box, now)
  }

  private get snap(): IdentitySnapshot {
    return this.tokens.snapshot
  }

  /** Finds a user id by id or by name within a domain given by id or name (name without domain: 400). */
  private async findUserId(ref: UserRef | undefined, field: string): Promise<string | undefined> {
    if (!ref || typeof ref !== 'object') throw badRequest(`${field}.user is required.`)
    if (typeof ref.id === 'string') return ref.id
    if (typeof ref.name !== 'string') throw badRequest(`${field}.user needs an id, or a name and a domain.`)
    const domain = ref.domain
    if (!domain || (typeof domain.id !== 'string' && typeof domain.name !== 'string')) throw badRequest(`${field}.user.domain (id or name) is required with a user name.`)
    const db = this.store.db
    let q = db.selectFrom('users').innerJoin('domains', 'domains.id', 'users.domain_id').select('users.id').where('users.name', '=', ref.name)
    q = typeof domain.id === 'string' ? q.where('domains.id', '=', domain.id) : q.where('domains.name', '=', domain.name!)
    return (await q.executeTakeFirst())?.id
  }

  /**
   * The password factor of a user given by id or by name and domain: lockout, the password (a wrong one counted),
   * enabled, expiry, rehash. Answers the user id or throws LoginRefused. A right password does not reset the failure
   * count: the caller does, once the whole login succeeded (wholeLogin), as authenticate does.
   */
  async verifyUserPassword(ref: UserRef, password: string): Promise<string> {
    const userId = await this.findUserId(ref, 'password')
    const db = this.store.db
    const user = userId
      ? await db
          .selectFrom('users')
          .innerJoin('domains', 'domains.id', 'users.domain_id')
          .select(['users.id', 'users.enabled', 'users.options', 'users.password_hash', 'users.password_expires_at', 'domains.enabled as domain_enabled'])
          .where('users.id', '=', userId)
          .executeTakeFirst()
      : undefined
    if (!user || !user.password_hash) {
      await verifyPassword(password, await (dummyHash ??= hashPassword('not a password')))
      throw new LoginRefused('invalid')
    }
    const hash = user.password_hash
    const outcome = await this.lockout.tryFactor(user.id, () => verifyPassword(password, hash))
    if (outcome === 'locked') throw await this.locked(user.id)
    if (outcome === 'wrong') throw new LoginRefused('invalid')
    const options = parseOptions(user.options)
    if (!user.enabled || !user.domain_enabled) throw new LoginRefused('disabled', user.id)
    if (user.password_expires_at !== null && Number(user.password_expires_at) <= this.now() && options.ignore_password_expiry !== true) {
      throw new LoginRefused('expired', user.id)
    }
    if (needsRehash(hash)) await db.updateTable('users').set({ password_hash: await hashPassword(password) }).where('id', '=', user.id).execute()
    return user.id
  }

  /**
   * The user a login name means within a domain (id or name): the user of that name, else the one user of the domain
   * with that e-mail address, compared without regard to case (docs/identity.md, "Login names").
   */
  async findLogin(nameOrEmail: string, domain: { id?: string; name?: string }): Promise<string | undefined> {
    const byName = await this.findUserId({ name: nameOrEmail, domain }, 'login')
    if (byName || !nameOrEmail.includes('@')) return byName
    let q = this.store.db
      .selectFrom('users')
      .innerJoin('domains', 'domains.id', 'users.domain_id')
      .select('users.id')
      .where((eb) => eb(eb.fn('lower', ['users.email']), '=', eb.fn('lower', [eb.val(nameOrEmail)])))
    q = domain.id !== undefined ? q.where('domains.id', '=', domain.id) : q.where('domains.name', '=', domain.name ?? '')
    const rows = await q.limit(2).execute()
    return rows.length === 1 ? rows[0].id : undefined
  }

  /** The password factor of a login by name or e-mail within a domain (findLogin): verifyUserPassword's checks and refusals. */
  async verifyLogin(nameOrEmail: string, domain: { id?: string; name?: string }, password: string): Promise<string> {
    return this.verifyUserPassword({ id: (await this.findLogin(nameOrEmail, domain)) ?? '' }, password)
  }

  /**
   * The totp factor of a known user: lockout, then the passcode (totp-factor.ts; a wrong or used one counted like a
   * wrong password), then enabled. Throws LoginRefused.
   */
  async verifyPasscode(userId: string, passcode: string): Promise<void> {
    const outcome = await this.lockout.tryFactor(userId, () => verifyPasscode(this.store.db, this.box, userId, passcode, this.now()))
    if (outcome === 'locked') throw await this.locked(userId)
    if (outcome === 'wrong') throw new LoginRefused('invalid')
    await this.requireEnabled(userId)
  }

  /** Whether a login of this user that satisfied these methods is whole under the user's MFA rules (mfa-rules.ts), as they are now. */
  async mfaSatisfied(userId: string, methods: string[]): Promise<boolean> {
    await this.tokens.refresh()
    const user = this.snap.users.get(userId)
    if (!user) throw new LoginRefused('invalid')
    return rulesSatisfied(mfaRules(user.options), methods)
  }

  /**
   * A whole login of a user succeeded (every factor its rules need was right): the failure count starts again.
   * Throws LoginRefused `locked` when failures of concurrent attempts locked the account meanwhile.
   */
  async wholeLogin(userId: string): Promise<void> {
    if ((await this.lockout.loginSucceeded(userId)) === 'locked') throw await this.locked(userId)
  }

  /** The refusal of a locked user, saying until when. */
  private async locked(userId: string): Promise<LoginRefused> {
    const end = await this.lockout.lockedUntil(userId)
    return new LoginRefused('locked', userId, untilText(end ?? null, this.now()))
  }

  /** The totp method's body: the user (by id, or name and domain) and the passcode. */
  private async totp(body: unknown): Promise<string> {
    const ref = (body as { user?: UserRef & { passcode?: unknown } } | undefined)?.user
    const userId = await this.findUserId(ref, 'totp')
    const passcode = ref?.passcode
    if (typeof passcode !== 'string') throw badRequest('totp.user.passcode (a string) is required.')
    if (!userId) throw new LoginRefused('invalid')
    await this.verifyPasscode(userId, passcode)
    return userId
  }

  private async requireEnabled(userId: string): Promise<void> {
    if (!this.snap.users.has(userId)) await this.tokens.refresh()
    const user = this.snap.users.get(userId)
    const domain = user && this.snap.domains.get(user.domainId)
    if (!user || !domain) throw new LoginRefused('invalid')
    if (!user.enabled || !domain.enabled) throw new LoginRefused('disabled', userId)
  }

  private async applicationCredential(body: unknown): Promise<{ userId: string; cred: AppCredRecord }> {
    const b = body as { id?: unknown; name?: unknown; secret?: unknown; user?: UserRef } | undefined
    if (!b || typeof b.secret !== 'string') throw badRequest('application_credential.secret is required.')
    const db = this.store.db
    let row
    if (typeof b.id === 'string') {
      row = await findApplicationCredential(db, b.id)
    } else if (typeof b.name === 'string') {
      const userId = await this.findUserId(b.user, 'application_credential')
      row = userId ? await findUserApplicationCredentialByName(db, userId, b.name) : undefined
    } else {
      throw badRequest('application_credential needs an id, or a name and a user.')
    }
    if (!row) {
      await verifyPassword(b.secret, await (dummyHash ??= hashPassword('not a password')))
      throw fail()
    }
    if (!(await verifyPassword(b.secret, row.secret_hash))) throw fail()
    if (row.expires_at !== null && Number(row.expires_at) <= this.now()) throw fail()
    await this.requireEnabled(row.user_id)
    if (!this.snap.appCreds.has(row.id)) await this.tokens.refresh()
    const cred = this.snap.appCreds.get(row.id)
    if (!cred) throw fail()
    return { userId: row.user_id, cred }
  }

  /** `signed`: the request as signed by an OAuth consumer, for the `oauth1` method. */
  async authenticate(auth: AuthRequest, receiptHeader: string | undefined, signed?: SignedRequest): Promise<AuthOutcome> {
    await this.tokens.fresh()
    const methods = auth.identity.methods
    if (new Set(methods).size !== methods.length) throw badRequest('identity.methods lists a method twice.')
    const satisfied = new Set<string>()
    const users = new Set<string>()
    let parent: TokenPayload | undefined
    let cred: AppCredRecord | undefined
    let oauth: { id: string; projectId: string; expiresAt: number } | undefined

    if (receiptHeader) {
      const receipt = this.tokens.openReceipt(receiptHeader)
      users.add(receipt.u)
      for (const m of receipt.m) satisfied.add(m)
    }
    for (const method of methods) {
      if (!(AUTH_METHODS as readonly string[]).includes(method)) throw fail(`Attempted to authenticate with an unsupported method: ${method}.`)
      const body = auth.identity[method]
      if (body === undefined || body === null || typeof body !== 'object') throw badRequest(`identity.${method} is required when methods lists ${method}.`)
    }
    for (const method of methods) {
      const body = auth.identity[method] as Record<string, unknown>
      if (method === 'password') {
        const user = body.user as (UserRef & { password?: unknown }) | undefined
        if (!user || typeof user !== 'object') throw badRequest('password.user is required.')
        if (typeof user.password !== 'string') throw badRequest('password.user.password (a string) is required.')
        users.add(await this.verifyUserPassword(user, user.password))
      } else if (method === 'totp') {
        users.add(await this.totp(body))
      } else if (method === 'token') {
        if (typeof body.id !== 'string') throw badRequest('token.id is required.')
        const checked = this.tokens.check(body.id)
        parent = checked.payload
        if (parent.ac) throw new AppError('forbidden', 'A token created from an application credential cannot be rescoped.')
        if (parent.oa) throw new AppError('forbidden', 'Using OAuth-scoped token to create another token. Create a new OAuth-scoped token instead.')
        users.add(parent.u)
        for (const m of parent.m) satisfied.add(m)
      } else if (method === 'oauth1') {
        // Scoped to its access token's project, with the roles it delegates: nothing else to ask for.
        if (methods.length !== 1) throw badRequest('The oauth1 method cannot be combined with other methods.')
        if (auth.scope !== undefined) throw fail("An OAuth login cannot ask for a scope: it is scoped to its access token's project.")
        if (!signed) throw fail()
        const grant = await this.oauth1.login(signed)
        await this.requireEnabled(grant.userId)
        users.add(grant.userId)
        oauth = grant
      } else {
        if (auth.scope !== undefined) throw fail('An application credential login cannot ask for a scope.')
        const found = await this.applicationCredential(body)
        users.add(found.userId)
        cred = found.cred
      }
      satisfied.add(method)
    }
    if (users.size !== 1) throw fail()
    const userId = [...users][0]
    // A login that read the store anyway (password, totp, application credential) also makes sure the snapshot is
    // current, so MFA rules, grants and scopes written a moment ago by any process apply; a rescope stays off the
    // database unless the snapshot does not know the user.
    if (methods.some((m) => m !== 'token') || !this.snap.users.has(userId)) await this.tokens.refresh()
    const user = this.snap.users.get(userId)
    if (!user) throw fail()

    // MFA rules (application credentials are for automation and skip them, as in Keystone; an OAuth access token was
    // authorized by a whole login of its user).
    const methodList = [...satisfied]
    if (!cred && !oauth) {
      const rules = mfaRules(user.options)
      if (!rulesSatisfied(rules, satisfied)) {
        const { receipt, payload } = this.tokens.issueReceipt(userId, methodList)
        const domain = this.snap.domains.get(user.domainId)
        return {
          kind: 'receipt',
          receipt,
          body: {
            receipt: {
              methods: methodList,
              user: { id: user.id, name: user.name, domain: { id: user.domainId, name: domain?.name ?? '' } },
              expires_at: keystoneTime(payload.e),
              issued_at: keystoneTime(payload.i),
            },
            required_auth_methods: rules.filter((rule) => rule.some((m) => satisfied.has(m))),
          },
        }
      }
    }

    // A whole login: only now does the failure count start again (a right password alone, for a user whose rules
    // need a TOTP code as well, leaves it as it is).
    if (methods.some((m) => GUARDED_METHODS.includes(m))) await this.wholeLogin(userId)

    const decide = () => {
      const u = this.snap.users.get(userId) ?? user
      const chosen = cred ? { p: cred.projectId } : oauth ? { p: oauth.projectId } : this.resolveScope(auth.scope, u.id, u.defaultProjectId)
      if (chosen) this.requireAccess(u.id, chosen, { appCredId: cred?.id, oauthAccessId: oauth?.id })
      return chosen
    }
    let scope: ScopeRef
    try {
      scope = decide()
    } catch (err) {
      // The project or the grant may have been written by another process since the last poll: look once more.
      if (!(err instanceof AppError && err.code === 'unauthorized')) throw err
      await this.tokens.refresh()
      scope = decide()
    }
    let expiresAt = parent ? parent.e : this.now() + this.tokens.ttlMs
    if (cred?.expiresAt != null) expiresAt = Math.min(expiresAt, cred.expiresAt)
    if (oauth) expiresAt = Math.min(expiresAt, oauth.expiresAt)
    const issued = await this.tokens.issue({
      userId,
      methods: methodList,
      scope,
      expiresAt,
      parentAuditIds: parent?.a,
      applicationCredentialId: cred?.id,
      oauthAccessTokenId: oauth?.id,
    })
    return { kind: 'token', token: issued.token, payload: issued.payload, resolved: issued.resolved }
  }

  private requireAccess(userId: string, scope: NonNullable<ScopeRef>, via: Delegation): void {
    if ('p' in scope) {
      const project = this.snap.projects.get(scope.p)
      const domain = project && this.snap.domains.get(project.domainId)
      if (!project || !domain) throw fail()
      if (!project.enabled || !domain.enabled) throw fail(`The project ${project.id} is disabled.`)
    } else if ('d' in scope) {
      const domain = this.snap.domains.get(scope.d)
      if (!domain) throw fail()
      if (!domain.enabled) throw fail(`The domain ${domain.id} is disabled.`)
    }
    if (tokenRoles(this.snap, userId, scope, via).length === 0) {
      const what = 'p' in scope ? `project ${scope.p}` : 'd' in scope ? `domain ${scope.d}` : 'the system'
      throw fail(`User ${userId} has no access to ${what}.`)
    }
  }

  /** The scope a request asks for; no scope means the default project when usable, else unscoped. */
  private resolveScope(raw: unknown, userId: string, defaultProjectId: string | null): ScopeRef {
    if (raw === undefined || raw === null) {
      if (!defaultProjectId) return null
      const project = this.snap.projects.get(defaultProjectId)
      const domain = project && this.snap.domains.get(project.domainId)
      if (!project?.enabled || !domain?.enabled) return null
      return tokenRoles(this.snap, userId, { p: project.id }).length > 0 ? { p: project.id } : null
    }
    if (raw === 'unscoped') return null
    if (typeof raw !== 'object' || Array.isArray(raw)) throw badRequest('scope must be an object or "unscoped".')
    const keys = Object.keys(raw)
    if (keys.length !== 1) throw badRequest('scope must name exactly one of project, domain, system or unscoped.')
    const [key] = keys
    const value = (raw as Record<string, unknown>)[key] as Record<string, unknown> | undefined
    if (key === 'unscoped') return null
    if (!value || typeof value !== 'object') throw badRequest(`scope.${key} must be an object.`)
    if (key === 'project') {
      if (typeof value.id === 'string') {
        if (!this.snap.projects.has(value.id)) throw fail()
        return { p: value.id }
      }
      if (typeof value.name !== 'string') throw badRequest('scope.project needs an id, or a name and a domain.')
      const d = value.domain as { id?: unknown; name?: unknown } | undefined
      if (!d || (typeof d.id !== 'string' && typeof d.name !== 'string')) throw badRequest('scope.project.domain (id or name) is required with a project name.')
      const domain = typeof d.id === 'string' ? this.snap.domains.get(d.id) : this.snap.domainNamed(d.name as string)
      const project = domain && this.snap.projectNamed(domain.id, value.name)
      if (!project) throw fail()
      return { p: project.id }
    }
    if (key === 'domain') {
      const domain =
        typeof value.id === 'string'
          ? this.snap.domains.get(value.id)
          : typeof value.name === 'string'
            ? this.snap.domainNamed(value.name)
            : undefined
      if (typeof value.id !== 'string' && typeof value.name !== 'string') throw badRequest('scope.domain needs an id or a name.')
      if (!domain) throw fail()
      return { d: domain.id }
    }
    if (key === 'system') {
      if (value.all !== true) throw badRequest('scope.system must be {"all": true}.')
      return { sys: 'all' }
    }
    if (key === 'OS-TRUST:trust') throw fail('Trusts are not supported.')
    throw badRequest(`Unknown scope ${key}.`)
  }
}

export function parseOptions(text: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text) as unknown
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}
