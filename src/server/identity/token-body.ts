/**
 * The `token` object of Keystone v3 responses (POST and GET /auth/tokens), built from a token payload and the
 * identity snapshot, with every field of the spec's Token table. Times follow Keystone: `expires_at` and
 * `issued_at` as `YYYY-MM-DDTHH:MM:SS.000000Z`, `password_expires_at` without the `Z`.
 */
import type { ResolvedToken } from './principal-resolver.js'
import type { DomainRecord, IdentitySnapshot, ProjectRecord } from './snapshot.js'
import type { TokenPayload } from './token-format.js'

const timeTexts = new Map<number, string>()

/** Keystone's token time form; a burst of tokens shares a few seconds (issue and expiry), so those are kept. */
export function keystoneTime(ms: number): string {
  const second = Math.floor(ms / 1000)
  let text = timeTexts.get(second)
  if (text === undefined) {
    if (timeTexts.size >= 256) timeTexts.clear()
    text = new Date(second * 1000).toISOString().replace(/\.\d{3}Z$/, '.000000Z')
    timeTexts.set(second, text)
  }
  return text
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

/** The parts of a token body that depend only on (user, scope, delegation), serialized once per snapshot. */
function stableParts(snap: IdentitySnapshot, payload: TokenPayload, resolved: ResolvedToken, identityUrl: string): { user: string; scoped: string } {
  const s = payload.s
  const scopeKey = s === null ? '-' : 'p' in s ? `p:${s.p}` : 'd' in s ? `d:${s.d}` : 's'
  const key = `${payload.u}|${scopeKey}|${payload.ac ?? ''}|${payload.oa ?? ''}`
  const memo = snap.bodyParts.get(key)
  if (memo) return memo
  const user = snap.users.get(payload.u)!
  const userDomain = snap.domains.get(user.domainId)!
  const scoped: Record<string, unknown> = {}
  if (s && 'p' in s) {
    scoped.project = projectBody(snap.projects.get(s.p)!, snap, identityUrl)
    scoped.is_domain = false
  } else if (s && 'd' in s) {
    scoped.domain = domainBody(snap.domains.get(s.d)!, identityUrl)
  } else if (s && 'sys' in s) {
    scoped.system = { all: true }
  }
  if (s) {
    scoped.roles = resolved.roles.map((r) => ({
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
    if (cred) {
      scoped.application_credential = {
        id: cred.id,
        name: cred.name,
        restricted: !cred.unrestricted,
        ...(cred.accessRules ? { access_rules: cred.accessRules.map((r) => ({ id: r.id, service: r.service, method: r.method, path: r.path })) } : {}),
      }
    }
  }
  const oauth = payload.oa ? snap.oauthAccess.get(payload.oa) : undefined
  if (oauth) scoped['OS-OAUTH1'] = { access_token_id: oauth.id, consumer_id: oauth.consumerId }
  const scopedJson = JSON.stringify(scoped)
  const parts = {
    user: JSON.stringify({
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
    }),
    scoped: scopedJson === '{}' ? '' : `,${scopedJson.slice(1, -1)}`,
  }
  if (snap.bodyParts.size < 100_000) snap.bodyParts.set(key, parts)
  return parts
}

/**
 * The serialized `{"token": …}` body. What depends on the user and scope is serialized once per snapshot and the
 * catalog once per scope; per token only methods, audit ids and times are written.
 */
export function renderToken(snap: IdentitySnapshot, payload: TokenPayload, resolved: ResolvedToken, withCatalog: boolean, identityUrl: string): string {
  const parts = stableParts(snap, payload, resolved, identityUrl)
  const s = payload.s
  const catalog = s && withCatalog ? `,"catalog":${snap.catalog('p' in s ? s.p : undefined, payload.u).json}` : ''
  return (
    `{"token":{"methods":${JSON.stringify(payload.m)},"user":${parts.user},"audit_ids":${JSON.stringify(payload.a)},` +
    `"expires_at":"${keystoneTime(payload.e)}","issued_at":"${keystoneTime(payload.i)}"${parts.scoped}${catalog}}}`
  )
}
