/**
 * The server representation: every wire key of a server at every microversion and view, with who may see it
 * (docs/compute.md, "Servers" and "Representations"). Views: `summary` (GET /servers), `detail` (GET /servers/detail), `show` (GET /servers/{id},
 * and PUT from 2.75), `reduced` (PUT below 2.75), `rebuild` (rebuild below 2.75), `rebuildFull` (rebuild from 2.75).
 */
import { Type as T } from '@sinclair/typebox'
import type { FieldTable } from './fields.js'
import { isoMicros, isoSeconds } from './time.js'
import { J } from './json-types.js'

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

const EMBEDDED_FLAVOR = T.Object({ vcpus: J.int, ram: J.int, disk: J.int, ephemeral: J.int, swap: J.int, original_name: J.str, extra_specs: J.strMap })

export const serverFields: FieldTable<ServerModel, ServerView> = {
  id: { type: J.str, views: EVERY, read: (s) => s.id },
  name: { type: J.str, views: EVERY, read: (s) => s.name },
  status: { type: J.str, views: ALL, read: (s) => s.status },
  tenant_id: { type: J.str, views: ALL, read: (s) => s.tenantId },
  user_id: { type: J.str, views: ALL, read: (s) => s.userId },
  created: { type: J.str, views: ALL, read: (s) => isoSeconds(s.created) },
  updated: { type: J.str, views: ALL, read: (s) => isoSeconds(s.updated) },
  links: { type: J.links, views: EVERY, read: (s) => s.links },
  hostId: { type: J.str, views: ALL, read: (s) => s.hostId },
  image: { type: T.Union([T.Literal(''), T.Object({ id: J.str, links: J.links })]), views: ALL, read: (s) => s.image ?? '' },
  flavor: [
    { type: T.Object({ id: J.str, links: J.links }), views: ALL, until: '2.47', read: (s) => ({ id: s.flavor.id, links: s.flavorLinks }) },
    { type: EMBEDDED_FLAVOR, views: ALL, since: '2.47', read: embeddedFlavor },
  ],
  addresses: [
    { type: T.Record(J.str, T.Array(T.Object({ version: J.int, addr: J.str, 'OS-EXT-IPS:type': J.str, 'OS-EXT-IPS-MAC:mac_addr': J.str }))), views: FULL, read: fullAddresses },
    { type: T.Record(J.str, T.Array(T.Object({ version: J.int, addr: J.str }))), views: ['reduced', 'rebuild'], read: plainAddresses },
  ],
  metadata: { type: J.strMap, views: ALL, read: (s) => s.metadata },
  accessIPv4: { type: J.str, views: ALL, read: (s) => s.accessIPv4 },
  accessIPv6: { type: J.str, views: ALL, read: (s) => s.accessIPv6 },
  'OS-DCF:diskConfig': { type: J.str, views: ALL, read: (s) => s.diskConfig },
  progress: { type: J.int, views: ALL, read: (s) => s.progress, omit: (s) => !PROGRESS_STATUSES.has(s.status) },
  fault: {
    type: T.Object({ code: J.int, created: J.str, message: J.str, details: T.Optional(J.str) }),
    views: ALL,
    read: (s) => ({ code: s.fault!.code, created: isoSeconds(s.fault!.created), message: s.fault!.message, ...(s.fault!.details !== undefined ? { details: s.fault!.details } : {}) }),
    omit: (s) => !s.fault || (s.status !== 'ERROR' && s.status !== 'DELETED'),
  },
  config_drive: { type: J.str, views: FULL, read: (s) => (s.configDrive ? 'True' : '') },
  key_name: [
    { type: J.nstr, views: FULL, read: (s) => s.keyName },
    { type: J.nstr, views: ['rebuild'], since: '2.54', read: (s) => s.keyName },
  ],
  'OS-EXT-AZ:availability_zone': { type: J.str, views: FULL, read: (s) => s.availabilityZone },
  'OS-EXT-STS:vm_state': { type: J.str, views: FULL, read: (s) => s.vmState },
  'OS-EXT-STS:task_state': { type: J.nstr, views: FULL, read: (s) => s.taskState },
  'OS-EXT-STS:power_state': { type: J.int, views: FULL, read: (s) => s.powerState },
  'OS-SRV-USG:launched_at': { type: J.nstr, views: FULL, read: (s) => isoMicros(s.launchedAt) },
  'OS-SRV-USG:terminated_at': { type: J.nstr, views: FULL, read: (s) => isoMicros(s.terminatedAt) },
  'os-extended-volumes:volumes_attached': [
    { type: T.Array(T.Object({ id: J.str })), views: FULL, until: '2.3', read: (s) => s.volumesAttached.map((v) => ({ id: v.id })) },
    { type: T.Array(T.Object({ id: J.str, delete_on_termination: J.bool })), views: FULL, since: '2.3', read: (s) => s.volumesAttached.map((v) => ({ id: v.id, delete_on_termination: v.deleteOnTermination })) },
  ],
  security_groups: { type: T.Array(T.Object({ name: J.str })), views: FULL, read: (s) => s.securityGroups.map((name) => ({ name })), omit: (s) => s.securityGroups.length === 0 },
  'OS-EXT-SRV-ATTR:host': { type: J.nstr, views: FULL, admin: true, read: (s) => s.host },
  'OS-EXT-SRV-ATTR:instance_name': { type: J.str, views: FULL, admin: true, read: (s) => s.instanceName },
  'OS-EXT-SRV-ATTR:hypervisor_hostname': { type: J.nstr, views: FULL, admin: true, read: (s) => s.node },
  'OS-EXT-SRV-ATTR:hostname': [
    { type: J.nstr, views: FULL, since: '2.3', until: '2.90', admin: true, read: (s) => s.hostname },
    { type: J.nstr, views: FULL, since: '2.90', read: (s) => s.hostname },
  ],
  'OS-EXT-SRV-ATTR:kernel_id': { type: J.str, views: FULL, since: '2.3', admin: true, read: (s) => s.kernelId ?? '' },
  'OS-EXT-SRV-ATTR:ramdisk_id': { type: J.str, views: FULL, since: '2.3', admin: true, read: (s) => s.ramdiskId ?? '' },
  'OS-EXT-SRV-ATTR:launch_index': { type: J.int, views: FULL, since: '2.3', admin: true, read: (s) => s.launchIndex },
  'OS-EXT-SRV-ATTR:reservation_id': { type: J.str, views: FULL, since: '2.3', admin: true, read: (s) => s.reservationId },
  'OS-EXT-SRV-ATTR:root_device_name': { type: J.nstr, views: FULL, since: '2.3', admin: true, read: (s) => s.rootDeviceName },
  'OS-EXT-SRV-ATTR:user_data': { type: J.nstr, views: ['detail', 'show'], since: '2.3', admin: true, read: (s) => s.userData },
  locked: { type: J.bool, views: ALL, since: '2.9', read: (s) => s.locked },
  host_status: { type: J.str, views: FULL, since: '2.16', admin: true, read: (s) => s.hostStatus },
  description: { type: J.nstr, views: ALL, since: '2.19', read: (s) => s.description },
  tags: { type: T.Array(J.str), views: ALL, since: '2.26', read: (s) => s.tags },
  trusted_image_certificates: { type: T.Union([T.Array(J.str), T.Null()]), views: ALL, since: '2.63', read: (s) => s.trustedImageCertificates },
  server_groups: { type: T.Array(J.str), views: ['show', 'rebuildFull', 'reduced', 'rebuild'], since: '2.71', read: (s) => s.serverGroups },
  locked_reason: { type: J.nstr, views: ALL, since: '2.73', read: (s) => s.lockedReason },
  pinned_availability_zone: { type: J.nstr, views: FULL, since: '2.96', read: (s) => s.pinnedAvailabilityZone },
  adminPass: { type: J.str, views: ['rebuild', 'rebuildFull'], read: (s) => s.adminPass, omit: (s) => s.adminPass === undefined },
  user_data: { type: J.nstr, views: ['rebuild', 'rebuildFull'], since: '2.57', read: (s) => s.userData },
}
