/**
 * Browser logins in progress: one row from the authorization request (or the device verification) to the code
 * (or the approval). A row answers only the browser that started it: the `pcc_idp_browser` cookie's hash is
 * stored with it, so a login form posted from another site or another browser (login CSRF) is refused. The
 * `stage` says what the next page asks for, and moves only forward, by conditional updates, so two tabs
 * posting at once cannot both pass a step.
 */
import type { IdpAuthRequestTable } from '../storage/schema.js'
import type { Store } from '../storage/store.js'
import { randomId, tokenHash } from './random-tokens.js'

/** How long a user has to finish logging in (Dex keeps auth requests 24 h; a login page left open longer starts again). */
export const AUTH_REQUEST_TTL_MS = 30 * 60_000
/** Wrong passwords and TOTP codes one login may try before it ends. */
export const MAX_LOGIN_FAILURES = 5

export type Stage = 'login' | 'totp' | 'consent'

export interface AuthRequest {
  id: string
  clientId: string
  redirectUri: string
  scopes: string[]
  state: string | null
  nonce: string | null
  codeChallenge: string | null
  deviceRequestId: string | null
  stage: Stage
  userId: string | null
  authTime: number | null
}

export type NewAuthRequest = Omit<AuthRequest, 'id' | 'stage' | 'userId' | 'authTime'>

function toRequest(row: IdpAuthRequestTable): AuthRequest {
  return {
    id: row.id,
    clientId: row.client_id,
    redirectUri: row.redirect_uri,
    scopes: row.scopes.split(' ').filter(Boolean),
    state: row.state,
    nonce: row.nonce,
    codeChallenge: row.code_challenge,
    deviceRequestId: row.device_request_id,
    stage: row.stage as Stage,
    userId: row.user_id,
    authTime: row.auth_time,
  }
}

export class AuthRequests {
  constructor(
    private readonly store: Store,
    private readonly options: { now?: () => number } = {},
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)()
  }

  /** Starts a login for the browser holding the cookie `browser`; returns the request id. */
  async create(request: NewAuthRequest, browser: string): Promise<string> {
    const id = randomId()
    const now = this.now()
    await this.store.db
      .insertInto('idp_auth_requests')
      .values({
        id,
        browser_hash: tokenHash(browser),
        client_id: request.clientId,
        redirect_uri: request.redirectUri,
        scopes: request.scopes.join(' '),
        state: request.state,
        nonce: request.nonce,
        code_challenge: request.codeChallenge,
        device_request_id: request.deviceRequestId,
        stage: 'login',
        user_id: null,
        auth_time: null,
        failures: 0,
        created_at: now,
        expires_at: now + AUTH_REQUEST_TTL_MS,
      })
      .execute()
    return id
  }

  /** The unexpired request, when this browser started it. */
  async get(id: string, browser: string | undefined): Promise<AuthRequest | undefined> {
    if (!browser) return undefined
    const row = await this.store.db.selectFrom('idp_auth_requests').selectAll().where('id', '=', id).where('expires_at', '>', this.now()).executeTakeFirst()
    return row && row.browser_hash === tokenHash(browser) ? toRequest(row) : undefined
  }

  /** Moves the request from one stage to the next; false when it was not at `from` any more. */
  async advance(id: string, from: Stage, to: Stage, user?: { userId: string; authTime: number }): Promise<boolean> {
    const result = await this.store.db
      .updateTable('idp_auth_requests')
      .set({ stage: to, ...(user ? { user_id: user.userId, auth_time: user.authTime } : {}) })
      .where('id', '=', id)
      .where('stage', '=', from)
      .executeTakeFirst()
    return Number(result.numUpdatedRows) === 1
  }

  /** Counts a failed attempt; true when the request may go on, false when it has been ended for too many. */
  async failed(id: string): Promise<boolean> {
    await this.store.db.updateTable('idp_auth_requests').set((eb) => ({ failures: eb('failures', '+', 1) })).where('id', '=', id).execute()
    const row = await this.store.db.selectFrom('idp_auth_requests').select('failures').where('id', '=', id).executeTakeFirst()
    if (row && row.failures < MAX_LOGIN_FAILURES) return true
    await this.remove(id)
    return false
  }

  /** Ends a request (finished, denied or failed); true for the one caller that removed it. */
  async remove(id: string): Promise<boolean> {
    const result = await this.store.db.deleteFrom('idp_auth_requests').where('id', '=', id).executeTakeFirst()
    return Number(result.numDeletedRows) === 1
  }

  async purge(): Promise<void> {
    await this.store.db.deleteFrom('idp_auth_requests').where('expires_at', '<=', this.now()).execute()
  }
}
