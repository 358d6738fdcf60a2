/**
 * The OIDC provider behind {base}/idp: discovery, JWKS and the token endpoint with the password and
 * refresh_token grants (Dex's behaviour, see docs/idp.md). HTTP-free: routes pass the form fields and the
 * Authorization header in and send the result out; failures are AppErrors whose `type` is the OAuth2 `error`.
 */
import { createHash, randomBytes } from 'node:crypto'
import { SignJWT } from 'jose'
import { AppError } from '../../contracts/errors.js'
import type { Authenticator } from '../auth/principal.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { Store } from '../storage/store.js'
import { userClaims, type UserClaims } from './claims.js'
import type { IdpClients } from './clients.js'
import { checkLogin, type LockoutPolicy } from './login.js'
import { invalidRefresh, type RefreshTokens } from './refresh-tokens.js'
import type { SigningKeys } from './signing-keys.js'

export const DEFAULT_CONNECTOR = 'default'
export const SUPPORTED_SCOPES = ['openid', 'email', 'groups', 'profile', 'offline_access'] as const
/** Accepted for Dex compatibility and ignored. */
const IGNORED_SCOPES = new Set(['federated:id'])
export const GRANT_TYPES = ['password', 'refresh_token'] as const

export type TokenForm = Record<string, string | undefined>

export interface TokenResponse {
  access_token: string
  token_type: 'bearer'
  expires_in: number
  id_token: string
  refresh_token?: string
}

export interface ProviderOptions {
  issuer: string
  idTokenSeconds: number
  lockout: LockoutPolicy
  now?: () => number
}

export interface ProviderDeps {
  store: Store
  box: SecretBox
  tokens: Authenticator
  clients: IdpClients
  keys: SigningKeys
  refreshTokens: RefreshTokens
}

const oauthError = (type: string, message: string) => new AppError('bad_request', message, { type })
const invalidClient = () => new AppError('unauthorized', 'Invalid client credentials.', { type: 'invalid_client' })

/** Dex's subject: base64url(protobuf{1: user id, 2: connector id}), stable per user and connector. */
export function dexSubject(userId: string, connectorId: string): string {
  const field = (tag: number, value: string) => {
    const bytes = Buffer.from(value)
    if (bytes.length > 127) throw new Error('subject field too long')
    return Buffer.concat([Buffer.from([tag, bytes.length]), bytes])
  }
  return Buffer.concat([field(0x0a, userId), field(0x12, connectorId)]).toString('base64url')
}

/** OIDC core §3.1.3.6: the left half of the SHA-256 of the access token, base64url. */
export function atHash(accessToken: string): string {
  return createHash('sha256').update(accessToken).digest().subarray(0, 16).toString('base64url')
}

/** RFC 6749 §2.3.1: Basic credentials are form-encoded before base64. */
function basicCredentials(authorization: string | undefined): { id: string; secret: string } | undefined {
  if (!authorization || !/^basic /i.test(authorization)) return undefined
  const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon < 0) throw invalidClient()
  try {
    const decode = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '))
    return { id: decode(decoded.slice(0, colon)), secret: decode(decoded.slice(colon + 1)) }
  } catch {
    throw invalidClient()
  }
}

function parseScopes(raw: string | undefined): string[] {
  return [...new Set((raw ?? '').split(/\s+/).filter(Boolean))]
}

export class OidcProvider {
  private lastPurge = 0

