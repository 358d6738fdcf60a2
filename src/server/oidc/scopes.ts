/** The scopes the IdP knows (Dex's set) and the checks every flow applies to a requested scope string. */

export const SUPPORTED_SCOPES = ['openid', 'email', 'groups', 'profile', 'offline_access'] as const
/** Accepted for Dex compatibility and ignored. */
const IGNORED_SCOPES = new Set(['federated:id'])

export function parseScopes(raw: string | undefined): string[] {
  return [...new Set((raw ?? '').split(/\s+/).filter(Boolean))]
}

/** What is wrong with a set of scopes (Dex's messages), or undefined. */
export function scopeProblem(scopes: readonly string[]): string | undefined {
  if (!scopes.includes('openid')) return 'Missing required scope(s) ["openid"].'
  const unknown = scopes.filter((s) => !(SUPPORTED_SCOPES as readonly string[]).includes(s) && !IGNORED_SCOPES.has(s))
  return unknown.length ? `Unrecognized scope(s) ${JSON.stringify(unknown)}.` : undefined
}
