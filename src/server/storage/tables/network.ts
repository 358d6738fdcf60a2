/**
 * Tables of the network service (Neutron v2.0 model). Ids are canonical UUIDs. A port's addresses live in
 * `ip_allocations`, whose primary key (subnet_id, ip_address) is what guarantees an address is never handed
 * out twice, whatever the number of server processes. List-valued attributes (allocation pools, DNS servers,
 * host routes, tags, binding profile, allowed address pairs) are JSON text.
 */

export interface NetworkTable {
  id: string
  /** Raised by the database on every UPDATE of the row (migration 0128, for kept views); 0 when inserted. */
  rev: number
  project_id: string
  name: string
  description: string
  admin_state_up: number
  shared: number
  /** router:external */
  external: number
  /** The default external network (`is_default`), used by auto-allocated topologies. */
  is_default: number
  mtu: number
  status: string
  port_security_enabled: number
  /** provider:network_type: `vxlan` (tenant networks) or `flat` (a host interface named per physical network). */
  network_type: string
  /** provider:physical_network (flat networks), mapped to an interface by each host's agent.json. */
  physical_network: string | null
  /** provider:segmentation_id: the VXLAN VNI. */
  segmentation_id: number | null
  tags: string
  revision_number: number
  created_at: number
  updated_at: number
}

export interface SubnetTable {
  id: string
  network_id: string
  project_id: string
  name: string
  description: string
  ip_version: number
  /** Canonical form: network address / prefix length. */
  cidr: string
  gateway_ip: string | null
  /** JSON [{start, end}] */
  allocation_pools: string
  /** JSON [string] */
  dns_nameservers: string
  /** JSON [{destination, nexthop}] */
  host_routes: string
  enable_dhcp: number
  ipv6_ra_mode: string | null
  ipv6_address_mode: string | null
  /** The subnet pool its CIDR was allocated from (migration 0102), or null. */
  subnetpool_id: string | null
  tags: string
  revision_number: number
  created_at: number
  updated_at: number
}

/** A subnet pool (migration 0102): the prefixes subnets' CIDRs are allocated from. */
export interface SubnetPoolTable {
  id: string
  project_id: string
  name: string
  description: string
  ip_version: number
  /** JSON [cidr], canonical and merged, sorted. */
  prefixes: string
  default_prefixlen: number
  min_prefixlen: number
  max_prefixlen: number
  /** Addresses (IPv4) or /64s (IPv6) one project may hold in subnets of this pool; null: no limit. */
  default_quota: number | null
  shared: number
  is_default: number
  /** The address scope its prefixes belong to (migration 0103), or null. */
  address_scope_id: string | null
  tags: string
  revision_number: number
  created_at: number
  updated_at: number
}

/** An address scope (migration 0103): its subnet pools never overlap. */
export interface AddressScopeTable {
  id: string
  project_id: string
  name: string
  ip_version: number
  shared: number
  tags: string
  revision_number: number
  created_at: number
  updated_at: number
}

export interface PortTable {
  id: string
  /** Raised by the database on every UPDATE of the row (migration 0129, for kept lists); 0 when inserted. */
  rev: number
  network_id: string
  /** '' for ports Neutron owns on behalf of nobody (router gateways, floating IPs). */
  project_id: string
  name: string
  description: string
  admin_state_up: number
  mac_address: string
  device_id: string
  device_owner: string
  port_security_enabled: number
  binding_host_id: string
  binding_vnic_type: string
  /** JSON object */
  binding_profile: string
  /** JSON [{ip_address, mac_address}] */
  allowed_address_pairs: string
  /** 1 when the compute service created the port for a server and deletes it with the server. */
  auto_delete: number
  tags: string
  revision_number: number
  created_at: number
  updated_at: number
}

export interface IpAllocationTable {
  subnet_id: string
  ip_address: string
  port_id: string
  network_id: string
  created_at: number
}

export interface SecurityGroupTable {
  id: string
  project_id: string
  name: string
  description: string
  stateful: number
  tags: string
  revision_number: number
  created_at: number
  updated_at: number
}

/** One row per project: which group is its `default`. The primary key makes concurrent first uses create one. */
export interface DefaultSecurityGroupTable {
  project_id: string
  security_group_id: string
}

export interface SecurityGroupRuleTable {
  id: string
  security_group_id: string
  project_id: string
  direction: string
  ethertype: string
  protocol: string | null
  port_range_min: number | null
  port_range_max: number | null
  remote_ip_prefix: string | null
  remote_group_id: string | null
  description: string
  revision_number: number
  created_at: number
  updated_at: number
}

export interface PortSecurityGroupTable {
  port_id: string
  security_group_id: string
}

export interface RouterTable {
  id: string
  project_id: string
  name: string
  description: string
  admin_state_up: number
  status: string
  gw_network_id: string | null
  gw_port_id: string | null
  enable_snat: number
  /** JSON [{destination, nexthop}] */
  routes: string
  tags: string
  revision_number: number
  created_at: number
  updated_at: number
}

export interface FloatingIpTable {
  id: string
  project_id: string
  floating_network_id: string
  floating_ip_address: string
  /** The port on the external network that holds the address. */
  floating_port_id: string
  fixed_port_id: string | null
  fixed_ip_address: string | null
  router_id: string | null
  description: string
  tags: string
  revision_number: number
  created_at: number
  updated_at: number
}

export interface NetworkQuotaTable {
  project_id: string
  resource: string
  limit: number
}

/** Get-me-a-network: the network `auto` gives a project. The primary key makes concurrent first uses create one. */
export interface AutoAllocatedNetworkTable {
  project_id: string
  network_id: string | null
  router_id: string | null
}

/** One row (id 1): raised by triggers with every change a host's data plane depends on (migration 0092). */
export interface NetworkDataplaneRevisionTable {
  id: number
  rev: number
}

/**
 * What an admin set on one Neutron agent (migration 0101). The agents themselves are derived from hosts' roles
 * (network/agents.ts); an agent without a row is up with no description.
 */
export interface NetworkAgentTable {
  /** The agent's id, derived from its host and type. */
  id: string
  host_id: string
  agent_type: string
  admin_state_up: number
  description: string | null
  updated_at: number
}

export interface NetworkTables {
  networks: NetworkTable
  subnets: SubnetTable
  ports: PortTable
  ip_allocations: IpAllocationTable
  security_groups: SecurityGroupTable
  default_security_groups: DefaultSecurityGroupTable
  security_group_rules: SecurityGroupRuleTable
  port_security_groups: PortSecurityGroupTable
  routers: RouterTable
  floating_ips: FloatingIpTable
  network_quotas: NetworkQuotaTable
  auto_allocated_networks: AutoAllocatedNetworkTable
  network_dataplane_revision: NetworkDataplaneRevisionTable
  network_agents: NetworkAgentTable
  subnet_pools: SubnetPoolTable
  address_scopes: AddressScopeTable
}
