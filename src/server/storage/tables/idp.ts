/** Tables of the OIDC identity provider: its clients, its signing keys and its refresh tokens. */

export interface IdpClientTable {
  /** The OAuth2 client_id (`kubernetes`). */
  id: string
  sealed_secret: string
  /** The secret before the last rotation, accepted until previous_valid_until. */
  previous_sealed_secret: string | null
  previous_valid_until: number | null
  created_at: number
  rotated_at: number | null
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

export interface IdpTables {
  idp_clients: IdpClientTable
  idp_signing_keys: IdpSigningKeyTable
  idp_refresh_tokens: IdpRefreshTokenTable
}
