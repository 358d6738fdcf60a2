/**
 * Server actions after the body was validated: the state check (server-states.ts `refusal`, 409), the
 * action's own rules, then either one transaction that sets the starting task_state, records the instance
 * action and enqueues the work, or — for actions the API completes itself — the change and a finished action.
 */
import { AppError, badRequest, conflict, notFound } from '../../contracts/errors.js'
import type { ApiVersion } from '../../contracts/compute/versions.js'
import { LEGACY_CONSOLE_ACTIONS } from '../../contracts/compute/remote-console.params.js'
import type { ServerTable } from '../storage/schema.js'
import type { Db } from '../storage/store.js'
import type { TaskQueue } from '../tasks/queue.js'
import { COMPUTE_TASK_KINDS, type ActionTaskPayload, type DeleteTaskPayload } from './tasks.js'
import { refusal, SERVER_ACTIONS, type ServerActionName } from './server-states.js'
import { flavorSnapshot, requireFlavorForServer } from './flavors.js'
import type { BootImage, ImageLookup } from './images.js'
import { generatePassword } from './server-create.js'
import { checkMetadataQuota, quotaExceeded, quotaLimits, serverUsage } from './quotas.js'
import { parseFlavor } from './server-model.js'
import type { NetworkService } from '../network/service.js'
import { changeServerSecurityGroup } from './server-network.js'
import { isVolumeBacked } from './block-devices.js'
import { createVolumeBackedImage, reserveSnapshotImage, shelvedImageName } from './server-images.js'
import type { ComputeStorage } from './storage.js'
import type { FlavorSnapshot } from '../../contracts/host/compute-driver.js'
import { accessIpv6 } from './access-ips.js'
import { insertAction } from './instance-actions.js'
import type { Principal } from '../auth/principal.js'
import { associateServerFloatingIp, disassociateServerFloatingIp } from '../network/floating-ips.js'
import type { Visibility } from '../policy/rules.js'

export interface ActionCaller {
  /** Whose images and volumes the action may name (other_projects:use), decided by the route. */
  visibility: Visibility
  /** Private flavors without access, for resize (flavors:all_projects). */
  flavorVisibility: Visibility
  projectId: string
  userId: string
  /** For actions completed through another service with the caller's own rights (Nova's floating IP actions). */
  principal?: Principal
  /** May act on a locked server (servers:locked:override, checked by the route). */
  lockOverride: boolean
  /**
   * Checks a compute policy rule that depends on the action's body or the server's state (a host named for
   * unshelve, an admin's lock): the route passes the policy table's check, so the rule stays in the table while the
   * check keeps its place after the state checks (403 only for a request the server's state accepts).
   */
  authorize: (operation: ActionPolicy) => void
}

/** The compute policy rules an action checks on the way (compute.policy.ts). */
export type ActionPolicy = 'os-lock-server:unlock:unlock_override' | 'os-shelve:unshelve_to_host' | 'os-migrate-server:migrate:host'

export interface ActionOutcome {
  status: 200 | 202 | 204
  body?: unknown
  headers?: Record<string, string>
  /** The server row after the API's own changes (rebuild answers with it). */
  server?: ServerTable
  adminPass?: string
}

export interface ActionDeps {
  db: Db
  queue: TaskQueue
  images: ImageLookup
  /** The image and volume services: snapshot images of createImage and shelve, volume-backed servers. */
  storage: ComputeStorage
  imageUrl: string
  /** Whether a host's compute service is up (evacuate needs it down). */
  hostUp: (hostname: string) => Promise<boolean | undefined>
  /** The guest's console log from its hypervisor; undefined when the host or the guest cannot be reached. */
  consoleOutput: (serverId: string, lines?: number) => Promise<string | undefined>
  /** Security groups live on the server's ports. */
  network: NetworkService
  /** A console URL for the server (console/remote-consoles.ts). */
  remoteConsoleUrl: (row: ServerTable, protocol: string, type: string) => Promise<string>
}

