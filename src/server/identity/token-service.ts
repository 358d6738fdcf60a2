/**
 * Issues and validates identity tokens without touching the database on the way.
 *
 * - Tokens are sealed payloads (token-format.ts) under keys of a ring kept in the store (token_keys, sealed with
 *   the master key). Keystone's Fernet scheme: the primary key seals, every key opens; a staged key (the next
 *   primary) is known to every process one rotation ahead, so a token sealed by a process that has just rotated
 *   opens everywhere. Rotation runs on a schedule, elected through pcc_meta so one process does it.
 * - What a token stands for comes from the in-process identity snapshot (snapshot.ts), reloaded when the
 *   identity generation changes; the generation is polled every `pollMs` (250 ms), so a write on any process
 *   (a revocation, a disabled user, a removed role, a rotation) is honoured everywhere within a second.
 * - Validated tokens and their rendered bodies are cached per snapshot, so repeated validation is a map lookup.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { AppError } from '../../contracts/errors.js'
import type { Authenticator, Principal } from '../auth/principal.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { Store } from '../storage/store.js'
import { identityGeneration, localIdentityWrites, touchIdentity } from './generation.js'
import { resolveToken, type ResolvedToken } from './principal-resolver.js'
import { IdentitySnapshot } from './snapshot.js'
import { renderToken } from './token-body.js'
import { pooledRandom } from './random-pool.js'
import { decodeToken, encodeToken, tokenKeyId, type TokenPayload } from './token-format.js'

export interface IssueRequest {
  userId: string
  methods: string[]
  scope: TokenPayload['s']
  /** Rescoping keeps the original expiry and audit chain. */
  expiresAt?: number
  parentAuditIds?: string[]
  applicationCredentialId?: string
  /** The OAuth 1.0a access token the token was made from. */
  oauthAccessTokenId?: string
}

export interface TokenServiceOptions {
  ttlMs: number
  /** How long past expiry `allow_expired` still accepts a token. */
  allowExpiredWindowMs?: number
  /** Key rotation interval. */
  rotationMs?: number
  /** How often the identity generation is polled. */
  pollMs?: number
  receiptTtlMs?: number
  /** Base of links in token bodies. */
  identityUrl?: string
  now?: () => number
}

const ROTATED_AT_KEY = 'token_keys_rotated_at'
const CACHE_LIMIT = 100_000

interface CachedToken {
  generation: number
  payload: TokenPayload
  resolved: ResolvedToken
  bodies: [string | undefined, string | undefined]
}

export class TokenService implements Authenticator {
  private snap: IdentitySnapshot = new IdentitySnapshot(-1)
  private readonly now: () => number
  private readonly cache = new Map<string, CachedToken>()
  private timers: NodeJS.Timeout[] = []
  private reloading: Promise<void> | undefined
  readonly ttlMs: number
  readonly allowExpiredWindowMs: number
  readonly rotationMs: number
  readonly receiptTtlMs: number

  constructor(
    private readonly store: Store,
    private readonly box: SecretBox,
    private readonly options: TokenServiceOptions,
  ) {
    this.now = options.now ?? Date.now
    this.ttlMs = options.ttlMs
    this.allowExpiredWindowMs = options.allowExpiredWindowMs ?? 172_800_000
    this.rotationMs = options.rotationMs ?? 86_400_000
    this.receiptTtlMs = options.receiptTtlMs ?? 300_000
  }

  /** The current identity snapshot (read-only for callers). */
  get snapshot(): IdentitySnapshot {
    return this.snap
  }

  /** Loads the key ring (creating a primary and a staged key when missing) and the identity snapshot. */
  async load(): Promise<void> {
    const db = this.store.db
    const states = new Set((await db.selectFrom('token_keys').select('state').execute()).map((r) => r.state))
    for (const state of ['primary', 'staged'] as const) {
      if (!states.has(state)) {
        await db.transaction().execute(async (tx) => {
          await tx.insertInto('token_keys').values({ id: randomBytes(8).toString('hex'), sealed_secret: this.box.seal(randomBytes(32)), state, created_at: this.now() }).execute()
          await touchIdentity(tx)
        })
      }
    }
    await db.insertInto('pcc_meta').values({ key: ROTATED_AT_KEY, value: String(this.now()) }).onConflict((oc) => oc.column('key').doNothing()).execute()
    await this.reload()
  }

