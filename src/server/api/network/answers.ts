/**
 * JSON Schemas of the network API's answers (network/views.ts renders them), for /openapi.json. Every
 * attribute is optional because `fields=` may leave any out; list answers carry `<collection>_links` when paged.
 */
type Schema = Record<string, unknown>

const str = { type: 'string' }
const nstr = { type: ['string', 'null'] }
const int = { type: 'integer' }
const nint = { type: ['integer', 'null'] }
const bool = { type: 'boolean' }
const strings = { type: 'array', items: str }
const links = { type: 'array', items: { type: 'object', properties: { rel: str, href: str }, required: ['rel', 'href'] } }
const fixedIps = { type: 'array', items: { type: 'object', properties: { subnet_id: str, ip_address: str } } }
const object = (properties: Record<string, unknown>): Schema => ({ type: 'object', properties })

/** What every resource with Neutron's standard attributes shows. */
const standard = { description: str, tags: strings, created_at: str, updated_at: str, revision_number: int, project_id: str, tenant_id: str }

const rule = object({
  id: str,
  security_group_id: str,
  direction: str,
  ethertype: str,
  protocol: nstr,
  port_range_min: nint,
  port_range_max: nint,
  remote_ip_prefix: nstr,
  remote_group_id: nstr,
  remote_address_group_id: { type: 'null' },
  normalized_cidr: nstr,
  description: str,
  project_id: str,
  tenant_id: str,
  created_at: str,
  updated_at: str,
  revision_number: int,
})

/** Member key → schema of one item. */
export const NETWORK_VIEWS: Record<string, Schema> = {
  agent: object({
    id: str,
    agent_type: str,
    binary: str,
    topic: str,
    host: str,
    admin_state_up: bool,
    alive: bool,
    availability_zone: nstr,
    description: nstr,
    configurations: { type: 'object' },
    resources_synced: { type: 'null' },
    created_at: str,
    started_at: str,
    heartbeat_timestamp: nstr,
  }),
  network: object({
    id: str,
    name: str,
    admin_state_up: bool,
    status: str,
    shared: bool,
    'router:external': bool,
    is_default: bool,
    mtu: int,
    port_security_enabled: bool,
    subnets: strings,
    availability_zone_hints: strings,
    availability_zones: strings,
    ipv4_address_scope: { type: 'null' },
    ipv6_address_scope: { type: 'null' },
    l2_adjacency: bool,
    dns_domain: str,
    qos_policy_id: { type: 'null' },
    vlan_transparent: bool,
    ...standard,
  }),
  subnet: object({
    id: str,
    name: str,
    network_id: str,
    ip_version: int,
    cidr: str,
    gateway_ip: nstr,
    allocation_pools: { type: 'array', items: object({ start: str, end: str }) },
    dns_nameservers: strings,
    host_routes: { type: 'array', items: object({ destination: str, nexthop: str }) },
    enable_dhcp: bool,
    ipv6_ra_mode: nstr,
    ipv6_address_mode: nstr,
    subnetpool_id: nstr,
    segment_id: { type: 'null' },
    service_types: strings,
    dns_publish_fixed_ip: bool,
    ...standard,
  }),
  port: object({
    id: str,
    name: str,
    network_id: str,
    admin_state_up: bool,
    status: str,
    mac_address: str,
    fixed_ips: fixedIps,
    device_id: str,
    device_owner: str,
    security_groups: strings,
    port_security_enabled: bool,
    allowed_address_pairs: { type: 'array', items: object({ ip_address: str, mac_address: str }) },
    extra_dhcp_opts: { type: 'array' },
    'binding:vnic_type': str,
    'binding:host_id': { ...str, 'x-admin-only': true },
    'binding:profile': { type: 'object', 'x-admin-only': true },
    'binding:vif_type': { ...str, 'x-admin-only': true },
    'binding:vif_details': { type: 'object', 'x-admin-only': true },
    ip_allocation: str,
    qos_policy_id: { type: 'null' },
    ...standard,
  }),
  address_scope: object({ id: str, name: str, ip_version: int, shared: bool, tags: strings, project_id: str, tenant_id: str, created_at: str, updated_at: str, revision_number: int }),
  subnetpool: object({
    id: str,
    name: str,
    ip_version: int,
    prefixes: strings,
    default_prefixlen: int,
    min_prefixlen: int,
    max_prefixlen: int,
    default_quota: nint,
    shared: bool,
    is_default: bool,
    address_scope_id: nstr,
    ...standard,
  }),
  security_group: object({ id: str, name: str, stateful: bool, shared: bool, security_group_rules: { type: 'array', items: rule }, ...standard }),
  security_group_rule: rule,
  router: object({
    id: str,
    name: str,
    admin_state_up: bool,
    status: str,
    external_gateway_info: { anyOf: [{ type: 'null' }, object({ network_id: str, enable_snat: bool, external_fixed_ips: fixedIps })] },
    routes: { type: 'array', items: object({ destination: str, nexthop: str }) },
    availability_zone_hints: strings,
    availability_zones: strings,
    flavor_id: { type: 'null' },
    distributed: { ...bool, 'x-admin-only': true },
    ha: { ...bool, 'x-admin-only': true },
    ...standard,
  }),
  floatingip: object({
    id: str,
    floating_ip_address: str,
    floating_network_id: str,
    router_id: nstr,
    port_id: nstr,
    fixed_ip_address: nstr,
    status: str,
    port_forwardings: { type: 'array' },
    dns_domain: str,
    dns_name: str,
    qos_policy_id: { type: 'null' },
    ...standard,
  }),
}

