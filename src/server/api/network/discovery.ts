/**
 * The version and extension documents clients read before anything else: keystoneauth's discovery of
 * `GET {base}/network/` (the v2.0 link must be absolute and under our prefix), the v2.0 resource index, and
 * the extension list openstackclient consults (`find_extension`) to decide which attributes it may send.
 * Only extensions whose behaviour this service implements are listed.
 */
const UPDATED = '2023-01-01T00:00:00-00:00'

export const EXTENSIONS: { alias: string; name: string; description: string }[] = [
  { alias: 'address-scope', name: 'Address scope', description: 'Address scopes extension.' },
  { alias: 'agent', name: 'agent', description: 'The agent management extension.' },
  { alias: 'allowed-address-pairs', name: 'Allowed Address Pairs', description: 'Provides allowed address pairs' },
  { alias: 'binding', name: 'Port Binding', description: 'Expose port bindings of a virtual port to external application' },
  { alias: 'external-net', name: 'Neutron external network', description: 'Adds external network attribute to network resource.' },
  { alias: 'extraroute', name: 'Neutron Extra Route', description: 'Extra routes configuration for L3 router' },
  { alias: 'fields', name: 'Field selection', description: 'Restrict the attributes returned with fields=' },
  { alias: 'ip-substring-filtering', name: 'IP address substring filtering', description: 'Provides IP address substring filtering when listing ports' },
  { alias: 'net-mtu', name: 'Network MTU', description: 'Provides MTU attribute for a network resource.' },
  { alias: 'pagination', name: 'Pagination support', description: 'Extension that indicates that pagination is enabled.' },
  { alias: 'port-security', name: 'Port Security', description: 'Provides port security' },
  { alias: 'project-id', name: 'project_id field enabled', description: 'Extension that indicates that project_id field is enabled.' },
  { alias: 'provider', name: 'Provider Network', description: 'Expose mapping of virtual networks to physical networks' },
  { alias: 'quotas', name: 'Quota management support', description: 'Expose functions for quotas management per project' },
  { alias: 'quota_details', name: 'Quota details management support', description: 'Expose functions for quotas usage statistics per project' },
  { alias: 'router', name: 'Neutron L3 Router', description: 'Router abstraction for basic L3 forwarding between L2 Neutron networks and access to external networks via a NAT gateway.' },
  { alias: 'ext-gw-mode', name: 'Neutron L3 Configurable external gateway mode', description: 'Extension of the router abstraction for specifying whether SNAT should occur on the external gateway' },
  { alias: 'security-group', name: 'security-group', description: 'The security groups extension.' },
  { alias: 'subnet_allocation', name: 'Subnet Allocation', description: 'Enables allocation of subnets from a subnet pool' },
  { alias: 'default-subnetpools', name: 'Default Subnetpools', description: 'Provides ability to mark and use a subnetpool as the default.' },
  { alias: 'sorting', name: 'Sorting support', description: 'Extension that indicates that sorting is enabled.' },
  { alias: 'standard-attr-description', name: 'standard-attr-description', description: 'Extension to add descriptions to standard attributes' },
  { alias: 'standard-attr-revisions', name: 'Resource revision numbers', description: 'This extension will display the revision number of neutron resources.' },
  { alias: 'standard-attr-timestamp', name: 'Resource timestamps', description: 'Adds created_at and updated_at fields to all Neutron resources that have Neutron standard attributes.' },
  { alias: 'standard-attr-tag', name: 'Tag support for resources with standard attribute: subnet, trunk, network_segment_range, router, network, policy, subnetpool, port, security_group, floatingip', description: 'Enables to set tag on resources with standard attribute.' },
  { alias: 'tag-ports-during-bulk-creation', name: 'Tag Ports During Bulk Creation', description: 'Allow to tag ports during bulk creation' },
  { alias: 'empty-string-filtering', name: 'Empty String Filtering Extension', description: 'Allow filtering by attributes with empty string value' },
]

export const extensionView = (e: (typeof EXTENSIONS)[number]) => ({ ...e, updated: UPDATED, links: [] })

export const RESOURCES = [
  ['network', 'networks'],
  ['subnet', 'subnets'],
  ['subnetpool', 'subnetpools'],
  ['address_scope', 'address-scopes'],
  ['port', 'ports'],
  ['security_group', 'security-groups'],
  ['security_group_rule', 'security-group-rules'],
  ['router', 'routers'],
  ['floatingip', 'floatingips'],
  ['quota', 'quotas'],
  ['agent', 'agents'],
] as const

export function versionsDocument(networkUrl: string) {
  return { versions: [{ id: 'v2.0', status: 'CURRENT', links: [{ href: `${networkUrl}/v2.0/`, rel: 'self' }] }] }
}

export function resourcesDocument(networkUrl: string) {
  return {
    resources: RESOURCES.map(([name, collection]) => ({
      name,
      collection: collection.replaceAll('-', '_'),
      links: [{ href: `${networkUrl}/v2.0/${collection}`, rel: 'self' }],
    })),
  }
}
