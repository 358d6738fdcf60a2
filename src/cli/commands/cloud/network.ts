/**
 * Native network commands (network, subnet, port, floating ip, security group and rule: list, show, create,
 * delete) with openstackclient 6.0's columns and fields. Show fields are openstacksdk's attribute names (a key
 * the API does not send shows as None, a key the SDK does not know is not shown), renamed as osc renames them;
 * lookups go by id first, then by name, and fail with the SDK's "No Network found for X".
 */
import type { Session } from '../../../client/session.js'
import { ApiError } from '../../../client/transport.js'
import type { CliContext } from '../../context.js'
import { pyStr, rich, type Cell } from '../../output/format.js'
import { UsageError } from '../../parse.js'
import type { CommandSpec, FlagSpec, FlagValues } from '../../spec.js'
import { CliFailure } from '../config.js'
import { LIST_OUTPUT_FLAGS, SHOW_OUTPUT_FLAGS, printList, printShow, query, withSession } from './common.js'
import { findServer } from './compute.js'
import {
  adminStateColumn, dictColumn, fields, formatDict, headers, keyValues, listColumn, listDictColumn, many, plain, routerExternalColumn, rows,
  type Column, type Formatter,
} from './osc.js'

type Resource = Record<string, unknown>

/** One Neutron resource type: its URL path, body keys, the SDK class name in messages and osc's noun in deletes. */
interface Kind {
  path: string
  singular: string
  plural: string
  sdk: string
  noun: string
  /** The list filter matching a name (floating IPs are named by their address). */
  nameFilter: string
}

const NETWORK: Kind = { path: 'networks', singular: 'network', plural: 'networks', sdk: 'Network', noun: 'network', nameFilter: 'name' }
const SUBNET: Kind = { path: 'subnets', singular: 'subnet', plural: 'subnets', sdk: 'Subnet', noun: 'subnet', nameFilter: 'name' }
const PORT: Kind = { path: 'ports', singular: 'port', plural: 'ports', sdk: 'Port', noun: 'port', nameFilter: 'name' }
const FLOATING_IP: Kind = { path: 'floatingips', singular: 'floatingip', plural: 'floatingips', sdk: 'FloatingIP', noun: 'floating_ip', nameFilter: 'floating_ip_address' }
const SECURITY_GROUP: Kind = { path: 'security-groups', singular: 'security_group', plural: 'security_groups', sdk: 'SecurityGroup', noun: 'group', nameFilter: 'name' }
const SECURITY_GROUP_RULE: Kind = {
  path: 'security-group-rules', singular: 'security_group_rule', plural: 'security_group_rules', sdk: 'SecurityGroupRule', noun: 'rule', nameFilter: 'name',
}

// ---------------------------------------------------------------------------------------------------------------
// API access

async function networkApi(session: Session): Promise<string> {
  return `${await session.endpoint('network')}/v2.0`
}

/** Every item of a list, following Neutron's `<collection>_links` next links as openstacksdk does. */
async function list(session: Session, api: string, kind: Kind, filters: Record<string, string | undefined> = {}): Promise<Resource[]> {
  const items: Resource[] = []
  for (let url: string | undefined = `${api}/${kind.path}${query(filters)}`; url; ) {
    const body: Record<string, unknown> = await session.get(url)
    items.push(...(body[kind.plural] as Resource[]))
    url = (body[`${kind.plural}_links`] as { rel: string; href: string }[] | undefined)?.find((l) => l.rel === 'next')?.href
  }
  return items
}

/** By id, then by name, as openstacksdk's find(): a 404 (or 400) on the id means "try it as a name". */
async function find(session: Session, api: string, kind: Kind, nameOrId: string): Promise<Resource> {
  try {
    return (await session.get<Record<string, Resource>>(`${api}/${kind.path}/${encodeURIComponent(nameOrId)}`))[kind.singular]
  } catch (err) {
    if (!(err instanceof ApiError) || (err.status !== 404 && err.status !== 400)) throw err
  }
  const matches = (await list(session, api, kind, { [kind.nameFilter]: nameOrId })).filter((r) => r.id === nameOrId || r[kind.nameFilter] === nameOrId)
  if (matches.length > 1) throw new CliFailure(`More than one ${kind.sdk} exists with the name '${nameOrId}'.`)
  if (matches.length === 0) throw new CliFailure(`No ${kind.sdk} found for ${nameOrId}`)
  return matches[0]
}

async function create(session: Session, api: string, kind: Kind, attrs: Resource): Promise<Resource> {
  return (await session.send<Record<string, Resource>>('POST', `${api}/${kind.path}`, { [kind.singular]: attrs })).body[kind.singular]
}

// ---------------------------------------------------------------------------------------------------------------
// Fields and columns (openstacksdk attribute names, renamed as osc renames them)