/**
 * The image a rebuild asks for, against the server (nova/compute/api.py rebuild): a volume-backed server keeps
 * its image below 2.93, and the flavor must hold the image's min_disk and min_ram.
 */
function checkRebuildImage(api: ApiVersion, image: BootImage, flavor: FlavorSnapshot, volumeBacked: boolean): void {
  if (volumeBacked && !api.has('volumeBackedRebuild')) {
    throw badRequest(`Image ${image.id} is unacceptable: Unable to rebuild with a different image for a volume-backed server.`)
  }
  if (!volumeBacked && flavor.disk > 0 && image.minDiskGb > flavor.disk) throw badRequest("Flavor's disk is too small for requested image.")
  if (image.minRamMb > flavor.ram) throw badRequest("Flavor's memory is too small for requested image.")
}

/** Maps the body key (and reboot's type) to the table entry. */
export function actionNameOf(key: string, value: unknown): ServerActionName | undefined {
  if (key === 'reboot') {
    const type = String((value as { type?: string } | null)?.type ?? '').toUpperCase()
    return type === 'HARD' ? 'reboot:HARD' : 'reboot:SOFT'
  }
  return key in SERVER_ACTIONS && !key.includes(':') ? (key as ServerActionName) : undefined
}

export function stateView(row: ServerTable) {
  return { id: row.id, vmState: row.vm_state, taskState: row.task_state, powerState: row.power_state, launchedAt: row.launched_at, host: row.host, locked: row.locked === 1 }
}

async function recordAction(db: Db, row: ServerTable, action: string, requestId: string, caller: ActionCaller, finished: boolean): Promise<void> {
  await insertAction(db, { serverId: row.id, action, requestId, userId: caller.userId, projectId: caller.projectId || row.project_id, finished })
}

/**
 * Accepts an asynchronous action: task_state, instance action and task in one transaction. `prepare` runs in that
 * transaction after the state moved and adds to the task's params (the snapshot image createImage and shelve make).
 */
async function accept(
  deps: ActionDeps,
  row: ServerTable,
  action: ServerActionName,
  params: Record<string, unknown>,
  requestId: string,
  caller: ActionCaller,
  changes: Partial<ServerTable> = {},
  prepare?: (tx: Db) => Promise<Record<string, unknown>>,
): Promise<ServerTable> {
  const rule = SERVER_ACTIONS[action]
  const now = Date.now()
  return deps.db.transaction().execute(async (tx) => {
    const set = { ...changes, task_state: rule.startTask, updated_at: now }
    let q = tx.updateTable('servers').set(set).where('id', '=', row.id).where('vm_state', '=', row.vm_state)
    q = row.task_state === null ? q.where('task_state', 'is', null) : q.where('task_state', '=', row.task_state)
    const result = await q.executeTakeFirst()
    if (Number(result.numUpdatedRows) !== 1) throw conflict(`Cannot '${rule.instanceAction}' instance ${row.id} while it is changing state`)
    if (prepare) params = { ...params, ...(await prepare(tx)) }
    await recordAction(tx, row, rule.instanceAction, requestId, caller, false)
    if (action === 'forceDelete') {
      await deps.queue.enqueue<DeleteTaskPayload>({ kind: COMPUTE_TASK_KINDS.delete, payload: { serverId: row.id, requestId }, subjectId: row.id }, tx)
    } else {
      await deps.queue.enqueue<ActionTaskPayload>(
        { kind: COMPUTE_TASK_KINDS.action, payload: { serverId: row.id, action, params, requestId, before: { vmState: row.vm_state, powerState: row.power_state } }, subjectId: row.id },
        tx,
      )
    }
    return { ...row, ...set } as ServerTable
  })
}

