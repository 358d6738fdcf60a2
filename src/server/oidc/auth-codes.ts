/**
 * Authorization codes (RFC 6749 §4.1, PKCE per RFC 7636 with S256 only). A code is 256 random bits, stored as
 * its SHA-256, valid for CODE_TTL_MS, bound to its client, redirect URI and PKCE challenge, and single-use: a
 * code presented again revokes the grant its first use created (§4.1.2), since one of the two callers stole it.
 * A refused exchange (wrong verifier, wrong redirect URI, another client) changes nothing: the right caller can
 * still use the code.
 */
import { createHash } from 'node:crypto'
import { AppError } from '../../contracts/errors.js'
import type { IdpAuthCodeTable } from '../storage/schema.js'
import type { Store } from '../storage/store.js'
import { randomId, randomToken, tokenHash } from './random-tokens.js'

/** RFC 6749 §4.1.2 recommends at most 10 minutes; clients exchange the code within a second of receiving it. */
export const CODE_TTL_MS = 5 * 60_000
/** Used codes are kept this long after their expiry, so a late replay is still recognised as one. */
const USED_CODE_RETENTION_MS = 60 * 60_000

const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/
/** base64url of a SHA-256: 43 characters. */
export const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/

export const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url')

export interface CodeGrant {
  /** The code's row. */
  id: string
  clientId: string
  userId: string
  redirectUri: string
  scopes: string[]
  nonce: string | null
  codeChallenge: string
  authTime: number
  passwordStamp: number | null
  /** The grant the exchange's tokens belong to. */
  familyId: string
}

export interface Exchange {
  code: string | undefined
  clientId: string
  redirectUri: string | undefined
  codeVerifier: string | undefined
}

const oauthError = (type: string, message: string) => new AppError('bad_request', message, { type })
const invalidCode = () => oauthError('invalid_grant', 'The authorization code is invalid or expired.')

function grantOf(row: IdpAuthCodeTable): CodeGrant {
  return {
    id: row.id,
    clientId: row.client_id,
    userId: row.user_id,
    redirectUri: row.redirect_uri,
    scopes: row.scopes.split(' ').filter(Boolean),
    nonce: row.nonce,
    codeChallenge: row.code_challenge,
    authTime: row.auth_time,
    passwordStamp: row.password_stamp,
    familyId: row.family_id,
  }
}

/** The checks of an exchange, in order; each throws its RFC error (RFC 6749 §5.2, RFC 7636 §4.6). */
const EXCHANGE_CHECKS: [string, (grant: CodeGrant, exchange: Exchange) => void][] = [
  ['issued to this client', (g, e) => { if (g.clientId !== e.clientId) throw invalidCode() }],
  ['redirect_uri sent', (_g, e) => { if (!e.redirectUri) throw oauthError('invalid_request', 'Required param: redirect_uri.') }],
  ['redirect_uri as in the authorization request', (g, e) => { if (g.redirectUri !== e.redirectUri) throw oauthError('invalid_grant', 'redirect_uri does not match the one of the authorization request.') }],
  ['code_verifier sent', (_g, e) => { if (!e.codeVerifier) throw oauthError('invalid_grant', 'Required param: code_verifier (PKCE).') }],
  ['code_verifier well formed', (_g, e) => { if (!VERIFIER.test(e.codeVerifier!)) throw oauthError('invalid_request', 'code_verifier must have 43 to 128 characters from A-Z a-z 0-9 - . _ ~.') }],
  ['code_verifier matches the challenge', (g, e) => { if (s256(e.codeVerifier!) !== g.codeChallenge) throw oauthError('invalid_grant', 'code_verifier does not match the code_challenge.') }],
]

export class AuthCodes {
  constructor(
    private readonly store: Store,
    private readonly options: { now?: () => number } = {},
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)()
  }

  /** A new code for a finished login; returns the code (the only place it exists in clear). */
  async issue(grant: Omit<CodeGrant, 'id' | 'familyId'>): Promise<string> {
    const code = randomToken()
    const now = this.now()
    await this.store.db
      .insertInto('idp_auth_codes')
      .values({
        id: randomId(),
        code_hash: tokenHash(code),
        client_id: grant.clientId,
        user_id: grant.userId,
        redirect_uri: grant.redirectUri,
        scopes: grant.scopes.join(' '),
        nonce: grant.nonce,
        code_challenge: grant.codeChallenge,
        auth_time: grant.authTime,
        password_stamp: grant.passwordStamp,
        family_id: randomId(),
        created_at: now,
        expires_at: now + CODE_TTL_MS,
        used_at: null,
        replayed_at: null,
      })
      .execute()
    return code
  }

  /**
   * Redeems a code: every check passes, then the code is marked used (one caller wins a race). A code used
   * before: `revoke` ends the grant of its first use, and the caller gets invalid_grant.
   */
  async redeem(exchange: Exchange, revoke: (familyId: string) => Promise<void>): Promise<CodeGrant> {
    if (!exchange.code) throw oauthError('invalid_request', 'Required param: code.')
    const db = this.store.db
    const row = await db.selectFrom('idp_auth_codes').selectAll().where('code_hash', '=', tokenHash(exchange.code)).executeTakeFirst()
    if (!row) throw invalidCode()
    const grant = grantOf(row)
    const reused = async () => {
      await db.updateTable('idp_auth_codes').set({ replayed_at: this.now() }).where('id', '=', row.id).execute()
      await revoke(grant.familyId)
      return oauthError('invalid_grant', 'The authorization code was already used; the tokens issued for it are revoked.')
    }
    if (row.used_at !== null) throw await reused()
    if (row.expires_at <= this.now()) throw invalidCode()
    for (const [, check] of EXCHANGE_CHECKS) check(grant, exchange)
    const marked = await db.updateTable('idp_auth_codes').set({ used_at: this.now() }).where('id', '=', row.id).where('used_at', 'is', null).executeTakeFirst()
    if (Number(marked.numUpdatedRows) !== 1) throw await reused()
    return grant
  }

  /**
   * True when the code was presented again while its first exchange was issuing tokens; that exchange then
   * revokes what it issued (the replay's revocation may have run before those tokens existed).
   */
  async replayed(grant: CodeGrant): Promise<boolean> {
    const row = await this.store.db.selectFrom('idp_auth_codes').select('replayed_at').where('id', '=', grant.id).executeTakeFirst()
    return row?.replayed_at !== null && row?.replayed_at !== undefined
  }

  async purge(): Promise<void> {
    await this.store.db.deleteFrom('idp_auth_codes').where('expires_at', '<=', this.now() - USED_CODE_RETENTION_MS).execute()
  }
}
