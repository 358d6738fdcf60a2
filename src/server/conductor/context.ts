/** What the conductor's parts share, and the server-row helpers they all use. */
import type { Logger } from 'pino'
import type { Config } from '../config/settings.js'
import type { ComputeStorage } from '../compute/storage.js'
import type { ComputeDriver, GuestSpec } from '../../contracts/host/compute-driver.js'
import { DriverError } from '../../contracts/host/compute-driver.js'
import type { DriverRegistry } from '../hosts/driver-registry.js'
import type { Scheduler } from '../scheduler/scheduler.js'
import type { Db, Store } from '../storage/store.js'
import type { ServerTable } from '../storage/tables/compute.js'
import type { FlavorSnapshot } from '../../contracts/host/compute-driver.js'

export interface ConductorContext {
  store: Store
  drivers: DriverRegistry
  scheduler: Scheduler
  logger: Logger
  config: Config
  /** The image and block storage services (snapshots, volumes); set by the composition root. */
  storage?: ComputeStorage
}

export function instanceName(server: Pick<ServerTable, 'display_id'>): string {
  return `instance-${server.display_id.toString(16).padStart(8, '0')}`
}

export function guestSpec(server: ServerTable, flavor?: FlavorSnapshot): GuestSpec {
  return {
    serverId: server.id,
    instanceName: instanceName(server),
    flavor: flavor ?? (JSON.parse(server.flavor) as FlavorSnapshot),
    imageId: server.image_id,
    hostname: server.hostname ?? server.name,
    userData: server.user_data,
  }
}

export function driverFor(ctx: ConductorContext, hostId: string | null, hostname?: string | null): ComputeDriver {
  const driver = hostId ? ctx.drivers.get(hostId) : undefined
  if (!driver) throw new DriverError(`Compute host ${hostname ?? hostId ?? 'None'} could not be reached.`)
  return driver
}

export async function loadServer(db: Db, id: string): Promise<ServerTable | undefined> {
  return db.selectFrom('servers').selectAll().where('id', '=', id).executeTakeFirst()
}

/**
 * Moves a live server on only when it is where the caller expects (vm_state, and task_state when given), so a
 * concurrent delete or a second run of the task cannot be overwritten. False: the server moved on.
 */
export async function moveServer(
  db: Db,
  id: string,
  expect: { vmStates?: string[]; taskStates?: (string | null)[] },
  set: Partial<ServerTable>,
): Promise<boolean> {
  let q = db.updateTable('servers').set({ ...set, updated_at: set.updated_at ?? Date.now() }).where('id', '=', id).where('deleted', '=', 0)
  if (expect.vmStates) q = q.where('vm_state', 'in', expect.vmStates)
  if (expect.taskStates) {
    const named = expect.taskStates.filter((t): t is string => t !== null)
    const withNull = expect.taskStates.includes(null)
    q = q.where((eb) => {
      const parts = []
      if (named.length) parts.push(eb('task_state', 'in', named))
      if (withNull) parts.push(eb('task_state', 'is', null))
      return eb.or(parts)
    })
  }
  const result = await q.executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/** A failure of a step that ends the action with a fault (as opposed to an infrastructure error that retries). */
export class StepFailure extends Error {
  override name = 'StepFailure'
  constructor(
    message: string,
    readonly code = 500,
    readonly details = '',
    /** The vm_state the server is left in (default error). */
    readonly vmState?: string,
  ) {
    super(message)
  }
}