/** What osc shows for the `rules` of a security group: each rule without empty values or the group's own ids. */
const securityGroupRulesColumn: Formatter = (value) => {
  if (!Array.isArray(value)) return plain(value)
  const pyFalsy = (v: unknown) => v === null || v === undefined || v === false || v === 0 || v === '' || (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && v !== null && Object.keys(v).length === 0)
  const trimmed = (value as Resource[]).map((rule) =>
    Object.fromEntries(Object.entries(rule).filter(([k, v]) => !pyFalsy(v) && !['security_group_id', 'tenant_id', 'project_id'].includes(k))),
  )
  return rich(trimmed.map((r) => formatDict(r)).join('\n'), value)
}

const allocationPoolsColumn: Formatter = (value) =>
  rich(Array.isArray(value) ? (value as { start?: string; end?: string }[]).map((p) => `${p.start ?? ''}-${p.end ?? ''}`).join(',') : pyStr(value), value ?? null)

/** Host routes as osc prints them: the API's `nexthop` called `gateway`, as `--host-route` names it. */
const hostRoutesColumn: Formatter = (value) =>
  rich(Array.isArray(value) ? (value as { destination: string; nexthop: string }[]).map((r) => formatDict({ destination: r.destination, gateway: r.nexthop })).join('\n') : pyStr(value), value ?? null)

const NETWORK_FIELDS: Column[] = [
  { name: 'admin_state_up', format: adminStateColumn },
  { name: 'availability_zone_hints', format: listColumn },
  { name: 'availability_zones', format: listColumn },
  { name: 'created_at' },
  { name: 'description' },
  { name: 'dns_domain' },
  { name: 'id' },
  { name: 'ipv4_address_scope' },
  { name: 'ipv6_address_scope' },
  { name: 'is_default' },
  { name: 'is_vlan_transparent', from: 'vlan_transparent' },
  { name: 'mtu' },
  { name: 'name' },
  { name: 'port_security_enabled' },
  { name: 'project_id' },
  { name: 'provider:network_type' },
  { name: 'provider:physical_network' },
  { name: 'provider:segmentation_id' },
  { name: 'qos_policy_id' },
  { name: 'revision_number' },
  { name: 'router:external', format: routerExternalColumn },
  { name: 'segments' },
  { name: 'shared' },
  { name: 'status' },
  { name: 'subnets', format: listColumn },
  { name: 'tags', format: listColumn, missing: [] },
  { name: 'updated_at' },
]

const NETWORK_COLUMNS: Column[] = [{ name: 'ID', from: 'id' }, { name: 'Name', from: 'name' }, { name: 'Subnets', from: 'subnets', format: listColumn }]
const NETWORK_LONG_COLUMNS: Column[] = [
  { name: 'ID', from: 'id' },
  { name: 'Name', from: 'name' },
  { name: 'Status', from: 'status' },
  { name: 'Project', from: 'project_id' },
  { name: 'State', from: 'admin_state_up', format: adminStateColumn },
  { name: 'Shared', from: 'shared' },
  { name: 'Subnets', from: 'subnets', format: listColumn },
  { name: 'Network Type', from: 'provider:network_type' },
  { name: 'Router Type', from: 'router:external', format: routerExternalColumn },
  { name: 'Availability Zones', from: 'availability_zones', format: listColumn },
  { name: 'Tags', from: 'tags', format: listColumn, missing: [] },
]

const SUBNET_FIELDS: Column[] = [
  { name: 'allocation_pools', format: allocationPoolsColumn },
  { name: 'cidr' },
  { name: 'created_at' },
  { name: 'description' },
  { name: 'dns_nameservers', format: listColumn },
  { name: 'dns_publish_fixed_ip' },
  { name: 'enable_dhcp' },
  { name: 'gateway_ip' },
  { name: 'host_routes', format: hostRoutesColumn },
  { name: 'id' },
  { name: 'ip_version' },
  { name: 'ipv6_address_mode' },
  { name: 'ipv6_ra_mode' },
  { name: 'name' },
  { name: 'network_id' },
  { name: 'project_id' },
  { name: 'revision_number' },
  { name: 'segment_id' },
  { name: 'service_types', format: listColumn },
  { name: 'subnetpool_id' },
  { name: 'tags', format: listColumn, missing: [] },
  { name: 'updated_at' },
]

