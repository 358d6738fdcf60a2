/**
 * What a guest is told about itself, in OpenStack's layouts (docs/qemu.md, "Images and disks"; Nova's nova/api/metadata/base.py
 * and nova/virt/netutils.py): `meta_data.json`, `network_data.json`, `vendor_data*.json`, `user_data`, and the EC2
 * tree. One module builds them for both consumers: the config drive (the QEMU driver writes these files into a
 * `config-2` ISO) and the metadata service at 169.254.169.254 (which answers the same paths, without the admin
 * password, which Nova puts on the config drive only).
 *
 * Pure functions of `InstanceFacts` (load.ts reads those from the store), so both consumers agree byte for byte
 * except where a document is random by definition (`random_seed`).
 */
import { randomBytes } from 'node:crypto'
import { tapName } from '../../contracts/network/names.js'

export interface InstanceNic {
  portId: string
  macAddress: string
  networkId: string
  mtu: number | null
  /** Legacy VIF type for network_data.json links (`bridge` for pcc's Linux bridges). */
  vifType: string
  fixedIps: {
    address: string
    version: 4 | 6
    cidr: string
    gateway: string | null
    dhcp: boolean
    dns: string[]
    routes: { destination: string; nexthop: string }[]
  }[]
  floatingIps: string[]
}

export interface InstanceFacts {
  uuid: string
  name: string
  /** The instance hostname without a domain. */
  hostname: string
  /** `instance-%08x`, whose number gives the EC2 ids. */
  displayId: number
  projectId: string
  availabilityZone: string | null
  launchIndex: number
  reservationId: string
  flavorName: string
  imageId: string | null
  metadata: Record<string, string>
  key: { name: string; type: string; publicKey: string } | null
  /** Base64 as the API took it; decoded into the user_data file. */
  userData: string | null
  securityGroups: string[]
  nics: InstanceNic[]
}

/** Nova's `[api] dhcp_domain` default. */
export const DHCP_DOMAIN = 'novalocal'

/** OpenStack metadata versions Nova serves, oldest first, with what each one added to its documents. */
export const OPENSTACK_VERSIONS = ['2012-08-10', '2013-04-04', '2013-10-17', '2015-10-15', '2016-06-30', '2016-10-06', '2017-02-22', '2018-08-27', '2020-10-14'] as const
type OpenStackVersion = (typeof OPENSTACK_VERSIONS)[number] | 'latest'

const SINCE = {
  randomSeed: '2013-04-04',
  vendorData: '2013-10-17',
  projectIdAndNetworkData: '2015-10-15',
  devices: '2016-06-30',
  vendorData2: '2016-10-06',
  dedicatedCpus: '2020-10-14',
} as const

const has = (version: OpenStackVersion, since: string) => version === 'latest' || version >= since

/** EC2 versions on the config drive: Nova's `config_drive_skip_versions` default leaves 2009-04-04 (and latest). */
export const EC2_VERSIONS = ['2009-04-04', 'latest'] as const

export function fqdn(facts: InstanceFacts): string {
  return `${facts.hostname}.${DHCP_DOMAIN}`
}

/** `meta_data.json` of one version; `adminPass` only for the config drive. */
export function metaData(facts: InstanceFacts, version: OpenStackVersion, extra: { adminPass?: string; randomSeed?: string } = {}): Record<string, unknown> {
  const md: Record<string, unknown> = {
    uuid: facts.uuid,
    meta: facts.metadata,
    ...(facts.key && {
      public_keys: { [facts.key.name]: facts.key.publicKey },
      keys: [{ name: facts.key.name, type: facts.key.type, data: facts.key.publicKey }],
    }),
    hostname: fqdn(facts),
    name: facts.name,
    launch_index: facts.launchIndex,
    availability_zone: facts.availabilityZone,
  }
  if (has(version, SINCE.randomSeed)) md.random_seed = extra.randomSeed ?? randomBytes(512).toString('base64')
  if (has(version, SINCE.projectIdAndNetworkData)) md.project_id = facts.projectId
  if (has(version, SINCE.devices)) md.devices = []
  if (has(version, SINCE.dedicatedCpus)) md.dedicated_cpus = []
  if (extra.adminPass !== undefined) md.admin_pass = extra.adminPass
  return md
}

function netmaskOf(cidr: string, version: 4 | 6): string {
  const prefix = Number(cidr.split('/')[1] ?? (version === 4 ? 32 : 128))
  if (version === 6) return `${prefix}`
  const bits = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0
  return [24, 16, 8, 0].map((s) => (bits >>> s) & 255).join('.')
}

