/**
 * Access tokens: random 256-bit values, stored as SHA-256 hashes, accepted by the userinfo endpoint until they
 * expire (the ID token's lifetime) or their grant is revoked. Each belongs to a grant (`family_id`): the
 * login, code or device approval it came from and every refresh after it, so revoking the grant (a reused
 * code, a reused refresh token, a disabled user) ends them too (refresh-tokens.ts revokeFamily).
 */
import type { Store } from '../storage/store.js'
import { randomToken, tokenHash } from './random-tokens.js'

export interface AccessGrant {
  familyId: string
  clientId: string
  userId: string
  scopes: string[]
}

export class AccessTokens {
  constructor(
    private readonly store: Store,
    private readonly options: { ttlMs: number; now?: () => number },
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)()
  }

  async issue(grant: AccessGrant): Promise<string> {
    const token = randomToken()
    const now = this.now()
    await this.store.db
      .insertInto('idp_access_tokens')
      .values({ token_hash: tokenHash(token), family_id: grant.familyId, client_id: grant.clientId, user_id: grant.userId, scopes: grant.scopes.join(' '), created_at: now, expires_at: now + this.options.ttlMs })
      .execute()
    return token
  }

  /** The grant of a token that is still valid, else undefined. */
  async find(token: string): Promise<AccessGrant | undefined> {
    const row = await this.store.db.selectFrom('idp_access_tokens').selectAll().where('token_hash', '=', tokenHash(token)).where('expires_at', '>', this.now()).executeTakeFirst()
    return row && { familyId: row.family_id, clientId: row.client_id, userId: row.user_id, scopes: row.scopes.split(' ').filter(Boolean) }
  }

  async purge(): Promise<void> {
    await this.store.db.deleteFrom('idp_access_tokens').where('expires_at', '<=', this.now()).execute()
  }
}
