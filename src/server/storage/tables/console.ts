/** Tables of remote consoles: the console auth tokens of Nova, and the sessions waiting for a host's stream. */

/**
 * A console URL's token (Nova's console_auth_tokens). The token itself is only in the URL handed to the user; it
 * is found again by its hash. Usable any number of times until it expires (Nova's semantics), for the server on
 * the host it had when the token was made: a server that moved elsewhere or was deleted has no valid token.
 */
export interface ConsoleAuthTokenTable {
  id: string
  /** SHA-256 (hex) of the token. */
  token_hash: string
  server_id: string
  /** The host the server ran on when the token was made. */
  host_id: string
  /** serial | vnc */
  protocol: string
  /** The remote-console type asked for: novnc | serial. */
  console_type: string
  created_at: number
  expires_at: number
}

/**
 * A remote-console session that waits for the stream of an agent host: the process holding the user's websocket (the
 * owner) writes the row, asks the agent to dial in, and the agent's websocket may reach any process; a process
 * that is not the owner relays it to the owner's advertised URL with the relay secret.
 */
export interface ConsoleSessionTable {
  id: string
  host_id: string
  server_id: string
  /** The advertised URL of the process holding the user's side (PCC_ADVERTISE_URL). */
  owner_url: string
  /** The secret the relaying process presents to the owner, sealed with the master key. */
  relay_secret: string
  created_at: number
  /** The owner stops waiting for the host at this time; the row is useless after it. */
  expires_at: number
}

export interface ConsoleTables {
  console_auth_tokens: ConsoleAuthTokenTable
  console_sessions: ConsoleSessionTable
}
