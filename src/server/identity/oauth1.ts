/**
 * Keystone's OS-OAUTH1 delegation (docs/identity.md, "OAuth 1.0a delegation"): a consumer asks for a request token
 * for a project, a user of that project authorizes it with some of its roles and hands the verifier to the consumer,
 * the consumer exchanges token and verifier for an access token, and signs token requests (method `oauth1`) with it.
 *
 * | Step | Signed with | Refused |
 * |---|---|---|
 * | request token | consumer | unsigned 400; bad signature, stale timestamp, replayed nonce 401; unknown project 404 |
 * | authorize | (a user's token) | token from delegation 403; unknown request token 404; expired, already authorized, role not held 401 |
 * | access token | consumer + request token | unknown or used request token 404; expired, not authorized, wrong verifier, other consumer, bad signature 401 |
 * | `oauth1` login | consumer + access token | unknown, expired or deleted access token, bad signature 401 |
 *
 * Secrets of tokens are sealed with the master key (signatures need them); verifiers are kept as SHA-256 hashes.
 * Every signed request's nonce is claimed once within the timestamp window.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { badRequest, forbidden, notFound, unauthorized } from '../../contracts/errors.js'
import type { Principal } from '../auth/principal.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { Db } from '../storage/store.js'
import { touchIdentity } from './generation.js'
import { parseOAuthHeader, signatureMatches, type OAuthParams } from './oauth1-signature.js'
import type { IdentitySnapshot } from './snapshot.js'

/** Keystone's `[oauth1] request_token_duration` and `access_token_duration` defaults. */
export const REQUEST_TOKEN_SECONDS = 28_800
export const ACCESS_TOKEN_SECONDS = 86_400
/** How far a request's oauth_timestamp may be from now (oauthlib's timestamp_lifetime, which Keystone uses). */
export const TIMESTAMP_WINDOW_SECONDS = 600

/** A signed request as the server received it. */
export interface SignedRequest {
  method: string
  authorization: string | undefined
  /** The URIs the client may have signed: as configured (the catalog's) and as this request reached the server. */
  uris: string[]
  query: [string, string][]
}

/** An access token as validation sees it (no secret). */
export interface OAuthAccessGrant {
  id: string
  consumerId: string
  userId: string
  projectId: string
  roleIds: string[]
  expiresAt: number
}

const REQUIRED = ['oauth_consumer_key', 'oauth_signature', 'oauth_signature_method', 'oauth_timestamp', 'oauth_nonce'] as const

const INVALID_SIGNATURE = 'Invalid signature'

const hash = (text: string) => createHash('sha256').update(text, 'utf8').digest()
const newKey = () => randomBytes(16).toString('hex')
const newSecret = () => randomBytes(24).toString('hex')
/** Keystone's isotime with microseconds. */
export const oauthTime = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')

/** Whether the user's token came from a delegation (OAuth, or a restricted application credential): it may not delegate further. */
export function delegated(principal: Principal, snap: IdentitySnapshot): boolean {
  if (principal.oauth) return true
  return principal.applicationCredentialId !== undefined && !snap.appCreds.get(principal.applicationCredentialId)?.unrestricted
}

