/**
 * Console auth tokens, as Nova keeps them (nova/objects/console_auth_token.py): a random token goes into the
 * URL, only its SHA-256 into the store, with an expiry `PCC_CONSOLE_TOKEN_TTL_SECONDS` ahead. A token works any
 * number of times until it expires, in every process (the store is the only state), and only for the server on
 * the host it had when the token was made: a deleted server takes its tokens with it (compute delete), and one
 * that moved to another host has none that work.
 */
import { randomUUID } from 'node:crypto'
import type { ConsoleProtocol } from '../../contracts/host/compute-driver.js'
import { sha256 } from '../onboarding/onboarding-service.js'
import type { ConsoleAuthTokenTable } from '../storage/schema.js'
import type { Db } from '../storage/store.js'

export interface ConsoleGrant {
  serverId: string
  hostId: string
  protocol: ConsoleProtocol
  /** The remote-console type asked for (novnc, serial). */
  consoleType: string
}

export class ConsoleTokens {
  constructor(
    private readonly db: Db,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new token for the grant. Expired tokens are deleted on the way (Nova does it periodically). */
  async issue(grant: ConsoleGrant): Promise<{ token: string; expiresAt: number }> {
    const token = randomUUID()
    const now = this.now()
    const expiresAt = now + this.ttlMs
    await this.db.deleteFrom('console_auth_tokens').where('expires_at', '<=', now).execute()
    await this.db
      .insertInto('console_auth_tokens')
      .values({ id: randomUUID(), token_hash: sha256(token), server_id: grant.serverId, host_id: grant.hostId, protocol: grant.protocol, console_type: grant.consoleType, created_at: now, expires_at: expiresAt })
      .execute()
    return { token, expiresAt }
  }

  /**
   * The token's grant while it is valid: not expired, its server not deleted and still on the host it was made
   * for. Undefined otherwise (unknown, expired, or the server moved or went away).
   */
  async find(token: string): Promise<(ConsoleAuthTokenTable & { hostname: string }) | undefined> {
    if (token === '' || token.length > 255) return undefined
    const row = await this.db
      .selectFrom('console_auth_tokens as t')
      .innerJoin('servers as s', 's.id', 't.server_id')
      .innerJoin('hosts as h', 'h.id', 't.host_id')
      .selectAll('t')
      .select('h.hostname')
      .where('t.token_hash', '=', sha256(token))
      .where('t.expires_at', '>', this.now())
      .where('s.deleted', '=', 0)
      .whereRef('s.host_id', '=', 't.host_id')
      .executeTakeFirst()
    return row
  }

  /** Deletes a server's tokens (in the transaction that deletes the server). */
  static async deleteForServer(db: Db, serverId: string): Promise<void> {
    await db.deleteFrom('console_auth_tokens').where('server_id', '=', serverId).execute()
  }
}