export const one = (member: string): Schema => ({ type: 'object', properties: { [member]: NETWORK_VIEWS[member] }, required: [member] })

export const many = (collection: string, member: string): Schema => ({
  type: 'object',
  properties: { [collection]: { type: 'array', items: NETWORK_VIEWS[member] }, [`${collection}_links`]: links },
  required: [collection],
})

const fields = { type: 'string', description: 'attributes to return (repeatable)' }

/** Neutron's list query: filters on any attribute (repeat a parameter to OR values), then these. */
export const LIST_QUERY: Schema = {
  type: 'object',
  additionalProperties: true,
  properties: {
    fields,
    sort_key: str,
    sort_dir: { type: 'string', enum: ['asc', 'desc'] },
    limit: { type: 'string', pattern: '^[0-9]+$' },
    marker: str,
    page_reverse: { type: 'string' },
    tags: str,
    'tags-any': str,
    'not-tags': str,
    'not-tags-any': str,
  },
}

export const SHOW_QUERY: Schema = { type: 'object', additionalProperties: true, properties: { fields } }

const quotaLimits = object({ network: int, subnet: int, port: int, router: int, floatingip: int, security_group: int, security_group_rule: int, rbac_policy: int, subnetpool: int })
const used = object({ limit: int, used: int, reserved: int })

export const A = {
  versions: object({ versions: { type: 'array', items: object({ id: str, status: str, links }) } }),
  resources: object({ resources: { type: 'array', items: object({ name: str, collection: str, links }) } }),
  extension: object({ name: str, alias: str, description: str, updated: str, links: { type: 'array' } }),
  tags: { type: 'object', properties: { tags: strings }, required: ['tags'] },
  routerInterface: object({ id: str, tenant_id: str, project_id: str, port_id: str, subnet_id: nstr, subnet_ids: strings, network_id: str }),
  quotas: object({ quotas: { type: 'array', items: { ...quotaLimits, properties: { ...(quotaLimits.properties as object), project_id: str, tenant_id: str } } } }),
  quota: { type: 'object', properties: { quota: quotaLimits }, required: ['quota'] },
  quotaDetails: { type: 'object', properties: { quota: { type: 'object', additionalProperties: used } }, required: ['quota'] },
}
