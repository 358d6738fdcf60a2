/**
 * Refresh tokens: random values stored only as a SHA-256 hash, one row per token. Each use rotates: the token
 * is marked used and a successor is issued in the same family. A used token presented again within the reuse
 * window (two kubectl processes refreshing at once) gets the same successor; presented later, it is treated
 * as stolen and the whole family is revoked. A family also ends at its absolute lifetime (from the login) and a
 * token at its idle lifetime (from its issue, i.e. the family's last use).
 */
import { AppError } from '../../contracts/errors.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { IdpRefreshTokenTable } from '../storage/schema.js'
import type { Store } from '../storage/store.js'
import { randomId, randomToken, tokenHash } from './random-tokens.js'

export interface RefreshTokenOptions {
  reuseMs: number
  idleMs: number
  absoluteMs: number
  now?: () => number
}

export interface RefreshGrantState {
  userId: string
  clientId: string
  scopes: string[]
  passwordStamp: number | null
  familyId: string
  /** When the user logged in (the ID token's auth_time); the absolute lifetime counts from it. */
  loginAt: number
}


export const invalidRefresh = (message = 'Refresh token is invalid or has already been claimed by another client.') =>
  new AppError('bad_request', message, { type: 'invalid_grant' })

export class RefreshTokens {
  constructor(
    private readonly store: Store,
    private readonly box: SecretBox,
    private readonly options: RefreshTokenOptions,
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)()
  }

  /** The first token of a family, at login (the family is the login's grant, shared with its access tokens). */
  async create(grant: RefreshGrantState): Promise<string> {
    const token = randomToken()
    const now = this.now()
    await this.store.db.insertInto('idp_refresh_tokens').values(this.row(token, grant, grant.loginAt, now)).execute()
    return token
  }

  private row(token: string, grant: RefreshGrantState, familyCreatedAt: number, now: number): IdpRefreshTokenTable {
    return {
      id: randomId(),
      family_id: grant.familyId,
      token_hash: tokenHash(token),
      client_id: grant.clientId,
      user_id: grant.userId,
      scopes: grant.scopes.join(' '),
      password_stamp: grant.passwordStamp,
      family_created_at: familyCreatedAt,
      created_at: now,
      used_at: null,
      next_sealed: null,
      revoked_at: null,
    }
  }

  /**
   * Exchanges a token for its successor. `check` runs before the rotation with the grant the token carries
   * (the caller verifies the user is still allowed and throws otherwise, after revoking the family).
   */
  async rotate(token: string, clientId: string, check: (grant: RefreshGrantState) => Promise<void>): Promise<{ token: string; grant: RefreshGrantState }> {
    const db = this.store.db
    const now = this.now()
    const row = await db.selectFrom('idp_refresh_tokens').selectAll().where('token_hash', '=', tokenHash(token)).executeTakeFirst()
    if (!row || row.revoked_at !== null) throw invalidRefresh()
    if (row.client_id !== clientId) throw invalidRefresh('Refresh token was issued to another client.')
    if (row.family_created_at + this.options.absoluteMs <= now || row.created_at + this.options.idleMs <= now) throw invalidRefresh('Refresh token expired.')
    const grant: RefreshGrantState = { userId: row.user_id, clientId: row.client_id, scopes: row.scopes.split(' ').filter(Boolean), passwordStamp: row.password_stamp, familyId: row.family_id, loginAt: row.family_created_at }
    await check(grant)
    if (row.used_at !== null) return { token: await this.reuse(row, now), grant }

    const successor = randomToken()
    const claimed = await db.transaction().execute(async (tx) => {
      // Only one concurrent caller marks the token used; the others fall back to the reuse path.
      const result = await tx
        .updateTable('idp_refresh_tokens')
        .set({ used_at: now, next_sealed: this.box.seal(successor) })
        .where('id', '=', row.id)
        .where('used_at', 'is', null)
        .where('revoked_at', 'is', null)
        .executeTakeFirst()
      if (Number(result.numUpdatedRows) !== 1) return false
      await tx.insertInto('idp_refresh_tokens').values(this.row(successor, grant, row.family_created_at, now)).execute()
      return true
    })
    if (claimed) return { token: successor, grant }
    const again = await db.selectFrom('idp_refresh_tokens').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow()
    if (again.revoked_at !== null) throw invalidRefresh()
    return { token: await this.reuse(again, now), grant }
  }

  private async reuse(row: IdpRefreshTokenTable, now: number): Promise<string> {
    if (row.used_at !== null && now - row.used_at <= this.options.reuseMs && row.next_sealed) return this.box.openText(row.next_sealed)
    await this.revokeFamily(row.family_id)
    throw invalidRefresh()
  }

  /** Ends a grant: its refresh tokens are revoked and its access tokens deleted. */
  async revokeFamily(familyId: string): Promise<void> {
    await this.store.db.transaction().execute(async (tx) => {
      await tx.updateTable('idp_refresh_tokens').set({ revoked_at: this.now(), next_sealed: null }).where('family_id', '=', familyId).where('revoked_at', 'is', null).execute()
      await tx.deleteFrom('idp_access_tokens').where('family_id', '=', familyId).execute()
    })
  }

  /** Deletes rows nobody can use any more: families past their absolute lifetime, tokens idle too long, revoked families. */
  async purge(): Promise<number> {
    const now = this.now()
    const result = await this.store.db
      .deleteFrom('idp_refresh_tokens')
      .where((eb) =>
        eb.or([
          eb('family_created_at', '<=', now - this.options.absoluteMs),
          eb('created_at', '<=', now - this.options.idleMs),
          eb('revoked_at', '<=', now - this.options.idleMs),
        ]),
      )
      .executeTakeFirst()
    return Number(result.numDeletedRows)
  }
}
