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
  update_port: anyOf(projectMemberOrAdmin, allOf(member, networkOwner)),
  'update_port:fixed_ips:ip_address': adminOrNetworkOwner,
  'update_port:mac_address': isAdmin,
  'update_port:binding:host_id': isAdmin,
  delete_port: anyOf(projectMemberOrAdmin, allOf(member, networkOwner)),

  get_security_group: projectReaderOrAdmin,
  create_security_group: projectMemberOrAdmin,
  update_security_group: projectMemberOrAdmin,
  delete_security_group: projectMemberOrAdmin,
  get_security_group_rule: projectReaderOrAdmin,
  create_security_group_rule: projectMemberOrAdmin,
  delete_security_group_rule: projectMemberOrAdmin,

  get_router: projectReaderOrAdmin,
  create_router: projectMemberOrAdmin,
  'create_router:external_gateway_info:enable_snat': isAdmin,
  'create_router:external_gateway_info:external_fixed_ips': isAdmin,
  update_router: projectMemberOrAdmin,
  delete_router: projectMemberOrAdmin,
  add_router_interface: projectMemberOrAdmin,
  remove_router_interface: projectMemberOrAdmin,

  get_floatingip: projectReaderOrAdmin,
  create_floatingip: projectMemberOrAdmin,
  'create_floatingip:floating_ip_address': isAdmin,
  update_floatingip: projectMemberOrAdmin,
  delete_floatingip: projectMemberOrAdmin,

  get_quota: anyOf(isAdmin, inProject),
  list_quotas: isAdmin,
  update_quota: isAdmin,
  delete_quota: isAdmin,
  /** Acting on behalf of another project (project_id/tenant_id in a create body). */
  'create:other_project': isAdmin,
} satisfies Record<string, Rule>

export type NetworkOperation = keyof typeof NETWORK_POLICY