const SUBNET_COLUMNS: Column[] = [
  { name: 'ID', from: 'id' },
  { name: 'Name', from: 'name' },
  { name: 'Network', from: 'network_id' },
  { name: 'Subnet', from: 'cidr' },
]
const SUBNET_LONG_COLUMNS: Column[] = [
  ...SUBNET_COLUMNS,
  { name: 'Project', from: 'project_id' },
  { name: 'DHCP', from: 'enable_dhcp' },
  { name: 'Name Servers', from: 'dns_nameservers', format: listColumn },
  { name: 'Allocation Pools', from: 'allocation_pools', format: allocationPoolsColumn },
  { name: 'Host Routes', from: 'host_routes', format: hostRoutesColumn },
  { name: 'IP Version', from: 'ip_version' },
  { name: 'Gateway', from: 'gateway_ip' },
  { name: 'Service Types', from: 'service_types', format: listColumn },
  { name: 'Tags', from: 'tags', format: listColumn, missing: [] },
]

const PORT_FIELDS: Column[] = [
  { name: 'admin_state_up', format: adminStateColumn },
  { name: 'allowed_address_pairs', format: listDictColumn },
  { name: 'binding_host_id', from: 'binding:host_id' },
  { name: 'binding_profile', from: 'binding:profile', format: dictColumn },
  { name: 'binding_vif_details', from: 'binding:vif_details', format: dictColumn },
  { name: 'binding_vif_type', from: 'binding:vif_type' },
  { name: 'binding_vnic_type', from: 'binding:vnic_type' },
  { name: 'created_at' },
  { name: 'data_plane_status' },
  { name: 'description' },
  { name: 'device_id' },
  { name: 'device_owner' },
  { name: 'device_profile' },
  { name: 'dns_assignment', format: listDictColumn },
  { name: 'dns_domain' },
  { name: 'dns_name' },
  { name: 'extra_dhcp_opts', format: listDictColumn },
  { name: 'fixed_ips', format: listDictColumn },
  { name: 'id' },
  { name: 'ip_allocation' },
  { name: 'mac_address' },
  { name: 'name' },
  { name: 'network_id' },
  { name: 'numa_affinity_policy' },
  { name: 'port_security_enabled' },
  { name: 'project_id' },
  { name: 'propagate_uplink_status' },
  { name: 'qos_network_policy_id' },
  { name: 'qos_policy_id' },
  { name: 'resource_request' },
  { name: 'revision_number' },
  { name: 'security_group_ids', from: 'security_groups', format: listColumn },
  { name: 'status' },
  { name: 'tags', format: listColumn, missing: [] },
  { name: 'trunk_details' },
  { name: 'updated_at' },
]

const PORT_COLUMNS: Column[] = [
  { name: 'ID', from: 'id' },
  { name: 'Name', from: 'name' },
  { name: 'MAC Address', from: 'mac_address' },
  { name: 'Fixed IP Addresses', from: 'fixed_ips', format: listDictColumn },
  { name: 'Status', from: 'status' },
]
// openstackclient 6.0 asks Neutron for `fields=security_group_ids` (the SDK's name), which Neutron ignores, so
// its Security Groups column is always None; pcctl shows the port's groups.
const PORT_LONG_COLUMNS: Column[] = [
  ...PORT_COLUMNS,
  { name: 'Security Groups', from: 'security_groups', format: listColumn },
  { name: 'Device Owner', from: 'device_owner' },
  { name: 'Tags', from: 'tags', format: listColumn, missing: [] },
]

const FLOATING_IP_FIELDS: Column[] = [
  { name: 'created_at' },
  { name: 'description' },
  { name: 'dns_domain' },
  { name: 'dns_name' },
  { name: 'fixed_ip_address' },
  { name: 'floating_ip_address' },
  { name: 'floating_network_id' },
  { name: 'id' },
  { name: 'name', from: 'floating_ip_address' },
  // osc formats port_details with a plain function, so json shows the formatted text too.
  { name: 'port_details', format: (v) => (v ? formatDict(v as Resource) : null) },
  { name: 'port_id' },
  { name: 'project_id' },
  { name: 'qos_policy_id' },
  { name: 'revision_number' },
  { name: 'router_id' },
  { name: 'status' },
  { name: 'subnet_id' },
  { name: 'tags', missing: [] },
  { name: 'updated_at' },
]

const FLOATING_IP_COLUMNS: Column[] = [
  { name: 'ID', from: 'id' },
  { name: 'Floating IP Address', from: 'floating_ip_address' },
  { name: 'Fixed IP Address', from: 'fixed_ip_address' },
  { name: 'Port', from: 'port_id' },
  { name: 'Floating Network', from: 'floating_network_id' },
  { name: 'Project', from: 'project_id' },
]
const FLOATING_IP_LONG_COLUMNS: Column[] = [
  ...FLOATING_IP_COLUMNS,
  { name: 'Router', from: 'router_id' },
  { name: 'Status', from: 'status' },
  { name: 'Description', from: 'description' },
  { name: 'Tags', from: 'tags', missing: [] },
  { name: 'DNS Name', from: 'dns_name' },
  { name: 'DNS Domain', from: 'dns_domain' },
]