export class OAuth1 {
  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
    private readonly now: () => number = Date.now,
  ) {}

  /** The request's OAuth parameters, each required one present (Keystone's 400 otherwise). */
  private params(request: SignedRequest, also: string[] = []): OAuthParams {
    const params = parseOAuthHeader(request.authorization)
    if (!params) throw badRequest('Expecting to find an OAuth Authorization header in request.')
    for (const name of [...REQUIRED, ...also]) {
      if (!params.get(name)) throw badRequest(`Expecting to find ${name} in request.`)
    }
    return params
  }

  /** The consumer's secret; an unknown consumer signs nothing. */
  private async consumerSecret(consumerId: string): Promise<string> {
    const row = await this.db.selectFrom('oauth_consumers').select('secret').where('id', '=', consumerId).executeTakeFirst()
    if (!row) throw unauthorized(INVALID_SIGNATURE)
    return this.box.openText(row.secret)
  }

  /**
   * Method, version, timestamp window and signature, then the nonce is claimed: a nonce seen before within the
   * window is a replay. Throws 401.
   */
  private async checkSignature(request: SignedRequest, params: OAuthParams, consumerSecret: string, tokenSecret: string): Promise<void> {
    if (params.get('oauth_signature_method') !== 'HMAC-SHA1') throw unauthorized(`${INVALID_SIGNATURE}: only HMAC-SHA1 is accepted.`)
    const version = params.get('oauth_version')
    if (version !== undefined && version !== '1.0') throw unauthorized(`${INVALID_SIGNATURE}: oauth_version must be 1.0.`)
    const timestamp = params.get('oauth_timestamp')!
    const seconds = /^\d{1,12}$/.test(timestamp) ? Number(timestamp) : NaN
    const now = this.now()
    if (!(Math.abs(now / 1000 - seconds) <= TIMESTAMP_WINDOW_SECONDS)) throw unauthorized(`${INVALID_SIGNATURE}: oauth_timestamp is not within ${TIMESTAMP_WINDOW_SECONDS} s of the server's time.`)
    const nonce = params.get('oauth_nonce')!
    if (nonce.length > 128) throw unauthorized(`${INVALID_SIGNATURE}: oauth_nonce is too long.`)
    if (!signatureMatches(params.get('oauth_signature')!, { method: request.method, uris: request.uris, params, query: request.query }, { consumer: consumerSecret, token: tokenSecret })) {
      throw unauthorized(INVALID_SIGNATURE)
    }
    const consumerId = params.get('oauth_consumer_key')!
    await this.db.deleteFrom('oauth_nonces').where('expires_at', '<', now).execute()
    const claimed = await this.db
      .insertInto('oauth_nonces')
      .values({ consumer_id: consumerId, nonce, expires_at: (seconds + TIMESTAMP_WINDOW_SECONDS) * 1000 })
      .onConflict((oc) => oc.columns(['consumer_id', 'nonce']).doNothing())
      .executeTakeFirst()
    if (Number(claimed.numInsertedOrUpdatedRows ?? 0) !== 1) throw unauthorized(`${INVALID_SIGNATURE}: the nonce was already used.`)
  }

  /** POST /OS-OAUTH1/request_token: a new request token for the project, signed by the consumer alone. */
  async createRequestToken(request: SignedRequest, projectId: string | undefined, projectExists: (id: string) => Promise<boolean>): Promise<{ key: string; secret: string; expiresAt: number }> {
    const params = this.params(request)
    if (!projectId) throw badRequest('Expecting to find Requested-Project-Id in request.')
    const consumerId = params.get('oauth_consumer_key')!
    await this.checkSignature(request, params, await this.consumerSecret(consumerId), '')
    // Only once the consumer proved itself: an unsigned caller cannot probe project ids.
    if (!(await projectExists(projectId))) throw notFound(`Could not find project: ${projectId}.`)
    const now = this.now()
    const token = { key: newKey(), secret: newSecret(), expiresAt: now + REQUEST_TOKEN_SECONDS * 1000 }
    await this.db
      .insertInto('oauth_request_tokens')
      .values({ id: token.key, consumer_id: consumerId, secret: this.box.seal(token.secret), project_id: projectId, authorizing_user_id: null, role_ids: null, verifier_hash: null, expires_at: token.expiresAt, created_at: now })
      .execute()
    return token
  }

  /**
   * PUT /OS-OAUTH1/authorize/{id}: the calling user delegates roles it holds on the token's project (by id or
   * name); answers the verifier, shown once. A request token is authorized once.
   */
  async authorize(requestTokenId: string, principal: Principal, wanted: readonly { id?: string; name?: string }[], snap: IdentitySnapshot): Promise<string> {
    if (delegated(principal, snap)) throw forbidden('Cannot authorize a request token with a token issued via delegation.')
    const row = await this.db.selectFrom('oauth_request_tokens').selectAll().where('id', '=', requestTokenId).executeTakeFirst()
    if (!row) throw notFound(`Could not find request token: ${requestTokenId}.`)
    if (Number(row.expires_at) <= this.now()) throw unauthorized('Request token is expired')
    if (wanted.length === 0) throw badRequest('roles must name at least one role.')
    const roleIds = wanted.map((ref) => {
      if (ref.id !== undefined) return ref.id
      const role = [...snap.roles.values()].find((r) => r.name === ref.name && r.domainId === null)
      if (!role) throw notFound(`Could not find role: ${ref.name}.`)
      return role.id
    })
    const held = new Set(snap.effectiveRoles(principal.userId, { p: row.project_id }).map((r) => r.id))
    if (!roleIds.every((id) => held.has(id))) throw unauthorized('authorizing user does not have role required')
    const verifier = randomBytes(12).toString('base64url')
    const done = await this.db
      .updateTable('oauth_request_tokens')
      .set({ authorizing_user_id: principal.userId, role_ids: JSON.stringify([...new Set(roleIds)]), verifier_hash: hash(verifier).toString('hex') })
      .where('id', '=', requestTokenId)
      .where('authorizing_user_id', 'is', null)
      .executeTakeFirst()
    if (Number(done.numUpdatedRows) !== 1) throw unauthorized('Request token is already authorized')
    return verifier
  }

  /**
   * POST /OS-OAUTH1/access_token: an authorized request token, its verifier and both signatures make an access
   * token; the request token is used up in the same transaction.
   */
  async createAccessToken(request: SignedRequest): Promise<{ key: string; secret: string; expiresAt: number }> {
    const params = this.params(request, ['oauth_token', 'oauth_verifier'])
    const requestTokenId = params.get('oauth_token')!
    const row = await this.db.selectFrom('oauth_request_tokens').selectAll().where('id', '=', requestTokenId).executeTakeFirst()
    if (!row) throw notFound(`Could not find request token: ${requestTokenId}.`)
    const now = this.now()
    if (Number(row.expires_at) <= now) throw unauthorized('Request token is expired')
    const consumerId = params.get('oauth_consumer_key')!
    if (row.consumer_id !== consumerId) throw unauthorized('Provided consumer key does not match stored consumer key.')
    await this.checkSignature(request, params, await this.consumerSecret(consumerId), this.box.openText(row.secret))
    if (row.authorizing_user_id === null || row.role_ids === null || row.verifier_hash === null) throw unauthorized('Request Token does not have an authorizing user id.')
    const given = hash(params.get('oauth_verifier')!)
    if (!timingSafeEqual(given, Buffer.from(row.verifier_hash, 'hex'))) throw unauthorized('Provided verifier does not match stored verifier')
    const token = { key: newKey(), secret: newSecret(), expiresAt: now + ACCESS_TOKEN_SECONDS * 1000 }
    await this.db.transaction().execute(async (tx) => {
      const used = await tx.deleteFrom('oauth_request_tokens').where('id', '=', row.id).executeTakeFirst()
      if (Number(used.numDeletedRows) !== 1) throw notFound(`Could not find request token: ${requestTokenId}.`)
      await tx
        .insertInto('oauth_access_tokens')
        .values({ id: token.key, consumer_id: consumerId, secret: this.box.seal(token.secret), authorizing_user_id: row.authorizing_user_id!, project_id: row.project_id, role_ids: row.role_ids!, expires_at: token.expiresAt, created_at: now })
        .execute()
      await touchIdentity(tx)
    })
    return token
  }

  /** The `oauth1` method of POST /auth/tokens: a request signed by the consumer and an access token. Answers the grant. */
  async login(request: SignedRequest): Promise<{ id: string; userId: string; projectId: string; expiresAt: number }> {
    const params = this.params(request, ['oauth_token'])
    const accessTokenId = params.get('oauth_token')!
    const row = await this.db.selectFrom('oauth_access_tokens').selectAll().where('id', '=', accessTokenId).executeTakeFirst()
    if (!row) throw unauthorized('Could not validate the access token')
    if (Number(row.expires_at) <= this.now()) throw unauthorized('Access token is expired')
    const consumerId = params.get('oauth_consumer_key')!
    if (row.consumer_id !== consumerId) throw unauthorized('Could not validate the access token')
    await this.checkSignature(request, params, await this.consumerSecret(consumerId), this.box.openText(row.secret))
    return { id: row.id, userId: row.authorizing_user_id, projectId: row.project_id, expiresAt: Number(row.expires_at) }
  }
}