  /** Polls the generation and the rotation schedule until stop(). */
  start(): void {
    const pollMs = this.options.pollMs ?? 250
    const poll = setInterval(() => {
      this.refresh().catch(() => {})
    }, pollMs)
    const rotate = setInterval(() => {
      this.maybeRotate().catch(() => {})
    }, Math.max(pollMs, Math.min(this.rotationMs / 4, 60_000)))
    poll.unref()
    rotate.unref()
    this.timers.push(poll, rotate)
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t)
    this.timers = []
  }

  /**
   * Makes sure the snapshot includes this process's own identity writes (touchIdentity counts them). Free when it
   * does; otherwise one generation read per request until the write has committed and been loaded (2 s at most,
   * for a write that rolled back or went to another store of this process).
   */
  async fresh(): Promise<void> {
    if (!this.isFresh()) await this.refresh()
  }

  private isFresh(): boolean {
    const local = localIdentityWrites()
    return this.snap.localWrites >= local.seq || Date.now() - local.at > 2000
  }

  /** Reloads the snapshot when the store's identity generation moved; call after your own identity writes to see them at once. */
  async refresh(): Promise<void> {
    if ((await identityGeneration(this.store.db)) !== this.snap.generation) await this.reload()
  }

  async reload(): Promise<void> {
    // One load at a time; callers arriving during a load wait for it and then check again.
    while (this.reloading) await this.reloading
    this.reloading = (async () => {
      this.snap = await IdentitySnapshot.load(this.store.db, this.box)
      this.cache.clear()
    })()
    try {
      await this.reloading
    } finally {
      this.reloading = undefined
    }
  }

  /** Rotates when the schedule says so and this process wins the election for this turn. */
  async maybeRotate(): Promise<boolean> {
    const row = await this.store.db.selectFrom('pcc_meta').select('value').where('key', '=', ROTATED_AT_KEY).executeTakeFirst()
    if (row && this.now() - Number(row.value) < this.rotationMs) return false
    return this.rotate(row?.value)
  }

  /**
   * staged → primary, primary → secondary, a new staged key, and secondaries beyond what can still open a
   * valid token are dropped: Keystone's sizing rule, max keys = ceil((ttl + allow_expired window) / interval) + 2.
   * `expectedStamp` elects one process per turn (the conditional update succeeds for one of them).
   */
  async rotate(expectedStamp?: string): Promise<boolean> {
    const now = this.now()
    const maxKeys = Math.ceil((this.ttlMs + this.allowExpiredWindowMs) / this.rotationMs) + 2
    const rotated = await this.store.db.transaction().execute(async (tx) => {
      if (expectedStamp !== undefined) {
        const won = await tx.updateTable('pcc_meta').set({ value: String(now) }).where('key', '=', ROTATED_AT_KEY).where('value', '=', expectedStamp).executeTakeFirst()
        if (Number(won.numUpdatedRows) !== 1) return false
      } else {
        await tx.updateTable('pcc_meta').set({ value: String(now) }).where('key', '=', ROTATED_AT_KEY).execute()
      }
      const keys = await tx.selectFrom('token_keys').select(['id', 'state', 'created_at']).orderBy('created_at', 'asc').orderBy('id', 'asc').execute()
      const staged = keys.filter((k) => k.state === 'staged').at(-1)
      // Processes that started together may each have staged a key: the newest is promoted, the others (known to
      // every process already) join the secondaries and age out with them.
      await tx.updateTable('token_keys').set({ state: 'secondary' }).where('state', 'in', ['primary', 'staged']).execute()
      if (staged) await tx.updateTable('token_keys').set({ state: 'primary' }).where('id', '=', staged.id).execute()
      await tx.insertInto('token_keys').values({ id: randomBytes(8).toString('hex'), sealed_secret: this.box.seal(randomBytes(32)), state: 'staged', created_at: now }).execute()
      const secondaries = keys.filter((k) => k.state !== 'staged' && k.id !== staged?.id)
      const excess = secondaries.length + 2 - maxKeys
      if (excess > 0) await tx.deleteFrom('token_keys').where('id', 'in', secondaries.slice(0, excess).map((k) => k.id)).execute()
      await touchIdentity(tx)
      return true
    })
    if (rotated) await this.reload()
    return rotated
  }

  private seal(payload: TokenPayload): string {
    const primary = this.snap.primary
    if (!primary) throw new Error('token keys not loaded')
    return encodeToken(payload, primary)
  }

  /** Issues a token from the snapshot; reloads it once when it does not know the user, scope or grant yet. */
  async issue(request: IssueRequest): Promise<{ token: string; payload: TokenPayload; principal: Principal; resolved: ResolvedToken }> {
    const now = this.now()
    const payload: TokenPayload = {
      u: request.userId,
      m: request.methods,
      s: request.scope,
      i: now,
      e: request.expiresAt ?? now + this.ttlMs,
      a: [pooledRandom(16).toString('base64url'), ...(request.parentAuditIds ?? []).slice(-1)],
      ...(request.applicationCredentialId ? { ac: request.applicationCredentialId } : {}),
      ...(request.oauthAccessTokenId ? { oa: request.oauthAccessTokenId } : {}),
    }
    let resolved: ResolvedToken
    try {
      resolved = resolveToken(this.snap, payload)
    } catch {
      // Written moments ago (by another process, or by a writer that did not bump the generation): load again.
      await this.reload()
      resolved = resolveToken(this.snap, payload)
    }
    return { token: this.seal(payload), payload, principal: resolved.principal, resolved }
  }

  /** Opens a token without resolving it; AppError 'not_found' when it cannot be opened or has expired. */
  open(token: string, options: { allowExpired?: boolean } = {}): TokenPayload {
    const keyId = tokenKeyId(token)
    const key = keyId ? this.snap.keys.get(keyId) : undefined
    const payload = key ? decodeToken(token, key) : undefined
    if (!payload || payload.k !== undefined) throw new AppError('not_found', 'Could not recognize the token.')
    const now = this.now()
    if (payload.e <= now && !(options.allowExpired && payload.e + this.allowExpiredWindowMs > now)) throw new AppError('not_found', 'The token has expired.')
    return payload
  }

  /** Opens and resolves a token (cached per snapshot); AppError 'not_found' for anything not valid now. */
  check(token: string, options: { allowExpired?: boolean } = {}): { payload: TokenPayload; resolved: ResolvedToken; cached: CachedToken } {
    const hit = this.cache.get(token)
    if (hit && hit.generation === this.snap.generation) {
      const now = this.now()
      if (hit.payload.e > now || (options.allowExpired && hit.payload.e + this.allowExpiredWindowMs > now)) return { payload: hit.payload, resolved: hit.resolved, cached: hit }
      throw new AppError('not_found', 'The token has expired.')
    }
    const payload = this.open(token, options)
    const resolved = resolveToken(this.snap, payload)
    if (this.cache.size >= CACHE_LIMIT) this.cache.clear()
    const cached: CachedToken = { generation: this.snap.generation, payload, resolved, bodies: [undefined, undefined] }
    this.cache.set(token, cached)
    return { payload, resolved, cached }
  }

  /** The serialized `{token: …}` body for a checked token, rendered once per snapshot. */
  body(checked: { payload: TokenPayload; resolved: ResolvedToken; cached?: CachedToken }, withCatalog: boolean): string {
    const slot = withCatalog ? 0 : 1
    const hit = checked.cached?.bodies[slot]
    if (hit !== undefined) return hit
    const text = renderToken(this.snap, checked.payload, checked.resolved, withCatalog, this.options.identityUrl ?? '')
    if (checked.cached) checked.cached.bodies[slot] = text
    return text
  }

  async validate(token: string, options: { allowExpired?: boolean } = {}): Promise<Principal> {
    await this.fresh()
    return this.check(token, options).resolved.principal
  }

  async authenticate(token: string): Promise<Principal> {
    await this.fresh()
    return this.principalOf(token)
  }

  authenticateNow(token: string): Principal | undefined {
    return this.isFresh() ? this.principalOf(token) : undefined
  }

  private principalOf(token: string): Principal {
    try {
      return this.check(token).resolved.principal
    } catch (err) {
      if (err instanceof AppError && err.code === 'not_found') throw new AppError('unauthorized', 'The request you have made requires authentication.')
      throw err
    }
  }

  /** Revokes one token (by its audit id) for every process: an event row, then the generation moves. */
  async revoke(payload: TokenPayload): Promise<void> {
    await this.addRevocation({ audit_id: payload.a[0], user_id: null, project_id: null, issued_before: payload.i })
  }

  /** Revokes every token of a user issued until now (password change, disable are also seen through the snapshot). */
  async revokeUser(userId: string): Promise<void> {
    await this.addRevocation({ audit_id: null, user_id: userId, project_id: null, issued_before: this.now() })
  }

  private async addRevocation(event: { audit_id: string | null; user_id: string | null; project_id: string | null; issued_before: number }): Promise<void> {
    const now = this.now()
    await this.store.db.transaction().execute(async (tx) => {
      // Events that can no longer match a token still valid are pruned on the way.
      await tx.deleteFrom('revocation_events').where('prune_after', '<', now).execute()
      await tx
        .insertInto('revocation_events')
        .values({ id: randomUUID(), ...event, prune_after: now + this.ttlMs + this.allowExpiredWindowMs, revoked_at: now })
        .execute()
      await touchIdentity(tx)
    })
    await this.reload()
  }

  /** An MFA auth receipt: the methods a user has passed so far, sealed like a token, valid for receiptTtlMs. */
  issueReceipt(userId: string, methods: string[]): { receipt: string; payload: TokenPayload } {
    const now = this.now()
    const payload: TokenPayload = { k: 'r', u: userId, m: methods, s: null, i: now, e: now + this.receiptTtlMs, a: [] }
    return { receipt: this.seal(payload), payload }
  }

  openReceipt(receipt: string): TokenPayload {
    const keyId = tokenKeyId(receipt)
    const key = keyId ? this.snap.keys.get(keyId) : undefined
    const payload = key ? decodeToken(receipt, key) : undefined
    if (!payload || payload.k !== 'r' || payload.e <= this.now()) throw new AppError('unauthorized', 'The auth receipt is not valid or has expired.')
    return payload
  }
}