const SECURITY_GROUP_FIELDS: Column[] = [
  { name: 'created_at' },
  { name: 'description' },
  { name: 'id' },
  { name: 'name' },
  { name: 'project_id' },
  { name: 'revision_number' },
  { name: 'rules', from: 'security_group_rules', format: securityGroupRulesColumn },
  { name: 'stateful' },
  { name: 'tags', missing: [] },
  { name: 'updated_at' },
]

const SECURITY_GROUP_COLUMNS: Column[] = [
  { name: 'ID', from: 'id' },
  { name: 'Name', from: 'name' },
  { name: 'Description', from: 'description' },
  { name: 'Project', from: 'project_id' },
  { name: 'Tags', from: 'tags', missing: [] },
]

const SECURITY_GROUP_RULE_FIELDS: Column[] = [
  { name: 'created_at' },
  { name: 'description' },
  { name: 'direction' },
  { name: 'ether_type', from: 'ethertype' },
  { name: 'id' },
  { name: 'name' },
  { name: 'port_range_max' },
  { name: 'port_range_min' },
  { name: 'project_id' },
  { name: 'protocol' },
  { name: 'remote_address_group_id' },
  { name: 'remote_group_id' },
  { name: 'remote_ip_prefix' },
  { name: 'revision_number' },
  { name: 'security_group_id' },
  { name: 'tags', missing: [] },
  { name: 'updated_at' },
]

const ICMP_PROTOCOLS = ['icmp', 'icmpv6', 'ipv6-icmp', '1', '58']

/** "22:22", "type=3:code=0" or '' — osc's Port Range column. */
function portRange(rule: Resource): string {
  const min = rule.port_range_min as number | null
  const max = rule.port_range_max as number | null
  if (ICMP_PROTOCOLS.includes(rule.protocol as string)) return `${min ? `type=${min}` : ''}${max ? `:code=${max}` : ''}`
  if (!min && !max) return ''
  return `${min ?? max}:${max ?? min}`
}

/** A rule without a remote prefix matches everything of its ethertype; osc says so. */
function remoteIpPrefix(rule: Resource): unknown {
  if (rule.remote_ip_prefix) return rule.remote_ip_prefix
  return rule.ethertype === 'IPv4' ? '0.0.0.0/0' : rule.ethertype === 'IPv6' ? '::/0' : rule.remote_ip_prefix ?? null
}

const SECURITY_GROUP_RULE_COLUMNS: Column[] = [
  { name: 'ID', from: 'id' },
  { name: 'IP Protocol', from: 'protocol' },
  { name: 'Ethertype', from: 'ethertype' },
  { name: 'IP Range', from: remoteIpPrefix },
  { name: 'Port Range', from: portRange },
  { name: 'Direction', from: 'direction' },
  { name: 'Remote Security Group', from: 'remote_group_id' },
  { name: 'Remote Address Group', from: 'remote_address_group_id' },
]

// ---------------------------------------------------------------------------------------------------------------
// Command builders

const LONG_FLAG: FlagSpec = { name: 'long', type: 'boolean', help: 'list additional fields in output' }

/** The positional a command cannot run without, or a usage error showing how to call it. */
function required(value: string | undefined, usage: string): string {
  if (!value) throw new UsageError(`missing argument: pcctl ${usage}`)
  return value
}

function showCommand(words: string[], kind: Kind, columns: Column[], summary: string): CommandSpec {
  const what = words.slice(0, -1).join('-')
  return {
    words,
    summary,
    flags: SHOW_OUTPUT_FLAGS,
    positionals: [what],
    run: (context, flags, [nameOrId]) =>
      withSession(context, async (session) => {
        const resource = await find(session, await networkApi(session), kind, required(nameOrId, `${words.join(' ')} <${what}>`))
        return printShow(context, flags, fields(columns, resource))
      }),
  }
}

/**
 * Deletes each named resource; like openstack, a failure does not stop the others, each is reported on stderr
 * and the command ends with "N of M <nouns> failed to delete." (exit 1).
 */
function deleteCommand(words: string[], kind: Kind, summary: string): CommandSpec {
  const what = words.slice(0, -1).join('-')
  return {
    words,
    summary,
    flags: [],
    positionals: [what],
    variadic: true,
    run: (context, _flags, names) =>
      withSession(context, async (session) => {
        required(names[0], `${words.join(' ')} <${what}> [<${what}> ...]`)
        const api = await networkApi(session)
        let failed = 0
        for (const nameOrId of names) {
          try {
            const resource = await find(session, api, kind, nameOrId)
            await session.send('DELETE', `${api}/${kind.path}/${encodeURIComponent(resource.id as string)}`)
          } catch (err) {
            failed++
            context.stderr.write(`Failed to delete ${kind.noun} with name or ID '${nameOrId}': ${(err as Error).message}\n`)
          }
        }
        if (failed) throw new CliFailure(`${failed} of ${names.length} ${kind.noun}s failed to delete.`)
        return 0
      }),
  }
}

