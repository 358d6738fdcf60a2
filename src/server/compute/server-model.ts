/**
 * Rows â ServerModel (what the server field table reads). Tags, faults, server groups, host states, addresses,
 * security groups and attached volumes are loaded for a whole page at once (one query each), never per server.
 */
import { createHash } from 'node:crypto'
import type { ServerModel } from '../../contracts/compute/server.fields.js'
import type { ServerTable } from '../storage/schema.js'
import type { FlavorSnapshot } from '../../contracts/host/compute-driver.js'
import type { Db } from '../storage/store.js'
import { prepared } from '../storage/prepared.js'
import { serverStatus } from './server-states.js'
import { hostStatus, type HostLiveness, type HostStatus } from '../hosts/host-status.js'
import type { NetworkService } from '../network/service.js'
import { loadNetworkViews, type NetworkViews } from './server-network.js'
import { volumesAttachedOf } from './block-devices.js'

export interface ModelContext {
  /** Show a 500 fault's details (servers:show:fault_details, decided by the route). */
  faultDetails: boolean
  /** The compute URL (…/compute/v2.1) and the bookmark base (…/compute). */
  computeUrl: string
  /** What the server view needs beyond the rows. */
  needs: { tags: boolean; groups: boolean; hostStatus: boolean }
  /** A host whose heartbeat is older than this is DOWN (the conductor's setting). */
  hostDownAfterMs: number
  /** Addresses and security groups come from the servers' ports. */
  network: NetworkService
}

export function instanceName(displayId: number): string {
  return `instance-${displayId.toString(16).padStart(8, '0')}`
}

/** Nova's obfuscated host id: sha224 of project id + host, hex; empty when there is no host. */
export function hostIdOf(projectId: string, host: string | null): string {
  return host ? createHash('sha224').update(projectId + host).digest('hex') : ''
}

export function parseFlavor(json: string): FlavorSnapshot {
  return JSON.parse(json) as FlavorSnapshot
}

export function bookmarkBase(computeUrl: string): string {
  return computeUrl.replace(/\/v2(\.1)?$/, '')
}