/** Every access token, as the identity snapshot keeps them (no secrets). */
export async function listOAuthAccessGrants(db: Db): Promise<OAuthAccessGrant[]> {
  const rows = await db.selectFrom('oauth_access_tokens').select(['id', 'consumer_id', 'authorizing_user_id', 'project_id', 'role_ids', 'expires_at']).execute()
  return rows.map((r) => ({ id: r.id, consumerId: r.consumer_id, userId: r.authorizing_user_id, projectId: r.project_id, roleIds: JSON.parse(r.role_ids) as string[], expiresAt: Number(r.expires_at) }))
}

/** A user's access tokens, newest first. */
export async function listUserAccessTokens(db: Db, userId: string) {
  return db
    .selectFrom('oauth_access_tokens')
    .select(['id', 'consumer_id', 'authorizing_user_id', 'project_id', 'role_ids', 'expires_at'])
    .where('authorizing_user_id', '=', userId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'asc')
    .execute()
}

/** One of the user's access tokens, else 404 (another user's does not exist for this one). */
export async function getUserAccessToken(db: Db, userId: string, id: string) {
  const row = await db
    .selectFrom('oauth_access_tokens')
    .select(['id', 'consumer_id', 'authorizing_user_id', 'project_id', 'role_ids', 'expires_at'])
    .where('id', '=', id)
    .where('authorizing_user_id', '=', userId)
    .executeTakeFirst()
  if (!row) throw notFound(`Could not find access token: ${id}.`)
  return row
}

/** Deletes an access token; the keystone tokens made from it end with it (they name it, and the snapshot no longer has it). */
export async function deleteAccessToken(db: Db, id: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('oauth_access_tokens').where('id', '=', id).execute()
    await touchIdentity(tx)
  })
}
