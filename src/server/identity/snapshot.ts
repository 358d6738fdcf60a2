/**
 * An in-process copy of everything token validation needs: users, domains, projects (with tags), roles and
 * their implications, assignments, group membership, application credentials, the catalog, revocation events
 * and the token key ring. It is loaded whole and replaced whole when the identity generation changes
 * (generation.ts), so validation reads no database and every process converges within one poll interval.
 * Derived values (effective roles per user and scope, serialized catalogs) are memoised on the snapshot and die
 * with it.
 */
import type { Db } from '../storage/store.js'
import type { AccessRule } from './access-rules.js'
import type { SecretBox } from '../crypto/secret-box.js'
import { identityGeneration, localIdentityWrites } from './generation.js'
import { listApplicationCredentialGrants } from './repo/application-credentials.repo.js'
import { loadEndpointFilter } from './repo/endpoint-filter.repo.js'
import { projectEndpointSets } from './endpoint-filter.js'
import { listOAuthAccessGrants, type OAuthAccessGrant } from './oauth1.js'
import type { TokenKey } from './token-format.js'

export interface UserRecord {
  id: string
  name: string
  domainId: string
  enabled: boolean
  defaultProjectId: string | null
  description: string
  email: string | null
  options: Record<string, unknown>
  passwordCreatedAt: number | null
  passwordExpiresAt: number | null
}

export interface DomainRecord {
  id: string
  name: string
  description: string
  enabled: boolean
  options: Record<string, unknown>
}

export interface ProjectRecord {
  id: string
  name: string
  domainId: string
  parentId: string | null
  description: string
  enabled: boolean
  options: Record<string, unknown>
  tags: string[]
}

export interface RoleRecord {
  id: string
  name: string
  domainId: string | null
  description: string
  options: Record<string, unknown>
}

export interface AppCredRecord {
  id: string
  name: string
  userId: string
  projectId: string
  roleIds: string[]
  unrestricted: boolean
  expiresAt: number | null
  /** The requests its tokens may make; undefined: any (identity/access-rules.ts). */
  accessRules?: (AccessRule & { id: string })[]
}

interface Assignment {
  targetType: string
  targetId: string
  roleId: string
  inherited: boolean
}

interface EndpointRecord {
  id: string
  interface: string
  regionId: string | null
  url: string
}

interface ServiceRecord {
  id: string
  type: string
  name: string
  endpoints: EndpointRecord[]
}

export interface RevocationEvent {
  auditId: string | null
  userId: string | null
  projectId: string | null
  issuedBefore: number
}

export interface KeyRecord extends TokenKey {
  hex: string
  state: 'staged' | 'primary' | 'secondary'
  createdAt: number
}

export type ScopeRef = { p: string } | { d: string } | { sys: 'all' } | null

