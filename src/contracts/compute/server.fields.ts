/**
 * The server representation: every wire key of a server at every microversion and view, with who may see it
 * (compute-api.md §2). Views: `summary` (GET /servers), `detail` (GET /servers/detail), `show` (GET /servers/{id},
 * and PUT from 2.75), `reduced` (PUT below 2.75), `rebuild` (rebuild below 2.75), `rebuildFull` (rebuild from 2.75).
 */
import type { FieldTable } from './fields.js'
import { isoMicros, isoSeconds } from './time.js'

export type ServerView = 'summary' | 'detail' | 'show' | 'reduced' | 'rebuild' | 'rebuildFull'

export interface Link {
  rel: string
  href: string
  type?: string
}

export interface AddressItem {
  version: 4 | 6
  addr: string
  type: 'fixed' | 'floating'
  mac: string
}

export interface FaultModel {
  code: number
  created: number
  message: string
  /** Undefined when the caller may not see it (code 500 and not admin). */
  details?: string
}

export interface FlavorModel {
  id: string
  name: string
  vcpus: number
  ram: number
  disk: number
  ephemeral: number
  swap: number
  extraSpecs: Record<string, string>
}

/** Everything the table reads, prepared once per server and request (server-model.ts builds it). */
export interface ServerModel {
  id: string
  name: string
  status: string
  tenantId: string
  userId: string
  created: number
  updated: number
  links: Link[]
  hostId: string
  image: { id: string; links: Link[] } | null
  flavor: FlavorModel
  flavorLinks: Link[]
  addresses: Record<string, AddressItem[]>
  metadata: Record<string, string>
  accessIPv4: string
  accessIPv6: string
  diskConfig: string
  configDrive: boolean
  keyName: string | null
  availabilityZone: string
  vmState: string
  taskState: string | null
  powerState: number
  launchedAt: number | null
  terminatedAt: number | null
  volumesAttached: { id: string; deleteOnTermination: boolean }[]
  securityGroups: string[]
  progress: number
  fault: FaultModel | null
  host: string | null
  instanceName: string
  node: string | null
  hostname: string | null
  kernelId: string | null
  ramdiskId: string | null
  launchIndex: number
  reservationId: string
  rootDeviceName: string | null
  userData: string | null
  locked: boolean
  lockedReason: string | null
  hostStatus: string
  description: string | null
  tags: string[]
  trustedImageCertificates: string[] | null
  serverGroups: string[]
  pinnedAvailabilityZone: string | null
  /** Set only in create/rebuild/rescue answers. */
  adminPass?: string
}

const PROGRESS_STATUSES = new Set(['ACTIVE', 'BUILD', 'REBUILD', 'RESIZE', 'VERIFY_RESIZE', 'MIGRATING'])

/** Views with the complete representation. */
const FULL = ['detail', 'show', 'rebuildFull'] as const
/** Views with the complete representation or the reduced PUT/rebuild one. */
const ALL = ['detail', 'show', 'rebuildFull', 'reduced', 'rebuild'] as const
const EVERY = ['summary', ...ALL] as const

const fullAddresses = (s: ServerModel) =>
  Object.fromEntries(
    Object.entries(s.addresses).map(([label, items]) => [
      label,
      items.map((a) => ({ version: a.version, addr: a.addr, 'OS-EXT-IPS:type': a.type, 'OS-EXT-IPS-MAC:mac_addr': a.mac })),
    ]),
  )
const plainAddresses = (s: ServerModel) =>
  Object.fromEntries(Object.entries(s.addresses).map(([label, items]) => [label, items.map((a) => ({ version: a.version, addr: a.addr }))]))

const embeddedFlavor = (s: ServerModel) => ({
  vcpus: s.flavor.vcpus,
  ram: s.flavor.ram,
  disk: s.flavor.disk,
  ephemeral: s.flavor.ephemeral,
  swap: s.flavor.swap,
  original_name: s.flavor.name,
  extra_specs: s.flavor.extraSpecs,
})