function printResource(context: CliContext, flags: FlagValues, columns: Column[], resource: Resource): number {
  return printShow(context, flags, fields(columns, resource))
}

function printRows(context: CliContext, flags: FlagValues, columns: Column[], resources: Resource[]): number {
  return printList(context, flags, headers(columns), rows(columns, resources) as Cell[][])
}

// ---------------------------------------------------------------------------------------------------------------
// network

export const networkList: CommandSpec = {
  words: ['network', 'list'],
  summary: 'list networks',
  flags: [...LIST_OUTPUT_FLAGS, LONG_FLAG],
  run: (context, flags) =>
    withSession(context, async (session) => {
      const networks = await list(session, await networkApi(session), NETWORK)
      return printRows(context, flags, flags.long ? NETWORK_LONG_COLUMNS : NETWORK_COLUMNS, networks)
    }),
}

export const networkShow = showCommand(['network', 'show'], NETWORK, NETWORK_FIELDS, 'show a network by name or id')
export const networkDelete = deleteCommand(['network', 'delete'], NETWORK, 'delete networks by name or id')

export const networkCreate: CommandSpec = {
  words: ['network', 'create'],
  summary: 'create a network',
  flags: [
    ...SHOW_OUTPUT_FLAGS,
    { name: 'external', type: 'boolean', help: 'an external network (floating IPs and router gateways come from it; admin)' },
    { name: 'share', type: 'boolean', help: 'share the network with every project (admin)' },
    { name: 'mtu', type: 'string', help: 'maximum transmission unit (68–9000)', placeholder: '<mtu>' },
    { name: 'description', type: 'string', help: 'description of the network', placeholder: '<description>' },
  ],
  positionals: ['name'],
  run: (context, flags, [name]) =>
    withSession(context, async (session) => {
      const attrs: Resource = { name: required(name, 'network create <name>'), admin_state_up: true }
      if (flags.share) attrs.shared = true
      if (flags.external) attrs['router:external'] = true
      if (flags.mtu !== undefined) attrs.mtu = integer('mtu', flags.mtu as string)
      if (flags.description) attrs.description = flags.description
      return printResource(context, flags, NETWORK_FIELDS, await create(session, await networkApi(session), NETWORK, attrs))
    }),
}

function integer(flag: string, text: string): number {
  if (!/^-?\d+$/.test(text)) throw new UsageError(`--${flag} needs an integer, not '${text}'`)
  return Number(text)
}

// ---------------------------------------------------------------------------------------------------------------
// subnet

export const subnetList: CommandSpec = {
  words: ['subnet', 'list'],
  summary: 'list subnets',
  flags: [...LIST_OUTPUT_FLAGS, LONG_FLAG, { name: 'network', type: 'string', help: 'only subnets of this network (name or id)', placeholder: '<network>' }],
  run: (context, flags) =>
    withSession(context, async (session) => {
      const api = await networkApi(session)
      const network = flags.network ? ((await find(session, api, NETWORK, flags.network as string)).id as string) : undefined
      return printRows(context, flags, flags.long ? SUBNET_LONG_COLUMNS : SUBNET_COLUMNS, await list(session, api, SUBNET, { network_id: network }))
    }),
}

export const subnetShow = showCommand(['subnet', 'show'], SUBNET, SUBNET_FIELDS, 'show a subnet by name or id')
export const subnetDelete = deleteCommand(['subnet', 'delete'], SUBNET, 'delete subnets by name or id')