/** `network_data.json` (Nova's get_network_metadata): one link per NIC, the first IPv4 and IPv6 subnet of each. */
export function networkData(facts: InstanceFacts): Record<string, unknown> {
  const links: Record<string, unknown>[] = []
  const networks: Record<string, unknown>[] = []
  const dns = new Set<string>()
  facts.nics.forEach((nic) => {
    const link = tapName(nic.portId)
    const anyDhcp = nic.fixedIps.some((ip) => ip.dhcp)
    links.push({ id: link, vif_id: nic.portId, type: nic.vifType, mtu: anyDhcp ? null : nic.mtu, ethernet_mac_address: nic.macAddress })
    for (const version of [4, 6] as const) {
      const ip = nic.fixedIps.find((f) => f.version === version)
      if (!ip) continue
      ip.dns.forEach((d) => dns.add(d))
      const id = `network${networks.length}`
      if (ip.dhcp) {
        networks.push({ id, type: version === 4 ? 'ipv4_dhcp' : 'ipv6_dhcp', link, network_id: nic.networkId })
        continue
      }
      const routes = [
        ...(ip.gateway ? [{ network: version === 4 ? '0.0.0.0' : '::', netmask: version === 4 ? '0.0.0.0' : '0', gateway: ip.gateway }] : []),
        ...ip.routes.map((r) => ({ network: r.destination.split('/')[0], netmask: netmaskOf(r.destination, version), gateway: r.nexthop })),
      ]
      networks.push({
        id, type: version === 4 ? 'ipv4' : 'ipv6', link, ip_address: ip.address, netmask: netmaskOf(ip.cidr, version), routes, network_id: nic.networkId,
        services: ip.dns.map((address) => ({ type: 'dns', address })),
      })
    }
  })
  return { links, networks, services: [...dns].map((address) => ({ type: 'dns', address })) }
}

/** The EC2 `meta-data` tree (as one object; the metadata service answers its keys as paths). */
export function ec2MetaData(facts: InstanceFacts): Record<string, unknown> {
  const v4 = facts.nics.flatMap((n) => n.fixedIps.filter((ip) => ip.version === 4).map((ip) => ip.address))
  const floating = facts.nics.flatMap((n) => n.floatingIps)
  const hex = facts.displayId.toString(16).padStart(8, '0')
  return {
    'ami-id': `ami-${hex}`,
    'ami-launch-index': facts.launchIndex,
    'ami-manifest-path': 'FIXME',
    'block-device-mapping': { ami: 'vda', root: '/dev/vda' },
    hostname: fqdn(facts),
    'instance-action': 'none',
    'instance-id': `i-${hex}`,
    'instance-type': facts.flavorName,
    'local-hostname': fqdn(facts),
    'local-ipv4': v4[0] ?? null,
    placement: { 'availability-zone': facts.availabilityZone },
    'public-hostname': fqdn(facts),
    'public-ipv4': floating[0] ?? '',
    ...(facts.key && { 'public-keys': { '0': { 'openssh-key': facts.key.publicKey } } }),
    'reservation-id': facts.reservationId,
    'security-groups': facts.securityGroups,
  }
}

/** The user data's bytes, or undefined when the server has none. */
export function userDataBytes(facts: InstanceFacts): Buffer | undefined {
  return facts.userData ? Buffer.from(facts.userData, 'base64') : undefined
}

/**
 * Every file of the metadata tree (path → content), as the config drive lays it out and the metadata service
 * answers it: `openstack/<version>/…` for every version and `latest`, `ec2/<version>/…`. `adminPass` is given
 * only for the config drive. One random seed for the whole tree, as one Nova request makes it.
 */
export function metadataFiles(facts: InstanceFacts, options: { adminPass?: string } = {}): Record<string, Buffer> {
  const files: Record<string, Buffer> = {}
  const json = (value: unknown) => Buffer.from(JSON.stringify(value))
  const randomSeed = randomBytes(512).toString('base64')
  const userData = userDataBytes(facts)
  const network = json(networkData(facts))
  for (const version of [...OPENSTACK_VERSIONS, 'latest'] as OpenStackVersion[]) {
    const dir = `openstack/${version}`
    files[`${dir}/meta_data.json`] = json(metaData(facts, version, { adminPass: options.adminPass, randomSeed }))
    if (userData) files[`${dir}/user_data`] = userData
    if (has(version, SINCE.vendorData)) files[`${dir}/vendor_data.json`] = json({})
    if (has(version, SINCE.projectIdAndNetworkData)) files[`${dir}/network_data.json`] = network
    if (has(version, SINCE.vendorData2)) files[`${dir}/vendor_data2.json`] = json({})
  }
  const ec2 = json(ec2MetaData(facts))
  for (const version of EC2_VERSIONS) {
    files[`ec2/${version}/meta-data.json`] = ec2
    if (userData) files[`ec2/${version}/user-data`] = userData
  }
  return files
}
