/** Networks with their subnets, routers, floating IPs and security groups (with rules). */
import { useState } from 'preact/hooks'
import { del, get, post, put } from '../api/http'
import { listFloatingIps, listNetworks, listPorts, listRouters, listSecurityGroups, listSubnets, type FloatingIp, type Network, type Router, type SecurityGroup, type SecurityGroupRule, type Subnet } from '../api/resources'
import { isAdmin } from '../api/session'
import { ActionButton, Status, Table, type Field, type FieldValue } from '../ui/components'
import { href } from '../router'
import { FormAction, ResourceList } from '../ui/resource-list'

const subnetFields = (prefix = ''): Field[] => [
  { name: `${prefix}subnetName`, label: 'Subnet name' },
  { name: `${prefix}cidr`, label: 'Network address (CIDR)', placeholder: '192.168.10.0/24', required: !prefix, when: prefix ? (v) => Boolean(v.withSubnet) : undefined },
  { name: `${prefix}gateway`, label: 'Gateway IP', help: 'Empty: the first address of the range.', when: prefix ? (v) => Boolean(v.withSubnet) : undefined },
  { name: `${prefix}dhcp`, label: 'Enable DHCP', type: 'checkbox', initial: true, when: prefix ? (v) => Boolean(v.withSubnet) : undefined },
]

function subnetBody(networkId: string, v: Record<string, FieldValue>, prefix = '') {
  const cidr = (v[`${prefix}cidr`] as string).trim()
  return { subnet: { network_id: networkId, name: v[`${prefix}subnetName`] || undefined, cidr, ip_version: cidr.includes(':') ? 6 : 4, gateway_ip: (v[`${prefix}gateway`] as string) || undefined, enable_dhcp: Boolean(v[`${prefix}dhcp`]) } }
}

type NetRow = Network & { subnetList: Subnet[] }

export function NetworksPage() {
  return (
    <ResourceList<NetRow>
      title="Networks"
      load={async (signal) => {
        const [networks, subnets] = await Promise.all([listNetworks(signal), listSubnets(signal)])
        return networks.map((n) => ({ ...n, subnetList: subnets.filter((s) => s.network_id === n.id) }))
      }}
      rowKey={(n) => n.id}
      empty="No networks. Create one, or let the first server create the project network."
      create={{
        label: 'Create network',
        fields: () => [
          { name: 'name', label: 'Name', required: true },
          ...(isAdmin() ? ([{ name: 'shared', label: 'Shared with all projects', type: 'checkbox' }, { name: 'external', label: 'External (for routers and floating IPs)', type: 'checkbox' }] as Field[]) : []),
          { name: 'withSubnet', label: 'Create a subnet too', type: 'checkbox', initial: true },
          ...subnetFields('s.'),
        ],
        submit: async (v) => {
          const network = (await post<{ network: Network }>('network', '/networks', { network: { name: v.name, ...(v.shared ? { shared: true } : {}), ...(v.external ? { 'router:external': true } : {}) } })).network
          if (v.withSubnet) {
            try {
              await post('network', '/subnets', subnetBody(network.id, v, 's.'))
            } catch (err) {
              await del('network', `/networks/${network.id}`).catch(() => {})
              throw err
            }
          }
        },
      }}
      columns={[
        { label: 'Name', value: (n) => n.name || n.id },
        { label: 'Subnets', value: (n) => n.subnetList.map((s) => `${s.name ? `${s.name} ` : ''}${s.cidr}`).join(', ') },
        { label: 'Shared', value: (n) => (n.shared ? 'yes' : 'no') },
        { label: 'External', value: (n) => (n['router:external'] ? 'yes' : 'no') },
        { label: 'Status', value: (n) => <Status value={n.status} /> },
      ]}
      actions={(n, reload) => (
        <>
          <FormAction label="Add subnet" fields={() => subnetFields()} submit={(v) => post('network', '/subnets', subnetBody(n.id, v))} onDone={reload} />
          {n.subnetList.map((s) => (
            <ActionButton label={`Delete subnet ${s.cidr}`} danger confirm={`Delete subnet ${s.cidr}?`} run={() => del('network', `/subnets/${s.id}`)} onDone={reload} />
          ))}
          <ActionButton label="Delete" danger confirm={`Delete network ${n.name || n.id}?`} run={() => del('network', `/networks/${n.id}`)} onDone={reload} />
        </>
      )}
    />
  )
}

type RouterRow = Router & { interfaces: { subnetId: string; ip: string }[]; networkNames: Map<string, string>; subnetNames: Map<string, string> }