export const subnetCreate: CommandSpec = {
  words: ['subnet', 'create'],
  summary: 'create a subnet',
  flags: [
    ...SHOW_OUTPUT_FLAGS,
    { name: 'network', type: 'string', help: 'network the subnet belongs to (name or id; required)', placeholder: '<network>' },
    { name: 'subnet-range', type: 'string', help: 'CIDR of the subnet, e.g. 10.0.0.0/24', placeholder: '<subnet-range>' },
    { name: 'ip-version', type: 'string', help: 'IP version: 4 or 6 (default 4)', placeholder: '{4,6}' },
    { name: 'gateway', type: 'string', help: "gateway address, 'auto' (first host address, the default) or 'none'", placeholder: '<gateway>' },
    { name: 'dhcp', type: 'boolean', help: 'enable DHCP (the default)' },
    { name: 'no-dhcp', type: 'boolean', help: 'disable DHCP' },
    { name: 'dns-nameserver', type: 'string', repeatable: true, help: 'DNS server (repeat for several)', placeholder: '<dns-nameserver>' },
    { name: 'allocation-pool', type: 'string', repeatable: true, help: 'pool of addresses to hand out (repeat for several)', placeholder: 'start=<ip-address>,end=<ip-address>' },
  ],
  positionals: ['name'],
  run: (context, flags, [name]) =>
    withSession(context, async (session) => {
      required(name, 'subnet create <name> --network <network> --subnet-range <cidr>')
      if (!flags.network) throw new UsageError('flag --network is required: pcctl subnet create <name> --network <network> --subnet-range <cidr>')
      if (flags.dhcp && flags['no-dhcp']) throw new UsageError('use either --dhcp or --no-dhcp')
      const ipVersion = flags['ip-version'] === undefined ? 4 : integer('ip-version', flags['ip-version'] as string)
      if (ipVersion !== 4 && ipVersion !== 6) throw new UsageError(`--ip-version: choose from 4, 6 (not ${ipVersion})`)
      const pools = many(flags['allocation-pool']).map((text) => keyValues('allocation-pool', text, ['start', 'end'], ['start', 'end']))
      const api = await networkApi(session)
      const attrs: Resource = { name, network_id: (await find(session, api, NETWORK, flags.network as string)).id, ip_version: ipVersion }
      if (flags['subnet-range']) attrs.cidr = flags['subnet-range']
      const gateway = (flags.gateway as string | undefined)?.toLowerCase()
      if (gateway === 'none') attrs.gateway_ip = null
      else if (gateway && gateway !== 'auto') attrs.gateway_ip = flags.gateway
      if (pools.length) attrs.allocation_pools = pools
      if (flags.dhcp) attrs.enable_dhcp = true
      if (flags['no-dhcp']) attrs.enable_dhcp = false
      const dns = many(flags['dns-nameserver'])
      if (dns.length) attrs.dns_nameservers = dns
      return printResource(context, flags, SUBNET_FIELDS, await create(session, api, SUBNET, attrs))
    }),
}

// ---------------------------------------------------------------------------------------------------------------
// port

export const portList: CommandSpec = {
  words: ['port', 'list'],
  summary: 'list ports',
  flags: [
    ...LIST_OUTPUT_FLAGS,
    LONG_FLAG,
    { name: 'network', type: 'string', help: 'only ports on this network (name or id)', placeholder: '<network>' },
    { name: 'server', type: 'string', help: 'only ports of this server (name or id)', placeholder: '<server>' },
  ],
  run: (context, flags) =>
    withSession(context, async (session) => {
      const api = await networkApi(session)
      const filters: Record<string, string | undefined> = {}
      if (flags.server) filters.device_id = (await findServer(session, await session.endpoint('compute'), flags.server as string)).id
      if (flags.network) filters.network_id = (await find(session, api, NETWORK, flags.network as string)).id as string
      return printRows(context, flags, flags.long ? PORT_LONG_COLUMNS : PORT_COLUMNS, await list(session, api, PORT, filters))
    }),
}

export const portShow = showCommand(['port', 'show'], PORT, PORT_FIELDS, 'show a port by name or id')
export const portDelete = deleteCommand(['port', 'delete'], PORT, 'delete ports by name or id')

export const portCreate: CommandSpec = {
  words: ['port', 'create'],
  summary: 'create a port',
  flags: [
    ...SHOW_OUTPUT_FLAGS,
    { name: 'network', type: 'string', help: 'network of the port (name or id; required)', placeholder: '<network>' },
    { name: 'fixed-ip', type: 'string', repeatable: true, help: 'address of the port (repeat for several)', placeholder: 'subnet=<subnet>,ip-address=<ip-address>' },
  ],
  positionals: ['name'],
  run: (context, flags, [name]) =>
    withSession(context, async (session) => {
      required(name, 'port create <name> --network <network>')
      if (!flags.network) throw new UsageError('flag --network is required: pcctl port create <name> --network <network>')
      const specs = many(flags['fixed-ip']).map((text) => keyValues('fixed-ip', text, ['subnet', 'ip-address']))
      const api = await networkApi(session)
      const attrs: Resource = { name, network_id: (await find(session, api, NETWORK, flags.network as string)).id, admin_state_up: true }
      const fixedIps: Resource[] = []
      for (const spec of specs) {
        const ip: Resource = {}
        if (spec.subnet) ip.subnet_id = (await find(session, api, SUBNET, spec.subnet)).id
        if (spec['ip-address']) ip.ip_address = spec['ip-address']
        fixedIps.push(ip)
      }
      if (fixedIps.length) attrs.fixed_ips = fixedIps
      return printResource(context, flags, PORT_FIELDS, await create(session, api, PORT, attrs))
    }),
}

