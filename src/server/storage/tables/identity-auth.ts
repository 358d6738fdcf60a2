/** Tables of identity authentication: credentials (TOTP seeds), application credentials, revocation events. */

export interface CredentialTable {
  id: string
  user_id: string
  project_id: string | null
  /** 'totp', 'ec2', 'cert'…: only 'totp' takes part in authentication. */
  type: string
  /** The blob sealed with the master key (SecretBox, 'v1.' prefix); a TOTP blob is the base32 seed (read by identity/totp-factor.ts). */
  blob: string
  /** The newest 30 s step (RFC 6238's T) whose code this `totp` credential accepted: older and equal ones are refused. */
  totp_last_step: number | null
  created_at: number
}

export interface ApplicationCredentialTable {
  id: string
  user_id: string
  project_id: string
  name: string
  description: string
  secret_hash: string
  /** JSON array of role ids the credential delegates (a subset of the creator's roles on the project). */
  roles: string
  unrestricted: number
  expires_at: number | null
  /** The microseconds within `expires_at`'s millisecond (0-999): Keystone answers the time as sent, to the microsecond. */
  expires_at_us: number | null
  /** JSON array of the ids of the access rules its tokens are held to; null or empty: no rules, any request. */
  access_rule_ids: string | null
  created_at: number
}

/** An access rule of a user (Keystone's): a request an application credential's tokens may make. */
export interface AccessRuleTable {
  id: string
  user_id: string
  /** The service type (compute, image…) the request goes to. */
  service: string
  method: string
  /** The path under the service's endpoint; `*` stands for one path segment, `**` for any number. */
  path: string
  created_at: number
}

/**
 * Revocation events (Keystone's model): a token matches an event when every non-null field matches and it was
 * issued at or before `issued_before`. Kept until no token they could match can still validate.
 */
export interface RevocationEventTable {
  id: string
  audit_id: string | null
  user_id: string | null
  project_id: string | null
  issued_before: number
  /** After this time the event cannot match a token that still validates (expiry + allow_expired window). */
  prune_after: number
  revoked_at: number
}

export interface IdentityAuthTables {
  credentials: CredentialTable
  application_credentials: ApplicationCredentialTable
  access_rules: AccessRuleTable
  revocation_events: RevocationEventTable
}
