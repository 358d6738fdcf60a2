/**
 * Rows → Neutron's wire representation. The attribute lists follow Neutron (Zed) as openstacksdk and
 * openstackclient read them; `tenant_id` repeats `project_id` as Neutron still does.
 */
import type { AddressScopeTable, FloatingIpTable, NetworkTable, PortTable, RouterTable, SecurityGroupRuleTable, SecurityGroupTable, SubnetPoolTable, SubnetTable } from '../storage/schema.js'
import { isoTime, parseJson } from './context.js'
import { networkOfCidr } from '../../lib/ip.js'

export type View = Record<string, unknown>

export interface FixedIp {
  subnet_id: string
  ip_address: string
}

const standard = (row: { created_at: number; updated_at: number; revision_number: number; tags: string; description: string }) => ({
  description: row.description,
  tags: parseJson<string[]>(row.tags),
  created_at: isoTime(row.created_at),
  updated_at: isoTime(row.updated_at),
  revision_number: row.revision_number,
})

/** A network as Neutron shows it; the provider attributes only to those who may see them (admins). */
export function networkView(row: NetworkTable, subnetIds: string[], showProvider: boolean): View {
  return {
    id: row.id,
    name: row.name,
    admin_state_up: row.admin_state_up === 1,
    status: row.status,
    shared: row.shared === 1,
    'router:external': row.external === 1,
    is_default: row.is_default === 1,
    mtu: row.mtu,
    port_security_enabled: row.port_security_enabled === 1,
    subnets: subnetIds,
    availability_zone_hints: [],
    availability_zones: ['nova'],
    ipv4_address_scope: null,
    ipv6_address_scope: null,
    l2_adjacency: true,
    dns_domain: '',
    qos_policy_id: null,
    vlan_transparent: false,
    project_id: row.project_id,
    tenant_id: row.project_id,
    ...(showProvider && {
      'provider:network_type': row.network_type,
      'provider:physical_network': row.physical_network,
      'provider:segmentation_id': row.segmentation_id,
    }),
    ...standard(row),
  }
}

export function addressScopeView(row: AddressScopeTable): View {
  return {
    id: row.id,
    name: row.name,
    ip_version: row.ip_version,
    shared: row.shared === 1,
    tags: parseJson<string[]>(row.tags),
    project_id: row.project_id,
    tenant_id: row.project_id,
    created_at: isoTime(row.created_at),
    updated_at: isoTime(row.updated_at),
    revision_number: row.revision_number,
  }
}

export function subnetPoolView(row: SubnetPoolTable): View {
  return {
    id: row.id,
    name: row.name,
    ip_version: row.ip_version,
    prefixes: parseJson<string[]>(row.prefixes),
    default_prefixlen: row.default_prefixlen,
    min_prefixlen: row.min_prefixlen,
    max_prefixlen: row.max_prefixlen,
    default_quota: row.default_quota === null ? null : Number(row.default_quota),
    shared: row.shared === 1,
    is_default: row.is_default === 1,
    address_scope_id: row.address_scope_id,
    project_id: row.project_id,
    tenant_id: row.project_id,
    ...standard(row),
  }
}

export function subnetView(row: SubnetTable): View {
  return {
    id: row.id,
    name: row.name,
    network_id: row.network_id,
    ip_version: row.ip_version,
    cidr: row.cidr,
    gateway_ip: row.gateway_ip,
    allocation_pools: parseJson<unknown[]>(row.allocation_pools),
    dns_nameservers: parseJson<string[]>(row.dns_nameservers),
    host_routes: parseJson<unknown[]>(row.host_routes),
    enable_dhcp: row.enable_dhcp === 1,
    ipv6_ra_mode: row.ipv6_ra_mode,
    ipv6_address_mode: row.ipv6_address_mode,
    subnetpool_id: row.subnetpool_id,
    segment_id: null,
    service_types: [],
    dns_publish_fixed_ip: false,
    project_id: row.project_id,
    tenant_id: row.project_id,
    ...standard(row),
  }
}

