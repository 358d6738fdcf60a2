/**
 * The network service's policy, after Neutron's defaults: admins see and manage everything; project members
 * manage their project's resources; shared and external networks are visible to every project, and the subnets of
 * shared ones (an external network's subnets are not: Neutron's rule:shared); a network's owner sees and manages the
 * ports on it. Operations whose target is invisible answer
 * 404 (the caller checks `get_*` first), visible but forbidden ones 403 PolicyNotAuthorized.
 */
import type { Principal } from '../auth/principal.js'
import { allOf, anyOf, hasRole, isAdmin, inProject, projectMemberOrAdmin, projectReaderOrAdmin, type PolicyTarget, type Rule } from './rules.js'

export interface NetworkPolicyTarget extends PolicyTarget {
  /** The project owning the network the target lives on (for subnets and ports). */
  networkProjectId?: string
  shared?: boolean
  external?: boolean
}

const networkOwner = ((p: Principal, t: NetworkPolicyTarget) =>
  p.scope.type === 'project' && t.networkProjectId !== undefined && p.scope.projectId === t.networkProjectId) as Rule
const sharedNetwork = ((_p: Principal, t: NetworkPolicyTarget) => t.shared === true) as Rule
const externalNetwork = ((_p: Principal, t: NetworkPolicyTarget) => t.external === true) as Rule
const member = hasRole('member')
const adminOrNetworkOwner = anyOf(isAdmin, allOf(member, networkOwner))

export const NETWORK_POLICY = {
  /**
   * Lists hold every project's resources, not only the caller's (and those shared with it): Neutron lists with an
   * admin's context unfiltered. Evaluated once per request into the actor's visibility (network/context.ts).
   */
  'get:all_projects': isAdmin,
  get_network: anyOf(projectReaderOrAdmin, sharedNetwork, externalNetwork),
  create_network: projectMemberOrAdmin,
  'create_network:shared': isAdmin,
  'create_network:router:external': isAdmin,
  'create_network:is_default': isAdmin,
  /** provider:network_type, provider:physical_network, provider:segmentation_id */
  'create_network:provider': isAdmin,
  'get_network:provider': isAdmin,
  update_network: projectMemberOrAdmin,
  'update_network:shared': isAdmin,
  'update_network:router:external': isAdmin,
  delete_network: projectMemberOrAdmin,

  get_subnet: anyOf(projectReaderOrAdmin, sharedNetwork, networkOwner),
  create_subnet: adminOrNetworkOwner,
  update_subnet: adminOrNetworkOwner,
  delete_subnet: adminOrNetworkOwner,

  get_port: anyOf(projectReaderOrAdmin, networkOwner),
  /** The binding:* attributes other than vnic_type. */
  'get_port:binding': isAdmin,
  create_port: anyOf(isAdmin, allOf(member, inProject, anyOf(networkOwner, sharedNetwork))),
  'create_port:fixed_ips:ip_address': adminOrNetworkOwner,
  'create_port:mac_address': adminOrNetworkOwner,
  'create_port:binding:host_id': isAdmin,
  'create_port:device_owner:network': adminOrNetworkOwner,
  /** Security groups of another project than the port's, on create and update (else they are not found). */
  'port:security_groups:other_project': isAdmin,
  update_port: anyOf(projectMemberOrAdmin, allOf(member, networkOwner)),
  'update_port:fixed_ips:ip_address': adminOrNetworkOwner,
  'update_port:mac_address': isAdmin,
  'update_port:binding:host_id': isAdmin,
  delete_port: anyOf(projectMemberOrAdmin, allOf(member, networkOwner)),

  get_security_group: projectReaderOrAdmin,
  create_security_group: projectMemberOrAdmin,
  update_security_group: projectMemberOrAdmin,
  delete_security_group: projectMemberOrAdmin,
  /** Deleting a project's default security group (else SecurityGroupCannotRemoveDefault). */
  'delete_security_group:default': isAdmin,
  get_security_group_rule: projectReaderOrAdmin,
  create_security_group_rule: projectMemberOrAdmin,
  delete_security_group_rule: projectMemberOrAdmin,

  get_router: projectReaderOrAdmin,
  /** The router's distributed and ha attributes. */
  'get_router:distributed': isAdmin,
  'get_router:ha': isAdmin,
  create_router: projectMemberOrAdmin,
  'create_router:external_gateway_info:enable_snat': isAdmin,
  'create_router:external_gateway_info:external_fixed_ips': isAdmin,
  update_router: projectMemberOrAdmin,
  delete_router: projectMemberOrAdmin,
  add_router_interface: projectMemberOrAdmin,
  /** An interface on a subnet of another project than the router's, on a network that is not shared (else not found). */
  'add_router_interface:other_project_subnet': isAdmin,
  remove_router_interface: projectMemberOrAdmin,

  get_floatingip: projectReaderOrAdmin,
  create_floatingip: projectMemberOrAdmin,
  'create_floatingip:floating_ip_address': isAdmin,
  update_floatingip: projectMemberOrAdmin,
  /** Associating a floating IP with a port of another project (else the port is not found). */
  'floatingip:associate:other_project_port': isAdmin,
  delete_floatingip: projectMemberOrAdmin,

  /** Subnet pools: the owner's, shared ones visible to every project (Neutron's rule:shared_subnetpools). */
  get_subnetpool: anyOf(projectReaderOrAdmin, sharedNetwork),
  create_subnetpool: projectMemberOrAdmin,
  'create_subnetpool:shared': isAdmin,
  'create_subnetpool:is_default': isAdmin,
  update_subnetpool: projectMemberOrAdmin,
  'update_subnetpool:is_default': isAdmin,
  delete_subnetpool: projectMemberOrAdmin,

  /** Address scopes: the owner's, shared ones visible to every project. */
  get_address_scope: anyOf(projectReaderOrAdmin, sharedNetwork),
  create_address_scope: projectMemberOrAdmin,
  'create_address_scope:shared': isAdmin,
  update_address_scope: projectMemberOrAdmin,
  'update_address_scope:shared': isAdmin,
  delete_address_scope: projectMemberOrAdmin,

  /** Agents are hosts' services: only admins see them (a member's list is empty, one agent not found). */
  get_agent: isAdmin,
  update_agent: isAdmin,
  delete_agent: isAdmin,

  get_quota: anyOf(isAdmin, inProject),
  list_quotas: isAdmin,
  update_quota: isAdmin,
  delete_quota: isAdmin,
  /** Acting on behalf of another project (project_id/tenant_id in a create body). */
  'create:other_project': isAdmin,
} satisfies Record<string, Rule>

export type NetworkOperation = keyof typeof NETWORK_POLICY
