/**
 * A user's multi-factor rules and whether a login satisfies them: the one evaluation every login surface uses
 * (Keystone's POST /v3/auth/tokens, the self-service password change, the IdP's password grant and login page), with
 * Keystone's semantics (docs/identity.md, "MFA"):
 *
 * | user options                                             | rules that apply                                    |
 * |----------------------------------------------------------|-----------------------------------------------------|
 * | `multi_factor_auth_enabled: false`                        | none: the user is exempt                            |
 * | no `multi_factor_auth_rules` (`enabled` absent or true)   | none: `enabled: true` alone asks for nothing        |
 * | `multi_factor_auth_rules` (`enabled` absent or true)      | each rule without the methods this server does not  |
 * |                                                          | offer; rules left empty are dropped (anti-lockout)  |
 *
 * A login is whole when no rule applies or its satisfied methods include every method of some rule.
 */

/** The methods this server offers (Keystone's `[auth] methods`). */
export const AUTH_METHODS = ['password', 'token', 'totp', 'application_credential', 'oauth1'] as const

/** The rules that apply to a user with these options (the table above). */
export function mfaRules(options: Record<string, unknown>): string[][] {
  if (options.multi_factor_auth_enabled === false) return []
  const raw = options.multi_factor_auth_rules
  if (!Array.isArray(raw)) return []
  return raw
    .filter((r): r is unknown[] => Array.isArray(r))
    .map((r) => r.filter((m): m is string => typeof m === 'string' && (AUTH_METHODS as readonly string[]).includes(m)))
    .filter((r) => r.length > 0)
}

/** Whether a login that satisfied these methods is whole under these rules. */
export function rulesSatisfied(rules: string[][], methods: Iterable<string>): boolean {
  const satisfied = new Set(methods)
  return rules.length === 0 || rules.some((rule) => rule.every((m) => satisfied.has(m)))
}
