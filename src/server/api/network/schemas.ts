/**
 * JSON Schemas of the network API's request bodies. Attribute names and types follow Neutron v2.0; integers
 * and booleans accept the string forms Neutron converts (validator.ts), everything else is strict. Accepted
 * but ignored: availability-zone hints, DNS and QoS attributes. Provider attributes are checked by the service
 * (network/segments.ts).
 */
import type { Converts } from '../../http/route-types.js'

// The helpers keep their schemas' literal types (`as const`, const type parameters) so that a route's body can be
// typed with FromSchema from the schema it is validated with; the conversion keywords say what they leave behind.
const str = (max = 255) => ({ type: 'string', maxLength: max }) as const
const nullableStr = (max = 255) => ({ type: ['string', 'null'], maxLength: max }) as const
const bool = { neutronBool: {} } as { readonly neutronBool: object } & Converts<boolean>
type IntSpec = { min?: number; max?: number; nullable?: boolean }
const int = <const S extends IntSpec>(spec: S = {} as S) => ({ neutronInt: spec }) as { readonly neutronInt: S } & Converts<S extends { nullable: true } ? number | null : number>
const tags = { type: 'array', items: str(255), maxItems: 50 } as const
const uuidish = str(36)
// Port range values: the rule validator answers out-of-range values with Neutron's "Invalid value for port N".
const port = int({ nullable: true })

const owner = { project_id: str(64), tenant_id: str(64) }
const ignored = {
  availability_zone_hints: { type: 'array', items: str() },
  dns_domain: str(),
  qos_policy_id: { type: 'null' },
} as const

const object = <const P extends object, const R extends readonly (keyof P & string)[] = []>(properties: P, required: R = [] as unknown as R) =>
  ({ type: 'object', additionalProperties: false, properties, required }) as const
const wrap = <const K extends string, const I>(key: K, inner: I) =>
  ({ type: 'object', additionalProperties: false, required: [key], properties: { [key]: inner } as { readonly [P in K]: I } }) as const
/** A create body: one member (`{"port": {…}}`) or, in bulk, a list of them (`{"ports": [{…}, …]}`). */
const creatable = <const M extends string, const C extends string, const I>(member: M, collection: C, inner: I) =>
  ({
    type: 'object',
    additionalProperties: false,
    minProperties: 1,
    maxProperties: 1,
    properties: { [member]: inner, [collection]: { type: 'array', minItems: 1, maxItems: 1000, items: inner } } as { readonly [P in M]: I } & {
      readonly [P in C]: { readonly type: 'array'; readonly items: I }
    },
  }) as const

const networkAttrs = {
  name: str(),
  description: str(),
  admin_state_up: bool,
  shared: bool,
  'router:external': bool,
  is_default: bool,
  mtu: int(),
  port_security_enabled: bool,
  tags,
  vlan_transparent: bool,
  'provider:network_type': nullableStr(),
  'provider:physical_network': nullableStr(),
  'provider:segmentation_id': int({ nullable: true }),
  ...ignored,
} as const
export const networkCreate = creatable('network', 'networks', object({ ...networkAttrs, ...owner }))
export const networkUpdate = wrap('network', object({ ...networkAttrs, ...owner }))

const pool = object({ start: str(64), end: str(64) }, ['start', 'end'])
const hostRoute = object({ destination: str(64), nexthop: str(64) }, ['destination', 'nexthop'])
const subnetMutable = {
  name: str(),
  description: str(),
  gateway_ip: nullableStr(64),
  allocation_pools: { type: 'array', items: pool },
  // Neutron reads null as an empty list for these (convert_none_to_empty_list).
  dns_nameservers: { type: ['array', 'null'], items: str(64) },
  host_routes: { type: ['array', 'null'], items: hostRoute },
  enable_dhcp: bool,
  tags,
  service_types: { type: 'array', maxItems: 0 },
  segment_id: { type: 'null' },
} as const
export const subnetCreate = creatable(
  'subnet',
  'subnets',
  object(
    {
      ...subnetMutable,
      network_id: uuidish,
      ip_version: int({ min: 4, max: 6 }),
      cidr: str(64),
      ipv6_ra_mode: { type: ['string', 'null'], enum: ['slaac', 'dhcpv6-stateful', 'dhcpv6-stateless', null] },
      ipv6_address_mode: { type: ['string', 'null'], enum: ['slaac', 'dhcpv6-stateful', 'dhcpv6-stateless', null] },
      subnetpool_id: { type: ['string', 'null'], maxLength: 36 },
      use_default_subnetpool: bool,
      prefixlen: int({ min: 0, max: 128 }),
      ...owner,
    },
    ['network_id', 'ip_version'],
  ),
)
export const subnetUpdate = wrap('subnet', object(subnetMutable))

