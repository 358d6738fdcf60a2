/**
 * Schemas of the compute answers that no field table shapes (sub-resources, host views, usage, limits…), for
 * the OpenAPI document; the field-table answers come from fieldsSchema() (schemas.ts).
 */
import { Type as T } from '@sinclair/typebox'
import { J } from './json-types.js'
import { fieldsSchema, plain, type JsonSchema } from './schemas.js'
import { absoluteLimitFields } from './quota.fields.js'
import { GATES } from './versions.js'

/** A Nova id: a uuid from 2.53 on for hosts and services, a small integer before. */
const hostId = T.Union([J.str, J.int])
const nint = T.Union([J.int, T.Null()])

/** An ingress rule as Nova shows it: the remote group's name and owner, or the CIDR (`{}` for the other). */
const securityGroupRule = T.Object({
  id: J.str,
  parent_group_id: J.str,
  ip_protocol: J.nstr,
  from_port: nint,
  to_port: nint,
  group: T.Object({ name: T.Optional(J.str), tenant_id: T.Optional(J.str) }, { additionalProperties: false }),
  ip_range: T.Object({ cidr: T.Optional(J.str) }, { additionalProperties: false }),
})
const securityGroup = T.Object({ id: J.str, name: J.str, description: J.str, tenant_id: J.str, rules: T.Array(securityGroupRule) })

/** A volume through Nova's proxy (camelCase): an unattached volume's attachments are `[{}]`. */
const proxyVolume = T.Object({
  id: J.str,
  status: J.str,
  size: J.int,
  availabilityZone: J.str,
  createdAt: J.str,
  attachments: T.Array(T.Object({ id: T.Optional(J.str), volumeId: T.Optional(J.str), serverId: T.Optional(J.str), device: T.Optional(J.str) }, { additionalProperties: false })),
  displayName: J.nstr,
  displayDescription: J.nstr,
  volumeType: J.nstr,
  snapshotId: J.nstr,
  metadata: J.strMap,
})
const proxySnapshot = T.Object({ id: J.str, volumeId: J.str, status: J.str, size: J.int, createdAt: J.str, displayName: J.nstr, displayDescription: J.nstr })

/** A network through Nova's proxy in nova-network's shape: what everyone sees, and for admins the rest. */
const ADMIN = { 'x-admin-only': true }
const proxyNetwork = T.Object({
  id: J.str,
  label: J.str,
  cidr: J.nstr,
  netmask: J.nstr,
  gateway: J.nstr,
  broadcast: T.Null(),
  dns1: J.nstr,
  dns2: J.nstr,
  cidr_v6: J.nstr,
  gateway_v6: J.nstr,
  netmask_v6: J.nstr,
  created_at: T.Optional(T.String(ADMIN)),
  updated_at: T.Optional(T.String(ADMIN)),
  project_id: T.Optional(T.String(ADMIN)),
  mtu: T.Optional(T.Integer(ADMIN)),
  enable_dhcp: T.Optional(T.Union([J.bool, T.Null()], ADMIN)),
  ...Object.fromEntries(['deleted', 'injected', 'multi_host', 'share_address'].map((key) => [key, T.Optional(T.Boolean(ADMIN))])),
  // nova-network's own settings, which have nothing like them here.
  ...Object.fromEntries(
    ['deleted_at', 'bridge', 'vlan', 'vpn_public_address', 'vpn_public_port', 'vpn_private_address', 'dhcp_start', 'host', 'bridge_interface', 'priority', 'rxtx_base', 'dhcp_server'].map((key) => [key, T.Optional(T.Null(ADMIN))]),
  ),
})

/** The proxy APIs Nova removed in 2.36 (images, volumes, networks…): their versions, and how their summaries end. */
export const PROXY = { versions: { until: GATES.noProxyApis }, summary: ` (2.1–2.35; 404 from ${GATES.noProxyApis})` } as const