/** A migration's named destination: a compute host that is up, and not the server's own (400 otherwise, as Nova). */
async function requireTargetHost(deps: ActionDeps, row: ServerTable, host: string): Promise<void> {
  const up = await deps.hostUp(host)
  if (up === undefined) throw badRequest(`Compute host ${host} could not be found.`)
  if (!up) throw badRequest(`Compute service of ${host} is unavailable at this time.`)
  if (host === row.host) throw badRequest(`Unable to migrate instance (${row.id}) to current host (${host}).`)
}

export async function runAction(deps: ActionDeps, api: ApiVersion, caller: ActionCaller, row: ServerTable, action: ServerActionName, value: unknown, requestId: string): Promise<ActionOutcome> {
  const rule = SERVER_ACTIONS[action]
  const why = refusal(action, stateView(row), caller.lockOverride)
  if (why) throw conflict(why)
  const v = (value ?? {}) as Record<string, unknown>
  const db = deps.db

  switch (action) {
    case 'lock': {
      if (row.locked === 1) return { status: 202 }
      const reason = (v.locked_reason as string | undefined) ?? null
      await db.updateTable('servers').set({ locked: 1, locked_by: caller.projectId === row.project_id ? 'owner' : 'admin', locked_reason: reason, updated_at: Date.now() }).where('id', '=', row.id).execute()
      await recordAction(db, row, 'lock', requestId, caller, true)
      return { status: 202 }
    }
    case 'unlock': {
      if (row.locked_by === 'admin') caller.authorize('os-lock-server:unlock:unlock_override')
      await db.updateTable('servers').set({ locked: 0, locked_by: null, locked_reason: null, updated_at: Date.now() }).where('id', '=', row.id).execute()
      await recordAction(db, row, 'unlock', requestId, caller, true)
      return { status: 202 }
    }
    case 'os-getConsoleOutput': {
      // Nova accepts the length as an integer or a numeric string; -1 or absent means the whole log.
      const length = v.length === undefined || v.length === null ? undefined : Number(v.length)
      const output = await deps.consoleOutput(row.id, length)
      if (output === undefined) throw notFound('Guest does not have a console available.')
      return { status: 200, body: { output } }
    }
    case 'os-getVNCConsole':
    case 'os-getSPICEConsole':
    case 'os-getSerialConsole': {
      const type = v.type as string
      const url = await deps.remoteConsoleUrl(row, LEGACY_CONSOLE_ACTIONS[action].protocol, type)
      return { status: 200, body: { console: { type, url } } }
    }
    case 'trigger_crash_dump':
      await recordAction(db, row, 'trigger_crash_dump', requestId, caller, true)
      return { status: 202 }
    case 'addFloatingIp':
    case 'removeFloatingIp': {
      const address = v.address as string
      await deps.network.run(caller.principal!, (ctx, actor) =>
        action === 'addFloatingIp' ? associateServerFloatingIp(ctx, actor, row.id, address, v.fixed_address as string | undefined) : disassociateServerFloatingIp(ctx, actor, row.id, address),
      )
      return { status: 202 }
    }
    case 'os-resetState':
      await db.updateTable('servers').set({ vm_state: v.state as string, task_state: null, updated_at: Date.now() }).where('id', '=', row.id).execute()
      return { status: 202 }
    case 'addSecurityGroup':
    case 'removeSecurityGroup':
      await changeServerSecurityGroup(deps.network, db, row, action, v.name as string)
      await recordAction(db, row, action, requestId, caller, true)
      return { status: 202 }
    case 'resize': {
      const flavor = await requireFlavorForServer(db, v.flavorRef as string, row.project_id, caller.flavorVisibility)
      const current = parseFlavor(row.flavor)
      if (flavor.id === current.id) throw badRequest('When resizing, instances must change flavor!')
      const limits = await quotaLimits(db, row.project_id)
      if (limits.cores >= 0 || limits.ram >= 0) {
        const used = await serverUsage(db, row.project_id)
        const dCores = flavor.vcpus - current.vcpus
        const dRam = flavor.ram - current.ram
        if (limits.cores >= 0 && dCores > 0 && used.cores + dCores > limits.cores) throw quotaExceeded('cores', dCores, used.cores, limits.cores)
        if (limits.ram >= 0 && dRam > 0 && used.ram + dRam > limits.ram) throw quotaExceeded('ram', dRam, used.ram, limits.ram)
      }
      const snapshot = flavorSnapshot(flavor)
      await accept(deps, row, action, { flavorRef: flavor.id, flavor: snapshot, diskConfig: v['OS-DCF:diskConfig'] }, requestId, caller, {
        new_flavor: JSON.stringify(snapshot),
        ...(v['OS-DCF:diskConfig'] ? { disk_config: v['OS-DCF:diskConfig'] as 'AUTO' | 'MANUAL' } : {}),
      })
      return { status: 202 }
    }
    case 'rebuild': {
      const image = await deps.images.find(v.imageRef as string, row.project_id, caller.visibility)
      if (!image) throw badRequest('Can not find requested image')
      const volumeBacked = await isVolumeBacked(db, row.id)
      checkRebuildImage(api, image, parseFlavor(row.flavor), volumeBacked)
      if (v.metadata) await checkMetadataQuota(db, row.project_id, Object.keys(v.metadata as object).length)
      // A volume-backed server keeps showing no image: the new one is written to its root volume.
      const changes: Partial<ServerTable> = volumeBacked ? {} : { image_id: v.imageRef as string }
      if (v.name !== undefined) changes.name = v.name as string
      if (v.metadata !== undefined) changes.metadata = JSON.stringify(v.metadata)
      if (v.accessIPv4 !== undefined) changes.access_ip_v4 = v.accessIPv4 as string
      if (v.accessIPv6 !== undefined) changes.access_ip_v6 = accessIpv6(v.accessIPv6 as string)
      if (v['OS-DCF:diskConfig'] !== undefined) changes.disk_config = v['OS-DCF:diskConfig'] as 'AUTO' | 'MANUAL'
      if (v.description !== undefined) changes.description = v.description as string | null
      if (v.user_data !== undefined) changes.user_data = v.user_data as string | null
      if (v.hostname !== undefined) changes.hostname = v.hostname as string
      if (v.trusted_image_certificates !== undefined) changes.trusted_image_certificates = v.trusted_image_certificates ? JSON.stringify(v.trusted_image_certificates) : null
      if (v.key_name !== undefined) {
        if (v.key_name === null) Object.assign(changes, { key_name: null, key_data: null })
        else {
          const kp = await db.selectFrom('keypairs').select('public_key').where('user_id', '=', row.user_id).where('name', '=', v.key_name as string).executeTakeFirst()
          if (!kp) throw badRequest('Invalid key_name provided.')
          Object.assign(changes, { key_name: v.key_name, key_data: kp.public_key })
        }
      }
      const adminPass = (v.adminPass as string | undefined) ?? generatePassword()
      const server = await accept(deps, row, action, { ...v, adminPass, ...(volumeBacked && { volumeBacked }) }, requestId, caller, changes)
      return { status: 202, server, adminPass }
    }
    case 'createImage': {
      if (v.metadata && !api.has('limitsNoImageMeta')) await checkMetadataQuota(db, row.project_id, Object.keys(v.metadata as object).length)
      const request = { name: v.name as string, metadata: (v.metadata ?? {}) as Record<string, string> }
      let imageId = ''
      if (await isVolumeBacked(db, row.id)) {
        imageId = await createVolumeBackedImage(db, deps.storage, row, caller, { ...request, requestId })
      } else {
        await accept(deps, row, action, request, requestId, caller, {}, async (tx) => {
          imageId = await reserveSnapshotImage(tx, deps.storage, row, caller, request)
          return { imageId }
        })
      }
      if (api.has('createImageReturnsId')) return { status: 202, body: { image_id: imageId } }
      return { status: 202, headers: { location: `${deps.imageUrl}/v2/images/${imageId}` } }
    }
    case 'createBackup': {
      // A createImage whose image is a backup of a kind; the conductor then keeps the newest `rotation` of that kind.
      if (await isVolumeBacked(db, row.id)) throw badRequest('Backups of volume-backed servers are not supported; use createImage.')
      if (v.metadata && !api.has('limitsNoImageMeta')) await checkMetadataQuota(db, row.project_id, Object.keys(v.metadata as object).length)
      const backupType = v.backup_type as string
      const metadata = { ...((v.metadata ?? {}) as Record<string, string>), image_type: 'backup', backup_type: backupType }
      let imageId = ''
      await accept(deps, row, action, { name: v.name, backupType, rotation: Number(v.rotation) }, requestId, caller, {}, async (tx) => {
        imageId = await reserveSnapshotImage(tx, deps.storage, row, caller, { name: v.name as string, metadata })
        return { imageId }
      })
      if (api.has('createImageReturnsId')) return { status: 202, body: { image_id: imageId } }
      return { status: 202, headers: { location: `${deps.imageUrl}/v2/images/${imageId}` } }
    }
    case 'shelve': {
      // An image-backed server is snapshotted to `<name>-shelved`; a volume-backed one keeps its volumes.
      const volumeBacked = await isVolumeBacked(db, row.id)
      await accept(deps, row, action, {}, requestId, caller, {}, async (tx) =>
        volumeBacked ? {} : { imageId: await reserveSnapshotImage(tx, deps.storage, row, caller, { name: shelvedImageName(row), metadata: {} }) },
      )
      return { status: 202 }
    }
    case 'rescue': {
      const adminPass = (v.adminPass as string | undefined) ?? generatePassword()
      await accept(deps, row, action, { adminPass, rescueImageRef: v.rescue_image_ref ?? null }, requestId, caller)
      return { status: 200, body: { adminPass } }
    }
    case 'evacuate': {
      if (v.host !== undefined) {
        const target = await deps.hostUp(v.host as string)
        if (target === undefined) throw notFound(`Compute host ${v.host as string} could not be found.`)
        if (v.host === row.host) throw badRequest('The target host can\'t be the same one.')
      }
      if (row.host && (await deps.hostUp(row.host))) throw badRequest(`Compute service of ${row.host} is still in use.`)
      const adminPass = (v.adminPass as string | undefined) ?? generatePassword()
      await accept(deps, row, action, { host: v.host ?? null, adminPass }, requestId, caller)
      return api.has('evacuateNoAdminPass') ? { status: 200 } : { status: 200, body: { adminPass } }
    }
    case 'unshelve': {
      const az = v.availability_zone
      const host = v.host as string | undefined
      if ((az !== undefined || host !== undefined) && row.vm_state !== 'shelved_offloaded') {
        throw conflict(`Cannot 'unshelve' instance ${row.id} while it is in vm_state ${row.vm_state}`)
      }
      if (host !== undefined) caller.authorize('os-shelve:unshelve_to_host')
      await accept(deps, row, action, { availabilityZone: az, host }, requestId, caller)
      return { status: 202 }
    }
    case 'migrate': {
      if (v.host) caller.authorize('os-migrate-server:migrate:host')
      if (v.host) await requireTargetHost(deps, row, v.host as string)
      await accept(deps, row, action, { host: v.host ?? null }, requestId, caller)
      return { status: 202 }
    }
    case 'os-migrateLive': {
      // Nova checks a named destination before accepting (400), so a bad host leaves the server as it was.
      if (v.host) await requireTargetHost(deps, row, v.host as string)
      await accept(deps, row, action, v, requestId, caller)
      return { status: 202 }
    }
    case 'confirmResize':
      await accept(deps, row, action, {}, requestId, caller)
      return { status: 204 }
    default: {
      if (rule.startTask === null) throw new AppError('not_implemented', `Action ${action} is not implemented.`)
      const params = v && typeof v === 'object' && !Array.isArray(v) ? v : {}
      await accept(deps, row, action, params, requestId, caller)
      return { status: rule.success }
    }
  }
}
