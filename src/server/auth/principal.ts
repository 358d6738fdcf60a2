/**
 * Who is calling: what a validated identity token says. Every authenticated request carries one
 * (`request.principal`); policy rules and project scoping read it and nothing else.
 */
import type { AccessRule } from '../identity/access-rules.js'

export type TokenScope =
  | { type: 'project'; projectId: string; projectName: string; domainId: string; domainName: string }
  | { type: 'domain'; domainId: string; domainName: string }
  | { type: 'system' }
  | { type: 'unscoped' }

export interface Principal {
  userId: string
  userName: string
  userDomainId: string
  userDomainName: string
  scope: TokenScope
  /** Effective role names on the scope, implied roles included (admin ⊃ member ⊃ reader). */
  roles: string[]
  methods: string[]
  auditIds: string[]
  issuedAt: number
  expiresAt: number
  /** Set when the token came from an application credential. */
  applicationCredentialId?: string
  /** The application credential's access rules: the only requests this token may make (identity/access-rules.ts). */
  accessRules?: readonly AccessRule[]
  /** Set when the token came from an OAuth 1.0a access token (OS-OAUTH1): it may not delegate further. */
  oauth?: { accessTokenId: string; consumerId: string }
}

/** Turns a bearer token into a principal. Throws AppError 'unauthorized' for anything not currently valid. */
export interface Authenticator {
  authenticate(token: string): Promise<Principal>
  /**
   * The principal without waiting, when nothing has to be read from the store first; undefined when it has
   * (then call authenticate). Saves the promise hops on the hot path of every authenticated request.
   */
  authenticateNow?(token: string): Principal | undefined
}

export function hasRole(principal: Principal, role: string): boolean {
  return principal.roles.includes(role)
}

/** The project a project-scoped principal works in, or undefined for other scopes. */
export function projectOf(principal: Principal): string | undefined {
  return principal.scope.type === 'project' ? principal.scope.projectId : undefined
}
