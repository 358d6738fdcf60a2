/** Tables of host onboarding: registration tokens, host credentials, the per-host command channel, agent reports. */

export interface RegistrationTokenTable {
  id: string
  /** SHA-256 (hex) of the token; the token itself is shown once, to the admin who created it. */
  token_hash: string
  note: string | null
  created_by: string
  created_at: number
  expires_at: number
  /** Set by the one registration that used it; a used token never registers again. */
  used_at: number | null
  used_by_host: string | null
  /** The existing host this token may re-register (and no other); null: a token for a new host. */
  host_id: string | null
}

export interface HostCredentialTable {
  /** One credential per host: re-registering rotates it. */
  host_id: string
  /** SHA-256 (hex) of the credential. */
  credential_hash: string
  created_at: number
}

/**
 * Work for a host's agent. Any process enqueues; the agent long-polling any process receives it; the result
 * lands in the row, where the process that waits for it finds it.
 */
export interface HostCommandTable {
  id: string
  host_id: string
  op: string
  /** JSON */
  args: string
  /** Identifies repeats of one operation (a retried conductor task): an unfinished command with the same key is reused. */
  dedupe_key: string
  /** queued | delivered | done | failed | expired */
  status: string
  /** JSON of the result, or of {message, code} when failed. */
  result: string | null
  created_at: number
  delivered_at: number | null
  finished_at: number | null
}

/** What an agent last reported about its host (guests and version), apart from the shared hosts row. */
export interface AgentHostTable {
  host_id: string
  agent_version: string
  /** JSON array of GuestInfo. */
  guests: string
  guests_at: number
  /** The last role failure the agent reported (HostView.message). */
  message: string | null
  registered_at: number
}

/** A host's own cephx user (`client.<ceph_user>`), made by the control plane; its key sealed with the master key. */
export interface HostCephUserTable {
  host_id: string
  ceph_user: string
  key_sealed: string
  created_at: number
}

export interface OnboardingTables {
  host_ceph_users: HostCephUserTable
  registration_tokens: RegistrationTokenTable
  host_credentials: HostCredentialTable
  host_commands: HostCommandTable
  agent_hosts: AgentHostTable
}