function json(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

export class IdentitySnapshot {
  readonly users = new Map<string, UserRecord>()
  readonly domains = new Map<string, DomainRecord>()
  readonly projects = new Map<string, ProjectRecord>()
  readonly roles = new Map<string, RoleRecord>()
  readonly appCreds = new Map<string, AppCredRecord>()
  /** OAuth 1.0a access tokens (no secrets): a token made from one ends when it goes. */
  readonly oauthAccess = new Map<string, OAuthAccessGrant>()
  readonly keys = new Map<string, KeyRecord>()
  primary: KeyRecord | undefined
  /** Revocations by audit id (the common case, O(1)) and the others (by user or project), scanned. */
  readonly revokedAudits = new Map<string, number>()
  readonly otherRevocations: RevocationEvent[] = []
  private readonly implied = new Map<string, string[]>()
  private readonly assignments = new Map<string, Assignment[]>()
  private readonly groupsOf = new Map<string, string[]>()
  private services: ServiceRecord[] = []
  /** The endpoints a project's catalog is narrowed to (OS-EP-FILTER); a project absent here sees them all. */
  private projectEndpoints = new Map<string, Set<string>>()
  private readonly roleMemo = new Map<string, RoleRecord[]>()
  private readonly catalogMemo = new Map<string, { entries: unknown[]; json: string }>()
  /** Serialized token body parts per (user, scope, application credential); see token-body.ts. */
  readonly bodyParts = new Map<string, { user: string; scoped: string }>()
  private readonly domainByName = new Map<string, DomainRecord>()
  private readonly projectByName = new Map<string, ProjectRecord>()

  /** How many local identity writes had happened when this snapshot started loading. */
  localWrites = 0

  constructor(readonly generation: number) {}

  static async load(db: Db, box: SecretBox): Promise<IdentitySnapshot> {
    // The generation is read first: a write landing during the load bumps it again, so the next poll reloads.
    const localWrites = localIdentityWrites().seq
    const snap = new IdentitySnapshot(await identityGeneration(db))
    snap.localWrites = localWrites
    const [domains, projects, tags, users, roles, implied, assignments, members, services, endpoints, appCreds, accessRules, revocations, keys, endpointFilter, oauthAccess] = await Promise.all([
      db.selectFrom('domains').selectAll().execute(),
      db.selectFrom('projects').selectAll().execute(),
      db.selectFrom('project_tags').selectAll().execute(),
      db
        .selectFrom('users')
        .select(['id', 'name', 'domain_id', 'enabled', 'default_project_id', 'description', 'email', 'options', 'password_created_at', 'password_expires_at'])
        .execute(),
      db.selectFrom('roles').selectAll().execute(),
      db.selectFrom('implied_roles').selectAll().execute(),
      db.selectFrom('role_assignments').selectAll().execute(),
      db.selectFrom('group_members').selectAll().execute(),
      db.selectFrom('services').selectAll().where('enabled', '=', 1).execute(),
      db.selectFrom('endpoints').selectAll().where('enabled', '=', 1).execute(),
      listApplicationCredentialGrants(db),
      db.selectFrom('access_rules').select(['id', 'service', 'method', 'path']).execute(),
      db.selectFrom('revocation_events').selectAll().execute(),
      db.selectFrom('token_keys').selectAll().orderBy('created_at', 'asc').orderBy('id', 'asc').execute(),
      loadEndpointFilter(db),
      listOAuthAccessGrants(db),
    ])
    for (const d of domains) snap.domains.set(d.id, { id: d.id, name: d.name, description: d.description, enabled: d.enabled === 1, options: json(d.options) })
    for (const p of projects) {
      snap.projects.set(p.id, {
        id: p.id, name: p.name, domainId: p.domain_id, parentId: p.parent_id, description: p.description, enabled: p.enabled === 1,
        options: json(p.options), tags: [],
      })
    }
    for (const t of tags) snap.projects.get(t.project_id)?.tags.push(t.tag)
    for (const d of snap.domains.values()) snap.domainByName.set(d.name, d)
    for (const p of snap.projects.values()) snap.projectByName.set(`${p.domainId}/${p.name}`, p)
    for (const u of users) {
      snap.users.set(u.id, {
        id: u.id, name: u.name, domainId: u.domain_id, enabled: u.enabled === 1, defaultProjectId: u.default_project_id, description: u.description,
        email: u.email, options: json(u.options), passwordCreatedAt: u.password_created_at === null ? null : Number(u.password_created_at),
        passwordExpiresAt: u.password_expires_at === null ? null : Number(u.password_expires_at),
      })
    }
    for (const r of roles) snap.roles.set(r.id, { id: r.id, name: r.name, domainId: r.domain_id || null, description: r.description, options: json(r.options) })
    for (const i of implied) {
      const list = snap.implied.get(i.prior_role_id) ?? []
      list.push(i.implied_role_id)
      snap.implied.set(i.prior_role_id, list)
    }
    for (const a of assignments) {
      const key = `${a.actor_type}:${a.actor_id}`
      const list = snap.assignments.get(key) ?? []
      list.push({ targetType: a.target_type, targetId: a.target_id, roleId: a.role_id, inherited: a.inherited === 1 })
      snap.assignments.set(key, list)
    }
    for (const m of members) {
      const list = snap.groupsOf.get(m.user_id) ?? []
      list.push(m.group_id)
      snap.groupsOf.set(m.user_id, list)
    }
    const byService = new Map<string, EndpointRecord[]>()
    for (const e of endpoints) {
      const list = byService.get(e.service_id) ?? []
      list.push({ id: e.id, interface: e.interface, regionId: e.region_id, url: e.url })
      byService.set(e.service_id, list)
    }
    snap.services = services.map((s) => ({ id: s.id, type: s.type, name: s.name, endpoints: byService.get(s.id) ?? [] }))
    const filterable = endpoints.map((e) => ({ id: e.id, serviceId: e.service_id, interface: e.interface, regionId: e.region_id }))
    snap.projectEndpoints = projectEndpointSets(filterable, endpointFilter.groups, endpointFilter.groupAssociations, endpointFilter.endpointAssociations)
    const ruleById = new Map(accessRules.map((r) => [r.id, { id: r.id, service: r.service, method: r.method, path: r.path }]))
    for (const a of appCreds) {
      const ruleIds = a.access_rule_ids ? (JSON.parse(a.access_rule_ids) as string[]) : []
      snap.appCreds.set(a.id, {
        id: a.id, name: a.name, userId: a.user_id, projectId: a.project_id, roleIds: JSON.parse(a.roles) as string[], unrestricted: a.unrestricted === 1,
        expiresAt: a.expires_at === null ? null : Number(a.expires_at),
        ...(ruleIds.length > 0 ? { accessRules: ruleIds.map((id) => ruleById.get(id)).filter((r) => r !== undefined) } : {}),
      })
    }
    for (const grant of oauthAccess) snap.oauthAccess.set(grant.id, grant)
    for (const r of revocations) {
      if (r.audit_id && !r.user_id && !r.project_id) snap.revokedAudits.set(r.audit_id, Number(r.issued_before))
      else snap.otherRevocations.push({ auditId: r.audit_id, userId: r.user_id, projectId: r.project_id, issuedBefore: Number(r.issued_before) })
    }
    for (const k of keys) {
      const record: KeyRecord = { hex: k.id, id: Buffer.from(k.id, 'hex'), secret: box.open(k.sealed_secret), state: k.state, createdAt: Number(k.created_at) }
      snap.keys.set(k.id, record)
      // Two processes starting together may both create a primary: the newest wins everywhere.
      if (k.state === 'primary') snap.primary = record
    }
    return snap
  }

  domainNamed(name: string): DomainRecord | undefined {
    return this.domainByName.get(name)
  }

  projectNamed(domainId: string, name: string): ProjectRecord | undefined {
    return this.projectByName.get(`${domainId}/${name}`)
  }

  /** True when a revocation event matches a token with this audit chain, user, scope and issue time. */
  isRevoked(auditIds: string[], userId: string, projectId: string | undefined, issuedAt: number): boolean {
    for (const auditId of auditIds) {
      const before = this.revokedAudits.get(auditId)
      if (before !== undefined && issuedAt <= before) return true
    }
    for (const e of this.otherRevocations) {
      if (issuedAt > e.issuedBefore) continue
      if (e.auditId !== null && !auditIds.includes(e.auditId)) continue
      if (e.userId !== null && e.userId !== userId) continue
      if (e.projectId !== null && e.projectId !== projectId) continue
      return true
    }
    return false
  }

  private closeOverImplied(ids: Set<string>): void {
    const queue = [...ids]
    while (queue.length > 0) {
      for (const next of this.implied.get(queue.pop()!) ?? []) {
        if (!ids.has(next)) {
          ids.add(next)
          queue.push(next)
        }
      }
    }
  }

  /** The user's effective roles on a scope: direct and group assignments, inherited ones, closed over implied roles. */
  effectiveRoles(userId: string, scope: ScopeRef): RoleRecord[] {
    if (scope === null) return []
    const memoKey = `${userId}|${'p' in scope ? `p:${scope.p}` : 'd' in scope ? `d:${scope.d}` : 's'}`
    const memo = this.roleMemo.get(memoKey)
    if (memo) return memo
    const actors = [`user:${userId}`, ...(this.groupsOf.get(userId) ?? []).map((g) => `group:${g}`)]
    const ids = new Set<string>()
    const ancestors: string[] = []
    let domainOfProject: string | undefined
    if ('p' in scope) {
      const project = this.projects.get(scope.p)
      domainOfProject = project?.domainId
      for (let parent = project?.parentId, depth = 0; parent && depth < 32; depth++) {
        const p = this.projects.get(parent)
        if (!p) break
        ancestors.push(p.id)
        parent = p.parentId
      }
    }
    for (const actor of actors) {
      for (const a of this.assignments.get(actor) ?? []) {
        if ('p' in scope) {
          if (a.targetType === 'project' && a.targetId === scope.p && !a.inherited) ids.add(a.roleId)
          else if (a.inherited && a.targetType === 'project' && ancestors.includes(a.targetId)) ids.add(a.roleId)
          else if (a.inherited && a.targetType === 'domain' && a.targetId === domainOfProject) ids.add(a.roleId)
        } else if ('d' in scope) {
          if (a.targetType === 'domain' && a.targetId === scope.d && !a.inherited) ids.add(a.roleId)
        } else if (a.targetType === 'system' && a.targetId === 'all') {
          ids.add(a.roleId)
        }
      }
    }
    this.closeOverImplied(ids)
    // A domain-specific role only stands for the global roles it implies (Keystone leaves it out of tokens).
    const roles = [...ids]
      .map((id) => this.roles.get(id))
      .filter((r): r is RoleRecord => r !== undefined && r.domainId === null)
      .sort((a, b) => a.name.localeCompare(b.name))
    this.roleMemo.set(memoKey, roles)
    return roles
  }

  /** Role ids closed over implications (application credentials delegate a set that grows with implied roles). */
  withImplied(roleIds: string[]): Set<string> {
    const ids = new Set(roleIds)
    this.closeOverImplied(ids)
    return ids
  }

  /** Projects / domains on which the user (or a group of it) has any role, for /auth/projects and /auth/domains. */
  scopeTargets(userId: string, type: 'project' | 'domain'): string[] {
    const actors = [`user:${userId}`, ...(this.groupsOf.get(userId) ?? []).map((g) => `group:${g}`)]
    const out = new Set<string>()
    for (const actor of actors) {
      for (const a of this.assignments.get(actor) ?? []) {
        if (a.targetType === type && !a.inherited) out.add(a.targetId)
        if (type === 'project' && a.inherited && a.targetType === 'domain') {
          for (const p of this.projects.values()) if (p.domainId === a.targetId) out.add(p.id)
        }
      }
    }
    return [...out]
  }

  /**
   * The catalog for a scope, as entries and as serialized JSON (built once per scope and snapshot). Project
   * scopes substitute URL templates and keep only the project's endpoints when endpoint filtering narrows it
   * (identity/endpoint-filter.ts; services left without endpoints are dropped); other scopes drop endpoints that
   * need a project.
   */
  catalog(projectId: string | undefined, userId: string): { entries: unknown[]; json: string } {
    const key = projectId ? `p:${projectId}|${userId}` : `-|${userId}`
    const memo = this.catalogMemo.get(key)
    if (memo) return memo
    const narrowed = projectId === undefined ? undefined : this.projectEndpoints.get(projectId)
    const services = narrowed ? this.services.filter((s) => s.endpoints.some((e) => narrowed.has(e.id))) : this.services
    const entries = services.map((s) => ({
      endpoints: s.endpoints
        .filter((e) => !narrowed || narrowed.has(e.id))
        .filter((e) => projectId !== undefined || !/\$\((project_id|tenant_id)\)s/.test(e.url))
        .map((e) => ({
          id: e.id,
          interface: e.interface,
          region_id: e.regionId,
          url: e.url
            .replaceAll('$(project_id)s', projectId ?? '')
            .replaceAll('$(tenant_id)s', projectId ?? '')
            .replaceAll('$(user_id)s', userId),
          region: e.regionId,
        })),
      id: s.id,
      type: s.type,
      name: s.name,
    }))
    const built = { entries, json: JSON.stringify(entries) }
    if (this.catalogMemo.size < 10_000) this.catalogMemo.set(key, built)
    return built
  }
}
