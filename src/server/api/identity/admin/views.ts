/** Keystone's wire shapes of the identity records; every field reaching the wire is listed here. */
import type { DomainRow } from '../../../identity/repo/domains.repo.js'
import type { GroupRow } from '../../../identity/repo/groups.repo.js'
import type { ProjectRecord } from '../../../identity/repo/projects.repo.js'
import type { RoleRow } from '../../../identity/repo/roles.repo.js'
import type { UserRow } from '../../../identity/repo/users.repo.js'
import type { EndpointRow, RegionRow, ServiceRow } from '../../../identity/repo/catalog.repo.js'
import type { PolicyBlobRow } from '../../../identity/repo/policies.repo.js'
import type { OAuthConsumerRow } from '../../../identity/repo/oauth-consumers.repo.js'
import { parseJson, type Extra } from '../../../identity/repo/write.js'
import type { AdminContext } from './common.js'

/** Keystone's password_expires_at: microseconds, no zone suffix. */
export function keystoneTime(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000')
}

const extra = (text: string): Extra => parseJson<Extra>(text, {})

export function domainView(ctx: AdminContext, d: DomainRow) {
  return { ...extra(d.extra), id: d.id, name: d.name, description: d.description, enabled: !!d.enabled, tags: [], options: parseJson(d.options, {}), links: ctx.link(`domains/${d.id}`) }
}

export function projectView(ctx: AdminContext, p: ProjectRecord) {
  return {
    ...extra(p.extra),
    id: p.id,
    name: p.name,
    domain_id: p.domain_id,
    description: p.description,
    enabled: !!p.enabled,
    parent_id: p.parent_id,
    is_domain: false,
    tags: p.tags,
    options: parseJson(p.options, {}),
    links: ctx.link(`projects/${p.id}`),
  }
}

/** A domain seen through the projects API: Keystone's domains are projects acting as domains (`is_domain`). */
export function domainAsProjectView(ctx: AdminContext, d: DomainRow) {
  return {
    ...extra(d.extra),
    id: d.id,
    name: d.name,
    domain_id: null,
    description: d.description,
    enabled: !!d.enabled,
    parent_id: null,
    is_domain: true,
    tags: [],
    options: parseJson(d.options, {}),
    links: ctx.link(`projects/${d.id}`),
  }
}

export function userView(ctx: AdminContext, u: UserRow) {
  return {
    ...extra(u.extra),
    id: u.id,
    name: u.name,
    domain_id: u.domain_id,
    enabled: !!u.enabled,
    ...(u.default_project_id ? { default_project_id: u.default_project_id } : {}),
    ...(u.description ? { description: u.description } : {}),
    ...(u.email !== null ? { email: u.email } : {}),
    password_expires_at: keystoneTime(u.password_expires_at),
    options: parseJson(u.options, {}),
    federated: [],
    links: ctx.link(`users/${u.id}`),
  }
}

export function groupView(ctx: AdminContext, g: GroupRow) {
  return { id: g.id, name: g.name, domain_id: g.domain_id, description: g.description, links: ctx.link(`groups/${g.id}`) }
}

export function roleView(ctx: AdminContext, r: RoleRow) {
  return { id: r.id, name: r.name, domain_id: r.domain_id || null, description: r.description, options: parseJson(r.options, {}), links: ctx.link(`roles/${r.id}`) }
}

/** The short role form inside implied-role documents. */
export function roleRef(ctx: AdminContext, r: RoleRow) {
  return { id: r.id, name: r.name, links: ctx.link(`roles/${r.id}`) }
}

export function regionView(ctx: AdminContext, r: RegionRow) {
  return { id: r.id, description: r.description, parent_region_id: r.parent_region_id, links: ctx.link(`regions/${r.id}`) }
}

export function serviceView(ctx: AdminContext, s: ServiceRow) {
  return { id: s.id, type: s.type, name: s.name, description: s.description, enabled: !!s.enabled, links: ctx.link(`services/${s.id}`) }
}

export function endpointView(ctx: AdminContext, e: EndpointRow) {
  return { id: e.id, interface: e.interface, region_id: e.region_id, region: e.region_id, service_id: e.service_id, url: e.url, enabled: !!e.enabled, links: ctx.link(`endpoints/${e.id}`) }
}

export function policyView(ctx: AdminContext, p: PolicyBlobRow) {
  return { ...extra(p.extra), id: p.id, type: p.type, blob: p.blob, links: ctx.link(`policies/${p.id}`) }
}

/** A consumer without its secret (answered once, by the create route). */
export function consumerView(ctx: AdminContext, c: OAuthConsumerRow) {
  return { ...extra(c.extra), id: c.id, description: c.description, links: ctx.link(`OS-OAUTH1/consumers/${c.id}`) }
}
