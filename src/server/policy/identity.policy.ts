/**
 * Policy of the identity admin API, one rule per operation, after Keystone's defaults:
 * - a cloud admin (role admin on a project or the system scope, Keystone's legacy `admin_required`) may do
 *   everything;
 * - a domain-scoped admin manages the projects, users and groups of its own domain (and grants roles there);
 * - a system reader reads everything, a domain reader reads its own domain;
 * - a user reads itself, its own groups and projects, and changes its own password (a public route proven
 *   by the original password, see below);
 * - a project-scoped user reads its own project;
 * - regions are readable by anyone with a token.
 * Targets carry the domain (and project, user) the operation acts on; handlers fill them from the record.
 */
import type { Principal } from '../auth/principal.js'
import { anyOf, anyone, isSelf, type PolicyTable, type Rule } from './rules.js'

/** Keystone's admin_required: the admin role on a project or the system (not a domain: see domainAdmin). */
export const cloudAdmin: Rule = (p) => p.roles.includes('admin') && (p.scope.type === 'project' || p.scope.type === 'system')
export const systemReader: Rule = (p) => p.scope.type === 'system' && p.roles.includes('reader')
/** Admin of the target's domain, through a domain-scoped token. */
export const domainAdmin: Rule = (p, t) => p.scope.type === 'domain' && p.roles.includes('admin') && t.domainId !== undefined && t.domainId === p.scope.domainId
export const domainReader: Rule = (p, t) => p.scope.type === 'domain' && p.roles.includes('reader') && t.domainId !== undefined && t.domainId === p.scope.domainId
/** The token is scoped to the target project. */
export const ownProject: Rule = (p, t) => p.scope.type === 'project' && t.projectId !== undefined && p.scope.projectId === t.projectId

/** Any domain-scoped reader: global roles are readable by domain administrators, who grant them. */
const domainScopedReader: Rule = (p, t) => p.scope.type === 'domain' && p.roles.includes('reader') && (t.domainId === undefined || t.domainId === p.scope.domainId)

const admin = cloudAdmin
const adminOrDomainAdmin = anyOf(cloudAdmin, domainAdmin)
const reader = anyOf(cloudAdmin, systemReader, domainReader)
const readerOrSelf = anyOf(reader, isSelf)

