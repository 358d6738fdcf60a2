/**
 * Issues and validates identity tokens. Tokens are sealed payloads (token-format.ts) under keys of a ring kept
 * in the store (token_keys, sealed with the master key): the primary key seals new tokens, every key in the ring
 * opens them. The principal behind a token is resolved from the store (principal-resolver.ts).
 */
import { randomBytes } from 'node:crypto'
import { AppError } from '../../contracts/errors.js'
import type { Authenticator, Principal } from '../auth/principal.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { Store } from '../storage/store.js'
import { decodeToken, encodeToken, tokenKeyId, type TokenKey, type TokenPayload } from './token-format.js'
import { resolvePrincipal } from './principal-resolver.js'

export interface IssueRequest {
  userId: string
  methods: string[]
  scope: TokenPayload['s']
  /** Rescoping keeps the original expiry and audit chain. */
  expiresAt?: number
  parentAuditIds?: string[]
  applicationCredentialId?: string
}

export interface TokenServiceOptions {
  ttlMs: number
  now?: () => number
}

export class TokenService implements Authenticator {
  private keys = new Map<string, TokenKey>()
  private primary: TokenKey | undefined
  private readonly now: () => number

  constructor(
    private readonly store: Store,
    private readonly box: SecretBox,
    private readonly options: TokenServiceOptions,
  ) {
    this.now = options.now ?? Date.now
  }

  /** Loads the key ring, creating the first primary key when the store has none. */
  async load(): Promise<void> {
    const db = this.store.db
    const existing = await db.selectFrom('token_keys').select('id').where('state', '=', 'primary').executeTakeFirst()
    if (!existing) {
      await db
        .insertInto('token_keys')
        .values({ id: randomBytes(8).toString('hex'), sealed_secret: this.box.seal(randomBytes(32)), state: 'primary', created_at: this.now() })
        .execute()
    }
    const rows = await db.selectFrom('token_keys').selectAll().orderBy('created_at', 'desc').execute()
    this.keys = new Map(rows.map((r) => [r.id, { id: Buffer.from(r.id, 'hex'), secret: this.box.open(r.sealed_secret) }]))
    // Several primaries can exist for a moment when processes start together; the newest wins everywhere.
    const primaryRow = rows.find((r) => r.state === 'primary')!
    this.primary = this.keys.get(primaryRow.id)
  }

  async issue(request: IssueRequest): Promise<{ token: string; payload: TokenPayload; principal: Principal }> {
    if (!this.primary) throw new Error('token keys not loaded')
    const now = this.now()
    const payload: TokenPayload = {
      u: request.userId,
      m: request.methods,
      s: request.scope,
      i: now,
      e: request.expiresAt ?? now + this.options.ttlMs,
      a: [randomBytes(16).toString('base64url'), ...(request.parentAuditIds ?? []).slice(0, 1)],
      ...(request.applicationCredentialId ? { ac: request.applicationCredentialId } : {}),
    }
    const principal = await resolvePrincipal(this.store.db, payload)
    return { token: encodeToken(payload, this.primary), payload, principal }
  }

  /** Opens a token and resolves its principal; AppError 'not_found' for anything not valid now. */
  async validate(token: string, options: { allowExpired?: boolean } = {}): Promise<Principal> {
    const keyId = tokenKeyId(token)
    const key = keyId ? this.keys.get(keyId) : undefined
    const payload = key ? decodeToken(token, key) : undefined
    if (!payload) throw new AppError('not_found', 'Could not recognize the token.')
    if (payload.e <= this.now() && !options.allowExpired) throw new AppError('not_found', 'The token has expired.')
    return resolvePrincipal(this.store.db, payload)
  }

  async authenticate(token: string): Promise<Principal> {
    try {
      return await this.validate(token)
    } catch (err) {
      if (err instanceof AppError && err.code === 'not_found') throw new AppError('unauthorized', 'The request you have made requires authentication.')
      throw err
    }
  }
}
