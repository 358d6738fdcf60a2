/**
 * POST /servers after schema validation: the rules the schema cannot say (docs/compute.md, "Create"), then one
 * transaction that writes the servers (vm_state building, task_state scheduling), their ports
 * (server-network.ts), tags, group membership and `create` instance actions, and enqueues one compute.build task.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { badRequest, forbidden } from '../../contracts/errors.js'
import { cpuTopologyOf, imageHardwareOf, ImageHardwareError, type ImageHardware } from '../../contracts/compute/image-hardware.js'
import type { FlavorSnapshot } from '../../contracts/host/compute-driver.js'
import { boolWord } from '../../contracts/compute/params.js'
import type { ApiVersion } from '../../contracts/compute/versions.js'
import type { Static } from '@sinclair/typebox'
import type { createBodySchema } from '../../contracts/compute/server-create.params.js'
import type { ServerTable } from '../storage/schema.js'
import type { Db } from '../storage/store.js'
import type { TaskQueue } from '../tasks/queue.js'
import { COMPUTE_TASK_KINDS, type BuildTaskPayload } from './tasks.js'
import { flavorSnapshot, requireFlavorForServer } from './flavors.js'
import type { BootImage, ImageLookup } from './images.js'
import { checkMetadataQuota, checkServerQuota, quotaLimits } from './quotas.js'
import { hostZones } from './aggregates.js'
import type { NetworkService } from '../network/service.js'
import { allocateServerNetworks, networkRequest } from './server-network.js'
import { fromLegacy, imageDefinedBlockDevices, parseBlockDevices, recordBlockDevices, validateBlockDevices, withImageDefined, type BdmRequest, type PlannedBdm } from './block-devices.js'
import type { ComputeStorage } from './storage.js'
import { accessIpv6 } from './access-ips.js'
import { insertActions } from './instance-actions.js'
import type { Visibility } from '../policy/rules.js'
import { ADVISORY_LOCKS } from '../storage/locks.js'

export interface CreateCaller {
  /** Whose images, volumes, snapshots and networks the request may name (other_projects:use), decided by the route. */
  visibility: Visibility
  /** Private flavors without access (flavors:all_projects). */
  flavorVisibility: Visibility
  /** A port on an external network that is not shared (network:attach_external_network). */
  attachExternal: boolean
  projectId: string
  userId: string
  /** May force a host (zone:host:node, host, hypervisor_hostname). */
  canForceHost: boolean
}

export interface CreateResult {
  servers: ServerTable[]
  adminPass: string
  reservationId: string
  securityGroups: string[]
}

/** A create body as its schema let it through (createBodySchema, at the request's microversion). */
type CreateBody = Static<ReturnType<typeof createBodySchema>>
type ServerRequest = CreateBody['server']

const PASSWORD_ALPHABET = '23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'

/** Nova's generated password: 12 characters without look-alikes. */
export function generatePassword(length = 12): string {
  const bytes = randomBytes(length)
  return Array.from(bytes, (b) => PASSWORD_ALPHABET[b % PASSWORD_ALPHABET.length]).join('')
}

export function newReservationId(): string {
  const alphabet = '0123456789abcdefghijklmnopqrstuvwxyz'
  return 'r-' + Array.from(randomBytes(8), (b) => alphabet[b % 36]).join('')
}

/** block_device_mapping_v2, or the legacy block_device_mapping in its terms, through Nova's format rules. */
function requestedBlockDevices(s: ServerRequest, imageRef: string | undefined): PlannedBdm[] {
  const items = s.block_device_mapping_v2 !== undefined ? (s.block_device_mapping_v2 as BdmRequest[]) : fromLegacy((s.block_device_mapping ?? []) as Record<string, unknown>[], imageRef)
  return parseBlockDevices(items, s.imageRef !== undefined || s.block_device_mapping !== undefined)
}

/** `az`, `az:host`, `az:host:node`, `az::node`. */
function parseZone(raw: string | undefined): { zone?: string; host?: string; node?: string } {
  if (raw === undefined) return {}
  const parts = raw.split(':')
  if (parts.length > 3) throw badRequest(`Invalid availability zone: ${raw}`)
  const [zone, host, node] = parts
  return { zone: zone || undefined, host: host || undefined, node: node || undefined }
}

export interface CreateStore {
  db: Db
  /** PostgreSQL: serialise display_id allocation with a transaction-scoped advisory lock. */
  advisoryLocks: boolean
  /** Allocates the servers' ports in the create transaction. */
  network: NetworkService
}


