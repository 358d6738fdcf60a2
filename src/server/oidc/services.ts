/** Builds the IdP's services from the configuration; the composition root calls this once per process. */
import type { Authenticator } from '../auth/principal.js'
import type { Config } from '../config/settings.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { Store } from '../storage/store.js'
import { AccessTokens } from './access-tokens.js'
import { AuthCodes } from './auth-codes.js'
import { AuthRequests } from './auth-requests.js'
import { BrowserFlow } from './browser-flow.js'
import { IdpClients } from './clients.js'
import type { IdentityLogin } from './login.js'
import { DeviceRequests } from './device-requests.js'
import { OidcProvider } from './provider.js'
import { RefreshTokens } from './refresh-tokens.js'
import { SigningKeys } from './signing-keys.js'

const PURGE_EVERY_MS = 10 * 60_000

export interface IdpServices {
  clients: IdpClients
  keys: SigningKeys
  refreshTokens: RefreshTokens
  /** The endpoints clients call: token, device authorization, userinfo, discovery, keys. */
  provider: OidcProvider
  /** The pages browsers see: authorization, login, consent, device verification. */
  browser: BrowserFlow
}

/** `identity`: identity's login checks (identity/auth-flow.ts), which the password grant and the login page use. */
export function createIdp(store: Store, box: SecretBox, tokens: Authenticator, identity: IdentityLogin, config: Config, now: () => number = Date.now): IdpServices {
  const idTokenTtlMs = config.idpIdTokenSeconds * 1000
  const issuer = `${config.publicUrl}/idp`
  const clients = new IdpClients(store, box, { graceMs: config.idpSecretGraceSeconds * 1000, now })
  const keys = new SigningKeys(store, box, { rotationMs: config.idpKeyRotationSeconds * 1000, idTokenTtlMs, now })
  const refreshTokens = new RefreshTokens(store, box, {
    reuseMs: config.idpRefreshReuseSeconds * 1000,
    idleMs: config.idpRefreshIdleSeconds * 1000,
    absoluteMs: config.idpRefreshAbsoluteSeconds * 1000,
    now,
  })
  // Access tokens live as long as the ID token they come with (`expires_in`).
  const accessTokens = new AccessTokens(store, { ttlMs: idTokenTtlMs, now })
  const codes = new AuthCodes(store, { now })
  const devices = new DeviceRequests(store, { now })
  const requests = new AuthRequests(store, { now })
  // Identity checks every login (lockout, MFA rules, TOTP codes): the IdP's go through the same checks as Keystone's.
  const login = { identity, tokens }
  // Dead rows are deleted every 10 minutes at most, by whichever process serves a login: no timer to stop.
  let lastPurge = 0
  const housekeeping = () => {
    if (now() - lastPurge < PURGE_EVERY_MS) return
    lastPurge = now()
    void (async () => {
      for (const rows of [refreshTokens, accessTokens, codes, devices, requests]) await rows.purge()
    })().catch(() => {})
  }
  const provider = new OidcProvider(
    { store, login, clients, keys, refreshTokens, accessTokens, codes, devices, housekeeping },
    { issuer, idTokenSeconds: config.idpIdTokenSeconds, now },
  )
  const browser = new BrowserFlow({ db: store.db, clients, requests, codes, devices, login, issuer, now, housekeeping })
  return { clients, keys, refreshTokens, provider, browser }
}