/**
 * A port is ACTIVE once it is bound to a device and administratively up (there is no agent to report link
 * state); otherwise DOWN, like an unbound Neutron port.
 */
export function portStatus(row: PortTable): string {
  return row.admin_state_up === 1 && row.device_id !== '' ? 'ACTIVE' : 'DOWN'
}

export function portView(row: PortTable, fixedIps: FixedIp[], securityGroupIds: string[], showBinding: boolean): View {
  return {
    id: row.id,
    name: row.name,
    network_id: row.network_id,
    admin_state_up: row.admin_state_up === 1,
    status: portStatus(row),
    mac_address: row.mac_address,
    fixed_ips: fixedIps,
    device_id: row.device_id,
    device_owner: row.device_owner,
    security_groups: securityGroupIds,
    port_security_enabled: row.port_security_enabled === 1,
    allowed_address_pairs: parseJson<unknown[]>(row.allowed_address_pairs),
    extra_dhcp_opts: [],
    'binding:vnic_type': row.binding_vnic_type,
    ...(showBinding
      ? {
          'binding:host_id': row.binding_host_id,
          'binding:profile': parseJson<Record<string, unknown>>(row.binding_profile),
          'binding:vif_type': row.binding_host_id ? 'ovs' : 'unbound',
          'binding:vif_details': row.binding_host_id ? { port_filter: true } : {},
        }
      : {}),
    ip_allocation: 'immediate',
    qos_policy_id: null,
    project_id: row.project_id,
    tenant_id: row.project_id,
    ...standard(row),
  }
}

export function ruleView(row: SecurityGroupRuleTable): View {
  return {
    id: row.id,
    security_group_id: row.security_group_id,
    direction: row.direction,
    ethertype: row.ethertype,
    protocol: row.protocol,
    port_range_min: row.port_range_min,
    port_range_max: row.port_range_max,
    remote_ip_prefix: row.remote_ip_prefix,
    remote_group_id: row.remote_group_id,
    remote_address_group_id: null,
    normalized_cidr: row.remote_ip_prefix && (networkOfCidr(row.remote_ip_prefix) ?? row.remote_ip_prefix),
    description: row.description,
    project_id: row.project_id,
    tenant_id: row.project_id,
    created_at: isoTime(row.created_at),
    updated_at: isoTime(row.updated_at),
    revision_number: row.revision_number,
  }
}

export function securityGroupView(row: SecurityGroupTable, rules: SecurityGroupRuleTable[]): View {
  return {
    id: row.id,
    name: row.name,
    stateful: row.stateful === 1,
    shared: false,
    security_group_rules: rules.map(ruleView),
    project_id: row.project_id,
    tenant_id: row.project_id,
    ...standard(row),
  }
}

export function routerView(row: RouterTable, gatewayIps: FixedIp[], showAdmin: boolean): View {
  return {
    id: row.id,
    name: row.name,
    admin_state_up: row.admin_state_up === 1,
    status: row.status,
    external_gateway_info: row.gw_network_id ? { network_id: row.gw_network_id, enable_snat: row.enable_snat === 1, external_fixed_ips: gatewayIps } : null,
    routes: parseJson<unknown[]>(row.routes),
    availability_zone_hints: [],
    availability_zones: ['nova'],
    flavor_id: null,
    ...(showAdmin ? { distributed: false, ha: false } : {}),
    project_id: row.project_id,
    tenant_id: row.project_id,
    ...standard(row),
  }
}

export function floatingIpView(row: FloatingIpTable): View {
  return {
    id: row.id,
    floating_ip_address: row.floating_ip_address,
    floating_network_id: row.floating_network_id,
    router_id: row.router_id,
    port_id: row.fixed_port_id,
    fixed_ip_address: row.fixed_ip_address,
    status: row.fixed_port_id ? 'ACTIVE' : 'DOWN',
    port_forwardings: [],
    dns_domain: '',
    dns_name: '',
    qos_policy_id: null,
    project_id: row.project_id,
    tenant_id: row.project_id,
    ...standard(row),
  }
}