export async function createServers(
  store: CreateStore,
  queue: TaskQueue,
  images: ImageLookup,
  api: ApiVersion,
  caller: CreateCaller,
  body: CreateBody,
  requestId: string,
  storage: ComputeStorage,
): Promise<CreateResult> {
  const db = store.db
  const s = body.server
  const hints = body['os:scheduler_hints'] ?? body['OS-SCH-HNT:scheduler_hints'] ?? null

  // Counts.
  const minCount = s.min_count === undefined ? 1 : Number(s.min_count)
  const maxCount = s.max_count === undefined ? minCount : Number(s.max_count)
  if (minCount > maxCount) throw badRequest("min_count must be <= max_count")
  if (s.hostname !== undefined && maxCount > 1) throw badRequest('Cannot request multiple instances with a hostname.')

  // Block devices and image.
  if (s.block_device_mapping !== undefined && s.block_device_mapping_v2 !== undefined) throw badRequest('Using different block_device_mapping syntaxes is not allowed in the same request.')
  const imageRef = s.imageRef === '' ? undefined : s.imageRef
  const requested = requestedBlockDevices(s, imageRef)
  if (!imageRef && requested.length === 0) throw badRequest('Missing imageRef attribute')
  let bootImage: BootImage | undefined
  if (imageRef) {
    const image = await images.find(imageRef, caller.projectId, caller.visibility)
    if (!image) throw badRequest('Can not find requested image')
    if (image.status !== 'active') throw badRequest(`Image ${imageRef} is not active.`)
    bootImage = image
  }
  // A snapshot of a volume-backed server boots from volumes made of its volumes' snapshots, not from its (empty) bytes.
  const bdms = withImageDefined(requested, bootImage ? imageDefinedBlockDevices(bootImage.properties) : [])

  // Placement requests.
  const zone = parseZone(s.availability_zone)
  if ((zone.host || zone.node) && !caller.canForceHost) throw forbidden("Policy doesn't allow os_compute_api:servers:create:forced_host to be performed.")
  if ((s.host !== undefined || s.hypervisor_hostname !== undefined) && !caller.canForceHost) {
    throw forbidden("Policy doesn't allow compute:servers:create:requested_destination to be performed.")
  }
  if ((zone.host || zone.node) && (s.host !== undefined || s.hypervisor_hostname !== undefined)) {
    throw badRequest('host or hypervisor_hostname cannot be combined with the zone:host:node form of availability_zone.')
  }
  if (zone.zone) {
    const known = new Set(['nova', ...(await hostZones(db)).values()])
    if (!known.has(zone.zone)) throw badRequest('The requested availability zone is not available')
  }
  const forcedHost = s.host ?? zone.host
  if (forcedHost) {
    const h = await db.selectFrom('hosts').select('hostname').where('hostname', '=', forcedHost).executeTakeFirst()
    if (!h) throw badRequest(`Compute host ${forcedHost} could not be found.`)
  }

  // Flavor, key pair, server group.
  const flavor = await requireFlavorForServer(db, String(s.flavorRef), caller.projectId, caller.flavorVisibility)
  const blockDevices = bdms.length ? await validateBlockDevices(bdms, { db, storage, caller, flavor: flavorSnapshot(flavor), imageId: imageRef, maxCount }) : undefined
  if (bootImage && !blockDevices?.volumeBacked) {
    if (flavor.disk > 0 && bootImage.minDiskGb > flavor.disk) throw badRequest("Flavor's disk is too small for requested image.")
    if (bootImage.minRamMb > flavor.ram) throw badRequest("Flavor's memory is too small for requested image.")
  }
  const hardware = bootImage ? guestHardware(bootImage, flavorSnapshot(flavor)) : undefined
  let keyData: string | null = null
  if (s.key_name !== undefined) {
    const kp = await db.selectFrom('keypairs').select('public_key').where('user_id', '=', caller.userId).where('name', '=', s.key_name).executeTakeFirst()
    if (!kp) throw badRequest('Invalid key_name provided.')
    keyData = kp.public_key
  }
  const groupId = hints?.group
  if (groupId) {
    const g = await db.selectFrom('server_groups').select('id').where('id', '=', groupId).executeTakeFirst()
    if (!g) throw badRequest(`Group ${groupId} could not be found.`)
  }

  // A requested destination travels with the hints (Nova keeps it in the request spec); the scheduler honours it.
  const forcedNode = s.hypervisor_hostname ?? zone.node
  const placement = forcedHost || forcedNode ? { ...(forcedHost ? { force_host: forcedHost } : {}), ...(forcedNode ? { force_node: forcedNode } : {}) } : undefined

  const metadata = s.metadata ?? {}
  const limits = await quotaLimits(db, caller.projectId)
  await checkMetadataQuota(db, caller.projectId, Object.keys(metadata).length, limits)
  const count = await checkServerQuota(db, caller.projectId, flavor, minCount, maxCount, limits)

  const securityGroups = [...new Set((s.security_groups ?? [{ name: 'default' }]).map((g) => g.name))]
  const adminPass = s.adminPass ?? generatePassword()
  const reservationId = newReservationId()
  const tags = [...new Set(s.tags ?? [])]
  const now = Date.now()
  const snapshot = JSON.stringify(flavorSnapshot(flavor))
  const name = s.name
  const description = api.has('description') ? (s.description ?? null) : name
  const networks = networkRequest(s.networks, maxCount)

  for (let attempt = 0; ; attempt++) {
    try {
      return await db.transaction().execute(async (tx) => {
        // Two processes (or pool connections) would otherwise both read the same max(display_id).
        if (store.advisoryLocks) await sql`SELECT pg_advisory_xact_lock(${ADVISORY_LOCKS.displayId})`.execute(tx)
        const top = await tx.selectFrom('servers').select((eb) => eb.fn.max('display_id').as('m')).executeTakeFirst()
        let displayId = Number(top?.m ?? 0)
        const servers: ServerTable[] = []
        for (let i = 0; i < count; i++) {
          const display = count > 1 ? `${name}-${i + 1}` : name
          const row: ServerTable = {
            id: randomUUID(),
            rev: 0,
            display_id: ++displayId,
            name: display,
            description: api.has('description') ? description : display,
            project_id: caller.projectId,
            user_id: caller.userId,
            host_id: null,
            host: null,
            node: null,
            vm_state: 'building',
            task_state: 'scheduling',
            power_state: 0,
            flavor: snapshot,
            old_flavor: null,
            new_flavor: null,
            image_id: imageRef ?? null,
            key_name: s.key_name ?? null,
            key_data: keyData,
            metadata: JSON.stringify(metadata),
            access_ip_v4: s.accessIPv4 ?? '',
            access_ip_v6: accessIpv6(s.accessIPv6 ?? ''),
            availability_zone: zone.zone ?? null,
            pinned_availability_zone: zone.zone ?? null,
            config_drive: (s.config_drive !== undefined && boolWord(s.config_drive)) || hardware?.configDrive ? 1 : 0,
            disk_config: s['OS-DCF:diskConfig'] ?? 'MANUAL',
            user_data: s.user_data ?? null,
            hostname: s.hostname ?? hostnameFrom(display),
            locked: 0,
            locked_by: null,
            locked_reason: null,
            launch_index: i,
            reservation_id: reservationId,
            root_device_name: null,
            kernel_id: null,
            ramdisk_id: null,
            progress: 0,
            trusted_image_certificates: s.trusted_image_certificates ? JSON.stringify(s.trusted_image_certificates) : null,
            scheduler_hints: hints || placement ? JSON.stringify({ ...hints, ...placement }) : null,
            security_groups: JSON.stringify(securityGroups),
            requested_networks: JSON.stringify(networks),
            block_devices: JSON.stringify(s.block_device_mapping_v2 ?? []),
            created_at: now,
            updated_at: now,
            launched_at: null,
            terminated_at: null,
            deleted_at: null,
            deleted: 0,
          }
          servers.push(row)
        }
        await tx.insertInto('servers').values(servers).execute()
        await allocateServerNetworks(store.network, tx, servers, { projectId: caller.projectId, request: networks, securityGroups, visibility: caller.visibility, attachExternal: caller.attachExternal })
        if (blockDevices) await recordBlockDevices(tx, storage, servers.map((r) => r.id), blockDevices, caller)
        if (tags.length) await tx.insertInto('server_tags').values(servers.flatMap((r) => tags.map((tag) => ({ server_id: r.id, tag })))).execute()
        if (groupId) await tx.insertInto('server_group_members').values(servers.map((r) => ({ group_id: groupId, server_id: r.id }))).execute()
        await insertActions(tx, servers.map((r) => ({ serverId: r.id, action: 'create', requestId, userId: caller.userId, projectId: caller.projectId })), now)
        await queue.enqueue<BuildTaskPayload>({ kind: COMPUTE_TASK_KINDS.build, payload: { serverIds: servers.map((r) => r.id), requestId, adminPass }, subjectId: servers[0].id }, tx)
        return { servers, adminPass, reservationId, securityGroups }
      })
    } catch (err) {
      // A row seeded behind our back can still collide on display_id; the unique index refuses it and we retry.
      if (attempt < 3 && /display_id|unique/i.test(String((err as Error).message))) continue
      throw err
    }
  }
}

/** A hostname from a display name, as Nova sanitises it. */
export function hostnameFrom(name: string): string {
  const h = name.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 63)
  return h || 'server'
}

/**
 * The hardware the image's properties and the flavor ask for, refused with 400 before anything is made when a
 * value is not one the hypervisors honour or the CPU topology cannot give the flavor's vCPUs (as Nova's image
 * property schema and its topology check refuse them at create).
 */
function guestHardware(image: BootImage, flavor: FlavorSnapshot): ImageHardware {
  try {
    cpuTopologyOf(flavor.vcpus, flavor.extra_specs, image.properties)
    return imageHardwareOf(image.properties)
  } catch (err) {
    if (err instanceof ImageHardwareError) throw badRequest(err.message)
    throw err
  }
}
