/**
 * Compute policy: Nova's default rules (2023+ secure RBAC defaults) as a table. Servers are readable by project
 * readers and writable by project members; admins may do everything. Visibility of another project's server is
 * checked before policy (404, not 403).
 */
import { anyOf, anyone, isAdmin, projectMemberOrAdmin, projectReaderOrAdmin, type PolicyTable } from './rules.js'

export const COMPUTE_POLICY = {
  /** Seeing another project's servers and server groups at all: without it they are 404, not 403 (context.ts visibleProject). */
  'other_projects:see': isAdmin,
  /**
   * A server request may use another project's images, volumes, volume snapshots and networks (boot, rebuild,
   * attach, snapshot): Nova hands an admin's context to the image, volume and network services, which show it every
   * project's. Passed to the domain as a Visibility; without it, another project's resource is not found.
   */
  'other_projects:use': isAdmin,
  /** A port on an external network that is not shared (Nova's network:attach_external_network). */
  'network:attach_external_network': isAdmin,
  'servers:index': projectReaderOrAdmin,
  'servers:index:get_all_tenants': isAdmin,
  'servers:detail:get_all_tenants': isAdmin,
  /** Every list filter whatever the microversion (Nova's os_compute_api:servers:allow_all_filters). */
  'servers:allow_all_filters': isAdmin,
  /** Listing deleted and soft-deleted servers (deleted=, status=DELETED, soft_deleted=); Nova checks is_admin. */
  'servers:index:deleted': isAdmin,
  /** Sorting by the admin-only sort keys (host, node…); Nova checks is_admin. */
  'servers:index:admin_sort_keys': isAdmin,
  'servers:show': projectReaderOrAdmin,
  'servers:show:host_status': isAdmin,
  /**
   * The fields the server tables mark admin-only (OS-EXT-SRV-ATTR:*, host_status): Nova's
   * os-extended-server-attributes; one rule because one table flag marks them.
   */
  'servers:show:admin_fields': isAdmin,
  /** The nova-network fields of the os-networks proxy (Nova's network_dict shows them to admins). */
  'os-networks:admin_fields': isAdmin,
  /** A fault's details when its code is 500 (Nova shows them to admins only). */
  'servers:show:fault_details': isAdmin,
  'servers:create': projectMemberOrAdmin,
  'servers:create:forced_host': isAdmin,
  'servers:create:requested_destination': isAdmin,
  'servers:update': projectMemberOrAdmin,
  'servers:delete': projectMemberOrAdmin,
  'servers:action': projectMemberOrAdmin,
  'servers:action:admin': isAdmin,
  'os-lock-server:unlock:unlock_override': isAdmin,
  /** Acting on a locked server (Nova's check_instance_lock lets is_admin through; it has no rule of its own). */
  'servers:locked:override': isAdmin,
  'os-shelve:unshelve_to_host': isAdmin,
  'os-migrate-server:migrate:host': isAdmin,
  'servers:metadata:write': projectMemberOrAdmin,
  'servers:password:clear': projectMemberOrAdmin,
  'servers:tags:write': projectMemberOrAdmin,
  'servers:instance_actions:events': isAdmin,
  'servers:ips': projectReaderOrAdmin,
  'servers:interfaces:list': projectReaderOrAdmin,
  'servers:interfaces:create': projectMemberOrAdmin,
  'servers:interfaces:delete': projectMemberOrAdmin,
  'servers:security_groups:list': projectReaderOrAdmin,
  'servers:remote_consoles': projectMemberOrAdmin,
  /** Nova's os_compute_api:os-server-diagnostics: admins only by default. */
  'servers:diagnostics': isAdmin,
  /** pcc's metrics history of a server (docs/metrics.md): what its project may read of it. */
  'servers:metrics': projectReaderOrAdmin,
  'console_auth_tokens:show': isAdmin,
  'flavors:read': anyone,
  /**
   * Seeing and using private flavors the project was not given access to (show, boot, resize): Nova reads every
   * flavor with an admin's context. Passed to the domain as a Visibility.
   */
  'flavors:all_projects': isAdmin,
  'flavors:manage': isAdmin,
  /** Listing every flavor (private and disabled too) and filtering by is_public, as Nova's os-flavor-access rule. */
  'os-flavor-access': isAdmin,
  'keypairs:other_user': isAdmin,
  'limits:other_project': isAdmin,
  'quotas:show': projectReaderOrAdmin,
  'quotas:update': isAdmin,
  'os-quota-class-sets:show': isAdmin,
  'os-quota-class-sets:update': isAdmin,
  'server_groups:read': projectReaderOrAdmin,
  'server_groups:write': projectMemberOrAdmin,
  'server_groups:all_projects': isAdmin,
  /** all_tenants on the os-security-groups proxy list (Nova checks is_admin); without it, ignored. */
  'security_groups:all_tenants': isAdmin,
  'availability_zone:list': anyone,
  'availability_zone:detail': isAdmin,
  'os-aggregates:index': isAdmin,
  'os-aggregates:create': isAdmin,
  'os-aggregates:show': isAdmin,
  'os-aggregates:update': isAdmin,
  'os-aggregates:delete': isAdmin,
  'os-aggregates:add_host': isAdmin,
  'os-aggregates:remove_host': isAdmin,
  'os-aggregates:set_metadata': isAdmin,
  'os-migrations:index': isAdmin,
  'servers:migrations:index': isAdmin,
  'servers:migrations:show': isAdmin,
  'servers:migrations:force_complete': isAdmin,
  'servers:migrations:delete': isAdmin,
  'os-server-external-events:create': isAdmin,
  'os-instance-usage-audit-log:list': isAdmin,
  'os-instance-usage-audit-log:show': isAdmin,
  /** Nova's legacy extension list: anyone with a token. */
  extensions: anyone,
  'usage:list': isAdmin,
  'usage:show': anyOf(isAdmin, projectReaderOrAdmin),
} satisfies PolicyTable

export type ComputeOperation = keyof typeof COMPUTE_POLICY

/** Server actions whose policy is not the action rule's (Nova checks the console actions as os-remote-consoles). */
export const ACTION_POLICY: Partial<Record<string, ComputeOperation>> = {
  'os-getVNCConsole': 'servers:remote_consoles',
  'os-getSPICEConsole': 'servers:remote_consoles',
  'os-getSerialConsole': 'servers:remote_consoles',
}