export const IDENTITY_POLICY = {
  'identity:list_domains': anyOf(cloudAdmin, systemReader),
  'identity:get_domain': anyOf(reader, (p, t) => p.scope.type !== 'unscoped' && p.scope.type !== 'system' && t.domainId === p.scope.domainId),
  'identity:create_domain': admin,
  'identity:update_domain': admin,
  'identity:delete_domain': admin,
  // Domain configuration: Keystone's defaults (admin writes; admin or system reader reads).
  'identity:create_domain_config': admin,
  'identity:get_domain_config': anyOf(cloudAdmin, systemReader),
  'identity:get_domain_config_default': anyOf(cloudAdmin, systemReader),
  'identity:update_domain_config': admin,
  'identity:delete_domain_config': admin,

  // Policy blobs and OAuth consumers: Keystone's defaults (admin writes; admin or system reader reads).
  'identity:list_policies': anyOf(cloudAdmin, systemReader),
  'identity:get_policy': anyOf(cloudAdmin, systemReader),
  'identity:create_policy': admin,
  'identity:update_policy': admin,
  'identity:delete_policy': admin,
  'identity:list_consumers': anyOf(cloudAdmin, systemReader),
  'identity:get_consumer': anyOf(cloudAdmin, systemReader),
  'identity:create_consumer': admin,
  'identity:update_consumer': admin,
  'identity:delete_consumer': admin,

  // Endpoint filtering (OS-EP-FILTER): Keystone's defaults (admin writes; admin or system reader reads).
  'identity:list_endpoint_groups': anyOf(cloudAdmin, systemReader),
  'identity:get_endpoint_group': anyOf(cloudAdmin, systemReader),
  'identity:create_endpoint_group': admin,
  'identity:update_endpoint_group': admin,
  'identity:delete_endpoint_group': admin,
  'identity:list_endpoints_associated_with_endpoint_group': anyOf(cloudAdmin, systemReader),
  'identity:list_projects_associated_with_endpoint_group': anyOf(cloudAdmin, systemReader),
  'identity:get_endpoint_group_in_project': anyOf(cloudAdmin, systemReader),
  'identity:list_endpoint_groups_for_project': anyOf(cloudAdmin, systemReader),
  'identity:add_endpoint_group_to_project': admin,
  'identity:remove_endpoint_group_from_project': admin,
  'identity:check_endpoint_in_project': anyOf(cloudAdmin, systemReader),
  'identity:list_endpoints_for_project': anyOf(cloudAdmin, systemReader),
  'identity:list_projects_for_endpoint': anyOf(cloudAdmin, systemReader),
  'identity:add_endpoint_to_project': admin,
  'identity:remove_endpoint_from_project': admin,

  'identity:list_projects': reader,
  'identity:get_project': anyOf(reader, ownProject),
  'identity:create_project': adminOrDomainAdmin,
  'identity:update_project': adminOrDomainAdmin,
  'identity:delete_project': adminOrDomainAdmin,
  'identity:list_project_tags': anyOf(reader, ownProject),
  'identity:update_project_tags': adminOrDomainAdmin,
  'identity:list_user_projects': readerOrSelf,

  'identity:list_users': reader,
  'identity:get_user': readerOrSelf,
  'identity:create_user': adminOrDomainAdmin,
  'identity:update_user': adminOrDomainAdmin,
  'identity:delete_user': adminOrDomainAdmin,
  // POST /users/{id}/password (change_password) is not in this table: like Keystone it needs no token (so an
  // expired password can still be changed) and is authorised by the original password in the body.

  'identity:list_groups': reader,
  'identity:get_group': reader,
  'identity:create_group': adminOrDomainAdmin,
  'identity:update_group': adminOrDomainAdmin,
  'identity:delete_group': adminOrDomainAdmin,
  'identity:list_users_in_group': reader,
  'identity:list_groups_for_user': readerOrSelf,
  'identity:check_user_in_group': reader,
  'identity:add_user_to_group': adminOrDomainAdmin,
  'identity:remove_user_from_group': adminOrDomainAdmin,

  'identity:list_roles': anyOf(cloudAdmin, systemReader, domainScopedReader),
  'identity:get_role': anyOf(cloudAdmin, systemReader, domainScopedReader),
  'identity:create_role': admin,
  'identity:update_role': admin,
  'identity:delete_role': admin,
  'identity:list_implied_roles': reader,
  'identity:get_implied_role': reader,
  'identity:create_implied_role': admin,
  'identity:delete_implied_role': admin,
  'identity:list_role_inference_rules': reader,

  'identity:list_grants': reader,
  'identity:check_grant': reader,
  /** Granting on a domain's project or the domain itself: the domain admin too; system grants: cloud admin only. */
  'identity:create_grant': adminOrDomainAdmin,
  'identity:revoke_grant': adminOrDomainAdmin,
  'identity:list_system_grants': anyOf(cloudAdmin, systemReader),
  'identity:check_system_grant': anyOf(cloudAdmin, systemReader),
  'identity:create_system_grant': admin,
  'identity:revoke_system_grant': admin,
  'identity:list_role_assignments': reader,

  'identity:list_services': anyOf(cloudAdmin, systemReader),
  'identity:get_service': anyOf(cloudAdmin, systemReader),
  'identity:create_service': admin,
  'identity:update_service': admin,
  'identity:delete_service': admin,
  'identity:list_endpoints': anyOf(cloudAdmin, systemReader),
  'identity:get_endpoint': anyOf(cloudAdmin, systemReader),
  'identity:create_endpoint': admin,
  'identity:update_endpoint': admin,
  'identity:delete_endpoint': admin,
  'identity:list_regions': anyone,
  'identity:get_region': anyone,
  'identity:create_region': admin,
  'identity:update_region': admin,
  'identity:delete_region': admin,
} satisfies PolicyTable

export type IdentityOperation = keyof typeof IDENTITY_POLICY

/**
 * The domain a list is confined to: a domain-scoped caller who is neither a cloud admin nor a system reader and
 * gave no domain filter gets its own domain as the filter (Keystone narrows the same way); asking for another
 * domain then fails the domainReader rule.
 */
export function listDomainFor(principal: Principal, requested: string | undefined): string | undefined {
  if (requested !== undefined || cloudAdmin(principal, {}) || systemReader(principal, {})) return requested
  return principal.scope.type === 'domain' ? principal.scope.domainId : undefined
}
