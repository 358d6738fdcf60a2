/**
 * Tables of the OIDC identity provider: its clients, signing keys, refresh and access tokens, and the state of
 * the browser and device flows (pending logins, authorization codes, device requests). Codes and tokens are
 * stored as SHA-256 hashes (hex) only.
 */

export interface IdpClientTable {
  /** The OAuth2 client_id (`kubernetes`). */
  id: string
  sealed_secret: string
  /** The secret before the last rotation, accepted until previous_valid_until. */
  previous_sealed_secret: string | null
  previous_valid_until: number | null
  created_at: number
  rotated_at: number | null
  /** Shown on the consent page. */
  name: string
  /** JSON array of the registered redirect URIs (clients.ts, redirect-uris.ts). */
  redirect_uris: string
  /** 1 = a public client (RFC 6749 §2.1): no secret, PKCE only. */
  public: number
}

export interface IdpSigningKeyTable {
  /** The JWS `kid`: 40 hex characters. */
  id: string
  /** PKCS#8 PEM of the RSA private key, sealed with the master key. */
  sealed_private_key: string
  /** The public key as a JWK (JSON text). */
  public_jwk: string
  /** The newest key signs; an older key is retired from the moment its successor was created. */
  created_at: number
}

export interface IdpRefreshTokenTable {
  id: string
  /** Every token rotated from one login shares the family; reuse of a rotated token revokes the family. */
  family_id: string
  /** SHA-256 (hex) of the token; the token itself is never stored in clear. */
  token_hash: string
  client_id: string
  user_id: string
  /** Space-separated scopes granted at login. */
  scopes: string
  /** users.password_created_at at login: a changed password revokes the family. */
  password_stamp: number | null
  family_created_at: number
  created_at: number
  /** Set when the token was exchanged; after that it is only accepted within the reuse window. */
  used_at: number | null
  /** The successor token, sealed, returned again to a concurrent use within the reuse window. */
  next_sealed: string | null
  revoked_at: number | null
}

/** A browser login in progress (authorization code or device verification), from /idp/auth to the code. */
export interface IdpAuthRequestTable {
  /** The `req` parameter of the login pages: 128 random bits. */
  id: string
  /** SHA-256 of the browser cookie that started the request: the pages answer only that browser. */
  browser_hash: string
  client_id: string
  redirect_uri: string
  scopes: string
  state: string | null
  nonce: string | null
  /** PKCE S256 challenge; null for a device verification. */
  code_challenge: string | null
  /** Set when this login approves a device request. */
  device_request_id: string | null
  /** 'login' (password asked) → 'totp' (second factor asked) → 'consent' (approval asked). */
  stage: string
  /** The user, once the password was right. */
  user_id: string | null
  auth_time: number | null
  /** Wrong passwords and TOTP codes for this request; too many end it. */
  failures: number
  created_at: number
  expires_at: number
}

export interface IdpAuthCodeTable {
  id: string
  code_hash: string
  client_id: string
  user_id: string
  redirect_uri: string
  scopes: string
  nonce: string | null
  code_challenge: string
  auth_time: number
  password_stamp: number | null
  /** The grant the code's tokens belong to: a reused code revokes it (refresh and access tokens). */
  family_id: string
  created_at: number
  expires_at: number
  used_at: number | null
  /** Set when the code came back after its use: the grant is revoked, also if its tokens were still being issued. */
  replayed_at: number | null
}

export interface IdpDeviceRequestTable {
  id: string
  device_code_hash: string
  /** SHA-256 of the normalised user code (upper case, no dash). */
  user_code_hash: string
  client_id: string
  scopes: string
  /** 'pending' → 'approved' | 'denied'; 'approved' → 'done' when the device took its tokens. */
  status: string
  user_id: string | null
  auth_time: number | null
  password_stamp: number | null
  /** The polling interval the device must keep; raised by 5 s at each slow_down (RFC 8628 §3.5). */
  interval_seconds: number
  last_polled_at: number | null
  created_at: number
  expires_at: number
}

/** Access tokens: the bearer credential of the userinfo endpoint. */
export interface IdpAccessTokenTable {
  token_hash: string
  family_id: string
  client_id: string
  user_id: string
  scopes: string
  created_at: number
  expires_at: number
}

export interface IdpTables {
  idp_clients: IdpClientTable
  idp_signing_keys: IdpSigningKeyTable
  idp_refresh_tokens: IdpRefreshTokenTable
  idp_auth_requests: IdpAuthRequestTable
  idp_auth_codes: IdpAuthCodeTable
  idp_device_requests: IdpDeviceRequestTable
  idp_access_tokens: IdpAccessTokenTable
}