export const serverFields: FieldTable<ServerModel, ServerView> = {
  id: { views: EVERY, read: (s) => s.id },
  name: { views: EVERY, read: (s) => s.name },
  status: { views: ALL, read: (s) => s.status },
  tenant_id: { views: ALL, read: (s) => s.tenantId },
  user_id: { views: ALL, read: (s) => s.userId },
  created: { views: ALL, read: (s) => isoSeconds(s.created) },
  updated: { views: ALL, read: (s) => isoSeconds(s.updated) },
  links: { views: EVERY, read: (s) => s.links },
  hostId: { views: ALL, read: (s) => s.hostId },
  image: { views: ALL, read: (s) => s.image ?? '' },
  flavor: [
    { views: ALL, until: '2.47', read: (s) => ({ id: s.flavor.id, links: s.flavorLinks }) },
    { views: ALL, since: '2.47', read: embeddedFlavor },
  ],
  addresses: [
    { views: FULL, read: fullAddresses },
    { views: ['reduced', 'rebuild'], read: plainAddresses },
  ],
  metadata: { views: ALL, read: (s) => s.metadata },
  accessIPv4: { views: ALL, read: (s) => s.accessIPv4 },
  accessIPv6: { views: ALL, read: (s) => s.accessIPv6 },
  'OS-DCF:diskConfig': { views: ALL, read: (s) => s.diskConfig },
  progress: { views: ALL, read: (s) => s.progress, omit: (s) => !PROGRESS_STATUSES.has(s.status) },
  fault: {
    views: ALL,
    read: (s) => ({ code: s.fault!.code, created: isoSeconds(s.fault!.created), message: s.fault!.message, ...(s.fault!.details !== undefined ? { details: s.fault!.details } : {}) }),
    omit: (s) => !s.fault || (s.status !== 'ERROR' && s.status !== 'DELETED'),
  },
  config_drive: { views: FULL, read: (s) => (s.configDrive ? 'True' : '') },
  key_name: [
    { views: FULL, read: (s) => s.keyName },
    { views: ['rebuild'], since: '2.54', read: (s) => s.keyName },
  ],
  'OS-EXT-AZ:availability_zone': { views: FULL, read: (s) => s.availabilityZone },
  'OS-EXT-STS:vm_state': { views: FULL, read: (s) => s.vmState },
  'OS-EXT-STS:task_state': { views: FULL, read: (s) => s.taskState },
  'OS-EXT-STS:power_state': { views: FULL, read: (s) => s.powerState },
  'OS-SRV-USG:launched_at': { views: FULL, read: (s) => isoMicros(s.launchedAt) },
  'OS-SRV-USG:terminated_at': { views: FULL, read: (s) => isoMicros(s.terminatedAt) },
  'os-extended-volumes:volumes_attached': [
    { views: FULL, until: '2.3', read: (s) => s.volumesAttached.map((v) => ({ id: v.id })) },
    { views: FULL, since: '2.3', read: (s) => s.volumesAttached.map((v) => ({ id: v.id, delete_on_termination: v.deleteOnTermination })) },
  ],
  security_groups: { views: FULL, read: (s) => s.securityGroups.map((name) => ({ name })), omit: (s) => s.securityGroups.length === 0 },
  'OS-EXT-SRV-ATTR:host': { views: FULL, admin: true, read: (s) => s.host },
  'OS-EXT-SRV-ATTR:instance_name': { views: FULL, admin: true, read: (s) => s.instanceName },
  'OS-EXT-SRV-ATTR:hypervisor_hostname': { views: FULL, admin: true, read: (s) => s.node },
  'OS-EXT-SRV-ATTR:hostname': [
    { views: FULL, since: '2.3', until: '2.90', admin: true, read: (s) => s.hostname },
    { views: FULL, since: '2.90', read: (s) => s.hostname },
  ],
  'OS-EXT-SRV-ATTR:kernel_id': { views: FULL, since: '2.3', admin: true, read: (s) => s.kernelId ?? '' },
  'OS-EXT-SRV-ATTR:ramdisk_id': { views: FULL, since: '2.3', admin: true, read: (s) => s.ramdiskId ?? '' },
  'OS-EXT-SRV-ATTR:launch_index': { views: FULL, since: '2.3', admin: true, read: (s) => s.launchIndex },
  'OS-EXT-SRV-ATTR:reservation_id': { views: FULL, since: '2.3', admin: true, read: (s) => s.reservationId },
  'OS-EXT-SRV-ATTR:root_device_name': { views: FULL, since: '2.3', admin: true, read: (s) => s.rootDeviceName },
  'OS-EXT-SRV-ATTR:user_data': { views: ['detail', 'show'], since: '2.3', admin: true, read: (s) => s.userData },
  locked: { views: ALL, since: '2.9', read: (s) => s.locked },
  host_status: { views: FULL, since: '2.16', admin: true, read: (s) => s.hostStatus },
  description: { views: ALL, since: '2.19', read: (s) => s.description },
  tags: { views: ALL, since: '2.26', read: (s) => s.tags },
  trusted_image_certificates: { views: ALL, since: '2.63', read: (s) => s.trustedImageCertificates },
  server_groups: { views: ['show', 'rebuildFull', 'reduced', 'rebuild'], since: '2.71', read: (s) => s.serverGroups },
  locked_reason: { views: ALL, since: '2.73', read: (s) => s.lockedReason },
  pinned_availability_zone: { views: FULL, since: '2.96', read: (s) => s.pinnedAvailabilityZone },
  adminPass: { views: ['rebuild', 'rebuildFull'], read: (s) => s.adminPass, omit: (s) => s.adminPass === undefined },
  user_data: { views: ['rebuild', 'rebuildFull'], since: '2.57', read: (s) => s.userData },
}
