/**
 * Writes create requests straight into the store, exactly as the compute API's contract says the API does
 * (src/server/compute/tasks.ts): the server rows in vm_state building / task_state scheduling, the `create`
 * instance action named by the request id, and the `compute.build` task, in one transaction.
 *
 * Only for what must not go through HTTP: the conductor benchmark (bench/conductor.bench.ts measures the
 * conductor alone) and the store-level scheduler tests (test/scheduler/placement.test.ts, which place with
 * flavor snapshots and hint forms the API produces). Everything else creates servers with `POST /servers`
 * and acts on them with `POST /servers/{id}/action` (testkit/compute-api.ts).
 */
import { randomUUID } from 'node:crypto'
import { insertAction } from '../server/compute/instance-actions.js'
import { COMPUTE_TASK_KINDS, type BuildTaskPayload } from '../server/compute/tasks.js'
import type { AppDeps } from '../server/deps.js'
import type { ServerTable } from '../server/storage/tables/compute.js'
import type { FlavorSnapshot } from '../contracts/host/compute-driver.js'

type SeedDeps = Pick<AppDeps, 'store' | 'queue' | 'runner'>

export const TEST_FLAVOR: FlavorSnapshot = { id: '1', name: 'm1.tiny', vcpus: 1, ram: 512, disk: 1, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs: {} }

export interface SeedCreateOptions {
  name?: string
  count?: number
  projectId?: string
  userId?: string
  flavor?: Partial<FlavorSnapshot>
  /** az, az:host, az:host:node (admin forms included: the API checks policy, not this helper). */
  availabilityZone?: string | null
  hints?: Record<string, unknown>
  /** Server group to add the servers to (the API does it for the `group` hint). */
  groupId?: string
  imageId?: string
}

export interface SeededCreate {
  serverIds: string[]
  requestId: string
  taskId: string
}

export async function seedCreate(deps: SeedDeps, options: SeedCreateOptions = {}): Promise<SeededCreate> {
  const count = options.count ?? 1
  const now = Date.now()
  const requestId = `req-${randomUUID()}`
  const reservationId = `r-${randomUUID().slice(0, 8)}`
  const flavor = { ...TEST_FLAVOR, ...options.flavor }
  const projectId = options.projectId ?? 'project-test'
  const userId = options.userId ?? 'user-test'
  const groupId = options.groupId ?? (options.hints?.group as string | undefined)
  // As the API stores it: the zone in availability_zone (and pinned), a forced host/node among the hints.
  const [zone, forceHost, forceNode] = (options.availabilityZone ?? '').split(':')
  const hints = { ...options.hints, ...(forceHost && { force_host: forceHost }), ...(forceNode && { force_node: forceNode }) }
  for (let attempt = 0; ; attempt++) {
    const serverIds: string[] = []
    try {
      const task = await deps.store.db.transaction().execute(async (tx) => {
        for (let i = 0; i < count; i++) {
          const id = randomUUID()
          serverIds.push(id)
          const row: ServerTable = {
            id,
            // Random, not max+1: seeds from several processes run at once; a collision retries.
            rev: 0,
            display_id: 1 + Math.floor(Math.random() * 2_000_000_000),
            name: count > 1 ? `${options.name ?? 'server'}-${i + 1}` : (options.name ?? 'server'),
            description: null, project_id: projectId, user_id: userId,
            host_id: null, host: null, node: null,
            vm_state: 'building', task_state: 'scheduling', power_state: 0,
            flavor: JSON.stringify(flavor), old_flavor: null, new_flavor: null,
            image_id: options.imageId ?? 'image-cirros', key_name: null, key_data: null, metadata: '{}',
            access_ip_v4: '', access_ip_v6: '', availability_zone: zone || null, pinned_availability_zone: zone || null,
            config_drive: 0, disk_config: 'MANUAL', user_data: null, hostname: null,
            locked: 0, locked_by: null, locked_reason: null, launch_index: i, reservation_id: reservationId,
            root_device_name: '/dev/vda', kernel_id: null, ramdisk_id: null, progress: 0, trusted_image_certificates: null,
            scheduler_hints: Object.keys(hints).length ? JSON.stringify(hints) : null,
            security_groups: '["default"]', requested_networks: '"auto"', block_devices: '[]',
            created_at: now, updated_at: now, launched_at: null, terminated_at: null, deleted_at: null, deleted: 0,
          }
          await tx.insertInto('servers').values(row).execute()
          await insertAction(tx, { serverId: id, action: 'create', requestId, userId, projectId }, now)
          if (groupId) await tx.insertInto('server_group_members').values({ group_id: groupId, server_id: id }).execute()
        }
        const payload: BuildTaskPayload = { serverIds, requestId }
        return deps.queue.enqueue({ kind: COMPUTE_TASK_KINDS.build, payload, subjectId: serverIds[0] }, tx)
      })
      deps.runner.wake()
      return { serverIds, requestId, taskId: task.id }
    } catch (err) {
      if (attempt >= 3) throw err
    }
  }
}

/** Polls until `check` returns a value (not undefined), or fails after `timeoutMs`. */
export async function waitFor<T>(check: () => Promise<T | undefined>, timeoutMs = 20_000, intervalMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}