export function RoutersPage() {
  return (
    <ResourceList<RouterRow>
      title="Routers"
      load={async (signal) => {
        const [routers, ports, networks, subnets] = await Promise.all([listRouters(signal), listPorts(signal), listNetworks(signal), listSubnets(signal)])
        const networkNames = new Map(networks.map((n) => [n.id, n.name]))
        const subnetNames = new Map(subnets.map((s) => [s.id, `${s.name ? `${s.name} ` : ''}${s.cidr}`]))
        return routers.map((r) => ({
          ...r,
          networkNames,
          subnetNames,
          interfaces: ports.filter((p) => p.device_id === r.id && p.device_owner === 'network:router_interface').flatMap((p) => p.fixed_ips.map((f) => ({ subnetId: f.subnet_id, ip: f.ip_address }))),
        }))
      }}
      rowKey={(r) => r.id}
      empty="No routers. A router connects your networks to each other and to an external network."
      create={{
        label: 'Create router',
        fields: async () => [
          { name: 'name', label: 'Name', required: true },
          { name: 'external', label: 'External network (gateway)', type: 'select', options: (await listNetworks()).filter((n) => n['router:external']).map((n) => ({ value: n.id, label: n.name })) },
        ],
        submit: (v) => post('network', '/routers', { router: { name: v.name, ...(v.external ? { external_gateway_info: { network_id: v.external } } : {}) } }),
      }}
      columns={[
        { label: 'Name', value: (r) => r.name || r.id },
        { label: 'Status', value: (r) => <Status value={r.status} /> },
        { label: 'External gateway', value: (r) => (r.external_gateway_info ? `${r.networkNames.get(r.external_gateway_info.network_id) ?? r.external_gateway_info.network_id} ${(r.external_gateway_info.external_fixed_ips ?? []).map((f) => f.ip_address).join(', ')}` : 'none') },
        { label: 'Interfaces', value: (r) => r.interfaces.map((i) => `${r.subnetNames.get(i.subnetId) ?? i.subnetId} (${i.ip})`).join(', ') || 'none' },
      ]}
      actions={(r, reload) => (
        <>
          <FormAction
            label="Add interface"
            fields={async () => [{ name: 'subnet', label: 'Subnet', type: 'select', required: true, options: (await listSubnets()).filter((s) => !r.interfaces.some((i) => i.subnetId === s.id)).map((s) => ({ value: s.id, label: r.subnetNames.get(s.id) ?? s.id })) }]}
            submit={(v) => put('network', `/routers/${r.id}/add_router_interface`, { subnet_id: v.subnet })}
            onDone={reload}
          />
          {r.interfaces.length > 0 && (
            <FormAction
              label="Remove interface"
              fields={() => [{ name: 'subnet', label: 'Subnet', type: 'select', required: true, options: r.interfaces.map((i) => ({ value: i.subnetId, label: `${r.subnetNames.get(i.subnetId) ?? i.subnetId} (${i.ip})` })) }]}
              submit={(v) => put('network', `/routers/${r.id}/remove_router_interface`, { subnet_id: v.subnet })}
              onDone={reload}
            />
          )}
          {r.external_gateway_info ? (
            <ActionButton label="Clear gateway" run={() => put('network', `/routers/${r.id}`, { router: { external_gateway_info: {} } })} onDone={reload} />
          ) : (
            <FormAction
              label="Set gateway"
              fields={async () => [{ name: 'external', label: 'External network', type: 'select', required: true, options: (await listNetworks()).filter((n) => n['router:external']).map((n) => ({ value: n.id, label: n.name })) }]}
              submit={(v) => put('network', `/routers/${r.id}`, { router: { external_gateway_info: { network_id: v.external } } })}
              onDone={reload}
            />
          )}
          <ActionButton label="Delete" danger confirm={`Delete router ${r.name || r.id}?`} run={() => del('network', `/routers/${r.id}`)} onDone={reload} />
        </>
      )}
    />
  )
}

type FipRow = FloatingIp & { server?: { id: string; name: string } }

export function FloatingIpsPage() {
  return (
    <ResourceList<FipRow>
      title="Floating IPs"
      load={async (signal) => {
        const [ips, ports, servers] = await Promise.all([listFloatingIps(signal), listPorts(signal), get<{ servers: { id: string; name: string }[] }>('compute', '/servers?limit=1000', signal)])
        const names = new Map(servers.servers.map((s) => [s.id, s.name]))
        return ips.map((ip) => {
          const device = ports.find((p) => p.id === ip.port_id)?.device_id
          return { ...ip, server: device && names.has(device) ? { id: device, name: names.get(device)! } : undefined }
        })
      }}
      rowKey={(ip) => ip.id}
      empty="No floating IPs. Allocate one from an external network."
      create={{
        label: 'Allocate floating IP',
        fields: async () => [{ name: 'network', label: 'External network', type: 'select', required: true, options: (await listNetworks()).filter((n) => n['router:external']).map((n) => ({ value: n.id, label: n.name })) }],
        submit: (v) => post('network', '/floatingips', { floatingip: { floating_network_id: v.network } }),
      }}
      columns={[
        { label: 'Address', value: (ip) => ip.floating_ip_address },
        { label: 'Fixed address', value: (ip) => ip.fixed_ip_address ?? '' },
        { label: 'Server', value: (ip) => (ip.server ? <a href={href(`/servers/${ip.server.id}`)}>{ip.server.name}</a> : '') },
        { label: 'Status', value: (ip) => <Status value={ip.status} /> },
      ]}
      actions={(ip, reload) => (
        <>
          {ip.port_id ? (
            <ActionButton label="Disassociate" run={() => put('network', `/floatingips/${ip.id}`, { floatingip: { port_id: null } })} onDone={reload} />
          ) : (
            <FormAction
              label="Associate"
              fields={async () => {
                const [ports, servers] = await Promise.all([listPorts(), get<{ servers: { id: string; name: string }[] }>('compute', '/servers?limit=1000')])
                const names = new Map(servers.servers.map((s) => [s.id, s.name]))
                return [{ name: 'port', label: 'Server interface', type: 'select', required: true, options: ports.filter((p) => names.has(p.device_id)).map((p) => ({ value: p.id, label: `${names.get(p.device_id)}: ${p.fixed_ips.map((f) => f.ip_address).join(', ')}` })) }]
              }}
              submit={(v) => put('network', `/floatingips/${ip.id}`, { floatingip: { port_id: v.port } })}
              onDone={reload}
            />
          )}
          <ActionButton label="Release" danger confirm={`Release ${ip.floating_ip_address}?`} run={() => del('network', `/floatingips/${ip.id}`)} onDone={reload} />
        </>
      )}
    />
  )
}