export async function serverModels(db: Db, rows: ServerTable[], ctx: ModelContext): Promise<ServerModel[]> {
  if (rows.length === 0) return []
  const ids = rows.map((r) => r.id)
  const tags = new Map<string, string[]>()
  const faults = new Map<string, { code: number; message: string; details: string; created_at: number }>()
  const groups = new Map<string, string[]>()
  let hostStates = new Map<string, string>()
  let net: NetworkViews = { addresses: new Map(), securityGroups: new Map() }
  const loads: Promise<void>[] = [loadNetworkViews(ctx.network, db, rows).then((v) => void (net = v))]
  if (ctx.needs.tags) {
    loads.push(
      chunked(ids, async (part) => {
        for (const t of await db.selectFrom('server_tags').select(['server_id', 'tag']).where('server_id', 'in', part).orderBy('tag').execute()) {
          const list = tags.get(t.server_id)
          if (list) list.push(t.tag)
          else tags.set(t.server_id, [t.tag])
        }
      }),
    )
  }
  const faulty = rows.filter((r) => r.vm_state === 'error' || r.deleted === 1).map((r) => r.id)
  if (faulty.length) {
    loads.push(
      chunked(faulty, async (part) => {
        const found = await db.selectFrom('instance_faults').selectAll().where('server_id', 'in', part).orderBy('created_at', 'asc').execute()
        for (const f of found) faults.set(f.server_id, f) // newest wins
      }),
    )
  }
  if (ctx.needs.groups) {
    loads.push(
      chunked(ids, async (part) => {
        for (const m of await db.selectFrom('server_group_members').select(['group_id', 'server_id']).where('server_id', 'in', part).execute()) {
          groups.set(m.server_id, [...(groups.get(m.server_id) ?? []), m.group_id])
        }
      }),
    )
  }
  let volumes = new Map<string, { id: string; deleteOnTermination: boolean }[]>()
  loads.push(volumesAttachedOf(db, ids).then((found) => void (volumes = found)))
  if (ctx.needs.hostStatus) loads.push(loadHostStates(db, ctx.hostDownAfterMs).then((found) => void (hostStates = found)))
  await Promise.all(loads)

  const base = bookmarkBase(ctx.computeUrl)
  // Pages repeat the same flavors and hosts: parse and hash each once.
  const flavors = new Map<string, { model: ServerModel['flavor']; links: ServerModel['flavorLinks'] }>()
  const hostIds = new Map<string, string>()
  return rows.map((r) => {
    let flavorEntry = flavors.get(r.flavor)
    if (!flavorEntry) {
      const f = parseFlavor(r.flavor)
      flavorEntry = {
        model: { id: f.id, name: f.name, vcpus: f.vcpus, ram: f.ram, disk: f.disk, ephemeral: f.ephemeral, swap: f.swap, extraSpecs: f.extra_specs ?? {} },
        links: [{ rel: 'bookmark', href: `${base}/flavors/${f.id}` }],
      }
      flavors.set(r.flavor, flavorEntry)
    }
    const hostKey = `${r.project_id}\u0000${r.host ?? ''}`
    let hostId = hostIds.get(hostKey)
    if (hostId === undefined) hostIds.set(hostKey, (hostId = hostIdOf(r.project_id, r.host)))
    const status = serverStatus(r.vm_state, r.task_state, r.deleted === 1)
    const fault = faults.get(r.id)
    return {
      id: r.id,
      name: r.name,
      status,
      tenantId: r.project_id,
      userId: r.user_id,
      created: r.created_at,
      updated: r.updated_at,
      links: [
        { rel: 'self', href: `${ctx.computeUrl}/servers/${r.id}` },
        { rel: 'bookmark', href: `${base}/servers/${r.id}` },
      ],
      hostId,
      image: r.image_id ? { id: r.image_id, links: [{ rel: 'bookmark', href: `${base}/images/${r.image_id}` }] } : null,
      flavor: flavorEntry.model,
      flavorLinks: flavorEntry.links,
      addresses: net.addresses.get(r.id) ?? {},
      metadata: (r.metadata === '{}' ? {} : JSON.parse(r.metadata)) as Record<string, string>,
      accessIPv4: r.access_ip_v4,
      accessIPv6: r.access_ip_v6,
      diskConfig: r.disk_config,
      configDrive: r.config_drive === 1,
      keyName: r.key_name,
      availabilityZone: r.availability_zone ?? '',
      vmState: r.deleted === 1 ? 'deleted' : r.vm_state,
      taskState: r.task_state,
      powerState: r.power_state,
      launchedAt: r.launched_at,
      terminatedAt: r.terminated_at,
      volumesAttached: volumes.get(r.id) ?? [],
      securityGroups: net.securityGroups.get(r.id) ?? [],
      progress: r.progress,
      fault: fault ? { code: fault.code, created: fault.created_at, message: fault.message, details: ctx.faultDetails || fault.code !== 500 ? fault.details : undefined } : null,
      host: r.host,
      instanceName: instanceName(r.display_id),
      node: r.node,
      hostname: r.hostname,
      kernelId: r.kernel_id,
      ramdiskId: r.ramdisk_id,
      launchIndex: r.launch_index,
      reservationId: r.reservation_id,
      rootDeviceName: r.root_device_name,
      userData: r.user_data,
      locked: r.locked === 1,
      lockedReason: r.locked_reason,
      hostStatus: hostStatusOf(hostStates, r.host),
      description: r.description,
      tags: tags.get(r.id) ?? [],
      trustedImageCertificates: r.trusted_image_certificates ? (JSON.parse(r.trusted_image_certificates) as string[]) : null,
      serverGroups: groups.get(r.id) ?? [],
      pinnedAvailabilityZone: r.pinned_availability_zone,
    }
  })
}

/** The `host_status` of every host by hostname (Nova's, from heartbeats: it changes with time, not with rows). */
export async function loadHostStates(db: Db, hostDownAfterMs: number): Promise<Map<string, string>> {
  const now = Date.now()
  const hosts = await hostRecords(db)
  return new Map(hosts.map((h) => [h.hostname, hostStatus(h, now, hostDownAfterMs)]))
}

// Compiled once: every page of the detail list reads it (storage/prepared.ts).
const hostRecords = prepared((db: Db) => db.selectFrom('hosts').select(['hostname', 'service_status', 'forced_down', 'last_heartbeat_at']))

export function hostStatusOf(states: Map<string, string>, host: string | null): string {
  return host ? (states.get(host) ?? 'UNKNOWN') : ''
}

/** The same `host_status` from the host's record read with the server (undefined when the host has none). */
export function hostStatusOfRecord(host: string | null, record: HostLiveness | undefined, hostDownAfterMs: number): HostStatus | '' {
  return host ? (record ? hostStatus(record, Date.now(), hostDownAfterMs) : 'UNKNOWN') : ''
}

/** Runs `fn` over slices small enough for any driver's parameter limit. */
async function chunked(ids: string[], fn: (part: string[]) => Promise<void>): Promise<void> {
  for (let i = 0; i < ids.length; i += 500) await fn(ids.slice(i, i + 500))
}
