/**
 * The OIDC provider's endpoints for clients behind {base}/idp: discovery, JWKS, the token endpoint (grants
 * authorization_code with PKCE, device_code, refresh_token and password), the device authorization endpoint
 * and userinfo (Dex's behaviour, see docs/idp.md). The browser pages are browser-flow.ts. HTTP-free: routes
 * pass the form fields and the Authorization header in and send the result out; failures are AppErrors whose
 * `type` is the OAuth2 `error`.
 */
import { SignJWT } from 'jose'
import { AppError } from '../../contracts/errors.js'
import type { Store } from '../storage/store.js'
import type { AccessTokens } from './access-tokens.js'
import type { AuthCodes } from './auth-codes.js'
import { atHash, dexSubject, SCOPE_CLAIMS, scopedClaims, userClaims, type UserClaims } from './claims.js'
import type { IdpClient, IdpClients } from './clients.js'
import type { DeviceRequests } from './device-requests.js'
import { checkLogin, type LoginDeps } from './login.js'
import { randomId } from './random-tokens.js'
import { invalidRefresh, type RefreshTokens } from './refresh-tokens.js'
import { parseScopes, scopeProblem, SUPPORTED_SCOPES } from './scopes.js'
import type { SigningKeys } from './signing-keys.js'

export const DEFAULT_CONNECTOR = 'default'
export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'
export const GRANT_TYPES = ['authorization_code', 'refresh_token', DEVICE_GRANT, 'password'] as const
/** A public client has no secret to prove who it is: the grants PKCE or a user's approval protect (RFC 8252 §8). */
const PUBLIC_CLIENT_GRANTS = new Set<string>(['authorization_code', 'refresh_token', DEVICE_GRANT])

export type TokenForm = Record<string, string | undefined>

export interface TokenResponse {
  access_token: string
  token_type: 'bearer'
  expires_in: number
  id_token: string
  refresh_token?: string
}

export interface DeviceAuthorizationResponse {
  device_code: string
  user_code: string
  verification_uri: string
  verification_uri_complete: string
  expires_in: number
  interval: number
}

export interface ProviderOptions {
  issuer: string
  idTokenSeconds: number
  now?: () => number
}

export interface ProviderDeps {
  store: Store
  /** Identity's login checks (the password grant's). */
  login: LoginDeps
  clients: IdpClients
  keys: SigningKeys
  refreshTokens: RefreshTokens
  accessTokens: AccessTokens
  codes: AuthCodes
  devices: DeviceRequests
  /** Deletes, at most now and then, what nobody can use any more (expired codes, requests, tokens). */
  housekeeping: () => void
}

/** What a new set of tokens is issued for. */
interface Issue {
  clientId: string
  scopes: string[]
  familyId: string
  /** When the user logged in (ms): the ID token's auth_time, kept across refreshes (OIDC Core §12.2). */
  authTime: number
  nonce?: string | null
  /** The authorization code exchanged, for `c_hash`. */
  code?: string
}

const oauthError = (type: string, message: string) => new AppError('bad_request', message, { type })
const invalidClient = () => new AppError('unauthorized', 'Invalid client credentials.', { type: 'invalid_client' })
const sessionEnded = () => oauthError('invalid_grant', 'The user is disabled or its password changed; log in again.')

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

/** RFC 6750 §2.1: the bearer token of an Authorization header. */
function bearerToken(authorization: string | undefined): string | undefined {
  return authorization && /^bearer /i.test(authorization) ? authorization.slice(7).trim() || undefined : undefined
}

