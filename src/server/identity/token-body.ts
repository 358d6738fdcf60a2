/**
 * The `token` object of Keystone v3 responses (POST and GET /auth/tokens), built from a token payload and the
 * identity snapshot, with every field of the spec's Token table. Times follow Keystone: `expires_at` and
 * `issued_at` as `YYYY-MM-DDTHH:MM:SS.000000Z`, `password_expires_at` without the `Z`.
 */
import type { ResolvedToken } from './principal-resolver.js'
import type { DomainRecord, IdentitySnapshot, ProjectRecord } from './snapshot.js'
import type { TokenPayload } from './token-format.js'

export function keystoneTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, '.000000Z')
}

export function passwordExpiryTime(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000')
}

export function domainBody(d: DomainRecord, identityUrl: string) {
  return { id: d.id, name: d.name, description: d.description, enabled: d.enabled, options: d.options, links: { self: `${identityUrl}/domains/${d.id}` } }
}

export function projectBody(p: ProjectRecord, snap: IdentitySnapshot, identityUrl: string) {
  const domain = snap.domains.get(p.domainId)
  return {
    id: p.id,
    name: p.name,
    description: p.description,
    enabled: p.enabled,
    domain_id: p.domainId,
    domain: domain ? domainBody(domain, identityUrl) : { id: p.domainId },
    parent_id: p.parentId,
    is_domain: false,
    tags: p.tags,
    options: p.options,
    links: { self: `${identityUrl}/projects/${p.id}` },
  }
}

export function renderToken(snap: IdentitySnapshot, payload: TokenPayload, resolved: ResolvedToken, withCatalog: boolean, identityUrl: string): string {
  const user = snap.users.get(payload.u)!
  const userDomain = snap.domains.get(user.domainId)!
  const token: Record<string, unknown> = {
    methods: payload.m,
    user: {
      id: user.id,
      name: user.name,
      description: user.description,
      enabled: user.enabled,
      domain_id: user.domainId,
      domain: domainBody(userDomain, identityUrl),
      default_project_id: user.defaultProjectId,
      email: user.email,
      password_expires_at: passwordExpiryTime(user.passwordExpiresAt),
      options: user.options,
      links: { self: `${identityUrl}/users/${user.id}` },
    },
    audit_ids: payload.a,
    expires_at: keystoneTime(payload.e),
    issued_at: keystoneTime(payload.i),
  }
  const s = payload.s
  let projectId: string | undefined
  if (s && 'p' in s) {
    projectId = s.p
    token.project = projectBody(snap.projects.get(s.p)!, snap, identityUrl)
    token.is_domain = false
  } else if (s && 'd' in s) {
    token.domain = domainBody(snap.domains.get(s.d)!, identityUrl)
  } else if (s && 'sys' in s) {
    token.system = { all: true }
  }
  if (s) {
    token.roles = resolved.roles.map((r) => ({
      id: r.id,
      name: r.name,
      description: r.description,
      domain_id: r.domainId,
      options: r.options,
      links: { self: `${identityUrl}/roles/${r.id}` },
    }))
  }
  if (payload.ac) {
    const cred = snap.appCreds.get(payload.ac)
    if (cred) token.application_credential = { id: cred.id, name: cred.name, restricted: !cred.unrestricted }
  }
  if (!s || !withCatalog) return JSON.stringify({ token })
  // The catalog is serialized once per scope and snapshot and spliced in, not re-serialized per response.
  const head = JSON.stringify({ token })
  return `${head.slice(0, -2)},"catalog":${snap.catalog(projectId, user.id).json}}}`
}