function ruleText(r: SecurityGroupRule): string {
  const ports = r.port_range_min === null ? 'any port' : r.port_range_min === r.port_range_max ? `port ${r.port_range_min}` : `ports ${r.port_range_min}-${r.port_range_max}`
  const remote = r.remote_group_id ? 'members of a group' : (r.remote_ip_prefix ?? 'anywhere')
  return `${r.protocol ?? 'any protocol'}, ${ports}, ${r.direction === 'ingress' ? 'from' : 'to'} ${remote}`
}

function Rules({ group, reload }: { group: SecurityGroup; reload: () => void }) {
  return (
    <Table
      caption={`Rules of ${group.name}`}
      rows={group.security_group_rules}
      rowKey={(r) => r.id}
      empty="No rules: nothing is allowed."
      columns={[
        { label: 'Direction', value: (r) => r.direction },
        { label: 'Ether type', value: (r) => r.ethertype },
        { label: 'Rule', value: ruleText },
      ]}
      actions={(r) => <ActionButton label="Delete rule" danger run={() => del('network', `/security-group-rules/${r.id}`)} onDone={reload} />}
    />
  )
}

const RULE_FIELDS: Field[] = [
  {
    name: 'direction',
    label: 'Direction',
    type: 'select',
    required: true,
    options: [
      { value: 'ingress', label: 'Ingress (to the server)' },
      { value: 'egress', label: 'Egress (from the server)' },
    ],
  },
  { name: 'protocol', label: 'Protocol', type: 'select', required: true, options: ['tcp', 'udp', 'icmp', 'any'].map((p) => ({ value: p, label: p })) },
  { name: 'ports', label: 'Port or range', placeholder: '22 or 8000-8080', when: (v) => v.protocol === 'tcp' || v.protocol === 'udp', help: 'Empty: every port.' },
  { name: 'cidr', label: 'Remote network (CIDR)', placeholder: '0.0.0.0/0', help: 'Empty: anywhere.' },
]

function ruleBody(groupId: string, v: Record<string, FieldValue>) {
  const [min, max] = ((v.ports as string) || '').split('-').map((p) => p.trim())
  const cidr = (v.cidr as string) || undefined
  return {
    security_group_rule: {
      security_group_id: groupId,
      direction: v.direction,
      ethertype: cidr?.includes(':') ? 'IPv6' : 'IPv4',
      protocol: v.protocol === 'any' ? null : v.protocol,
      ...(min ? { port_range_min: Number(min), port_range_max: Number(max || min) } : {}),
      ...(cidr ? { remote_ip_prefix: cidr } : {}),
    },
  }
}

export function SecurityGroupsPage() {
  const [shown, setShown] = useState<string>()
  return (
    <ResourceList<SecurityGroup>
      title="Security groups"
      load={listSecurityGroups}
      rowKey={(g) => g.id}
      empty="No security groups."
      create={{ label: 'Create security group', fields: () => [{ name: 'name', label: 'Name', required: true }, { name: 'description', label: 'Description' }], submit: (v) => post('network', '/security-groups', { security_group: { name: v.name, description: v.description || '' } }) }}
      columns={[
        { label: 'Name', value: (g) => g.name },
        { label: 'Description', value: (g) => g.description },
        { label: 'Rules', value: (g) => (shown === g.id ? <Rules group={g} reload={() => setShown(g.id)} /> : `${g.security_group_rules.length} rules`) },
      ]}
      actions={(g, reload) => (
        <>
          <button type="button" aria-expanded={shown === g.id} onClick={() => setShown(shown === g.id ? undefined : g.id)}>
            {shown === g.id ? 'Hide rules' : 'Show rules'}
          </button>
          <FormAction label="Add rule" fields={() => RULE_FIELDS} submit={(v) => post('network', '/security-group-rules', ruleBody(g.id, v))} onDone={reload} />
          <ActionButton label="Delete" danger confirm={`Delete security group ${g.name}?`} run={() => del('network', `/security-groups/${g.id}`)} onDone={reload} />
        </>
      )}
    />
  )
}