// ---------------------------------------------------------------------------------------------------------------
// floating ip

export const floatingIpList: CommandSpec = {
  words: ['floating', 'ip', 'list'],
  summary: 'list floating IPs',
  flags: [...LIST_OUTPUT_FLAGS, LONG_FLAG],
  run: (context, flags) =>
    withSession(context, async (session) => {
      const ips = await list(session, await networkApi(session), FLOATING_IP)
      return printRows(context, flags, flags.long ? FLOATING_IP_LONG_COLUMNS : FLOATING_IP_COLUMNS, ips)
    }),
}

export const floatingIpShow = showCommand(['floating', 'ip', 'show'], FLOATING_IP, FLOATING_IP_FIELDS, 'show a floating IP by address or id')
export const floatingIpDelete = deleteCommand(['floating', 'ip', 'delete'], FLOATING_IP, 'delete floating IPs by address or id')

export const floatingIpCreate: CommandSpec = {
  words: ['floating', 'ip', 'create'],
  summary: 'create a floating IP on an external network',
  flags: [...SHOW_OUTPUT_FLAGS, { name: 'description', type: 'string', help: 'description of the floating IP', placeholder: '<description>' }],
  positionals: ['network'],
  run: (context, flags, [network]) =>
    withSession(context, async (session) => {
      const api = await networkApi(session)
      const attrs: Resource = { floating_network_id: (await find(session, api, NETWORK, required(network, 'floating ip create <network>'))).id }
      if (flags.description) attrs.description = flags.description
      return printResource(context, flags, FLOATING_IP_FIELDS, await create(session, api, FLOATING_IP, attrs))
    }),
}

// ---------------------------------------------------------------------------------------------------------------
// security group and rule

export const securityGroupList: CommandSpec = {
  words: ['security', 'group', 'list'],
  summary: 'list security groups',
  flags: LIST_OUTPUT_FLAGS,
  run: (context, flags) =>
    withSession(context, async (session) => printRows(context, flags, SECURITY_GROUP_COLUMNS, await list(session, await networkApi(session), SECURITY_GROUP))),
}

export const securityGroupShow = showCommand(['security', 'group', 'show'], SECURITY_GROUP, SECURITY_GROUP_FIELDS, 'show a security group by name or id')
export const securityGroupDelete = deleteCommand(['security', 'group', 'delete'], SECURITY_GROUP, 'delete security groups by name or id')

export const securityGroupCreate: CommandSpec = {
  words: ['security', 'group', 'create'],
  summary: 'create a security group',
  flags: [...SHOW_OUTPUT_FLAGS, { name: 'description', type: 'string', help: 'description (default: the name)', placeholder: '<description>' }],
  positionals: ['name'],
  run: (context, flags, [name]) =>
    withSession(context, async (session) => {
      // osc makes the name the description when none is given.
      const attrs = { name: required(name, 'security group create <name>'), description: (flags.description as string | undefined) ?? name }
      return printResource(context, flags, SECURITY_GROUP_FIELDS, await create(session, await networkApi(session), SECURITY_GROUP, attrs))
    }),
}

export const securityGroupRuleList: CommandSpec = {
  words: ['security', 'group', 'rule', 'list'],
  summary: 'list security group rules, of one group or all',
  flags: [
    ...LIST_OUTPUT_FLAGS,
    { name: 'protocol', type: 'string', help: 'only rules of this IP protocol', placeholder: '<protocol>' },
    { name: 'ingress', type: 'boolean', help: 'only rules for incoming traffic' },
    { name: 'egress', type: 'boolean', help: 'only rules for outgoing traffic' },
    { name: 'long', type: 'boolean', help: 'deprecated: accepted and ignored, as openstack does' },
  ],
  positionals: ['group'],
  run: (context, flags, [group]) =>
    withSession(context, async (session) => {
      if (flags.ingress && flags.egress) throw new UsageError('use either --ingress or --egress')
      if (flags.long) context.stderr.write('The --long option has been deprecated and is no longer needed\n')
      const api = await networkApi(session)
      const filters: Record<string, string | undefined> = {
        security_group_id: group ? ((await find(session, api, SECURITY_GROUP, group)).id as string) : undefined,
        direction: flags.ingress ? 'ingress' : flags.egress ? 'egress' : undefined,
        protocol: (flags.protocol as string | undefined)?.toLowerCase(),
      }
      // Without a group the rules of all groups are listed, so each row says which group it belongs to.
      const columns = group ? SECURITY_GROUP_RULE_COLUMNS : [...SECURITY_GROUP_RULE_COLUMNS, { name: 'Security Group', from: 'security_group_id' }]
      return printRows(context, flags, columns, await list(session, api, SECURITY_GROUP_RULE, filters))
    }),
}