const fixedIp = object({ subnet_id: uuidish, ip_address: str(64) })
const portAttrs = {
  name: str(),
  description: str(),
  admin_state_up: bool,
  mac_address: str(32),
  fixed_ips: { type: 'array', items: fixedIp },
  device_id: str(255),
  device_owner: str(255),
  security_groups: { type: 'array', items: uuidish },
  port_security_enabled: bool,
  'binding:host_id': str(255),
  'binding:vnic_type': { type: 'string', enum: ['normal', 'direct', 'macvtap', 'baremetal', 'direct-physical', 'virtio-forwarder', 'smart-nic', 'remote-managed'] },
  'binding:profile': { type: 'object' },
  allowed_address_pairs: { type: 'array', items: object({ ip_address: str(64), mac_address: str(32) }, ['ip_address']) },
  extra_dhcp_opts: { type: 'array', maxItems: 0 },
  dns_name: str(),
  tags,
  qos_policy_id: { type: 'null' },
} as const
export const portCreate = creatable('port', 'ports', object({ ...portAttrs, network_id: uuidish, ...owner }, ['network_id']))
export const portUpdate = wrap('port', object({ ...portAttrs, network_id: uuidish, ...owner }))

const sgAttrs = { name: str(), description: str(), stateful: bool, tags } as const
export const securityGroupCreate = wrap('security_group', object({ ...sgAttrs, ...owner }))
export const securityGroupUpdate = wrap('security_group', object(sgAttrs))

export const ruleCreate = wrap(
  'security_group_rule',
  object(
    {
      security_group_id: uuidish,
      direction: { type: 'string', enum: ['ingress', 'egress'] },
      ethertype: { type: 'string', enum: ['IPv4', 'IPv6'] },
      protocol: { type: ['string', 'integer', 'null'] },
      port_range_min: port,
      port_range_max: port,
      remote_ip_prefix: nullableStr(64),
      remote_group_id: { type: ['string', 'null'], maxLength: 36 },
      remote_address_group_id: { type: 'null' },
      description: str(),
      ...owner,
    },
    ['security_group_id', 'direction'],
  ),
)

const gatewayInfo = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: { network_id: uuidish, enable_snat: bool, external_fixed_ips: { type: 'array', items: fixedIp }, qos_policy_id: { type: 'null' } },
} as const
const routerAttrs = {
  name: str(),
  description: str(),
  admin_state_up: bool,
  external_gateway_info: gatewayInfo,
  routes: { type: ['array', 'null'], items: hostRoute },
  tags,
  distributed: bool,
  ha: bool,
  availability_zone_hints: { type: 'array', items: str() },
  flavor_id: { type: 'null' },
} as const
export const routerCreate = wrap('router', object({ ...routerAttrs, ...owner }))
export const routerUpdate = wrap('router', object({ ...routerAttrs, ...owner }))
export const routerInterface = object({ subnet_id: uuidish, port_id: uuidish })

const fipAttrs = { port_id: { type: ['string', 'null'], maxLength: 36 }, fixed_ip_address: nullableStr(64), description: str(), tags } as const
export const floatingIpCreate = wrap(
  'floatingip',
  object({ ...fipAttrs, floating_network_id: uuidish, floating_ip_address: str(64), subnet_id: uuidish, dns_domain: str(), dns_name: str(), qos_policy_id: { type: 'null' }, ...owner }, [
    'floating_network_id',
  ]),
)
export const floatingIpUpdate = wrap('floatingip', object({ ...fipAttrs, floating_network_id: uuidish, floating_ip_address: str(64), subnet_id: uuidish, ...owner }))

const limit = int({ min: -1 })
export const quotaUpdate = wrap(
  'quota',
  object({ network: limit, subnet: limit, port: limit, router: limit, floatingip: limit, security_group: limit, security_group_rule: limit, rbac_policy: limit, subnetpool: limit }),
)

/** Neutron lets an agent's admin state and description change, nothing else. */
export const agentUpdate = wrap('agent', object({ admin_state_up: bool, description: nullableStr() }))

const subnetPoolMutable = {
  name: str(),
  description: str(),
  prefixes: { type: 'array', minItems: 1, maxItems: 100, items: str(64) },
  default_prefixlen: int({ min: 0, max: 128 }),
  min_prefixlen: int({ min: 0, max: 128 }),
  max_prefixlen: int({ min: 0, max: 128 }),
  default_quota: int({ min: 0, max: 2 ** 31 - 1, nullable: true }),
  is_default: bool,
  shared: bool,
  address_scope_id: { type: ['string', 'null'], maxLength: 36 },
  tags,
} as const
export const subnetPoolCreate = creatable('subnetpool', 'subnetpools', object({ ...subnetPoolMutable, ...owner }, ['prefixes']))
export const subnetPoolUpdate = wrap('subnetpool', object(subnetPoolMutable))

const addressScopeMutable = { name: str(), shared: bool, tags } as const
export const addressScopeCreate = creatable('address_scope', 'address_scopes', object({ ...addressScopeMutable, ip_version: int({ min: 4, max: 6 }), ...owner }, ['ip_version']))
export const addressScopeUpdate = wrap('address_scope', object(addressScopeMutable))