  constructor(
    private readonly deps: ProviderDeps,
    private readonly options: ProviderOptions,
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)()
  }

  get issuer(): string {
    return this.options.issuer
  }

  discovery() {
    const issuer = this.options.issuer
    return {
      issuer,
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/keys`,
      grant_types_supported: [...GRANT_TYPES],
      // Dex lists the code-flow response types; this provider has no authorization endpoint, so none apply.
      response_types_supported: ['id_token', 'token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      scopes_supported: [...SUPPORTED_SCOPES],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      claims_supported: ['iss', 'sub', 'aud', 'iat', 'exp', 'at_hash', 'nonce', 'email', 'email_verified', 'name', 'preferred_username', 'groups'],
    }
  }

  jwks() {
    return this.deps.keys.jwks()
  }

  async token(form: TokenForm, authorization: string | undefined): Promise<TokenResponse> {
    const clientId = await this.authenticateClient(form, authorization)
    const grantType = form.grant_type
    if (!grantType) throw oauthError('invalid_request', 'Required param: grant_type.')
    if (grantType === 'password') return this.passwordGrant(form, clientId)
    if (grantType === 'refresh_token') return this.refreshGrant(form, clientId)
    throw oauthError('unsupported_grant_type', `Unsupported grant type: ${grantType}. Supported: ${GRANT_TYPES.join(', ')}.`)
  }

  private async authenticateClient(form: TokenForm, authorization: string | undefined): Promise<string> {
    const basic = basicCredentials(authorization)
    const id = basic?.id ?? form.client_id
    const secret = basic?.secret ?? form.client_secret
    if (!id || secret === undefined) throw invalidClient()
    if (!(await this.deps.clients.verify(id, secret))) throw invalidClient()
    return id
  }

  private async passwordGrant(form: TokenForm, clientId: string): Promise<TokenResponse> {
    const scopes = this.checkScopes(parseScopes(form.scope))
    const connector = form.connector_id || DEFAULT_CONNECTOR
    if (connector !== DEFAULT_CONNECTOR) throw oauthError('invalid_request', 'Requested connector does not exist.')
    if (form.username === undefined) throw oauthError('invalid_request', 'Required param: username.')
    if (form.password === undefined || form.password === '') throw oauthError('invalid_request', 'Required param: password.')
    const userId = await checkLogin(
      { db: this.deps.store.db, box: this.deps.box, tokens: this.deps.tokens, lockout: this.options.lockout, now: () => this.now() },
      { username: form.username, password: form.password, totp: form.totp },
    )
    const claims = await userClaims(this.deps.store.db, userId)
    if (!claims || !claims.enabled) throw oauthError('invalid_grant', 'Invalid username or password.')
    const response = await this.issue(claims, clientId, scopes, form.nonce)
    if (scopes.includes('offline_access')) {
      response.refresh_token = await this.deps.refreshTokens.create({ userId, clientId, scopes, passwordStamp: claims.passwordStamp })
    }
    this.purgeNowAndThen()
    return response
  }

  private async refreshGrant(form: TokenForm, clientId: string): Promise<TokenResponse> {
    if (!form.refresh_token) throw oauthError('invalid_request', 'Required param: refresh_token.')
    let claims: UserClaims | undefined
    let scopes: string[] = []
    const requested = parseScopes(form.scope)
    // Everything that can refuse the request runs before the token is rotated, so a refusal changes nothing.
    const { token } = await this.deps.refreshTokens.rotate(form.refresh_token, clientId, async (grant) => {
      const extra = requested.filter((s) => !grant.scopes.includes(s))
      if (extra.length) throw oauthError('invalid_request', `Requested scopes did not contain the original scopes: ${extra.join(' ')}.`)
      scopes = requested.length > 0 ? requested : grant.scopes
      claims = await userClaims(this.deps.store.db, grant.userId)
      // A disabled user or a changed password ends every session the user had.
      if (!claims || !claims.enabled || claims.passwordStamp !== grant.passwordStamp) {
        await this.deps.refreshTokens.revokeFamily(grant.familyId)
        throw invalidRefresh('The user is disabled or its password changed; log in again.')
      }
    })
    const response = await this.issue(claims!, clientId, scopes, form.nonce)
    response.refresh_token = token
    return response
  }

  private checkScopes(scopes: string[]): string[] {
    if (!scopes.includes('openid')) throw oauthError('invalid_request', 'Missing required scope(s) ["openid"].')
    const unknown = scopes.filter((s) => !(SUPPORTED_SCOPES as readonly string[]).includes(s) && !IGNORED_SCOPES.has(s))
    if (unknown.length) throw oauthError('invalid_request', `Unrecognized scope(s) ${JSON.stringify(unknown)}.`)
    return scopes
  }

  private async issue(claims: UserClaims, clientId: string, scopes: string[], nonce: string | undefined): Promise<TokenResponse> {
    // Not a credential anywhere (there is no userinfo endpoint); it exists because OAuth2 requires one.
    const accessToken = randomBytes(32).toString('base64url')
    const iat = Math.floor(this.now() / 1000)
    const payload: Record<string, unknown> = { at_hash: atHash(accessToken) }
    if (nonce) payload.nonce = nonce
    if (scopes.includes('email') && claims.email) {
      payload.email = claims.email
      payload.email_verified = true
    }
    if (scopes.includes('groups')) payload.groups = claims.groups
    if (scopes.includes('profile')) {
      payload.name = claims.name
      payload.preferred_username = claims.name
    }
    const key = await this.deps.keys.current()
    const idToken = await new SignJWT(payload)
      .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
      .setIssuer(this.options.issuer)
      .setSubject(dexSubject(claims.userId, DEFAULT_CONNECTOR))
      .setAudience(clientId)
      .setIssuedAt(iat)
      .setExpirationTime(iat + this.options.idTokenSeconds)
      .sign(key.privateKey)
    return { access_token: accessToken, token_type: 'bearer', expires_in: this.options.idTokenSeconds, id_token: idToken }
  }

  /** Old refresh-token rows are deleted now and then, by whichever process serves a login. */
  private purgeNowAndThen(): void {
    const now = this.now()
    if (now - this.lastPurge < 10 * 60_000) return
    this.lastPurge = now
    this.deps.refreshTokens.purge().catch(() => {})
  }
}