export const securityGroupRuleShow = showCommand(['security', 'group', 'rule', 'show'], SECURITY_GROUP_RULE, SECURITY_GROUP_RULE_FIELDS, 'show a security group rule')
export const securityGroupRuleDelete = deleteCommand(['security', 'group', 'rule', 'delete'], SECURITY_GROUP_RULE, 'delete security group rules by id')

/** "22" or "8000:8080" → [min, max], as osc's RangeAction reads --dst-port. */
function range(text: string): [number, number] {
  const m = /^(\d+)(?::(\d+))?$/.exec(text)
  if (!m) throw new UsageError(`--dst-port ${text}: use a port (22) or a range (137:139)`)
  const [min, max] = [Number(m[1]), Number(m[2] ?? m[1])]
  if (min > max) throw new UsageError(`--dst-port ${text}: the first port must not be greater than the second`)
  return [min, max]
}

function isIpv6Protocol(protocol: string | null): boolean {
  return protocol !== null && (protocol.startsWith('ipv6-') || ['icmpv6', '41', '43', '44', '58', '59', '60'].includes(protocol))
}

export const securityGroupRuleCreate: CommandSpec = {
  words: ['security', 'group', 'rule', 'create'],
  summary: 'create a security group rule',
  flags: [
    ...SHOW_OUTPUT_FLAGS,
    { name: 'protocol', type: 'string', help: "IP protocol (tcp, udp, icmp, … or 0–255; 'any', the default, for all)", placeholder: '<protocol>' },
    { name: 'dst-port', type: 'string', help: 'destination port or range, e.g. 22 or 137:139 (TCP, UDP …; ignored for ICMP)', placeholder: '<port-range>' },
    { name: 'remote-ip', type: 'string', help: 'remote CIDR (default 0.0.0.0/0 for IPv4, ::/0 for IPv6)', placeholder: '<ip-address>' },
    { name: 'ingress', type: 'boolean', help: 'rule for incoming traffic (the default)' },
    { name: 'egress', type: 'boolean', help: 'rule for outgoing traffic' },
    { name: 'ethertype', type: 'string', help: 'IPv4 or IPv6 (default: from the protocol)', placeholder: '<ethertype>' },
    { name: 'description', type: 'string', help: 'description of the rule', placeholder: '<description>' },
  ],
  positionals: ['group'],
  run: (context, flags, [group]) =>
    withSession(context, async (session) => {
      required(group, 'security group rule create <group>')
      if (flags.ingress && flags.egress) throw new UsageError('use either --ingress or --egress')
      const given = (flags.protocol as string | undefined)?.toLowerCase() ?? 'any'
      const protocol = given === 'any' ? null : given
      const ethertypeFlag = (flags.ethertype as string | undefined)?.toLowerCase()
      if (ethertypeFlag !== undefined && ethertypeFlag !== 'ipv4' && ethertypeFlag !== 'ipv6') throw new UsageError(`--ethertype: choose from IPv4, IPv6 (not ${flags.ethertype})`)
      const ethertype = ethertypeFlag === 'ipv6' ? 'IPv6' : ethertypeFlag === 'ipv4' ? 'IPv4' : isIpv6Protocol(protocol) ? 'IPv6' : 'IPv4'
      const attrs: Resource = { protocol, direction: flags.egress ? 'egress' : 'ingress', ethertype }
      if (flags.description !== undefined) attrs.description = flags.description
      // Like osc, a port range given for ICMP is ignored (ICMP type and code are not ports).
      if (flags['dst-port'] && !ICMP_PROTOCOLS.includes(protocol ?? '')) [attrs.port_range_min, attrs.port_range_max] = range(flags['dst-port'] as string)
      attrs.remote_ip_prefix = (flags['remote-ip'] as string | undefined) ?? (ethertype === 'IPv4' ? '0.0.0.0/0' : '::/0')
      const api = await networkApi(session)
      attrs.security_group_id = (await find(session, api, SECURITY_GROUP, group)).id
      return printResource(context, flags, SECURITY_GROUP_RULE_FIELDS, await create(session, api, SECURITY_GROUP_RULE, attrs))
    }),
}

export const NETWORK_COMMANDS: CommandSpec[] = [
  networkList, networkShow, networkCreate, networkDelete,
  subnetList, subnetShow, subnetCreate, subnetDelete,
  portList, portShow, portCreate, portDelete,
  floatingIpList, floatingIpShow, floatingIpCreate, floatingIpDelete,
  securityGroupList, securityGroupShow, securityGroupCreate, securityGroupDelete,
  securityGroupRuleList, securityGroupRuleShow, securityGroupRuleCreate, securityGroupRuleDelete,
]