export class OidcProvider {
  /** The token endpoint's grants, by grant_type. */
  private readonly grants: Record<string, (form: TokenForm, client: IdpClient) => Promise<TokenResponse>> = {
    authorization_code: (form, client) => this.codeGrant(form, client),
    refresh_token: (form, client) => this.refreshGrant(form, client),
    [DEVICE_GRANT]: (form, client) => this.deviceGrant(form, client),
    password: (form, client) => this.passwordGrant(form, client),
  }

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
      authorization_endpoint: `${issuer}/auth`,
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/keys`,
      userinfo_endpoint: `${issuer}/userinfo`,
      device_authorization_endpoint: `${issuer}/device/code`,
      grant_types_supported: [...GRANT_TYPES],
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      code_challenge_methods_supported: ['S256'],
      scopes_supported: [...SUPPORTED_SCOPES],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      claims_supported: ['iss', 'sub', 'aud', 'iat', 'exp', 'auth_time', 'at_hash', 'c_hash', 'nonce', ...Object.values(SCOPE_CLAIMS).flatMap((scope) => scope!.claims)],
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
      claims_parameter_supported: false,
      authorization_response_iss_parameter_supported: true,
    }
  }

  jwks() {
    return this.deps.keys.jwks()
  }

  async token(form: TokenForm, authorization: string | undefined): Promise<TokenResponse> {
    const client = await this.authenticateClient(form, authorization)
    const grantType = form.grant_type
    if (!grantType) throw oauthError('invalid_request', 'Required param: grant_type.')
    const grant = this.grants[grantType]
    if (!grant) throw oauthError('unsupported_grant_type', `Unsupported grant type: ${grantType}. Supported: ${GRANT_TYPES.join(', ')}.`)
    if (client.public && !PUBLIC_CLIENT_GRANTS.has(grantType)) throw oauthError('unauthorized_client', `A public client may not use the ${grantType} grant.`)
    return grant(form, client)
  }

  /** POST {issuer}/device/code (RFC 8628 §3.1–3.2). */
  async deviceAuthorization(form: TokenForm, authorization: string | undefined): Promise<DeviceAuthorizationResponse> {
    const client = await this.authenticateClient(form, authorization)
    // Dex: no scope means `openid`.
    const scopes = parseScopes(form.scope || 'openid')
    const problem = scopeProblem(scopes)
    if (problem) throw oauthError('invalid_scope', problem)
    const device = await this.deps.devices.create(client.id, scopes)
    this.deps.housekeeping()
    const verificationUri = `${this.options.issuer}/device`
    return {
      device_code: device.deviceCode,
      user_code: device.userCode,
      verification_uri: verificationUri,
      verification_uri_complete: `${verificationUri}?user_code=${device.userCode}`,
      expires_in: device.expiresIn,
      interval: device.interval,
    }
  }

  /** GET/POST {issuer}/userinfo (OpenID Connect Core §5.3): the claims of the access token's scopes, read now. */
  async userinfo(authorization: string | undefined): Promise<Record<string, unknown>> {
    const token = bearerToken(authorization)
    if (!token) throw new AppError('unauthorized', 'An access token is required (Authorization: Bearer).', { type: 'invalid_token', headers: { 'www-authenticate': 'Bearer realm="pcc"' } })
    const grant = await this.deps.accessTokens.find(token)
    const claims = grant && (await userClaims(this.deps.store.db, grant.userId))
    if (!grant || !claims?.enabled) {
      throw new AppError('unauthorized', 'The access token is invalid, expired or revoked.', {
        type: 'invalid_token',
        headers: { 'www-authenticate': 'Bearer realm="pcc", error="invalid_token", error_description="The access token is invalid, expired or revoked."' },
      })
    }
    return { sub: dexSubject(claims.userId, DEFAULT_CONNECTOR), ...scopedClaims(claims, grant.scopes) }
  }

  private async authenticateClient(form: TokenForm, authorization: string | undefined): Promise<IdpClient> {
    const basic = basicCredentials(authorization)
    const id = basic?.id ?? form.client_id
    if (!id) throw invalidClient()
    const client = await this.deps.clients.authenticate(id, basic?.secret ?? form.client_secret)
    if (!client) throw invalidClient()
    return client
  }

  private async passwordGrant(form: TokenForm, client: IdpClient): Promise<TokenResponse> {
    const scopes = parseScopes(form.scope)
    const problem = scopeProblem(scopes)
    if (problem) throw oauthError('invalid_request', problem)
    const connector = form.connector_id || DEFAULT_CONNECTOR
    if (connector !== DEFAULT_CONNECTOR) throw oauthError('invalid_request', 'Requested connector does not exist.')
    if (form.username === undefined) throw oauthError('invalid_request', 'Required param: username.')
    if (form.password === undefined || form.password === '') throw oauthError('invalid_request', 'Required param: password.')
    const userId = await checkLogin(this.deps.login, { username: form.username, password: form.password, totp: form.totp })
    const claims = await userClaims(this.deps.store.db, userId)
    if (!claims || !claims.enabled) throw oauthError('invalid_grant', 'Invalid username or password.')
    return this.login(claims, { clientId: client.id, scopes, familyId: randomId(), authTime: this.now(), nonce: form.nonce })
  }

  /** RFC 6749 §4.1.3 with RFC 7636 §4.5–4.6 (auth-codes.ts holds the checks). */
  private async codeGrant(form: TokenForm, client: IdpClient): Promise<TokenResponse> {
    const revoke = (familyId: string) => this.deps.refreshTokens.revokeFamily(familyId)
    const grant = await this.deps.codes.redeem({ code: form.code, clientId: client.id, redirectUri: form.redirect_uri, codeVerifier: form.code_verifier }, revoke)
    const claims = await this.activeUser(grant.userId, grant.passwordStamp)
    const response = await this.login(claims, { clientId: client.id, scopes: grant.scopes, familyId: grant.familyId, authTime: grant.authTime, nonce: grant.nonce, code: form.code })
    if (await this.deps.codes.replayed(grant)) {
      await revoke(grant.familyId)
      throw oauthError('invalid_grant', 'The authorization code was already used; the tokens issued for it are revoked.')
    }
    return response
  }

  /** RFC 8628 §3.4–3.5 (device-requests.ts holds the polling rules). */
  private async deviceGrant(form: TokenForm, client: IdpClient): Promise<TokenResponse> {
    const grant = await this.deps.devices.poll(form.device_code, client.id)
    const claims = await this.activeUser(grant.userId, grant.passwordStamp)
    return this.login(claims, { clientId: client.id, scopes: grant.scopes, familyId: randomId(), authTime: grant.authTime })
  }

  private async refreshGrant(form: TokenForm, client: IdpClient): Promise<TokenResponse> {
    if (!form.refresh_token) throw oauthError('invalid_request', 'Required param: refresh_token.')
    let claims: UserClaims | undefined
    let scopes: string[] = []
    const requested = parseScopes(form.scope)
    // Everything that can refuse the request runs before the token is rotated, so a refusal changes nothing.
    const { token, grant } = await this.deps.refreshTokens.rotate(form.refresh_token, client.id, async (grant) => {
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
    const response = await this.issue(claims!, { clientId: client.id, scopes, familyId: grant.familyId, authTime: grant.loginAt, nonce: form.nonce })
    response.refresh_token = token
    return response
  }

  /** The user of a code or device approval, if still enabled and with the password it logged in with. */
  private async activeUser(userId: string, passwordStamp: number | null): Promise<UserClaims> {
    const claims = await userClaims(this.deps.store.db, userId)
    if (!claims || !claims.enabled || claims.passwordStamp !== passwordStamp) throw sessionEnded()
    return claims
  }

  /** The tokens of a new login (any grant but refresh): a refresh token too when `offline_access` was granted. */
  private async login(claims: UserClaims, issue: Issue): Promise<TokenResponse> {
    const response = await this.issue(claims, issue)
    if (issue.scopes.includes('offline_access')) {
      response.refresh_token = await this.deps.refreshTokens.create({ userId: claims.userId, clientId: issue.clientId, scopes: issue.scopes, passwordStamp: claims.passwordStamp, familyId: issue.familyId, loginAt: issue.authTime })
    }
    this.deps.housekeeping()
    return response
  }

  private async issue(claims: UserClaims, issue: Issue): Promise<TokenResponse> {
    const accessToken = await this.deps.accessTokens.issue({ familyId: issue.familyId, clientId: issue.clientId, userId: claims.userId, scopes: issue.scopes })
    const iat = Math.floor(this.now() / 1000)
    const payload: Record<string, unknown> = { auth_time: Math.floor(issue.authTime / 1000), at_hash: atHash(accessToken), ...scopedClaims(claims, issue.scopes) }
    if (issue.code) payload.c_hash = atHash(issue.code)
    if (issue.nonce) payload.nonce = issue.nonce
    const key = await this.deps.keys.current()
    const idToken = await new SignJWT(payload)
      .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
      .setIssuer(this.options.issuer)
      .setSubject(dexSubject(claims.userId, DEFAULT_CONNECTOR))
      .setAudience(issue.clientId)
      .setIssuedAt(iat)
      .setExpirationTime(iat + this.options.idTokenSeconds)
      .sign(key.privateKey)
    return { access_token: accessToken, token_type: 'bearer', expires_in: this.options.idTokenSeconds, id_token: idToken }
  }
}

