/** Bodies of GET /auth/projects, /auth/domains and /auth/system: what the caller's token could be scoped to. */
import type { Principal } from '../../../auth/principal.js'
import type { AppDeps } from '../../../deps.js'

export function authListBodies(deps: AppDeps) {
  const identityUrl = deps.urls.identity
  const links = (path: string) => ({ self: `${identityUrl}${path}`, previous: null, next: null })
  return {
    projects(principal: Principal) {
      const snap = deps.tokens.snapshot
      const cred = principal.applicationCredentialId ? snap.appCreds.get(principal.applicationCredentialId) : undefined
      const ids = cred ? [cred.projectId] : snap.scopeTargets(principal.userId, 'project')
      const projects = ids
        .map((id) => snap.projects.get(id))
        .filter((p) => p !== undefined && p.enabled && snap.domains.get(p.domainId)?.enabled)
        .map((p) => ({
          id: p!.id,
          name: p!.name,
          domain_id: p!.domainId,
          description: p!.description,
          enabled: p!.enabled,
          parent_id: p!.parentId,
          is_domain: false,
          tags: p!.tags,
          options: p!.options,
          links: { self: `${identityUrl}/projects/${p!.id}` },
        }))
        .sort((a, b) => a.name.localeCompare(b.name))
      return { projects, links: links('/auth/projects') }
    },
    domains(principal: Principal) {
      const snap = deps.tokens.snapshot
      const domains = principal.applicationCredentialId
        ? []
        : snap
            .scopeTargets(principal.userId, 'domain')
            .map((id) => snap.domains.get(id))
            .filter((d) => d !== undefined && d.enabled)
            .map((d) => ({ id: d!.id, name: d!.name, description: d!.description, enabled: d!.enabled, options: d!.options, links: { self: `${identityUrl}/domains/${d!.id}` } }))
            .sort((a, b) => a.name.localeCompare(b.name))
      return { domains, links: links('/auth/domains') }
    },
    system(principal: Principal) {
      const snap = deps.tokens.snapshot
      const has = !principal.applicationCredentialId && snap.effectiveRoles(principal.userId, { sys: 'all' }).length > 0
      return { system: has ? [{ all: true }] : [], links: { self: `${identityUrl}/auth/system` } }
    },
  }
}