export const A = {
  versionList: plain(T.Object({ versions: T.Array(T.Object({ id: J.str, status: J.str, version: J.str, min_version: J.str, updated: J.str, links: J.links })) })),
  version: plain(T.Object({ version: T.Object({ id: J.str, status: J.str, version: J.str, min_version: J.str, updated: J.str, links: J.links, 'media-types': T.Array(T.Object({ base: J.str, type: J.str })) }) })),
  metadata: plain(T.Object({ metadata: J.strMap })),
  meta: plain(T.Object({ meta: J.strMap })),
  tags: plain(T.Object({ tags: T.Array(J.str) })),
  /** `{ "<network label>": [{version, addr}] }` */
  addresses: plain(T.Object({ addresses: T.Record(J.str, T.Array(T.Object({ version: J.int, addr: J.str }))) })),
  networkAddresses: plain(T.Record(J.str, T.Array(T.Object({ version: J.int, addr: J.str })))),
  interface: plain(
    T.Object({
      net_id: J.str,
      port_id: J.str,
      mac_addr: J.str,
      port_state: J.str,
      fixed_ips: T.Array(T.Object({ subnet_id: J.str, ip_address: J.str })),
      tag: T.Optional(T.Null()),
    }),
  ),
  securityGroups: plain(T.Object({ security_groups: T.Array(securityGroup) })),
  instanceAction: plain(
    T.Object({
      action: J.str,
      instance_uuid: J.str,
      request_id: J.str,
      user_id: J.nstr,
      project_id: J.nstr,
      start_time: J.nstr,
      message: J.nstr,
      updated_at: T.Optional(J.nstr),
      events: T.Optional(
        T.Array(
          T.Object({
            event: J.str,
            start_time: J.nstr,
            finish_time: J.nstr,
            result: J.nstr,
            traceback: T.Optional(J.nstr),
            hostId: T.Optional(J.str),
            host: T.Optional(J.str),
            details: T.Optional(J.nstr),
          }),
        ),
      ),
    }),
  ),
  imageSummary: plain(T.Object({ id: J.str, name: J.nstr, links: J.links })),
  imageDetail: plain(
    T.Object({
      id: J.str,
      name: J.nstr,
      minRam: J.int,
      minDisk: J.int,
      metadata: J.strMap,
      created: J.str,
      updated: J.str,
      status: J.str,
      progress: J.int,
      links: J.links,
      'OS-EXT-IMG-SIZE:size': T.Union([J.int, T.Null()]),
      server: T.Optional(T.Object({ id: J.str, links: J.links })),
    }),
  ),
  extraSpecs: plain(T.Object({ extra_specs: J.strMap })),
  /** One extra spec: `{ "<key>": "<value>" }` */
  extraSpec: plain(J.strMap),
  flavorAccess: plain(T.Object({ flavor_access: T.Array(T.Object({ flavor_id: J.str, tenant_id: J.str })) })),
  availabilityZones: plain(
    T.Object({
      availabilityZoneInfo: T.Array(
        T.Object({
          zoneName: J.str,
          zoneState: T.Object({ available: J.bool }),
          hosts: T.Union([T.Null(), T.Record(J.str, T.Record(J.str, T.Object({ available: J.bool, active: J.bool, updated_at: J.nstr })))]),
        }),
      ),
    }),
  ),
  limits: { type: 'object', properties: { limits: { type: 'object', properties: { rate: { type: 'array', maxItems: 0 }, absolute: fieldsSchema(absoluteLimitFields, 'set') }, required: ['rate', 'absolute'] } }, required: ['limits'] } as JsonSchema,
  hypervisor: plain(
    T.Object({
      id: hostId,
      hypervisor_hostname: J.str,
      state: J.str,
      status: J.str,
      hypervisor_type: T.Optional(J.str),
      hypervisor_version: T.Optional(J.int),
      host_ip: T.Optional(J.nstr),
      service: T.Optional(T.Object({ id: hostId, host: J.str, disabled_reason: J.nstr })),
      uptime: T.Optional(J.str),
      servers: T.Optional(T.Array(T.Object({ name: J.str, uuid: J.str }))),
      vcpus: T.Optional(J.int),
      memory_mb: T.Optional(J.int),
      local_gb: T.Optional(J.int),
      running_vms: T.Optional(J.int),
      cpu_info: T.Optional(T.Union([J.str, T.Record(J.str, T.Unknown())])),
    }),
  ),
  /** A host aggregate; create answers it without hosts and metadata, and uuid comes at 2.41. */
  aggregate: plain(
    T.Object(
      {
        id: J.int,
        uuid: T.Optional(J.str),
        name: J.str,
        availability_zone: J.nstr,
        hosts: T.Optional(T.Array(J.str)),
        metadata: T.Optional(J.strMap),
        created_at: J.str,
        updated_at: J.nstr,
        deleted_at: T.Null(),
        deleted: J.bool,
      },
      { additionalProperties: false },
    ),
  ),
  serverPassword: plain(T.Object({ password: J.str })),
  proxyVolume: plain(proxyVolume),
  proxySnapshot: plain(proxySnapshot),
  proxyNetwork: plain(proxyNetwork),
  tenantNetwork: plain(T.Object({ id: J.str, cidr: J.nstr, label: J.str })),
  securityGroup: plain(securityGroup),
  securityGroupRule: plain(securityGroupRule),
  floatingIpPools: plain(T.Object({ floating_ip_pools: T.Array(T.Object({ name: J.str })) })),
  floatingIp: plain(T.Object({ id: J.str, ip: J.str, fixed_ip: J.nstr, instance_id: J.nstr, pool: J.nstr })),
  hypervisorStatistics: plain(
    T.Object({
      hypervisor_statistics: T.Record(J.str, J.int),
    }),
  ),
  service: plain(
    T.Object({
      id: T.Optional(hostId),
      binary: J.str,
      host: J.str,
      zone: T.Optional(J.str),
      status: T.Optional(J.str),
      state: T.Optional(J.str),
      updated_at: T.Optional(J.nstr),
      disabled_reason: T.Optional(J.nstr),
      forced_down: T.Optional(J.bool),
    }),
  ),
  usage: plain(
    T.Object({
      tenant_id: J.str,
      total_local_gb_usage: J.num,
      total_vcpus_usage: J.num,
      total_memory_mb_usage: J.num,
      total_hours: J.num,
      start: J.nstr,
      stop: J.nstr,
      server_usages: T.Optional(
        T.Array(
          T.Object({
            instance_id: J.str,
            name: J.str,
            hours: J.num,
            memory_mb: J.int,
            local_gb: J.int,
            vcpus: J.int,
            tenant_id: J.str,
            flavor: J.str,
            started_at: J.nstr,
            ended_at: J.nstr,
            state: J.str,
            uptime: J.int,
          }),
        ),
      ),
    }),
  ),
}

