/** Shapes of the API resources the web console shows (only the fields it reads), and the lists it loads often. */
import { get, query } from './http'

export interface Server {
  id: string
  name: string
  status: string
  created: string
  updated: string
  'OS-EXT-STS:task_state': string | null
  'OS-EXT-STS:vm_state': string
  'OS-EXT-STS:power_state': number
  'OS-EXT-AZ:availability_zone'?: string
  'OS-EXT-SRV-ATTR:host'?: string | null
  addresses: Record<string, { addr: string; version: number; 'OS-EXT-IPS:type': string; 'OS-EXT-IPS-MAC:mac_addr'?: string }[]>
  flavor: { original_name?: string; vcpus?: number; ram?: number; disk?: number; id?: string }
  image: { id: string } | ''
  key_name: string | null
  locked: boolean
  locked_reason?: string | null
  security_groups?: { name: string }[]
  'os-extended-volumes:volumes_attached': { id: string }[]
  fault?: { code: number; message: string }
  metadata: Record<string, string>
  tenant_id: string
  user_id: string
  description?: string | null
  hostId?: string
}

export interface Flavor {
  id: string
  name: string
  vcpus: number
  ram: number
  disk: number
  'os-flavor-access:is_public': boolean
}
export interface Image {
  id: string
  name: string
  status: string
  size: number | null
  disk_format: string | null
  container_format: string | null
  visibility: string
  min_disk: number
  owner: string
  created_at: string
  protected: boolean
}
export interface Volume {
  id: string
  name: string
  status: string
  size: number
  bootable: string
  attachments: { server_id: string; device: string }[]
  created_at: string
  volume_type: string
}
export interface Network {
  id: string
  name: string
  status: string
  subnets: string[]
  shared: boolean
  'router:external': boolean
  project_id: string
  admin_state_up: boolean
}
export interface Subnet {
  id: string
  name: string
  network_id: string
  cidr: string
  ip_version: number
  gateway_ip: string | null
  enable_dhcp: boolean
}
export interface Port {
  id: string
  name: string
  network_id: string
  device_id: string
  device_owner: string
  fixed_ips: { subnet_id: string; ip_address: string }[]
  status: string
}
export interface Router {
  id: string
  name: string
  status: string
  external_gateway_info: { network_id: string; external_fixed_ips?: { ip_address: string }[] } | null
}
export interface FloatingIp {
  id: string
  floating_ip_address: string
  fixed_ip_address: string | null
  port_id: string | null
  floating_network_id: string
  status: string
}
export interface SecurityGroupRule {
  id: string
  direction: string
  ethertype: string
  protocol: string | null
  port_range_min: number | null
  port_range_max: number | null
  remote_ip_prefix: string | null
  remote_group_id: string | null
}
export interface SecurityGroup {
  id: string
  name: string
  description: string
  security_group_rules: SecurityGroupRule[]
}
export interface Keypair {
  name: string
  fingerprint: string
  type?: string
  public_key: string
}

export const listFlavors = async (signal?: AbortSignal) => (await get<{ flavors: Flavor[] }>('compute', '/flavors/detail', signal)).flavors
export const listImages = async (signal?: AbortSignal) => (await get<{ images: Image[] }>('image', `/images${query({ limit: 1000, sort: 'name:asc' })}`, signal)).images
export const listVolumes = async (signal?: AbortSignal) => (await get<{ volumes: Volume[] }>('volume', '/volumes/detail?limit=1000', signal)).volumes
export const listNetworks = async (signal?: AbortSignal) => (await get<{ networks: Network[] }>('network', '/networks', signal)).networks
export const listSubnets = async (signal?: AbortSignal) => (await get<{ subnets: Subnet[] }>('network', '/subnets', signal)).subnets
export const listPorts = async (signal?: AbortSignal) => (await get<{ ports: Port[] }>('network', '/ports', signal)).ports
export const listRouters = async (signal?: AbortSignal) => (await get<{ routers: Router[] }>('network', '/routers', signal)).routers
export const listFloatingIps = async (signal?: AbortSignal) => (await get<{ floatingips: FloatingIp[] }>('network', '/floatingips', signal)).floatingips
export const listSecurityGroups = async (signal?: AbortSignal) => (await get<{ security_groups: SecurityGroup[] }>('network', '/security-groups', signal)).security_groups
export const listKeypairs = async (signal?: AbortSignal) => (await get<{ keypairs: { keypair: Keypair }[] }>('compute', '/os-keypairs', signal)).keypairs.map((k) => k.keypair)

/** Statuses after which nothing changes by itself (Horizon's final statuses). */
const FINAL = new Set(['ACTIVE', 'SHUTOFF', 'SUSPENDED', 'PAUSED', 'RESCUE', 'SHELVED', 'SHELVED_OFFLOADED', 'ERROR', 'DELETED', 'SOFT_DELETED', 'VERIFY_RESIZE'])
export function serverBusy(server: Server): boolean {
  return !FINAL.has(server.status) || Boolean(server['OS-EXT-STS:task_state'])
}

export function serverAddresses(server: Server): string {
  return Object.values(server.addresses ?? {})
    .flat()
    .map((a) => a.addr)
    .join(', ')
}
